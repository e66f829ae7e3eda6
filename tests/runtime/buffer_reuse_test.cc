// Regression tests for buffer reuse in the runtime: modules (shrunk by hand) where arena reuse
// or lazily read scalars gave the runtime different values from the reference evaluator. Each
// runs the full pipeline and compares every result leaf with the evaluator.
#include "executable_test_util.h"

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

}  // namespace
}  // namespace insitu
