// Row fusions at run time (kind=kCustom, passes/row_fusion.h): a body of reduces, reduce fusions
// and loop fusions over the same rows, run a chunk of rows at a time through every member. Each
// case is grouped (checked on the optimized module), runs natively (no evaluator fallback) and
// gives the evaluator's bits on random arguments, on one to three threads.
#include <gtest/gtest.h>

#include <random>

#include "executable_test_util.h"
#include "insitu/ir/printer.h"
#include "insitu/runtime/kernels.h"
#include "insitu/support/str.h"

namespace insitu {
namespace {

// Row fusions in the module, and the members each holds (nested instructions but parameters,
// constants and the root tuple).
std::vector<int> row_fusion_sizes(const Module& module) {
  std::vector<int> sizes;
  for (const Computation* computation : module.computations())
    for (const Instruction* instruction : computation->instructions()) {
      if (instruction->opcode() != Opcode::kFusion || instruction->fusion_kind != "kCustom") continue;
      const Computation& body = *instruction->called_computations()[0];
      if (body.root()->opcode() == Opcode::kDot) continue;
      int members = 0;
      for (const Instruction* member : body.instructions())
        members += member->opcode() != Opcode::kParameter && member->opcode() != Opcode::kConstant &&
                   !(member->opcode() == Opcode::kTuple && member == body.root());
      sizes.push_back(members);
    }
  return sizes;
}

void expect_grouped_and_exact(std::string_view text, size_t groups, uint32_t seed) {
  testing_runtime::Compiled compiled = testing_runtime::compile(text);
  ASSERT_TRUE(compiled.executable != nullptr);
  EXPECT_EQ(row_fusion_sizes(*compiled.optimized).size(), groups) << print_module(*compiled.optimized);
  testing_runtime::expect_matches_evaluator_natively(compiled, seed);  // on 1, 2 and 3 threads
}

constexpr char kCombiners[] = R"(
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
max {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT m = f32[] maximum(a, b)
}
)";

// A layer norm with a column scale: 301 rows of 300 (several rows a loop block, six chunks, the last
// short), the mean and the inverse deviation [rows]-sized loop fusions between the row sums, the
// scale read whole along every row.
TEST(RuntimeRowFusion, LayerNormMatchesTheEvaluator) {
  const std::string text = std::string("HloModule layer_norm\n") + kCombiners + R"(
ENTRY main {
  x = f32[301,300] parameter(0)
  gamma = f32[300] parameter(1)
  zero = f32[] constant(0)
  count = f32[] constant(300)
  n = f32[301] broadcast(count), dimensions={}
  s = f32[301] reduce(x, zero), dimensions={1}, to_apply=add
  mean = f32[301] divide(s, n)
  mb = f32[301,300] broadcast(mean), dimensions={0}
  d = f32[301,300] subtract(x, mb)
  dd = f32[301,300] multiply(d, d)
  v = f32[301] reduce(dd, zero), dimensions={1}, to_apply=add
  eps = f32[] constant(1e-5)
  epsb = f32[301] broadcast(eps), dimensions={}
  vn = f32[301] divide(v, n)
  ve = f32[301] add(vn, epsb)
  r = f32[301] rsqrt(ve)
  rb = f32[301,300] broadcast(r), dimensions={0}
  y = f32[301,300] multiply(d, rb)
  gb = f32[301,300] broadcast(gamma), dimensions={1}
  out = f32[301,300] multiply(y, gb)
  ROOT t = (f32[301,300]) tuple(out)
})";
  expect_grouped_and_exact(text, 1, 31);
}

