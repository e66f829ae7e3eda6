// Regression tests for buffer reuse in the runtime: modules (shrunk by hand) where arena reuse
// or lazily read scalars gave the runtime different values from the reference evaluator. Each
// runs the full pipeline and compares every result leaf with the evaluator.
#include "executable_test_util.h"
#include "insitu/support/str.h"

namespace insitu {
namespace {

using testing_runtime::compile;
using testing_runtime::Compiled;
using testing_runtime::flatten;
using testing_runtime::to_handles;

// Runs `text` with the given arguments on the runtime and the evaluator; returns the runtime's
// first result leaf after checking that every leaf equals the evaluator's.
Literal expect_runtime_matches_evaluator(std::string_view text, const std::vector<Literal>& arguments) {
  Compiled compiled = compile(text);
  EXPECT_NE(compiled.executable, nullptr);
  if (compiled.executable == nullptr) return Literal();
  StatusOr<Literal> expected = evaluate_module(*compiled.original, arguments);
  EXPECT_TRUE(expected.ok()) << expected.status().to_string();
  if (!expected.ok()) return Literal();
  std::vector<Literal> expected_leaves;
  flatten(*expected, expected_leaves);
  StatusOr<std::vector<BufferHandle>> results = compiled.executable->execute(to_handles(arguments), {});
  EXPECT_TRUE(results.ok()) << results.status().to_string();
  if (!results.ok() || results->size() != expected_leaves.size()) {
    ADD_FAILURE() << "the runtime returned a different number of results";
    return Literal();
  }
  for (size_t i = 0; i < expected_leaves.size(); ++i) {
    Literal actual = *(*results)[i].to_literal();
    EXPECT_TRUE(actual == expected_leaves[i]) << "result " << i << ": runtime " << actual.to_string() << ", evaluator "
                                              << expected_leaves[i].to_string();
  }
  return *(*results)[0].to_literal();
}

// %b is not materialized: %w reads %s's bytes. %s's last dataflow use is %b, so the arena gave
// its bytes to %t, and %w read exp(p) twice.
TEST(BufferReuse, BroadcastScalarIsNotOverwrittenBeforeItsReader) {
  const Literal result = expect_runtime_matches_evaluator(R"(
HloModule broadcast_scalar_reused
ENTRY main {
  p = f32[] parameter(0)
  q = f32[4] parameter(1)
  s = f32[] negate(p)
  b = f32[4] broadcast(s), dimensions={}
  t = f32[] exponential(p)
  v = f32[4] broadcast(t), dimensions={}
  w = f32[4] add(b, v)
  ROOT r = f32[4] add(w, q)
})",
                                                          {Literal::scalar<float>(0), Literal::vector<float>({1, 2, 3, 4})});
  // -0 + e^0 + q
  EXPECT_EQ(result, Literal::vector<float>({2, 3, 4, 5}));
}

// In the loop body %s2 updates loop state {0} in place before %x2 reads %b: a lazily read
// broadcast would see the new state (s + 1) instead of s.
TEST(BufferReuse, BroadcastOfLoopStateIsReadBeforeTheStateIsUpdated) {
  const Literal result = expect_runtime_matches_evaluator(R"(
HloModule broadcast_loop_state
cond {
  st = (f32[], s32[], f32[4]) parameter(0)
  i = s32[] get-tuple-element(st), index=1
  n = s32[] constant(2)
  ROOT lt = pred[] compare(i, n), direction=LT
}
body {
  st = (f32[], s32[], f32[4]) parameter(0)
  s = f32[] get-tuple-element(st), index=0
  i = s32[] get-tuple-element(st), index=1
  x = f32[4] get-tuple-element(st), index=2
  b = f32[4] broadcast(s), dimensions={}
  one = f32[] constant(1)
  s2 = f32[] add(s, one)
  bs2 = f32[4] broadcast(s2), dimensions={}
  y = f32[4] multiply(x, bs2)
  x2 = f32[4] add(b, y)
  onei = s32[] constant(1)
  i2 = s32[] add(i, onei)
  ROOT out = (f32[], s32[], f32[4]) tuple(s2, i2, x2)
}
ENTRY main {
  p = f32[] parameter(0)
  q = f32[4] parameter(1)
  zero = s32[] constant(0)
  init = (f32[], s32[], f32[4]) tuple(p, zero, q)
  w = (f32[], s32[], f32[4]) while(init), condition=cond, body=body
  ROOT r = f32[4] get-tuple-element(w), index=2
})",
                                                          {Literal::scalar<float>(1), Literal::vector<float>({1, 2, 3, 4})});
  // x1 = 1 + 2x, x2 = 2 + 3 x1 = 5 + 6x
  EXPECT_EQ(result, Literal::vector<float>({11, 17, 23, 29}));
}

