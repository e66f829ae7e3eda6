// flatten-calls: calls inlined (names unique, control edges kept), shared while bodies and
// branches cloned so each has one caller, dead callees removed; results unchanged.
#include "insitu/passes/flatten_calls.h"

#include "pass_test_util.h"

namespace insitu {
namespace {

using testing::count_opcode;
using testing::expect_checks;
using testing::run_and_compare;

TEST(FlattenCallsTest, InlinesCallAndRemovesCallee) {
  auto module = parse_verified(R"(
HloModule m

square_plus {
  x = f32[4] parameter(0)
  y = f32[4] parameter(1)
  sq = f32[4] multiply(x, x)
  ROOT sum = f32[4] add(sq, y)
}

ENTRY main {
  a = f32[4] parameter(0)
  b = f32[4] parameter(1)
  sq = f32[4] negate(a)
  r = f32[4] call(sq, b), to_apply=square_plus
  ROOT out = f32[4] subtract(r, a)
}
)");
  auto after = run_and_compare(*module, flatten_calls, /*expect_changed=*/true);
  EXPECT_EQ(count_opcode(*after, Opcode::kCall), 0);
  EXPECT_EQ(after->computations().size(), 1u);
  expect_checks(*after, R"(
CHECK: ENTRY main
CHECK: sq = f32[4]{0} negate(a)
CHECK-NEXT: sq.1 = f32[4]{0} multiply(sq, sq)
CHECK-NEXT: sum.1 = f32[4]{0} add(sq.1, b)
CHECK-NEXT: ROOT out = f32[4]{0} subtract(sum.1, a)
)");
}

TEST(FlattenCallsTest, NestedCallsAndCallReturningParameter) {
  auto module = parse_verified(R"(
HloModule m

identity {
  ROOT p = s32[3] parameter(0)
}

inner {
  p = s32[3] parameter(0)
  ROOT n = s32[3] negate(p)
}

outer {
  p = s32[3] parameter(0)
  c = s32[3] call(p), to_apply=inner
  ROOT d = s32[3] call(c), to_apply=identity
}

ENTRY main {
  a = s32[3] parameter(0)
  x = s32[3] call(a), to_apply=outer
  y = s32[3] call(a), to_apply=outer
  ROOT t = (s32[3], s32[3]) tuple(x, y)
}
)");
  auto after = run_and_compare(*module, flatten_calls, true);
  EXPECT_EQ(count_opcode(*after, Opcode::kCall), 0);
  EXPECT_EQ(after->computations().size(), 1u);
  expect_checks(*after, R"(
CHECK: ENTRY main
CHECK-NEXT: a = s32[3]{0} parameter(0)
CHECK-NEXT: n.2 = s32[3]{0} negate(a)
CHECK-NEXT: n.3 = s32[3]{0} negate(a)
CHECK-NEXT: ROOT t = (s32[3]{0}, s32[3]{0}) tuple(n.2, n.3)
)");
}

constexpr std::string_view kSharedBody = R"(
HloModule m

cond {
  s = (s32[], f32[4]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  n = s32[] constant(3)
  ROOT lt = pred[] compare(i, n), direction=LT
}

body {
  s = (s32[], f32[4]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  v = f32[4] get-tuple-element(s), index=1
  one = s32[] constant(1)
  j = s32[] add(i, one)
  w = f32[4] add(v, v)
  ROOT out = (s32[], f32[4]) tuple(j, w)
}

ENTRY main {
  zero = s32[] constant(0)
  a = f32[4] parameter(0)
  b = f32[4] parameter(1)
  s0 = (s32[], f32[4]) tuple(zero, a)
  s1 = (s32[], f32[4]) tuple(zero, b)
  w0 = (s32[], f32[4]) while(s0), condition=cond, body=body
  w1 = (s32[], f32[4]) while(s1), condition=cond, body=body
  r0 = f32[4] get-tuple-element(w0), index=1
  r1 = f32[4] get-tuple-element(w1), index=1
  ROOT t = (f32[4], f32[4]) tuple(r0, r1)
}
)";

TEST(FlattenCallsTest, ClonesWhileBodySharedByTwoLoops) {
  auto module = parse_verified(kSharedBody);
  auto after = run_and_compare(*module, flatten_calls, true);
  EXPECT_EQ(after->computations().size(), 5u);
  expect_checks(*after, R"(
CHECK: ENTRY main
CHECK: w0 = (s32[], f32[4]{0}) while(s0), condition=cond, body=body
CHECK: w1 = (s32[], f32[4]{0}) while(s1), condition=cond.clone, body=body.clone
CHECK: cond.clone {
CHECK: body.clone {
CHECK: ROOT out.1 = (s32[], f32[4]{0}) tuple(j.1, w.1)
)");
  // every while computation has one caller now
  std::map<const Computation*, int> callers;
  for (const Computation* computation : after->computations())
    for (const Instruction* instruction : computation->instructions())
      for (const Computation* callee : instruction->called_computations()) ++callers[callee];
  for (const auto& [callee, count] : callers) EXPECT_EQ(count, 1) << callee->name();
  // idempotent: a flattened module does not change
  auto again = run_and_compare(*after, flatten_calls, false);
  EXPECT_EQ(again->computations().size(), 5u);
}

TEST(FlattenCallsTest, ConditionalWithOneBranchTwiceAndSharedReducer) {
  auto module = parse_verified(R"(
HloModule m

add {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = f32[] add(x, y)
}

branch {
  p = f32[4] parameter(0)
  z = f32[] constant(0)
  r = f32[] reduce(p, z), dimensions={0}, to_apply=add
  ROOT b = f32[4] broadcast(r), dimensions={}
}

ENTRY main {
  i = s32[] parameter(0)
  a = f32[4] parameter(1)
  z = f32[] constant(0)
  total = f32[] reduce(a, z), dimensions={0}, to_apply=add
  c = f32[4] conditional(i, a, a), branch_computations={branch, branch}
  ROOT t = (f32[4], f32[]) tuple(c, total)
}
)");
  auto after = run_and_compare(*module, flatten_calls, true);
  expect_checks(*after, R"(
CHECK: branch_computations={branch, branch.clone}
)");
  // the reducer is shared by reduces, which is fine: it is not control flow
  EXPECT_NE(after->find_computation("add"), nullptr);
  EXPECT_EQ(after->find_computation("add.clone"), nullptr);
}

TEST(FlattenCallsTest, NothingToDoIsUnchanged) {
  auto module = parse_verified(R"(
HloModule m

unused {
  ROOT p = f32[] parameter(0)
}

ENTRY main {
  a = f32[2] parameter(0)
  ROOT n = f32[2] negate(a)
}
)");
  auto after = run_and_compare(*module, flatten_calls, false);
  // a computation that was never called is not ours to remove
  EXPECT_EQ(after->computations().size(), 2u);
}

TEST(FlattenCallsTest, CallKeepsControlEdges) {
  auto module = parse_verified(R"(
HloModule m

f {
  p = f32[2] parameter(0)
  ROOT e = f32[2] exponential(p)
}

ENTRY main {
  a = f32[2] parameter(0)
  before = f32[2] negate(a)
  r = f32[2] call(a), to_apply=f, control-predecessors={before}
  after = f32[2] abs(a), control-predecessors={r}
  ROOT t = (f32[2], f32[2], f32[2]) tuple(before, r, after)
}
)");
  auto after = run_and_compare(*module, flatten_calls, true);
  const Instruction* inlined = after->entry()->find_instruction("e.1");
  ASSERT_NE(inlined, nullptr);
  ASSERT_EQ(inlined->control_predecessors().size(), 1u);
  EXPECT_EQ(inlined->control_predecessors()[0]->name(), "before");
  const Instruction* later = after->entry()->find_instruction("after");
  ASSERT_EQ(later->control_predecessors().size(), 1u);
  EXPECT_EQ(later->control_predecessors()[0], inlined);
}

}  // namespace
}  // namespace insitu