// A layer norm's backward, 301 rows of 300: the group grown from sum(dy * gamma) to the loop
// computing dx takes in the other row sum, sum(dy * gamma * xhat), which reads no member (a
// sibling: row_fusion.cc); it runs first in every chunk.
TEST(RuntimeRowFusion, ASiblingRowSumJoinsAndMatchesTheEvaluator) {
  const std::string text = std::string("HloModule layer_norm_backward\n") + kCombiners + R"(
ENTRY main {
  dy = f32[301,300] parameter(0)
  xhat = f32[301,300] parameter(1)
  gamma = f32[300] parameter(2)
  rstd = f32[301] parameter(3)
  zero = f32[] constant(0)
  gb = f32[301,300] broadcast(gamma), dimensions={1}
  g = f32[301,300] multiply(dy, gb)
  sg = f32[301] reduce(g, zero), dimensions={1}, to_apply=add
  gx = f32[301,300] multiply(g, xhat)
  sx = f32[301] reduce(gx, zero), dimensions={1}, to_apply=add
  n = f32[] constant(300)
  nb = f32[301,300] broadcast(n), dimensions={}
  sgb = f32[301,300] broadcast(sg), dimensions={0}
  sxb = f32[301,300] broadcast(sx), dimensions={0}
  g2 = f32[301,300] multiply(dy, gb)
  t1 = f32[301,300] multiply(g2, nb)
  t2 = f32[301,300] subtract(t1, sgb)
  xs = f32[301,300] multiply(xhat, sxb)
  t3 = f32[301,300] subtract(t2, xs)
  rb = f32[301,300] broadcast(rstd), dimensions={0}
  dx = f32[301,300] multiply(t3, rb)
  ROOT t = (f32[301,300]) tuple(dx)
})";
  testing_runtime::Compiled compiled = testing_runtime::compile(text);
  ASSERT_TRUE(compiled.executable != nullptr);
  const std::vector<int> sizes = row_fusion_sizes(*compiled.optimized);
  ASSERT_EQ(sizes.size(), 1u) << print_module(*compiled.optimized);
  for (const Instruction* instruction : compiled.optimized->entry()->instructions()) {  // no reduce outside
    EXPECT_NE(instruction->fusion_kind, "kInput") << instruction->name();
  }
  testing_runtime::expect_matches_evaluator_natively(compiled, 43);
}

// A softmax over rows of 5000 (a loop block is a piece of a row) and one over 1000 rows of 64
// (a reduce fusion's chunk is 256 rows: four chunks over three threads, the last short).
TEST(RuntimeRowFusion, SoftmaxOfLongAndShortRowsMatchesTheEvaluator) {
  const std::string text = std::string("HloModule softmax\n") + kCombiners + R"(
ENTRY main {
  w = f32[5,5000] parameter(0)
  z = f32[1000,64] parameter(1)
  zero = f32[] constant(0)
  ninf = f32[] constant(-inf)
  wm = f32[5] reduce(w, ninf), dimensions={1}, to_apply=max
  wmb = f32[5,5000] broadcast(wm), dimensions={0}
  wd = f32[5,5000] subtract(w, wmb)
  we = f32[5,5000] exponential(wd)
  ws = f32[5] reduce(we, zero), dimensions={1}, to_apply=add
  wsb = f32[5,5000] broadcast(ws), dimensions={0}
  wy = f32[5,5000] divide(we, wsb)
  zm = f32[1000] reduce(z, ninf), dimensions={1}, to_apply=max
  zmb = f32[1000,64] broadcast(zm), dimensions={0}
  zd = f32[1000,64] subtract(z, zmb)
  ze = f32[1000,64] exponential(zd)
  zs = f32[1000] reduce(ze, zero), dimensions={1}, to_apply=add
  zsb = f32[1000,64] broadcast(zs), dimensions={0}
  zy = f32[1000,64] divide(ze, zsb)
  ROOT out = (f32[5,5000], f32[1000,64]) tuple(wy, zy)
})";
  expect_grouped_and_exact(text, 2, 32);
}

