// Grid loops whose outer iterations run on the pool's workers (analysis/parallel_grid.h): each
// worker has its own counter, scratch and body values (buffer assignment's per-worker arena),
// shares the arrays, and runs its outer iterations' steps in order. Every case runs against
// the reference evaluator (which runs the loop in order) on 1, 2 and 3 threads.
#include <gtest/gtest.h>

#include "executable_test_util.h"
#include "insitu/evaluator/evaluator.h"
#include "insitu/passes/explain.h"

namespace insitu {
namespace {

using testing_runtime::compile;
using testing_runtime::Compiled;
using testing_runtime::flatten;
using testing_runtime::to_handles;

// A 2x4 grid over rows of x (f32[8,64]): step (o, j) adds row 4o+j into a scratch row `acc` (reset
// when j == 0, so it persists across one outer iteration's steps only), runs a nested loop over
// it, and writes the result as row o of the output (the last j wins). `attributes` are the while's
// extra frontend attributes; `after` what the entry does with the loop's result.
std::string rows_kernel(const std::string& attributes, const std::string& after = "") {
  return R"(
HloModule rows_kernel
inner_body {
  s = (s32[], f32[64]) parameter(0)
  k = s32[] get-tuple-element(s), index=0
  v = f32[64] get-tuple-element(s), index=1
  half = f32[] constant(0.5)
  halves = f32[64] broadcast(half), dimensions={}
  one = f32[] constant(1)
  ones = f32[64] broadcast(one), dimensions={}
  scaled = f32[64] multiply(v, halves)
  w = f32[64] add(scaled, ones)
  c1 = s32[] constant(1)
  k1 = s32[] add(k, c1)
  ROOT t = (s32[], f32[64]) tuple(k1, w)
}
inner_cond {
  s = (s32[], f32[64]) parameter(0)
  k = s32[] get-tuple-element(s), index=0
  two = s32[] constant(2)
  ROOT lt = pred[] compare(k, two), direction=LT
}
body {
  s = (s32[], f32[2,64], f32[8,64], f32[64]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  out = f32[2,64] get-tuple-element(s), index=1
  x = f32[8,64] get-tuple-element(s), index=2
  acc = f32[64] get-tuple-element(s), index=3
  four = s32[] constant(4)
  o = s32[] divide(i, four)
  j = s32[] remainder(i, four)
  zero = s32[] constant(0)
  row = f32[1,64] dynamic-slice(x, i, zero), dynamic_slice_sizes={1,64}
  rowf = f32[64] reshape(row)
  first = pred[] compare(j, zero), direction=EQ
  firsts = pred[64] broadcast(first), dimensions={}
  fz = f32[] constant(0)
  zeros = f32[64] broadcast(fz), dimensions={}
  base = f32[64] select(firsts, zeros, acc)
  acc2 = f32[64] add(base, rowf)
  start = (s32[], f32[64]) tuple(zero, acc2)
  looped = (s32[], f32[64]) while(start), condition=inner_cond, body=inner_body, frontend_attributes={insitu_pallas_kernel=""}
  result = f32[64] get-tuple-element(looped), index=1
  new = f32[1,64] reshape(result)
  out2 = f32[2,64] dynamic-update-slice(out, new, o, zero)
  c1 = s32[] constant(1)
  next = s32[] add(i, c1)
  ROOT t = (s32[], f32[2,64], f32[8,64], f32[64]) tuple(next, out2, x, acc2)
}
cond {
  s = (s32[], f32[2,64], f32[8,64], f32[64]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  n = s32[] constant(8)
  ROOT lt = pred[] compare(i, n), direction=LT
}
ENTRY main {
  x = f32[8,64] parameter(0)
  zero = s32[] constant(0)
  fz = f32[] constant(0)
  out0 = f32[2,64] broadcast(fz), dimensions={}
  seven = f32[] constant(7)
  acc0 = f32[64] broadcast(seven), dimensions={}
  init = (s32[], f32[2,64], f32[8,64], f32[64]) tuple(zero, out0, x, acc0)
  loop = (s32[], f32[2,64], f32[8,64], f32[64]) while(init), condition=cond, body=body, frontend_attributes={insitu_pallas_kernel="rows",insitu_pallas_grid="2x4")" +
         attributes + R"(}
  )" + (after.empty() ? "ROOT y = f32[2,64] get-tuple-element(loop), index=1" : after) + R"(
})";
}

Literal rows_argument() {
  Literal x(Shape::array(PrimitiveType::kF32, {8, 64}));
  for (int64_t k = 0; k < 8 * 64; ++k) x.data<float>()[k] = static_cast<float>((k * 37) % 101) / 8.0f - 6.0f;
  return x;
}

// Runs `text` on `threads` threads against the evaluator; returns the kernel's stats entry.
ExecutionStats::KernelGrid run_rows(const std::string& text, int threads) {
  Compiled compiled = compile(text);
  EXPECT_NE(compiled.executable, nullptr);
  if (compiled.executable == nullptr) return {};
  std::vector<Literal> arguments;
  arguments.push_back(rows_argument());
  StatusOr<Literal> expected = evaluate_module(*compiled.original, arguments);
  EXPECT_TRUE(expected.ok()) << expected.status().to_string();
  ExecutionStats stats;
  for (int round = 0; round < 20; ++round) {  // a race would show as a different value some time
    StatusOr<std::vector<BufferHandle>> results =
        compiled.executable->execute(to_handles(arguments), {.threads = threads, .stats = &stats});
    EXPECT_TRUE(results.ok()) << results.status().to_string();
    if (!results.ok() || !expected.ok()) return {};
    std::vector<Literal> leaves;
    flatten(*expected, leaves);
    EXPECT_EQ(results->size(), leaves.size());
    for (size_t k = 0; k < leaves.size() && k < results->size(); ++k)
      EXPECT_TRUE(*(*results)[k].to_literal() == leaves[k]) << "threads " << threads << ", round " << round;
  }
  EXPECT_EQ(stats.kernel_grids.size(), 1u);
  return stats.kernel_grids.empty() ? ExecutionStats::KernelGrid{} : stats.kernel_grids[0];
}

TEST(ParallelGrid, OuterIterationsRunOnWorkersWithTheirOwnScratch) {
  const std::string text = rows_kernel(R"(,insitu_pallas_parallel="1")");
  const ExecutionStats::KernelGrid on_two = run_rows(text, 2);
  EXPECT_EQ(on_two.parallel_axes, 1);
  EXPECT_EQ(on_two.steps, 8);
  EXPECT_EQ(on_two.in_order_because, "");
  EXPECT_EQ(run_rows(text, 3).parallel_axes, 1);  // two outer iterations: two chunks
  const ExecutionStats::KernelGrid on_one = run_rows(text, 1);
  EXPECT_EQ(on_one.parallel_axes, 0);
  EXPECT_EQ(on_one.in_order_because, "it ran on one thread");
}

TEST(ParallelGrid, StepsRunInOrderWhenTheLoweringOrTheLoopSaysSo) {
  // the lowering's reason is reported as it wrote it
  ExecutionStats::KernelGrid grid =
      run_rows(rows_kernel(R"(,insitu_pallas_parallel="0",insitu_pallas_in_order="its grid has a dynamic size")"), 2);
  EXPECT_EQ(grid.parallel_axes, 0);
  EXPECT_EQ(grid.in_order_because, "its grid has a dynamic size");
  // no attribute: a loop written by hand, or by an older lowering
  grid = run_rows(rows_kernel(""), 2);
  EXPECT_EQ(grid.parallel_axes, 0);
  EXPECT_EQ(grid.in_order_because, "its lowering did not say which grid axes are independent");
  // the counter is read after the loop: each worker's would be its own
  grid = run_rows(rows_kernel(R"(,insitu_pallas_parallel="1")", R"(steps = s32[] get-tuple-element(loop), index=0
  y = f32[2,64] get-tuple-element(loop), index=1
  ROOT both = (f32[2,64], s32[]) tuple(y, steps))"),
                  2);
  EXPECT_EQ(grid.parallel_axes, 0);
  EXPECT_EQ(grid.in_order_because, "its step counter is read after the loop");
  // axes past the grid's rank
  grid = run_rows(rows_kernel(R"(,insitu_pallas_parallel="3")"), 2);
  EXPECT_EQ(grid.parallel_axes, 0);
  EXPECT_NE(grid.in_order_because.find("do not fit its grid 2x4"), std::string::npos) << grid.in_order_because;
}

// A step of the body that the reference evaluator runs (a variadic scatter: no native kernel)
// writes its whole result back: on workers sharing the arrays, one worker's write-back would put
// back the old rows of another's. The grid runs in order and says why; the rows all land.
TEST(ParallelGrid, AStepTheEvaluatorRunsOverSharedArraysKeepsTheGridInOrder) {
  const std::string text = R"(
HloModule evaluator_step
second {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  c = f32[] parameter(2)
  d = f32[] parameter(3)
  ROOT t = (f32[], f32[]) tuple(c, d)
}
body {
  s = (s32[], f32[4,8], f32[4,8]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  a = f32[4,8] get-tuple-element(s), index=1
  b = f32[4,8] get-tuple-element(s), index=2
  f = f32[] convert(i)
  row = f32[1,8] broadcast(f), dimensions={}
  at = s32[1] reshape(i)
  both = (f32[4,8], f32[4,8]) scatter(a, b, at, row, row), update_window_dims={0,1}, inserted_window_dims={}, scatter_dims_to_operand_dims={0}, index_vector_dim=0, to_apply=second
  a2 = f32[4,8] get-tuple-element(both), index=0
  b2 = f32[4,8] get-tuple-element(both), index=1
  one = s32[] constant(1)
  next = s32[] add(i, one)
  ROOT t = (s32[], f32[4,8], f32[4,8]) tuple(next, a2, b2)
}
cond {
  s = (s32[], f32[4,8], f32[4,8]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  n = s32[] constant(4)
  ROOT lt = pred[] compare(i, n), direction=LT
}
ENTRY main {
  zero = s32[] constant(0)
  minus = f32[] constant(-1)
  a0 = f32[4,8] broadcast(minus), dimensions={}
  b0 = f32[4,8] broadcast(minus), dimensions={}
  init = (s32[], f32[4,8], f32[4,8]) tuple(zero, a0, b0)
  loop = (s32[], f32[4,8], f32[4,8]) while(init), condition=cond, body=body, frontend_attributes={insitu_pallas_kernel="rows",insitu_pallas_grid="4",insitu_pallas_parallel="1"}
  a = f32[4,8] get-tuple-element(loop), index=1
  b = f32[4,8] get-tuple-element(loop), index=2
  ROOT r = (f32[4,8], f32[4,8]) tuple(a, b)
})";
  Compiled compiled = compile(text);
  ASSERT_NE(compiled.executable, nullptr);
  StatusOr<Literal> expected = evaluate_module(*compiled.original, {});
  ASSERT_TRUE(expected.ok()) << expected.status().to_string();
  std::vector<Literal> leaves;
  flatten(*expected, leaves);
  ExecutionStats stats;
  for (int round = 0; round < 50; ++round) {
    StatusOr<std::vector<BufferHandle>> results = compiled.executable->execute({}, {.threads = 2, .stats = &stats});
    ASSERT_TRUE(results.ok()) << results.status().to_string();
    for (size_t k = 0; k < leaves.size(); ++k)
      EXPECT_TRUE(*(*results)[k].to_literal() == leaves[k]) << "round " << round;
  }
  ASSERT_EQ(stats.kernel_grids.size(), 1u);
  EXPECT_EQ(stats.kernel_grids[0].parallel_axes, 0);
  EXPECT_NE(stats.kernel_grids[0].in_order_because.find("runs in the reference evaluator"), std::string::npos)
      << stats.kernel_grids[0].in_order_because;
}

// Each step writes its row of a shared array through a padded copy of the whole array (pad,
// update, pad back: what JAX's discharge of a masked Pallas store makes): the lowering's proof
// sees disjoint rows, but every step rewrites the whole array from its worker's copy, so on two
// workers one would put back the old rows of the other (half the rows came back as the initial
// values before the runtime looked for such a step). The grid runs in order, says which step,
// and explain says so too.
TEST(ParallelGrid, AStepRewritingAWholeSharedArrayKeepsTheGridInOrder) {
  const std::string text = R"(
HloModule whole_rewrite
body {
  s = (s32[], f32[4,8]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  a = f32[4,8] get-tuple-element(s), index=1
  nan = f32[] constant(nan)
  padded = f32[5,8] pad(a, nan), padding=0_1x0_0
  f = f32[] convert(i)
  row = f32[1,8] broadcast(f), dimensions={}
  zero = s32[] constant(0)
  updated = f32[5,8] dynamic-update-slice(padded, row, i, zero)
  a2 = f32[4,8] pad(updated, nan), padding=0_-1x0_0
  one = s32[] constant(1)
  next = s32[] add(i, one)
  ROOT t = (s32[], f32[4,8]) tuple(next, a2)
}
cond {
  s = (s32[], f32[4,8]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  n = s32[] constant(4)
  ROOT lt = pred[] compare(i, n), direction=LT
}
ENTRY main {
  zero = s32[] constant(0)
  minus = f32[] constant(-1)
  a0 = f32[4,8] broadcast(minus), dimensions={}
  init = (s32[], f32[4,8]) tuple(zero, a0)
  loop = (s32[], f32[4,8]) while(init), condition=cond, body=body, frontend_attributes={insitu_pallas_kernel="rows",insitu_pallas_grid="4",insitu_pallas_parallel="1"}
  ROOT a = f32[4,8] get-tuple-element(loop), index=1
})";
  Compiled compiled = compile(text);
  ASSERT_NE(compiled.executable, nullptr);
  StatusOr<Literal> expected = evaluate_module(*compiled.original, {});
  ASSERT_TRUE(expected.ok()) << expected.status().to_string();
  ExecutionStats stats;
  for (int round = 0; round < 50; ++round) {
    StatusOr<std::vector<BufferHandle>> results = compiled.executable->execute({}, {.threads = 2, .stats = &stats});
    ASSERT_TRUE(results.ok()) << results.status().to_string();
    EXPECT_TRUE(*(*results)[0].to_literal() == *expected) << "round " << round;
  }
  ASSERT_EQ(stats.kernel_grids.size(), 1u);
  EXPECT_EQ(stats.kernel_grids[0].parallel_axes, 0);
  const std::string& why = stats.kernel_grids[0].in_order_because;
  EXPECT_NE(why.find("writes the whole of state element 1, an array the workers share"), std::string::npos) << why;

  Explanation explanation = explain_module(compiled.executable->module());
  ASSERT_EQ(explanation.kernels.size(), 1u);
  EXPECT_EQ(explanation.kernels[0].parallel_axes, 1);  // the analysis alone
  compiled.executable->explain_grid_decisions(explanation);
  EXPECT_EQ(explanation.kernels[0].parallel_axes, 0);
  EXPECT_EQ(explanation.kernels[0].in_order_because, why);
  EXPECT_NE(explanation_text(explanation).find("steps in order: its %"), std::string::npos)
      << explanation_text(explanation);
}

}  // namespace
}  // namespace insitu
