// copy-elimination: copies the schedule shows are unnecessary go; needed ones stay, with a reason.
#include "copy_test_util.h"

namespace insitu {
namespace {

TEST(CopyEliminationTest, UnneededUserCopyIsRemoved) {
  auto module = copy_test::optimize(R"(
HloModule m, input_output_alias={ {}: (0, {}, may-alias) }
ENTRY main {
  p = f32[8] parameter(0)
  c = f32[8] copy(p)
  u = f32[2] parameter(1)
  z = s32[] constant(1)
  ROOT d = f32[8] dynamic-update-slice(c, u, z)
}
)");
  EXPECT_EQ(copy_test::copy_reasons(*module), std::vector<std::string>{});
}

TEST(CopyEliminationTest, NeededUserCopyStaysAndGetsTheRulesReason) {
  auto module = copy_test::optimize(R"(
HloModule m
ENTRY main {
  p = f32[8] parameter(0)
  c = f32[8] copy(p)
  u = f32[2] parameter(1)
  z = s32[] constant(1)
  ROOT d = f32[8] dynamic-update-slice(c, u, z)
}
)");
  EXPECT_EQ(copy_test::copy_reasons(*module), std::vector<std::string>{"live-after-in-place-write"});
  const Instruction* copy = module->entry()->find_instruction("c");
  ASSERT_NE(copy, nullptr);
  EXPECT_NE(copy_detail(*copy).find("written in the input program"), std::string::npos) << copy_detail(*copy);
}

TEST(CopyEliminationTest, LayoutChangingCopyStays) {
  auto module = copy_test::optimize(R"(
HloModule m
ENTRY main {
  p = f32[2,3]{1,0} parameter(0)
  c = f32[2,3]{0,1} copy(p)
  ROOT n = f32[2,3]{0,1} negate(c)
}
)");
  EXPECT_EQ(copy_test::copy_reasons(*module).size(), 1u);
}

TEST(CopyEliminationTest, CopyInsertedToBeSafeIsRemovedWhenTheReadComesFirst) {
  // A copy that protects a read of %x, although the read already runs before the update.
  auto module = parse_verified(R"(
HloModule m, input_output_alias={ {0}: (0, {}, may-alias) }
ENTRY main {
  x = f32[4] parameter(0)
  u = f32[1] parameter(1)
  z = s32[] constant(0)
  c = f32[4] copy(x), frontend_attributes={insitu_copy_reason="live-after-in-place-write",insitu_copy_detail="to be safe"}
  old = f32[1] dynamic-slice(c, z), dynamic_slice_sizes={1}
  d = f32[4] dynamic-update-slice(x, u, z)
  ROOT t = (f32[4], f32[1]) tuple(d, old)
}
)");
  ASSERT_TRUE(module);
  StatusOr<bool> changed = eliminate_copies(*module);
  ASSERT_TRUE(changed.ok());
  EXPECT_TRUE(*changed);
  EXPECT_EQ(copy_test::copy_reasons(*module), std::vector<std::string>{});
  EXPECT_EQ(module->entry()->find_instruction("old")->operand(0)->name(), "x");
}

}  // namespace
}  // namespace insitu
