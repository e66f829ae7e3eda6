// simplify: get-tuple-element of a tuple forwards the element; dead code goes, side effects,
// parameters and roots stay; the changed bit is exact; results unchanged.
#include "insitu/passes/simplify.h"

#include "pass_test_util.h"

namespace insitu {
namespace {

using testing::count_opcode;
using testing::expect_checks;
using testing::run_and_compare;

// JAX's softmax: reshape [6] -> [6,1], broadcast [6,1] -> [6,1], reshape back. The identity
// broadcast and the same-shape ops are read through; ops that change something stay.
TEST(SimplifyTest, IdentityOpsAreReadThrough) {
  auto module = parse_verified(R"(
HloModule m

ENTRY main {
  x = f32[6,1] parameter(0)
  same = f32[6,1] broadcast(x), dimensions={0,1}
  keep = f32[6,1] transpose(same), dimensions={0,1}
  full = f32[6,1] slice(keep), slice={[0:6], [0:1]}
  cast = f32[6,1] convert(full)
  widened = f32[6,1,4] broadcast(x), dimensions={0,1}
  relaid = f32[6,1]{0,1} copy(cast)
  half = f32[3,1] slice(cast), slice={[0:6:2], [0:1]}
  ROOT t = (f32[6,1,4], f32[6,1]{0,1}, f32[3,1]) tuple(widened, relaid, half)
}
)");
  auto after = run_and_compare(*module, simplify, /*expect_changed=*/true);
  expect_checks(*after, R"(
CHECK: ENTRY main
CHECK-NEXT: x = f32[6,1]{1,0} parameter(0)
CHECK-NEXT: widened = f32[6,1,4]{2,1,0} broadcast(x), dimensions={0,1}
CHECK-NEXT: relaid = f32[6,1]{0,1} copy(x)
CHECK-NEXT: half = f32[3,1]{1,0} slice(x), slice={[0:6:2], [0:1:1]}
CHECK-NEXT: ROOT t
)");
}

TEST(SimplifyTest, ForwardsTupleElementsAndRemovesPacking) {
  auto module = parse_verified(R"(
HloModule m

ENTRY main {
  a = f32[4] parameter(0)
  b = s32[] parameter(1)
  n = f32[4] negate(a)
  t = (f32[4], s32[]) tuple(n, b)
  inner = ((f32[4], s32[]), f32[4]) tuple(t, a)
  g0 = (f32[4], s32[]) get-tuple-element(inner), index=0
  g1 = f32[4] get-tuple-element(g0), index=0
  ROOT r = f32[4] add(g1, a)
}
)");
  auto after = run_and_compare(*module, simplify, /*expect_changed=*/true);
  EXPECT_EQ(count_opcode(*after, Opcode::kTuple), 0);
  EXPECT_EQ(count_opcode(*after, Opcode::kGetTupleElement), 0);
  expect_checks(*after, R"(
CHECK: ENTRY main
CHECK-NEXT: a = f32[4]{0} parameter(0)
CHECK-NEXT: b = s32[] parameter(1)
CHECK-NEXT: n = f32[4]{0} negate(a)
CHECK-NEXT: ROOT r = f32[4]{0} add(n, a)
CHECK-NEXT: }
)");
  // a second run finds nothing
  run_and_compare(*after, simplify, false);
}

TEST(SimplifyTest, RootGetTupleElementIsForwarded) {
  auto module = parse_verified(R"(
HloModule m

ENTRY main {
  a = s32[2] parameter(0)
  n = s32[2] negate(a)
  t = (s32[2], s32[2]) tuple(a, n)
  ROOT g = s32[2] get-tuple-element(t), index=1
}
)");
  auto after = run_and_compare(*module, simplify, true);
  EXPECT_EQ(after->entry()->root()->name(), "n");
  EXPECT_EQ(after->entry()->instruction_count(), 2);
}

TEST(SimplifyTest, KeepsSideEffectsParametersAndTupleOfWhile) {
  auto module = parse_verified(R"(
HloModule m

cond {
  s = (s32[], s32[2]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  k = s32[] constant(2)
  ROOT lt = pred[] compare(i, k), direction=LT
}

body {
  s = (s32[], s32[2]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  v = s32[2] get-tuple-element(s), index=1
  one = s32[] constant(1)
  j = s32[] add(i, one)
  unused = s32[2] multiply(v, v)
  ROOT out = (s32[], s32[2]) tuple(j, v)
}

ENTRY main {
  a = s32[2] parameter(0)
  unused_param = f32[3] parameter(1)
  zero = s32[] constant(0)
  log = s32[2] custom-call(a), custom_call_target="log_it", custom_call_has_side_effect=true
  pure = s32[2] custom-call(a), custom_call_target="pure_kernel"
  s0 = (s32[], s32[2]) tuple(zero, a)
  w = (s32[], s32[2]) while(s0), condition=cond, body=body
  ROOT r = s32[2] get-tuple-element(w), index=1
}
)");
  // (no evaluator run: the custom-call targets are not registered kernels)
  std::unique_ptr<Module> after = module->clone();
  auto changed = simplify(*after);
  ASSERT_TRUE(changed.ok()) << changed.status().to_string();
  EXPECT_TRUE(*changed);
  ASSERT_TRUE(verify_module(*after).ok());
  expect_checks(*after, R"(
CHECK: body {
CHECK-NOT: unused
CHECK: ROOT out
CHECK: ENTRY main
CHECK-NEXT: a = s32[2]{0} parameter(0)
CHECK-NEXT: unused_param = f32[3]{0} parameter(1)
CHECK-NEXT: zero = s32[] constant(0)
CHECK-NEXT: log = s32[2]{0} custom-call(a), custom_call_target="log_it", custom_call_has_side_effect=true
CHECK-NOT: pure
CHECK: s0 = (s32[], s32[2]{0}) tuple(zero, a)
CHECK-NEXT: w = (s32[], s32[2]{0}) while(s0)
CHECK-NEXT: ROOT r
)");
}

TEST(SimplifyTest, DeadWhileWithSideEffectStaysPureOneGoes) {
  auto module = parse_verified(R"(
HloModule m

cond {
  s = s32[] parameter(0)
  k = s32[] constant(2)
  ROOT lt = pred[] compare(s, k), direction=LT
}

body {
  s = s32[] parameter(0)
  one = s32[] constant(1)
  ROOT j = s32[] add(s, one)
}

cond2 {
  s = s32[] parameter(0)
  k = s32[] constant(2)
  ROOT lt = pred[] compare(s, k), direction=LT
}

body2 {
  s = s32[] parameter(0)
  e = s32[] custom-call(s), custom_call_target="emit", custom_call_has_side_effect=true
  one = s32[] constant(1)
  ROOT j = s32[] add(s, one)
}

ENTRY main {
  a = s32[] parameter(0)
  w = s32[] while(a), condition=cond, body=body
  w2 = s32[] while(a), condition=cond2, body=body2
  ROOT n = s32[] negate(a)
}
)");
  std::unique_ptr<Module> after = module->clone();
  auto changed = simplify(*after);
  ASSERT_TRUE(changed.ok());
  EXPECT_TRUE(*changed);
  EXPECT_EQ(after->entry()->find_instruction("w"), nullptr);
  EXPECT_NE(after->entry()->find_instruction("w2"), nullptr);
  // the dead loop's computations lost their only caller
  EXPECT_EQ(after->find_computation("cond"), nullptr);
  EXPECT_EQ(after->find_computation("body"), nullptr);
  EXPECT_NE(after->find_computation("body2"), nullptr);
  EXPECT_TRUE(verify_module(*after).ok());
}

TEST(SimplifyTest, ControlOrderThroughRemovedInstructionIsKept) {
  auto module = parse_verified(R"(
HloModule m

ENTRY main {
  a = f32[2] parameter(0)
  first = f32[2] negate(a)
  dead = f32[2] abs(a), control-predecessors={first}
  last = f32[2] exponential(a), control-predecessors={dead}
  ROOT t = (f32[2], f32[2]) tuple(first, last)
}
)");
  auto after = run_and_compare(*module, simplify, true);
  EXPECT_EQ(after->entry()->find_instruction("dead"), nullptr);
  const Instruction* last = after->entry()->find_instruction("last");
  ASSERT_EQ(last->control_predecessors().size(), 1u);
  EXPECT_EQ(last->control_predecessors()[0]->name(), "first");
}

TEST(SimplifyTest, CleanModuleIsUnchanged) {
  auto module = parse_verified(R"(
HloModule m

ENTRY main {
  a = f32[2] parameter(0)
  b = f32[2] parameter(1)
  s = f32[2] add(a, b)
  ROOT t = (f32[2], f32[2]) tuple(s, a)
}
)");
  auto after = run_and_compare(*module, simplify, false);
  EXPECT_EQ(after->entry()->instruction_count(), 4);
}

TEST(SimplifyTest, LayoutChangingElementIsNotForwarded) {
  auto module = parse_verified(R"(
HloModule m

ENTRY main {
  a = f32[2,3]{1,0} parameter(0)
  t = (f32[2,3]{1,0}) tuple(a)
  g = f32[2,3]{0,1} get-tuple-element(t), index=0
  ROOT n = f32[2,3]{1,0} negate(g)
}
)");
  auto after = run_and_compare(*module, simplify, false);
  EXPECT_NE(after->entry()->find_instruction("g"), nullptr);
}

}  // namespace
}  // namespace insitu