// Dynamic-slices read in place (kDynamicView): a stacked weight read by a dot at a start in
// range, past the end and below 0 (clamped as XLA does), and, inside a while loop, a layer of
// the loop's own state read at the counter before that state is updated in place at the same
// layer (the view's reader runs first) and read again after (materialized: the bytes changed).
TEST(BufferReuse, DynamicSliceViewsReadTheClampedLayerBeforeAndAfterAnInPlaceUpdate) {
  const char* text = R"(
HloModule dynamic_views
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = f32[] add(a, b)
}
body {
  s = (s32[], f32[4,3,2], f32[2]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  cache = f32[4,3,2] get-tuple-element(s), index=1
  acc = f32[2] get-tuple-element(s), index=2
  zero = s32[] constant(0)
  layer = f32[1,3,2] dynamic-slice(cache, i, zero, zero), dynamic_slice_sizes={1,3,2}
  rows = f32[3,2] reshape(layer)
  zero_f = f32[] constant(0)
  sum = f32[2] reduce(rows, zero_f), dimensions={0}, to_apply=add
  doubled = f32[1,3,2] add(layer, layer)
  updated = f32[4,3,2] dynamic-update-slice(cache, doubled, i, zero, zero)
  again = f32[1,3,2] dynamic-slice(updated, i, zero, zero), dynamic_slice_sizes={1,3,2}
  again_rows = f32[3,2] reshape(again)
  again_sum = f32[2] reduce(again_rows, zero_f), dimensions={0}, to_apply=add
  acc2 = f32[2] add(acc, sum)
  acc3 = f32[2] add(acc2, again_sum)
  one = s32[] constant(1)
  next = s32[] add(i, one)
  ROOT t = (s32[], f32[4,3,2], f32[2]) tuple(next, updated, acc3)
}
cond {
  s = (s32[], f32[4,3,2], f32[2]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  limit = s32[] constant(6)
  ROOT lt = pred[] compare(i, limit), direction=LT
}
ENTRY main {
  w = f32[4,3,2] parameter(0)
  x = f32[3] parameter(1)
  j = s32[] parameter(2)
  k = s32[] parameter(3)
  zero = s32[] constant(0)
  wj = f32[1,3,2] dynamic-slice(w, j, zero, zero), dynamic_slice_sizes={1,3,2}
  mj = f32[3,2] reshape(wj)
  yj = f32[2] dot(x, mj), lhs_contracting_dims={0}, rhs_contracting_dims={0}
  wk = f32[1,3,2] dynamic-slice(w, k, zero, zero), dynamic_slice_sizes={1,3,2}
  mk = f32[3,2] reshape(wk)
  yk = f32[2] dot(x, mk), lhs_contracting_dims={0}, rhs_contracting_dims={0}
  start = s32[] constant(-1)
  none = f32[2] constant({0, 0})
  init = (s32[], f32[4,3,2], f32[2]) tuple(start, w, none)
  loop = (s32[], f32[4,3,2], f32[2]) while(init), condition=cond, body=body
  acc = f32[2] get-tuple-element(loop), index=2
  ROOT r = (f32[2], f32[2], f32[2]) tuple(yj, yk, acc)
})";
  std::vector<float> weights(24);
  for (size_t i = 0; i < weights.size(); ++i) weights[i] = static_cast<float>(i) * 0.5f - 3.0f;
  Literal w(Shape::array(PrimitiveType::kF32, {4, 3, 2}));
  std::copy(weights.begin(), weights.end(), w.data<float>().begin());
  for (const auto& [j, k] : {std::pair{1, 3}, std::pair{7, -2}, std::pair{3, 100}}) {
    SCOPED_TRACE(str_cat("j=", j, " k=", k));
    expect_runtime_matches_evaluator(
        text, {w, Literal::vector<float>({1, -2, 0.5f}), Literal::scalar<int32_t>(j), Literal::scalar<int32_t>(k)});
  }
}

