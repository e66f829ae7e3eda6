// schedule: readers of a buffer's old value move before its in-place writer; everything else
// keeps its order and dependencies.
#include "copy_test_util.h"

namespace insitu {
namespace {

std::vector<std::string> names(const Computation& computation) {
  std::vector<std::string> out;
  for (const Instruction* instruction : computation.instructions()) out.push_back(instruction->name());
  return out;
}

TEST(ScheduleTest, ReadOfOldValueMovesBeforeInPlaceWrite) {
  auto module = parse_verified(R"(
HloModule m, input_output_alias={ {0}: (0, {}, may-alias) }
ENTRY main {
  x = f32[4] parameter(0)
  u = f32[1] parameter(1)
  z = s32[] constant(0)
  d = f32[4] dynamic-update-slice(x, u, z)
  old = f32[1] dynamic-slice(x, z), dynamic_slice_sizes={1}
  ROOT t = (f32[4], f32[1]) tuple(d, old)
}
)");
  ASSERT_TRUE(module);
  StatusOr<bool> changed = schedule_module(*module);
  ASSERT_TRUE(changed.ok());
  EXPECT_TRUE(*changed);
  EXPECT_EQ(names(*module->entry()), (std::vector<std::string>{"x", "u", "z", "old", "d", "t"}));
  EXPECT_TRUE(verify_module(*module).ok());
}

TEST(ScheduleTest, ReaderThatDependsOnTheWriteStaysAfterIt) {
  auto module = parse_verified(R"(
HloModule m
ENTRY main {
  x = f32[4] parameter(0)
  u = f32[1] parameter(1)
  z = s32[] constant(0)
  d = f32[4] dynamic-update-slice(x, u, z)
  r = f32[4] add(x, d)
  ROOT t = (f32[4], f32[4]) tuple(d, r)
}
)");
  ASSERT_TRUE(module);
  StatusOr<bool> changed = schedule_module(*module);
  ASSERT_TRUE(changed.ok());
  EXPECT_FALSE(*changed);
  EXPECT_EQ(names(*module->entry()), (std::vector<std::string>{"x", "u", "z", "d", "r", "t"}));
}

TEST(ScheduleTest, LoopBodyReadsOldStateBeforeNewStateIsDefined) {
  auto module = parse_verified(R"(
HloModule m
body {
  s = (f32[4], f32[4]) parameter(0)
  a = f32[4] get-tuple-element(s), index=0
  b = f32[4] get-tuple-element(s), index=1
  new_a = f32[4] negate(b)
  new_b = f32[4] reverse(a), dimensions={0}
  ROOT r = (f32[4], f32[4]) tuple(new_a, new_b)
}
cond {
  s = (f32[4], f32[4]) parameter(0)
  ROOT f = pred[] constant(false)
}
ENTRY main {
  p = f32[4] parameter(0)
  q = f32[4] negate(p)
  init = (f32[4], f32[4]) tuple(q, p)
  w = (f32[4], f32[4]) while(init), condition=cond, body=body
  ROOT a = f32[4] get-tuple-element(w), index=0
}
)");
  ASSERT_TRUE(module);
  ASSERT_TRUE(schedule_module(*module).ok());
  // new_b reads the old state {0}, so it runs before new_a overwrites state {0}... and new_a
  // reads old state {1}, which new_b overwrites: one of the two orders is forced, the first
  // soft edge wins and no cycle is created.
  std::vector<std::string> body = names(*module->find_computation("body"));
  EXPECT_EQ(body.back(), "r");
  EXPECT_TRUE(verify_module(*module).ok());
}

TEST(ScheduleTest, PrefersInstructionThatFreesABuffer) {
  auto module = parse_verified(R"(
HloModule m
ENTRY main {
  p = f32[4] parameter(0)
  a = f32[4] negate(p)
  b = f32[4] exponential(p)
  a2 = f32[4] abs(a)
  b2 = f32[4] abs(b)
  ROOT t = (f32[4], f32[4]) tuple(a2, b2)
}
)");
  ASSERT_TRUE(module);
  ASSERT_TRUE(schedule_module(*module).ok());
  // After %a, %a2 frees %a's buffer; it runs before %b allocates another one.
  EXPECT_EQ(names(*module->entry()), (std::vector<std::string>{"p", "a", "a2", "b", "b2", "t"}));
}

}  // namespace
}  // namespace insitu
