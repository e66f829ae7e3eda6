// Multi-output loop fusions end to end (fusion pass, buffer assignment, the runtime's fusion
// kernel) against the reference evaluator, bit for bit, on 1 and 2 threads, over several
// blocks: an Adam step whose m, v and p updates become one fusion writing into the donated
// m, v and p (0 copies); an output written over an operand that a later op of the fusion still
// reads; outputs taking the buffers of temps that die at the fusion.
#include <algorithm>

#include "cpu_level_test_util.h"
#include "executable_test_util.h"
#include "insitu/runtime/cpu_level.h"

namespace insitu {
namespace {

using testing_runtime::at_every_cpu_level;
using testing_runtime::compile;
using testing_runtime::Compiled;
using testing_runtime::flatten;
using testing_runtime::make_arguments;
using testing_runtime::to_handles;

// The one fusion of the optimized entry (fails the test when there is none or several).
const Instruction* only_fusion(const Module& module) {
  const Instruction* found = nullptr;
  for (const Instruction* instruction : module.entry()->instructions()) {
    if (instruction->opcode() != Opcode::kFusion) continue;
    EXPECT_EQ(found, nullptr) << "a second fusion: " << instruction->name();
    found = instruction;
  }
  EXPECT_NE(found, nullptr) << "no fusion";
  return found;
}

// Runs `compiled` on seeded arguments (1 and 2 threads, the first `donated` of them donated) and
// compares every result leaf with the evaluator's; returns the stats of the last run.
ExecutionStats expect_matches_evaluator(const Compiled& compiled, size_t donated = 0) {
  ExecutionStats stats;
  for (uint32_t seed : {1u, 2u}) {
    const std::vector<Literal> arguments = make_arguments(*compiled.original, seed);
    StatusOr<Literal> expected = evaluate_module(*compiled.original, arguments);
    EXPECT_TRUE(expected.ok()) << expected.status().to_string();
    if (!expected.ok()) return stats;
    std::vector<Literal> expected_leaves;
    flatten(*expected, expected_leaves);
    for (int threads : {1, 2}) {
      std::vector<bool> donate(arguments.size(), false);
      std::fill(donate.begin(), donate.begin() + static_cast<std::ptrdiff_t>(donated), true);
      StatusOr<std::vector<BufferHandle>> results =
          compiled.executable->execute(to_handles(arguments), {.donate = donate, .threads = threads, .stats = &stats});
      EXPECT_TRUE(results.ok()) << results.status().to_string();
      if (!results.ok()) return stats;
      EXPECT_EQ(results->size(), expected_leaves.size());
      for (size_t i = 0; i < expected_leaves.size() && i < results->size(); ++i)
        EXPECT_TRUE(*(*results)[i].to_literal() == expected_leaves[i])
            << "result " << i << " seed " << seed << " threads " << threads;
      EXPECT_EQ(stats.fallback_ops_executed, 0);
    }
  }
  return stats;
}

// 64 x 320 = 20480 elements: three blocks of the fusion kernel, the last one short.
TEST(MultiOutputFusion, AdamUpdatesTheDonatedStateInOnePassWithNoCopy) {
  Compiled compiled = compile(R"(
HloModule adam, input_output_alias={ {0}: (3, {}, must-alias), {1}: (0, {}, must-alias), {2}: (1, {}, must-alias) }

ENTRY main {
  m = f32[64,320] parameter(0)
  v = f32[64,320] parameter(1)
  g = f32[64,320] parameter(2)
  p = f32[64,320] parameter(3)
  b1 = f32[] constant(0.9)
  b2 = f32[] constant(0.999)
  lr = f32[] constant(0.001)
  eps = f32[] constant(1e-8)
  bb1 = f32[64,320] broadcast(b1), dimensions={}
  bb2 = f32[64,320] broadcast(b2), dimensions={}
  blr = f32[64,320] broadcast(lr), dimensions={}
  beps = f32[64,320] broadcast(eps), dimensions={}
  mb = f32[64,320] multiply(m, bb1)
  m2 = f32[64,320] add(mb, g)
  gg = f32[64,320] multiply(g, g)
  vb = f32[64,320] multiply(v, bb2)
  v2 = f32[64,320] add(vb, gg)
  s = f32[64,320] sqrt(v2)
  se = f32[64,320] add(s, beps)
  d = f32[64,320] divide(m2, se)
  u = f32[64,320] multiply(d, blr)
  p2 = f32[64,320] subtract(p, u)
  ROOT r = (f32[64,320], f32[64,320], f32[64,320]) tuple(p2, m2, v2)
}
)");
  ASSERT_NE(compiled.executable, nullptr);
  const Instruction* fusion = only_fusion(*compiled.optimized);
  ASSERT_NE(fusion, nullptr);
  ASSERT_TRUE(fusion->shape().is_tuple());
  EXPECT_EQ(fusion->shape().tuple_size(), 3);
  EXPECT_EQ(fusion->operand_count(), 4);  // m, g, v, p: each read once
  const ExecutionStats stats = expect_matches_evaluator(compiled, /*donated=*/4);
  EXPECT_EQ(stats.copies_executed, 0);
  EXPECT_EQ(stats.bytes_copied, 0);
  // each output in its donated parameter's buffer
  const BufferAssignment& assignment = compiled.executable->assignment();
  const Computation* entry = compiled.optimized->entry();
  for (auto [output, parameter] : {std::pair{0, 3}, {1, 0}, {2, 1}})
    EXPECT_EQ(assignment.slice_at(fusion, {output}), assignment.slice_at(entry->parameter(parameter)))
        << "output " << output;
}

// m2 goes into m's buffer, and p2 (after m2 in the fusion) still reads m: the runtime computes
// m2 in scratch and writes it out once the block's ops have run (written in place, p2 would
// read 0.5 * m; this case fails then).
TEST(MultiOutputFusion, AnOutputOverAnOperandReadLaterWaitsForTheBlock) {
  Compiled compiled = compile(R"(
HloModule hazard, input_output_alias={ {0}: (1, {}, must-alias), {1}: (0, {}, must-alias) }

ENTRY main {
  m = f32[100,300] parameter(0)
  p = f32[100,300] parameter(1)
  c = f32[] constant(0.5)
  bc = f32[100,300] broadcast(c), dimensions={}
  m2 = f32[100,300] multiply(m, bc)
  e = f32[100,300] exponential(m2)
  p2 = f32[100,300] subtract(p, m)
  p3 = f32[100,300] add(p2, e)
  ROOT r = (f32[100,300], f32[100,300]) tuple(p3, m2)
}
)");
  ASSERT_NE(compiled.executable, nullptr);
  const Instruction* fusion = only_fusion(*compiled.optimized);
  ASSERT_NE(fusion, nullptr);
  EXPECT_EQ(compiled.executable->assignment().slice_at(fusion, {1}),
            compiled.executable->assignment().slice_at(compiled.optimized->entry()->parameter(0)));
  const ExecutionStats stats = expect_matches_evaluator(compiled, /*donated=*/2);
  EXPECT_EQ(stats.copies_executed, 0);
}

// The same with scalars (a rank-0 fusion reads its parameters as scalars, not blocks): e1 goes
// into p1's buffer, and e2 reads p1 after e1's node (differential seed 1183 found it).
TEST(MultiOutputFusion, AScalarOutputOverAScalarOperandReadLaterWaits) {
  Compiled compiled = compile(R"(
HloModule scalars, input_output_alias={ {1}: (1, {}, must-alias) }

ENTRY main {
  p0 = f32[] parameter(0)
  p1 = f32[] parameter(1)
  e1 = f32[] add(p0, p1)
  e2 = f32[] maximum(p1, e1)
  ROOT r = (f32[], f32[]) tuple(e2, e1)
}
)");
  ASSERT_NE(compiled.executable, nullptr);
  const Instruction* fusion = only_fusion(*compiled.optimized);
  ASSERT_NE(fusion, nullptr);
  EXPECT_TRUE(fusion->shape().is_tuple());
  expect_matches_evaluator(compiled, /*donated=*/2);
}

// Temps that die at the fusion (the reverses' results) give their buffers to its outputs.
TEST(MultiOutputFusion, OutputsTakeTheBuffersOfTempsThatDieAtTheFusion) {
  Compiled compiled = compile(R"(
HloModule temps

ENTRY main {
  x = f32[96,128] parameter(0)
  a = f32[96,128] reverse(x), dimensions={0}
  b = f32[96,128] reverse(x), dimensions={1}
  s = f32[96,128] add(a, b)
  t = f32[96,128] multiply(s, b)
  u = f32[96,128] tanh(t)
  y = f32[96,128] reverse(u), dimensions={0}
  ROOT r = (f32[96,128], f32[96,128]) tuple(y, s)
}
)");
  ASSERT_NE(compiled.executable, nullptr);
  const Instruction* fusion = only_fusion(*compiled.optimized);
  ASSERT_NE(fusion, nullptr);
  ASSERT_TRUE(fusion->shape().is_tuple());
  const BufferAssignment& assignment = compiled.executable->assignment();
  std::vector<std::optional<BufferSlice>> operands;
  for (const Instruction* operand : fusion->operands()) operands.push_back(assignment.slice_at(operand));
  for (int64_t output = 0; output < fusion->shape().tuple_size(); ++output)
    EXPECT_NE(std::find(operands.begin(), operands.end(), assignment.slice_at(fusion, {output})), operands.end())
        << "output " << output << " has a buffer of its own";
  expect_matches_evaluator(compiled);
}

// A fused op runs its block loop (kernels.h BlockLoop), compiled per CPU level for f32/f64: at
// every level this CPU has, the fusion gives the evaluator's bits, for binary ops with array and
// scalar operands on either side, the f32 functions, f64, f16 and integer ops.
TEST(MultiOutputFusion, FusedOpsGiveTheEvaluatorsBitsAtEveryCpuLevel) {
  Compiled compiled = compile(R"(
HloModule levels

ENTRY main {
  x = f32[40,130] parameter(0)
  y = f32[40,130] parameter(1)
  d = f64[40,130] parameter(2)
  h = f16[40,130] parameter(3)
  i = s32[40,130] parameter(4)
  c = f32[] constant(0.75)
  bc = f32[40,130] broadcast(c), dimensions={}
  a0 = f32[40,130] divide(bc, x)
  a1 = f32[40,130] divide(a0, y)
  a2 = f32[40,130] subtract(a1, bc)
  a3 = f32[40,130] multiply(a2, y)
  a4 = f32[40,130] maximum(a3, x)
  a5 = f32[40,130] minimum(bc, a4)
  a6 = f32[40,130] power(a5, bc)
  a7 = f32[40,130] abs(a6)
  a8 = f32[40,130] sqrt(a7)
  a9 = f32[40,130] exponential(a8)
  a10 = f32[40,130] tanh(a9)
  a11 = f32[40,130] negate(a10)
  a12 = f32[40,130] add(a11, x)
  cd = f64[] constant(1.5)
  bd = f64[40,130] broadcast(cd), dimensions={}
  d0 = f64[40,130] divide(d, bd)
  d1 = f64[40,130] add(d0, d)
  d2 = f64[40,130] sqrt(d1)
  ch = f16[] constant(0.5)
  bh = f16[40,130] broadcast(ch), dimensions={}
  h0 = f16[40,130] multiply(h, bh)
  h1 = f16[40,130] add(h0, h)
  ci = s32[] constant(7)
  bi = s32[40,130] broadcast(ci), dimensions={}
  i0 = s32[40,130] multiply(i, bi)
  i1 = s32[40,130] xor(i0, i)
  i2 = s32[40,130] remainder(i1, bi)
  ROOT r = (f32[40,130], f64[40,130], f16[40,130], s32[40,130]) tuple(a12, d2, h1, i2)
}
)");
  ASSERT_NE(compiled.executable, nullptr);
  at_every_cpu_level([&] { expect_matches_evaluator(compiled); });
}

// A multiply read only by an add or subtract is computed inside it (fusion_plan.cc,
// fold_pairs): the product on either side, a scalar in the product or as the addend, f64,
// NaNs and infinities among the operands, and the multiplies it must leave alone (read twice,
// an output) give the evaluator's bits at every level, the first output written over a donated x.
// Fails with the two roundings contracted into one (an FMA) or the subtraction's sides swapped.
TEST(MultiOutputFusion, AMultiplyFoldedIntoItsAddGivesTheEvaluatorsBits) {
  Compiled compiled = compile(R"(
HloModule multiply_add, input_output_alias={ {0}: (0, {}, may-alias) }

ENTRY main {
  x = f32[40,130] parameter(0)
  y = f32[40,130] parameter(1)
  z = f32[40,130] parameter(2)
  d = f64[40,130] parameter(3)
  c = f32[] constant(0.3)
  bc = f32[40,130] broadcast(c), dimensions={}
  nan = f32[] constant(nan)
  bn = f32[40,130] broadcast(nan), dimensions={}
  inf = f32[] constant(inf)
  bi = f32[40,130] broadcast(inf), dimensions={}
  big = pred[40,130] compare(y, bc), direction=GT
  ys = f32[40,130] select(big, bn, y)
  low = pred[40,130] compare(z, bc), direction=LT
  zs = f32[40,130] select(low, bi, z)
  p1 = f32[40,130] multiply(x, ys)
  s1 = f32[40,130] add(p1, zs)
  p2 = f32[40,130] multiply(bc, s1)
  s2 = f32[40,130] subtract(zs, p2)
  p3 = f32[40,130] multiply(s2, bc)
  s3 = f32[40,130] subtract(p3, ys)
  p4 = f32[40,130] multiply(s3, x)
  s4 = f32[40,130] add(p4, z)
  s5 = f32[40,130] subtract(p4, s4)
  p6 = f32[40,130] multiply(s5, y)
  s6 = f32[40,130] add(x, p6)
  cd = f64[] constant(0.7)
  bd = f64[40,130] broadcast(cd), dimensions={}
  q = f64[40,130] multiply(d, d)
  t = f64[40,130] subtract(bd, q)
  ROOT r = (f32[40,130], f32[40,130], f32[40,130], f64[40,130]) tuple(s1, s6, p6, t)
}
)");
  ASSERT_NE(compiled.executable, nullptr);
  at_every_cpu_level([&] { EXPECT_EQ(expect_matches_evaluator(compiled, /*donated=*/1).bytes_copied, 0); });
}

}  // namespace
}  // namespace insitu