// The optimized module run with the arguments `donate` names (argument 0 by default) gives the
// evaluator's results on the original module, bit for bit, and copies `bytes_copied` bytes.
void expect_donated_run_matches_evaluator(const Compiled& compiled, const std::vector<Literal>& arguments,
                                          std::vector<bool> donate = {true}, int64_t bytes_copied = 0) {
  StatusOr<Literal> expected = evaluate_module(*compiled.original, arguments);
  ASSERT_TRUE(expected.ok()) << expected.status().to_string();
  std::vector<Literal> expected_leaves;
  flatten(*expected, expected_leaves);
  ExecutionStats stats;
  StatusOr<std::vector<BufferHandle>> results =
      compiled.executable->execute(to_handles(arguments), {.donate = std::move(donate), .stats = &stats});
  ASSERT_TRUE(results.ok()) << results.status().to_string();
  ASSERT_EQ(results->size(), expected_leaves.size());
  for (size_t i = 0; i < expected_leaves.size(); ++i)
    EXPECT_TRUE(*(*results)[i].to_literal() == expected_leaves[i]) << "result " << i;
  EXPECT_EQ(stats.bytes_copied, bytes_copied);
}

// slice-update-folding end to end: a stacked cache's block read out, updated at one position
// and written back (the index computed twice, as JAX does) gives the evaluator's results on the
// unfolded module for layers and positions in range, negative and past the end (clamped), and
// the folded update writes the cache in place (0 bytes copied, the cache donated).
TEST(BufferReuse, FoldedSliceUpdateMatchesTheUnfoldedModuleForEveryIndex) {
  const std::string module_text = R"(
HloModule folded_cache, input_output_alias={ {0}: (0, {}, must-alias) }
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = f32[] add(a, b)
}
ENTRY main {
  cache = f32[4,2,8,3] parameter(0)
  kv = f32[2,1,3] parameter(1)
  layer = s32[] parameter(2)
  pos = s32[] parameter(3)
  zero = s32[] constant(0)
  four = s32[] constant(4)
  negative = pred[] compare(layer, zero), direction=LT
  wrapped = s32[] add(layer, four)
  index = s32[] select(negative, wrapped, layer)
  block = f32[1,2,8,3] dynamic-slice(cache, index, zero, zero, zero), dynamic_slice_sizes={1,2,8,3}
  rows = f32[2,8,3] reshape(block)
  updated = f32[2,8,3] dynamic-update-slice(rows, kv, zero, pos, zero)
  zf = f32[] constant(0)
  sums = f32[2,3] reduce(updated, zf), dimensions={1}, to_apply=add
  back = f32[1,2,8,3] reshape(updated)
  negative2 = pred[] compare(layer, zero), direction=LT
  wrapped2 = s32[] add(layer, four)
  index2 = s32[] select(negative2, wrapped2, layer)
  new_cache = f32[4,2,8,3] dynamic-update-slice(cache, back, index2, zero, zero, zero)
  ROOT t = (f32[4,2,8,3], f32[2,3]) tuple(new_cache, sums)
})";
  Literal cache(Shape::array(PrimitiveType::kF32, {4, 2, 8, 3}));
  for (size_t i = 0; i < cache.data<float>().size(); ++i) cache.data<float>()[i] = static_cast<float>(i % 17) - 8.0f;
  Literal kv = Literal::from_values<float>({2, 1, 3}, {100, 101, 102, 103, 104, 105});
  Compiled compiled = compile(module_text);
  ASSERT_NE(compiled.executable, nullptr);
  int64_t folds = 0;
  for (const Instruction* instruction : compiled.optimized->entry()->instructions())
    folds += instruction->name().starts_with("folded_update_slice") ? 1 : 0;
  EXPECT_EQ(folds, 1);
  for (const auto& [layer, pos] : {std::pair{2, 5}, std::pair{-1, 0}, std::pair{9, 7}, std::pair{-7, 30}, std::pair{0, -3}}) {
    SCOPED_TRACE(str_cat("layer=", layer, " pos=", pos));
    const std::vector<Literal> arguments = {cache, kv, Literal::scalar<int32_t>(layer), Literal::scalar<int32_t>(pos)};
    expect_donated_run_matches_evaluator(compiled, arguments);
  }
}

