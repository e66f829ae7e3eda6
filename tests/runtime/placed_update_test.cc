// An update computed straight into the window its dynamic-update-slice writes (buffer
// assignment's place_updates): a layer of a donated stack read, updated element by element and
// written back (Adam's m[i] -> m'[i] in a fori_loop, a scan's row of ys over its row of xs) is
// computed once, into the stack, and the dynamic-update-slice moves nothing. Each case runs
// against the reference evaluator on the module as written; the cases that must not be placed
// (the window read at other positions, or through a reshape that indexes it otherwise) give
// the evaluator's values too.
#include <gtest/gtest.h>

#include "executable_test_util.h"
#include "insitu/evaluator/evaluator.h"

namespace insitu {
namespace {

using testing_runtime::compile;
using testing_runtime::Compiled;
using testing_runtime::flatten;
using testing_runtime::to_handles;

// A loop over the 4 rows of a donated f32[4,256] stack: row i of the stack and of the gradients
// read at the counter (the index computed twice, as JAX writes it), `row_update` of them, written
// back at the counter.
std::string stack_loop(const std::string& row_update) {
  return R"(
HloModule stack_loop, input_output_alias={ {}: (0, {}, must-alias) }
body {
  s = (s32[], f32[4,256], f32[4,256]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  stack = f32[4,256] get-tuple-element(s), index=1
  grads = f32[4,256] get-tuple-element(s), index=2
  zero = s32[] constant(0)
  four = s32[] constant(4)
  negative = pred[] compare(i, zero), direction=LT
  wrapped = s32[] add(i, four)
  at = s32[] select(negative, wrapped, i)
  zero.2 = s32[] constant(0)
  negative.2 = pred[] compare(i, zero.2), direction=LT
  wrapped.2 = s32[] add(i, four)
  at.2 = s32[] select(negative.2, wrapped.2, i)
  row = f32[1,256] dynamic-slice(stack, at, zero), dynamic_slice_sizes={1,256}
  g = f32[1,256] dynamic-slice(grads, at, zero), dynamic_slice_sizes={1,256}
)" + row_update + R"(
  stack.2 = f32[4,256] dynamic-update-slice(stack, new, at.2, zero.2)
  one = s32[] constant(1)
  next = s32[] add(i, one)
  ROOT t = (s32[], f32[4,256], f32[4,256]) tuple(next, stack.2, grads)
}
cond {
  s = (s32[], f32[4,256], f32[4,256]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  n = s32[] constant(4)
  ROOT lt = pred[] compare(i, n), direction=LT
}
ENTRY main {
  stack = f32[4,256] parameter(0)
  grads = f32[4,256] parameter(1)
  start = s32[] constant(0)
  init = (s32[], f32[4,256], f32[4,256]) tuple(start, stack, grads)
  loop = (s32[], f32[4,256], f32[4,256]) while(init), condition=cond, body=body
  ROOT out = f32[4,256] get-tuple-element(loop), index=1
})";
}

// Runs `compiled` on f32[4,256] arguments, one per `donate` flag (those set donated), and
// checks every result leaf against the evaluator's; the run's stats (bytes_written -1 when it
// did not run).
ExecutionStats execute_against_evaluator(const Compiled& compiled, const std::vector<bool>& donate) {
  ExecutionStats stats;
  stats.bytes_written = -1;
  EXPECT_NE(compiled.executable, nullptr);
  if (compiled.executable == nullptr) return stats;
  std::vector<Literal> arguments;
  for (size_t a = 0; a < donate.size(); ++a) {
    Literal literal(Shape::array(PrimitiveType::kF32, {4, 256}));
    for (int64_t i = 0; i < 4 * 256; ++i)
      literal.data<float>()[i] = static_cast<float>((i * 7 + static_cast<int64_t>(a) * 3) % 13) - 6;
    arguments.push_back(std::move(literal));
  }
  StatusOr<Literal> expected = evaluate_module(*compiled.original, arguments);
  EXPECT_TRUE(expected.ok()) << expected.status().to_string();
  StatusOr<std::vector<BufferHandle>> results =
      compiled.executable->execute(to_handles(arguments), {.donate = donate, .stats = &stats});
  EXPECT_TRUE(results.ok()) << results.status().to_string();
  if (!results.ok() || !expected.ok()) return stats;
  std::vector<Literal> leaves;
  flatten(*expected, leaves);
  EXPECT_EQ(leaves.size(), results->size());
  for (size_t k = 0; k < leaves.size() && k < results->size(); ++k)
    EXPECT_TRUE(*(*results)[k].to_literal() == leaves[k]) << "result " << k;
  return stats;
}

// Runs with the stack donated: the evaluator's values, 0 bytes copied; returns the bytes written.
int64_t run_against_evaluator(const std::string& text) {
  const ExecutionStats stats = execute_against_evaluator(compile(text), {true, false});
  EXPECT_EQ(stats.bytes_copied, 0) << text;
  return stats.bytes_written;
}

constexpr int64_t kStack = 4 * 256 * 4;  // bytes: the four rows, each written once when placed

TEST(PlacedUpdate, ALayerUpdatedElementwiseIsComputedIntoTheStack) {
  const int64_t written = run_against_evaluator(stack_loop(R"(
  c = f32[] constant(0.9)
  cb = f32[1,256] broadcast(c), dimensions={}
  scaled = f32[1,256] multiply(row, cb)
  new = f32[1,256] add(scaled, g))"));
  EXPECT_GE(written, kStack);
  EXPECT_LT(written, kStack + 256) << "each row written once (counters aside), not into a temp and then the stack";
}

TEST(PlacedUpdate, AnUpdateThroughAReshapeOfTheRowIsComputedIntoTheStack) {
  const int64_t written = run_against_evaluator(stack_loop(R"(
  flat = f32[256] reshape(row)
  gflat = f32[256] reshape(g)
  sum = f32[256] add(flat, gflat)
  new = f32[1,256] reshape(sum))"));
  EXPECT_LT(written, kStack + 256);
}

TEST(PlacedUpdate, AnUpdateReadingTheWindowAtOtherPositionsIsNotPlaced) {
  const int64_t written = run_against_evaluator(stack_loop(R"(
  reversed = f32[1,256] reverse(row), dimensions={1}
  new = f32[1,256] add(reversed, g))"));
  EXPECT_GE(written, 2 * kStack);  // computed into a temp, then copied into the stack
}

TEST(PlacedUpdate, AWindowReadLaterStillHoldsItsOldValues) {
  // the old row is read again after the update is computed: the update cannot go into it
  const int64_t written = run_against_evaluator(stack_loop(R"(
  neg = f32[1,256] negate(row)
  new.0 = f32[1,256] add(neg, g)
  new = f32[1,256] add(new.0, row))"));
  EXPECT_GE(written, kStack);
}

// One row of the donated stack updated at a fixed index, written back by a dynamic-update-slice
// of constant starts or by a scatter of one window (what slice-update-folding makes of
// `.at[2].set`): `write_back` of `new` (f32[256]).
std::string fixed_row(const std::string& write_back) {
  return R"(
HloModule fixed_row, input_output_alias={ {}: (0, {}, must-alias) }
set {
  old = f32[] parameter(0)
  ROOT given = f32[] parameter(1)
}
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = f32[] add(a, b)
}
ENTRY main {
  stack = f32[4,256] parameter(0)
  grads = f32[4,256] parameter(1)
  row = f32[1,256] slice(stack), slice={[2:3], [0:256]}
  g = f32[1,256] slice(grads), slice={[2:3], [0:256]}
  flat = f32[256] reshape(row)
  gflat = f32[256] reshape(g)
  two = f32[] constant(2)
  twos = f32[256] broadcast(two), dimensions={}
  scaled = f32[256] multiply(flat, twos)
  new = f32[256] subtract(scaled, gflat)
)" + write_back + "\n}";
}

TEST(PlacedUpdate, ARowWrittenAtAFixedIndexIsComputedIntoTheStack) {
  constexpr int64_t kRow = 256 * 4;
  // a dynamic-update-slice of constant starts
  EXPECT_EQ(run_against_evaluator(fixed_row(R"(
  wide = f32[1,256] reshape(new)
  at = s32[] constant(2)
  zero = s32[] constant(0)
  ROOT out = f32[4,256] dynamic-update-slice(stack, wide, at, zero))")), kRow);
  // a scatter of one window that sets
  EXPECT_EQ(run_against_evaluator(fixed_row(R"(
  at = s32[1] constant({2})
  ROOT out = f32[4,256] scatter(stack, at, new), update_window_dims={0}, inserted_window_dims={0},
      scatter_dims_to_operand_dims={0}, index_vector_dim=0, to_apply=set)")), kRow);
  // one that adds keeps the old row's values: computed apart, then combined
  EXPECT_EQ(run_against_evaluator(fixed_row(R"(
  at = s32[1] constant({2})
  ROOT out = f32[4,256] scatter(stack, at, new), update_window_dims={0}, inserted_window_dims={0},
      scatter_dims_to_operand_dims={0}, index_vector_dim=0, to_apply=add)")), 2 * kRow);
  // out of bounds, a scatter writes nothing, so the update is not placed (placed, it would
  // overwrite row 2): computed into a temp (the scatter's count is its update's size)
  EXPECT_EQ(run_against_evaluator(fixed_row(R"(
  at = s32[1] constant({7})
  ROOT out = f32[4,256] scatter(stack, at, new), update_window_dims={0}, inserted_window_dims={0},
      scatter_dims_to_operand_dims={0}, index_vector_dim=0, to_apply=set)")), 2 * kRow);
}

TEST(PlacedUpdate, AnUpdateNotReadingTheStackIsComputedInAWindowOfItsOwn) {
  // the row is computed from the gradients alone (a KV row from a dot, a Pallas output block):
  // no dynamic-slice reads its window, so the update's starts set one before it is computed
  const int64_t written = run_against_evaluator(stack_loop(R"(
  new = f32[1,256] multiply(g, g))"));
  EXPECT_GE(written, kStack);
  EXPECT_LT(written, kStack + 256) << "each row written once, into the stack";
}

// A loop over two donated f32[4,256] stacks, m and p, and the gradients: `rows` computes new_m
// and new_p from row i of each (m_row, p_row, g), each written back into its stack at i. new_m
// is read by new_p's chain and by its update-slice: fusion makes it a second output of new_p's
// fusion (a scan's Adam: m', v' and p' in one pass), placed into its stack's window.
std::string two_stack_loop(const std::string& rows) {
  return R"(
HloModule two_stacks, input_output_alias={ {0}: (0, {}, must-alias), {1}: (1, {}, must-alias) }
body {
  s = (s32[], f32[4,256], f32[4,256], f32[4,256]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  m = f32[4,256] get-tuple-element(s), index=1
  p = f32[4,256] get-tuple-element(s), index=2
  grads = f32[4,256] get-tuple-element(s), index=3
  zero = s32[] constant(0)
  m_row = f32[1,256] dynamic-slice(m, i, zero), dynamic_slice_sizes={1,256}
  p_row = f32[1,256] dynamic-slice(p, i, zero), dynamic_slice_sizes={1,256}
  g = f32[1,256] dynamic-slice(grads, i, zero), dynamic_slice_sizes={1,256}
)" + rows + R"(
  m.2 = f32[4,256] dynamic-update-slice(m, new_m, i, zero)
  p.2 = f32[4,256] dynamic-update-slice(p, new_p, i, zero)
  one = s32[] constant(1)
  next = s32[] add(i, one)
  ROOT t = (s32[], f32[4,256], f32[4,256], f32[4,256]) tuple(next, m.2, p.2, grads)
}
cond {
  s = (s32[], f32[4,256], f32[4,256], f32[4,256]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  n = s32[] constant(4)
  ROOT lt = pred[] compare(i, n), direction=LT
}
ENTRY main {
  m = f32[4,256] parameter(0)
  p = f32[4,256] parameter(1)
  grads = f32[4,256] parameter(2)
  start = s32[] constant(0)
  init = (s32[], f32[4,256], f32[4,256], f32[4,256]) tuple(start, m, p, grads)
  loop = (s32[], f32[4,256], f32[4,256], f32[4,256]) while(init), condition=cond, body=body
  m.out = f32[4,256] get-tuple-element(loop), index=1
  p.out = f32[4,256] get-tuple-element(loop), index=2
  ROOT out = (f32[4,256], f32[4,256]) tuple(m.out, p.out)
})";
}

struct TwoStacks {
  int64_t written = -1, copied = -1;
  int fusions = 0;       // multi-output fusions in the loop body
  int placed = 0;        // their outputs computed straight into a stack's window
  int own_windows = 0;   // of those, in a window their update-slice's starts set
};

// Runs two_stack_loop's module with m and p donated: the evaluator's values.
TwoStacks run_two_stacks(const std::string& rows) {
  Compiled compiled = compile(two_stack_loop(rows));
  const ExecutionStats stats = execute_against_evaluator(compiled, {true, true, false});
  if (stats.bytes_written < 0) return {};
  TwoStacks found{stats.bytes_written, stats.bytes_copied};
  const BufferAssignment& assignment = compiled.executable->assignment();
  for (const Computation* computation : compiled.optimized->computations()) {
    if (computation->name() != "body") continue;
    for (const Instruction* instruction : computation->instructions()) {
      if (instruction->opcode() != Opcode::kFusion || instruction->shape().is_array()) continue;
      ++found.fusions;
      for (int64_t k = 0; k < instruction->shape().tuple_size(); ++k) {
        const ValueId value = assignment.dataflow().value_at(instruction, {k});
        found.placed += assignment.placed_for(value) != nullptr ? 1 : 0;
        found.own_windows += assignment.sets_own_window(value) ? 1 : 0;
      }
    }
  }
  return found;
}

TEST(PlacedUpdate, ALayersTwoUpdatesAreOneFusionWritingBothStacksInPlace) {
  const TwoStacks found = run_two_stacks(R"(
  c = f32[] constant(0.9)
  cb = f32[1,256] broadcast(c), dimensions={}
  scaled = f32[1,256] multiply(m_row, cb)
  new_m = f32[1,256] add(scaled, g)
  step = f32[1,256] multiply(new_m, cb)
  new_p = f32[1,256] subtract(p_row, step))");
  EXPECT_EQ(found.fusions, 1) << "new_m joins new_p's fusion as its second output";
  EXPECT_EQ(found.placed, 2);
  EXPECT_EQ(found.copied, 0);
  EXPECT_GE(found.written, 2 * kStack);
  EXPECT_LT(found.written, 2 * kStack + 256) << "each row of each stack written once, straight into the stack";
}

TEST(PlacedUpdate, AFusionOutputNotReadingItsWindowSetsAWindowOfItsOwn) {
  // new_m does not read m's row: no dynamic-slice reads its window, so its update-slice's starts
  // set one for it before the fusion runs (the runtime sets each output's window; with none
  // set, the fusion wrote through a null base: the JAX corpus's lstm_scan_grad found it). m is
  // only written; scan-in-place once paired it with the undonated gradients and copied them.
  const TwoStacks found = run_two_stacks(R"(
  new_m = f32[1,256] multiply(g, g)
  new_p = f32[1,256] subtract(p_row, new_m))");
  EXPECT_EQ(found.fusions, 1);
  EXPECT_EQ(found.placed, 2);
  EXPECT_EQ(found.own_windows, 1);
  EXPECT_EQ(found.copied, 0);
  EXPECT_LT(found.written, 2 * kStack + 256);
}

TEST(PlacedUpdate, AnOwnWindowAtClampedStartsIsWhereTheUpdateLands) {
  Compiled compiled = compile(R"(
HloModule own_window, input_output_alias={ {}: (0, {}, must-alias) }
ENTRY main {
  p = f32[4,256] parameter(0)
  g = f32[1,256] parameter(1)
  i = s32[] parameter(2)
  new = f32[1,256] multiply(g, g)
  zero = s32[] constant(0)
  ROOT out = f32[4,256] dynamic-update-slice(p, new, i, zero)
})");
  ASSERT_NE(compiled.executable, nullptr);
  for (int32_t index : {0, 2, 3, 7, -1}) {
    std::vector<Literal> arguments;
    Literal stack(Shape::array(PrimitiveType::kF32, {4, 256}));
    for (int64_t k = 0; k < 4 * 256; ++k) stack.data<float>()[k] = static_cast<float>(k % 17) - 8.5f;
    Literal g(Shape::array(PrimitiveType::kF32, {1, 256}));
    for (int64_t k = 0; k < 256; ++k) g.data<float>()[k] = static_cast<float>(k % 5) + 0.5f;
    Literal at(Shape::array(PrimitiveType::kS32, {}));
    at.data<int32_t>()[0] = index;
    arguments.push_back(std::move(stack));
    arguments.push_back(std::move(g));
    arguments.push_back(std::move(at));
    StatusOr<Literal> expected = evaluate_module(*compiled.original, arguments);
    ASSERT_TRUE(expected.ok()) << expected.status().to_string();
    ExecutionStats stats;
    StatusOr<std::vector<BufferHandle>> results =
        compiled.executable->execute(to_handles(arguments), {.donate = {true, false, false}, .stats = &stats});
    ASSERT_TRUE(results.ok()) << results.status().to_string();
    EXPECT_TRUE(*(*results)[0].to_literal() == *expected) << "index " << index;
    EXPECT_EQ(stats.bytes_written, 256 * 4) << "the row, computed where it lands";
  }
}

// Found by the differential generator (seed 5035): the dynamic-slice read the stack through a
// reshape to [1, 20], where the same starts name another window than the update's in [4, 5].
TEST(PlacedUpdate, AWindowReadThroughAReshapeIsNotTheUpdatesWindow) {
  Compiled compiled = compile(R"(
HloModule reshaped, input_output_alias={ {}: (0, {}, must-alias) }
ENTRY main {
  p = f32[4,5] parameter(0)
  i = s32[] parameter(1)
  flat = f32[1,20] reshape(p)
  window = f32[1,5] dynamic-slice(flat, i, i), dynamic_slice_sizes={1,5}
  neg = f32[1,5] negate(window)
  ROOT out = f32[4,5] dynamic-update-slice(p, neg, i, i)
})");
  ASSERT_NE(compiled.executable, nullptr);
  for (int32_t index : {0, 2, 3, 7}) {
    std::vector<Literal> arguments;
    Literal stack(Shape::array(PrimitiveType::kF32, {4, 5}));
    for (int64_t k = 0; k < 20; ++k) stack.data<float>()[k] = static_cast<float>(k) - 8.5f;
    Literal at(Shape::array(PrimitiveType::kS32, {}));
    at.data<int32_t>()[0] = index;
    arguments.push_back(std::move(stack));
    arguments.push_back(std::move(at));
    StatusOr<Literal> expected = evaluate_module(*compiled.original, arguments);
    ASSERT_TRUE(expected.ok()) << expected.status().to_string();
    StatusOr<std::vector<BufferHandle>> results = compiled.executable->execute(to_handles(arguments), {.donate = {true, false}});
    ASSERT_TRUE(results.ok()) << results.status().to_string();
    EXPECT_TRUE(*(*results)[0].to_literal() == *expected) << "index " << index;
  }
}

// A block read out, handed to a conditional and written back where it was read
// (slice-update-folding's form 3: a Pallas output block under pl.when): each branch reads and
// writes the block in the array itself. `o` donated: the evaluator's values, 0 bytes copied,
// and at most the block written, whichever branch runs and wherever the (clamped) starts put it.
TEST(PlacedUpdate, ABlockHandedToAConditionalIsReadAndWrittenInItsBranches) {
  const std::string finish_under_when = R"(
HloModule finish_under_when, input_output_alias={ {0}: (0, {}, must-alias) }
keep {
  ROOT block = f32[4,8] parameter(0)
}
finish {
  p = (f32[4,8], f32[4]) parameter(0)
  acc = f32[4,8] get-tuple-element(p), index=0
  sum = f32[4] get-tuple-element(p), index=1
  b = f32[4,8] broadcast(sum), dimensions={0}
  ROOT out = f32[4,8] divide(acc, b)
}
ENTRY main {
  o = f32[2,16,8] parameter(0)
  acc = f32[4,8] parameter(1)
  sum = f32[4] parameter(2)
  i = s32[] parameter(3)
  j = s32[] parameter(4)
  last = s32[] parameter(5)
  zero = s32[] constant(0)
  read = f32[1,4,8] dynamic-slice(o, i, j, zero), dynamic_slice_sizes={1,4,8}
  block = f32[4,8] reshape(read)
  operands = (f32[4,8], f32[4]) tuple(acc, sum)
  new = f32[4,8] conditional(last, block, operands), branch_computations={keep, finish}
  back = f32[1,4,8] reshape(new)
  o2 = f32[2,16,8] dynamic-update-slice(o, back, i, j, zero)
  ROOT t = (f32[2,16,8]) tuple(o2)
})";
  // one operand tuple for both branches, the block read by the branch that updates it (m is
  // computed: an entry parameter handed on by one branch is copied, conditional-in-place)
  const std::string add_or_keep = R"(
HloModule add_or_keep, input_output_alias={ {0}: (0, {}, must-alias) }
keep {
  p = (f32[4,8], f32[4]) parameter(0)
  block = f32[4,8] get-tuple-element(p), index=0
  m = f32[4] get-tuple-element(p), index=1
  ROOT r = (f32[4,8], f32[4]) tuple(block, m)
}
add_one {
  p = (f32[4,8], f32[4]) parameter(0)
  block = f32[4,8] get-tuple-element(p), index=0
  m = f32[4] get-tuple-element(p), index=1
  one = f32[] constant(1)
  ones = f32[4,8] broadcast(one), dimensions={}
  sum = f32[4,8] add(block, ones)
  m2 = f32[4] negate(m)
  ROOT r = (f32[4,8], f32[4]) tuple(sum, m2)
}
ENTRY main {
  o = f32[16,8] parameter(0)
  m0 = f32[4] parameter(1)
  m = f32[4] negate(m0)
  i = s32[] parameter(2)
  which = s32[] parameter(3)
  zero = s32[] constant(0)
  block = f32[4,8] dynamic-slice(o, i, zero), dynamic_slice_sizes={4,8}
  operands = (f32[4,8], f32[4]) tuple(block, m)
  r = (f32[4,8], f32[4]) conditional(which, operands, operands), branch_computations={keep, add_one}
  new = f32[4,8] get-tuple-element(r), index=0
  m3 = f32[4] get-tuple-element(r), index=1
  o2 = f32[16,8] dynamic-update-slice(o, new, i, zero)
  ROOT t = (f32[16,8], f32[4]) tuple(o2, m3)
})";
  for (const std::string* text : {&finish_under_when, &add_or_keep}) {
    const Compiled compiled = compile(*text);
    ASSERT_NE(compiled.executable, nullptr);
    for (uint32_t seed = 0; seed < 24; ++seed) {
      const std::vector<Literal> arguments = testing_runtime::make_arguments(*compiled.original, seed);
      StatusOr<Literal> expected = evaluate_module(*compiled.original, arguments);
      ASSERT_TRUE(expected.ok()) << expected.status().to_string();
      std::vector<bool> donate(arguments.size(), false);
      donate[0] = true;
      ExecutionStats stats;
      const int threads = static_cast<int>(1 + seed % 2);
      StatusOr<std::vector<BufferHandle>> results =
          compiled.executable->execute(to_handles(arguments), {.donate = donate, .threads = threads, .stats = &stats});
      ASSERT_TRUE(results.ok()) << results.status().to_string();
      std::vector<Literal> leaves;
      flatten(*expected, leaves);
      ASSERT_EQ(leaves.size(), results->size());
      for (size_t k = 0; k < leaves.size(); ++k) EXPECT_TRUE(*(*results)[k].to_literal() == leaves[k]) << "seed " << seed;
      EXPECT_EQ(stats.bytes_copied, 0) << *text;
      EXPECT_LE(stats.bytes_written, 4 * 8 * 4 + 64) << "the block written, not the array: seed " << seed;
    }
  }
}

}  // namespace
}  // namespace insitu