// Rows over two leading dimensions ([4, 6] rows of 700), a causal-style mask from iotas along a
// row dimension and the row (computed at each element's absolute position), and the row max and
// sum returned beside the result: a row fusion with three outputs.
TEST(RuntimeRowFusion, MaskedRowsOverTwoDimensionsWithSeveralOutputsMatchTheEvaluator) {
  const std::string text = std::string("HloModule masked\n") + kCombiners + R"(
ENTRY main {
  z = f32[4,6,700] parameter(0)
  zero = f32[] constant(0)
  ninf = f32[] constant(-inf)
  row = s32[4,6,700] iota(), iota_dimension=1
  column = s32[4,6,700] iota(), iota_dimension=2
  hundred = s32[] constant(100)
  hb = s32[4,6,700] broadcast(hundred), dimensions={}
  limit = s32[4,6,700] multiply(row, hb)
  keep = pred[4,6,700] compare(column, limit), direction=LE
  m = f32[4,6] reduce(z, ninf), dimensions={2}, to_apply=max
  mb = f32[4,6,700] broadcast(m), dimensions={0,1}
  shifted = f32[4,6,700] subtract(z, mb)
  ninfb = f32[4,6,700] broadcast(ninf), dimensions={}
  masked = f32[4,6,700] select(keep, shifted, ninfb)
  e = f32[4,6,700] exponential(masked)
  s = f32[4,6] reduce(e, zero), dimensions={2}, to_apply=add
  sb = f32[4,6,700] broadcast(s), dimensions={0,1}
  y = f32[4,6,700] divide(e, sb)
  ROOT out = (f32[4,6,700], f32[4,6], f32[4,6]) tuple(y, m, s)
})";
  expect_grouped_and_exact(text, 1, 33);
}

// A row fusion of two reduces alone (a logsumexp's max and sum of exp over 8,192-long rows):
// its chunks cost their rows' inputs, not their one result per row. Counted by results, a task
// took every chunk (1,024 chunks a task), and at [512, 8192] two threads ran 1.4x slower than one.
TEST(RuntimeRowFusion, ChunksOfReducesAloneAreSplitOverThreads) {
  const std::string text = std::string("HloModule logsumexp\n") + kCombiners + R"(
ENTRY main {
  x = f32[64,8192] parameter(0)
  ninf = f32[] constant(-inf)
  zero = f32[] constant(0)
  m = f32[64] reduce(x, ninf), dimensions={1}, to_apply=max
  mb = f32[64,8192] broadcast(m), dimensions={0}
  d = f32[64,8192] subtract(x, mb)
  e = f32[64,8192] exponential(d)
  s = f32[64] reduce(e, zero), dimensions={1}, to_apply=add
  ROOT t = (f32[64], f32[64]) tuple(m, s)
})";
  testing_runtime::Compiled compiled = testing_runtime::compile(text);
  ASSERT_TRUE(compiled.executable != nullptr);
  const Instruction* fusion = nullptr;
  for (const Instruction* instruction : compiled.optimized->entry()->instructions())
    if (instruction->opcode() == Opcode::kFusion && instruction->fusion_kind == "kCustom") fusion = instruction;
  ASSERT_NE(fusion, nullptr) << print_module(*compiled.optimized);
  std::vector<ArrayView> operands, outputs;
  for (const Instruction* operand : fusion->operands()) operands.push_back(ArrayView{nullptr, &operand->shape(), false});
  for (const Shape& leaf : fusion->shape().tuple_shapes()) outputs.push_back(ArrayView{nullptr, &leaf, false});
  const SelectedKernel selected = select_row_fusion(*fusion, operands, outputs);
  ASSERT_TRUE(selected.has_value());
  const int64_t per_task = row_fusion_chunks_per_task(*selected->plan);
  EXPECT_GE(per_task, 1);
  EXPECT_LE(per_task, 2);  // 4 chunks of 16 rows: at least 2 tasks
  testing_runtime::expect_matches_evaluator_natively(compiled, 41);
}