// scan-in-place on the loop XLA's optimizer writes for a scan whose caches are xs and ys: the
// counter read through a copy and a clamp, row i of xs read whole and one element of it at a
// dynamic position, row i of the stack written. The stack goes into the donated cache: the
// evaluator's results on the module as written, for positions in and out of range, 0 bytes
// copied.
TEST(BufferReuse, ScanWritingItsRowsIntoTheDonatedXsMatchesTheEvaluator) {
  const std::string module_text = R"(
HloModule scan_xs_ys, input_output_alias={ {1}: (1, {}, may-alias) }
body {
  s = (s32[], f32[4], f32[3,5,4], f32[3,5,4], s32[]) parameter(0)
  counter = s32[] get-tuple-element(s), index=0
  i = s32[] copy(counter)
  x = f32[4] get-tuple-element(s), index=1
  ys = f32[3,5,4] get-tuple-element(s), index=2
  xs = f32[3,5,4] get-tuple-element(s), index=3
  pos = s32[] get-tuple-element(s), index=4
  zero = s32[] constant(0)
  two = s32[] constant(2)
  clamped = s32[] clamp(zero, i, two)
  row = f32[1,5,4] dynamic-slice(xs, i, zero, zero), dynamic_slice_sizes={1,5,4}
  one_element = f32[1,1,4] dynamic-slice(xs, clamped, pos, zero), dynamic_slice_sizes={1,1,4}
  picked = f32[4] reshape(one_element)
  flat = f32[5,4] reshape(row)
  xb = f32[5,4] broadcast(x), dimensions={1}
  pb = f32[5,4] broadcast(picked), dimensions={1}
  sum = f32[5,4] add(flat, xb)
  new = f32[5,4] multiply(sum, pb)
  back = f32[1,5,4] reshape(new)
  ys2 = f32[3,5,4] dynamic-update-slice(ys, back, i, zero, zero)
  one = s32[] constant(1)
  next = s32[] add(i, one)
  x2 = f32[4] add(x, picked)
  ROOT t = (s32[], f32[4], f32[3,5,4], f32[3,5,4], s32[]) tuple(next, x2, ys2, xs, pos)
}
cond {
  s = (s32[], f32[4], f32[3,5,4], f32[3,5,4], s32[]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  n = s32[] constant(3)
  ROOT lt = pred[] compare(i, n), direction=LT
}
ENTRY main {
  x = f32[4] parameter(0)
  caches = f32[3,5,4] parameter(1)
  pos = s32[] parameter(2)
  zero = s32[] constant(0)
  start = s32[] copy(zero)
  z = f32[] constant(0)
  empty = f32[3,5,4] broadcast(z), dimensions={}
  init = (s32[], f32[4], f32[3,5,4], f32[3,5,4], s32[]) tuple(start, x, empty, caches, pos)
  loop = (s32[], f32[4], f32[3,5,4], f32[3,5,4], s32[]) while(init), condition=cond, body=body
  out = f32[4] get-tuple-element(loop), index=1
  stacked = f32[3,5,4] get-tuple-element(loop), index=2
  ROOT r = (f32[4], f32[3,5,4]) tuple(out, stacked)
})";
  Compiled compiled = compile(module_text);
  ASSERT_NE(compiled.executable, nullptr);
  int64_t whiles = 0, state_arrays = 0;
  for (const Computation* computation : compiled.optimized->computations())
    for (const Instruction* instruction : computation->instructions())
      if (instruction->opcode() == Opcode::kWhile) {
        ++whiles;
        for (const Shape& element : instruction->shape().tuple_shapes())
          state_arrays += element.is_array() && element.rank() == 3 ? 1 : 0;
      }
  EXPECT_EQ(whiles, 1);
  EXPECT_EQ(state_arrays, 1);  // the stack alone: xs left the loop state
  Literal x = Literal::from_values<float>({4}, {0.5f, -1.0f, 2.0f, 0.25f});
  Literal caches(Shape::array(PrimitiveType::kF32, {3, 5, 4}));
  for (size_t i = 0; i < caches.data<float>().size(); ++i)
    caches.data<float>()[i] = static_cast<float>((i * 7) % 11) * 0.5f - 2.0f;
  for (int32_t pos : {0, 3, 4, 9, -2}) {
    SCOPED_TRACE(str_cat("pos=", pos));
    // the cache donated; only x's loop state (x is not donated) is copied, nothing of the cache
    expect_donated_run_matches_evaluator(compiled, {x, caches, Literal::scalar<int32_t>(pos)}, {false, true, false},
                                         4 * 4);
  }
}

// A training step returns thousands of leaves (every parameter, Adam's m and v). A tuple
// parameter of 4,000 scalars, each added to its neighbour and returned with the parameter's
// own leaves, compiles and runs with the evaluator's results, the arguments donated and not.
// (Executable::create resolved a tuple's leaves by scanning them once per leaf and once per
// get-tuple-element, and paired arguments and allocations by nested loops: 1,000 leaves took
// 4.3 s and 2,000 61.6 s. compile_bench's CompileScaling/3 measures it.)
TEST(BufferReuse, ModuleOfThousandsOfLeavesCompilesAndRuns) {
  constexpr int kLeaves = 4000;
  std::string tuple = "(", body, root;
  for (int i = 0; i < kLeaves; ++i) {
    tuple += i == 0 ? "f32[]" : ", f32[]";
    body += str_cat("  g", i, " = f32[] get-tuple-element(p), index=", i, "\n");
  }
  tuple += ")";
  for (int i = 0; i < kLeaves; ++i) {
    body += str_cat("  s", i, " = f32[] add(g", i, ", g", (i + 1) % kLeaves, ")\n");
    root += str_cat(i == 0 ? "" : ", ", "s", i, ", g", i);
  }
  std::string both = "(";
  for (int i = 0; i < 2 * kLeaves; ++i) both += i == 0 ? "f32[]" : ", f32[]";
  both += ")";
  const std::string text = str_cat("HloModule wide\n\nENTRY main {\n  p = ", tuple, " parameter(0)\n", body,
                                   "  ROOT r = ", both, " tuple(", root, ")\n}\n");
  std::vector<Literal> leaves;
  for (int i = 0; i < kLeaves; ++i) leaves.push_back(Literal::scalar<float>(static_cast<float>(i % 97) - 40.0f));
  expect_runtime_matches_evaluator(text, {Literal::tuple(std::move(leaves))});
}