// Not grouped: a reader of the row sum that reads it across rows (a transpose-like broadcast) ends
// the group before it, and a lone reduce followed by [rows]-sized arithmetic is one pass anyway.
TEST(RuntimeRowFusion, ReadsAcrossRowsAndLoneReducesAreNotGrouped) {
  const std::string text = std::string("HloModule across\n") + kCombiners + R"(
ENTRY main {
  x = f32[64,64] parameter(0)
  zero = f32[] constant(0)
  s = f32[64] reduce(x, zero), dimensions={1}, to_apply=add
  sb = f32[64,64] broadcast(s), dimensions={1}
  across = f32[64,64] multiply(x, sb)
  ex = f32[64,64] exponential(x)
  es = f32[64] reduce(ex, zero), dimensions={1}, to_apply=add
  lone = f32[64] sqrt(es)
  ROOT out = (f32[64,64], f32[64]) tuple(across, lone)
})";
  expect_grouped_and_exact(text, 0, 34);
}


// Random row computations: a few rounds of a row reduce (sum or max) of the running value, some
// [rows]-sized arithmetic on it, and the value combined with it stretched back along the rows,
// over shapes from a few rows of long rows to many short ones, with a column scale and a row sum
// returned beside the result now and then. Each is grouped and gives the evaluator's bits.
TEST(RuntimeRowFusion, RandomRowComputationsMatchTheEvaluator) {
  const int64_t shapes[][2] = {{3, 5000}, {17, 300}, {64, 128}, {301, 64}, {40, 1024}, {9, 700}};
  for (uint32_t seed = 0; seed < 24; ++seed) {
    std::mt19937 random(seed);
    auto pick = [&](int64_t n) { return static_cast<int64_t>(random() % static_cast<uint32_t>(n)); };
    const int64_t rows = shapes[seed % 6][0], columns = shapes[seed % 6][1];
    const std::string row = str_cat("f32[", rows, "]"), full = str_cat("f32[", rows, ",", columns, "]");
    std::string text = std::string("HloModule random_rows\n") + kCombiners + "ENTRY main {\n";
    text += str_cat("  v0 = ", full, " parameter(0)\n  g = f32[", columns, "] parameter(1)\n");
    text += "  zero = f32[] constant(0)\n  ninf = f32[] constant(-inf)\n  c = f32[] constant(0.125)\n";
    text += str_cat("  cr = ", row, " broadcast(c), dimensions={}\n");
    const int64_t rounds = 1 + pick(3);
    std::string value = "v0", returned_row;
    for (int64_t i = 0; i < rounds; ++i) {
      const bool maximum = pick(2) == 0;
      text += str_cat("  r", i, " = ", row, " reduce(", value, ", ", maximum ? "ninf" : "zero",
                      "), dimensions={1}, to_apply=", maximum ? "max" : "add", "\n");
      const char* arithmetic[] = {"multiply", "add", "subtract", "maximum"};
      text += str_cat("  s", i, " = ", row, " ", arithmetic[pick(4)], "(r", i, ", cr)\n");
      text += str_cat("  b", i, " = ", full, " broadcast(s", i, "), dimensions={0}\n");
      const char* combine[] = {"subtract", "multiply", "add"};
      text += str_cat("  w", i, " = ", full, " ", combine[pick(3)], "(", value, ", b", i, ")\n");
      value = str_cat("w", i);
      if (pick(2) == 0) {
        text += str_cat("  e", i, " = ", full, " exponential(", value, ")\n");
        value = str_cat("e", i);
      }
      if (returned_row.empty() && pick(3) == 0) returned_row = str_cat("r", i);
    }
    if (pick(2) == 0) {
      text += str_cat("  gb = ", full, " broadcast(g), dimensions={1}\n  scaled = ", full, " multiply(", value, ", gb)\n");
      value = "scaled";
    }
    if (returned_row.empty()) {
      text += str_cat("  ROOT out = (", full, ") tuple(", value, ")\n}\n");
    } else {
      text += str_cat("  ROOT out = (", full, ", ", row, ") tuple(", value, ", ", returned_row, ")\n}\n");
    }
    SCOPED_TRACE(text);
    expect_grouped_and_exact(text, 1, 100 + seed);
  }
}

}  // namespace
}  // namespace insitu