// torch's update through a view (cache[l, 0].index_copy_(0, pos, k), functionalized): the block
// read by two selects (slice, reshape, slice, reshape), one row written, and the block written
// back by two select_scatters at constant starts. It folds into one in-place update of the
// cache, gives the evaluator's results for positions in range and past the end, and writes only
// the row (bytes_written), where the unfolded module wrote two blocks.
TEST(BufferReuse, FoldedViewUpdateWritesOnlyTheRow) {
  const std::string module_text = R"(
HloModule view_update, input_output_alias={ {}: (0, {}, must-alias) }
ENTRY main {
  cache = f32[3,2,8,4] parameter(0)
  kv = f32[1,4] parameter(1)
  pos = s64[] parameter(2)
  s0 = f32[1,2,8,4] slice(cache), slice={[2:3], [0:2], [0:8], [0:4]}
  layer = f32[2,8,4] reshape(s0)
  s1 = f32[1,8,4] slice(layer), slice={[1:2], [0:8], [0:4]}
  rows = f32[8,4] reshape(s1)
  zero64 = s64[] constant(0)
  updated = f32[8,4] dynamic-update-slice(rows, kv, pos, zero64)
  back1 = f32[1,8,4] reshape(updated)
  zero = s32[] constant(0)
  one = s32[] constant(1)
  two = s32[] constant(2)
  new_layer = f32[2,8,4] dynamic-update-slice(layer, back1, one, zero, zero)
  back0 = f32[1,2,8,4] reshape(new_layer)
  ROOT new_cache = f32[3,2,8,4] dynamic-update-slice(cache, back0, two, zero, zero, zero)
})";
  Literal cache(Shape::array(PrimitiveType::kF32, {3, 2, 8, 4}));
  for (size_t i = 0; i < cache.data<float>().size(); ++i) cache.data<float>()[i] = static_cast<float>(i % 13) - 6.0f;
  Literal kv = Literal::from_values<float>({1, 4}, {100, 101, 102, 103});
  Compiled compiled = compile(module_text);
  ASSERT_NE(compiled.executable, nullptr);
  int64_t folds = 0;
  for (const Instruction* instruction : compiled.optimized->entry()->instructions())
    folds += instruction->name().starts_with("folded_update_slice") ? 1 : 0;
  EXPECT_EQ(folds, 1);  // the two levels, the outer first, then the row into the cache
  for (int64_t pos : {5, 0, 7, 30}) {
    SCOPED_TRACE(str_cat("pos=", pos));
    const std::vector<Literal> arguments = {cache, kv, Literal::scalar<int64_t>(pos)};
    expect_donated_run_matches_evaluator(compiled, arguments);
    ExecutionStats stats;
    ASSERT_TRUE(compiled.executable->execute(to_handles(arguments), {.donate = {true}, .stats = &stats}).ok());
    EXPECT_GE(stats.bytes_written, 4 * 4);  // the row ...
    EXPECT_LE(stats.bytes_written, 4 * 4 + 2 * 8);  // ... and the position clamped (twice), no block
  }
}

// The unrolled form: per-layer blocks sliced out, updated and stacked back (concatenate) become
// a chain of in-place updates; results equal the evaluator's on the unfolded module for
// positions in range, negative and past the end, with the cache donated and nothing copied.
TEST(BufferReuse, FoldedStackOfUpdatedBlocksMatchesTheUnfoldedModule) {
  const char* text = R"(
HloModule stacked, input_output_alias={ {0}: (0, {}, must-alias) }
ENTRY main {
  cache = f32[3,4,2] parameter(0)
  kv = f32[3,1,2] parameter(1)
  pos = s32[] parameter(2)
  zero = s32[] constant(0)
  s0 = f32[1,4,2] slice(cache), slice={[0:1], [0:4], [0:2]}
  b0 = f32[4,2] reshape(s0)
  k0s = f32[1,1,2] slice(kv), slice={[0:1], [0:1], [0:2]}
  k0 = f32[1,2] reshape(k0s)
  u0 = f32[4,2] dynamic-update-slice(b0, k0, pos, zero)
  r0 = f32[4,2] negate(u0)
  s1 = f32[1,4,2] slice(cache), slice={[1:2], [0:4], [0:2]}
  s2 = f32[1,4,2] slice(cache), slice={[2:3], [0:4], [0:2]}
  b2 = f32[4,2] reshape(s2)
  k2s = f32[1,1,2] slice(kv), slice={[2:3], [0:1], [0:2]}
  k2 = f32[1,2] reshape(k2s)
  u2 = f32[4,2] dynamic-update-slice(b2, k2, pos, zero)
  r2 = f32[4,2] add(u2, r0)
  w0 = f32[1,4,2] reshape(u0)
  w2 = f32[1,4,2] reshape(u2)
  stacked = f32[3,4,2] concatenate(w0, s1, w2), dimensions={0}
  ROOT t = (f32[3,4,2], f32[4,2], f32[4,2]) tuple(stacked, r0, r2)
})";
  Compiled compiled = compile(text);
  ASSERT_NE(compiled.executable, nullptr);
  int64_t concatenates = 0;
  for (const Instruction* instruction : compiled.optimized->entry()->instructions())
    concatenates += instruction->opcode() == Opcode::kConcatenate ? 1 : 0;
  EXPECT_EQ(concatenates, 0);
  Literal cache(Shape::array(PrimitiveType::kF32, {3, 4, 2}));
  for (size_t i = 0; i < cache.data<float>().size(); ++i) cache.data<float>()[i] = static_cast<float>(i) - 5.0f;
  const Literal kv = Literal::from_values<float>({3, 1, 2}, {100, 101, 102, 103, 104, 105});
  for (int pos : {0, 2, 3, 9, -4}) {
    SCOPED_TRACE(str_cat("pos=", pos));
    const std::vector<Literal> arguments = {cache, kv, Literal::scalar<int32_t>(pos)};
    expect_donated_run_matches_evaluator(compiled, arguments);
  }
}

// A Pallas step under pl.when reads its blocks inside a conditional's branch: a contiguous
// block of a big array, passed to the branches in their operand tuples and only read there, is
// read where it lies (a view carried into the branch), not copied out per step. Where a branch
// returns the block, the result needs the bytes as a value of its own and the block is
// materialized (bytes_staged). Both against the evaluator, for both branches and starts in and
// past range.
TEST(BufferReuse, ABlockReadInsideABranchIsReadWhereItLies) {
  for (const bool returned : {false, true}) {
    const std::string other = returned ? "ROOT block = f32[4,64] get-tuple-element(s), index=0"
                                       : "block = f32[4,64] get-tuple-element(s), index=0\n  ROOT n = f32[4,64] negate(block)";
    const std::string text = str_cat(R"(
HloModule block_in_branch

reads {
  s = (f32[4,64], f32[4,64]) parameter(0)
  block = f32[4,64] get-tuple-element(s), index=0
  y = f32[4,64] get-tuple-element(s), index=1
  ROOT sum = f32[4,64] add(block, y)
}

other {
  s = (f32[4,64]) parameter(0)
  )", other, R"(
}

ENTRY main {
  x = f32[64,64] parameter(0)
  y = f32[4,64] parameter(1)
  i = s32[] parameter(2)
  p = pred[] parameter(3)
  zero = s32[] constant(0)
  block = f32[4,64] dynamic-slice(x, i, zero), dynamic_slice_sizes={4,64}
  a = (f32[4,64], f32[4,64]) tuple(block, y)
  b = (f32[4,64]) tuple(block)
  ROOT r = f32[4,64] conditional(p, a, b), true_computation=reads, false_computation=other
})");
    Compiled compiled = compile(text);
    ASSERT_NE(compiled.executable, nullptr);
    Literal x(Shape::array(PrimitiveType::kF32, {64, 64}));
    for (size_t k = 0; k < x.data<float>().size(); ++k) x.data<float>()[k] = static_cast<float>(k % 97) - 40.0f;
    Literal y(Shape::array(PrimitiveType::kF32, {4, 64}));
    for (size_t k = 0; k < y.data<float>().size(); ++k) y.data<float>()[k] = static_cast<float>(k % 13);
    for (bool reads : {true, false})
      for (int32_t i : {0, 17, 70}) {
        SCOPED_TRACE(str_cat("returned=", returned, " reads=", reads, " i=", i));
        const std::vector<Literal> arguments = {x, y, Literal::scalar<int32_t>(i), Literal::scalar<bool>(reads)};
        StatusOr<Literal> expected = evaluate_module(*compiled.original, arguments);
        ASSERT_TRUE(expected.ok()) << expected.status().to_string();
        ExecutionStats stats;
        StatusOr<std::vector<BufferHandle>> results =
            compiled.executable->execute(to_handles(arguments), {.stats = &stats});
        ASSERT_TRUE(results.ok()) << results.status().to_string();
        EXPECT_TRUE(*(*results)[0].to_literal() == *expected);
        EXPECT_EQ(stats.bytes_copied, 0);
        EXPECT_EQ(stats.bytes_staged, returned ? 4 * 64 * 4 : 0);
      }
  }
}

}  // namespace
}  // namespace insitu
