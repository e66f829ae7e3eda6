// The in-place contract (analysis/in_place.h): which output leaves may or must share memory with
// which operand leaves, per kind of instruction.
#include "insitu/analysis/in_place.h"

#include <gtest/gtest.h>

#include "insitu/ir/parser.h"

namespace insitu {
namespace {

constexpr std::string_view kModule = R"(
HloModule m

chain {
  a = f32[4] parameter(0)
  b = f32[4] parameter(1)
  s = f32[] parameter(2)
  sb = f32[4] broadcast(s), dimensions={}
  m = f32[4] multiply(a, sb)
  n = f32[4] add(m, b)
  ROOT t = (f32[4], f32[4]) tuple(m, n)
}

less {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  u = s32[] parameter(2)
  v = s32[] parameter(3)
  ROOT lt = pred[] compare(x, y), direction=LT
}

ENTRY main {
  cache = f32[8,4] parameter(0)
  row = f32[1,4] parameter(1)
  i = s32[] parameter(2)
  x = f32[4] parameter(3)
  y = f32[4] parameter(4)
  s = f32[] parameter(5)
  keys = f32[4] parameter(6)
  values = s32[4] parameter(7)
  zero = s32[] constant(0)
  dus = f32[8,4] dynamic-update-slice(cache, row, i, zero)
  sum = f32[4] add(x, y)
  fused = (f32[4], f32[4]) fusion(x, y, s), kind=kLoop, calls=chain
  sorted = (f32[4], s32[4]) sort(keys, values), dimensions={0}, to_apply=less
  kernel = f32[4] custom-call(x, y), custom_call_target="k", output_to_operand_aliasing={{}: (1, {})}
  ROOT t = (f32[8,4], f32[4], (f32[4], f32[4]), (f32[4], s32[4]), f32[4]) tuple(dus, sum, fused, sorted, kernel)
}
)";

class InPlaceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto parsed = parse_module(kModule);
    ASSERT_TRUE(parsed.ok()) << parsed.status().to_string();
    module_ = std::move(parsed).value();
  }
  std::vector<SharingPair> sharing(std::string_view name) {
    const Instruction* instruction = module_->entry()->find_instruction(name);
    EXPECT_NE(instruction, nullptr) << name;
    return instruction ? operand_output_sharing(*instruction) : std::vector<SharingPair>{};
  }
  std::unique_ptr<Module> module_;
};

TEST_F(InPlaceTest, AnUpdateInPlaceMustShareItsOperand) {
  EXPECT_EQ(sharing("dus"), (std::vector<SharingPair>{{0, {}, {}, Sharing::kMust}}));
  EXPECT_EQ(in_place_pairs(*module_->entry()->find_instruction("dus")), (std::vector<InPlacePair>{{0, {}, {}}}));
  EXPECT_EQ(sharing("kernel"), (std::vector<SharingPair>{{1, {}, {}, Sharing::kMust}}));
}

TEST_F(InPlaceTest, ElementwiseResultsMayTakeEveryOperandOfTheirSize) {
  EXPECT_EQ(sharing("sum"), (std::vector<SharingPair>{{0, {}, {}, Sharing::kElementwise}, {1, {}, {}, Sharing::kElementwise}}));
  // a multi-output loop fusion: each output over x or y, never over the scalar it broadcasts
  EXPECT_EQ(sharing("fused"), (std::vector<SharingPair>{{0, {}, {0}, Sharing::kElementwise},
                                                         {1, {}, {0}, Sharing::kElementwise},
                                                         {0, {}, {1}, Sharing::kElementwise},
                                                         {1, {}, {1}, Sharing::kElementwise}}));
  EXPECT_TRUE(in_place_pairs(*module_->entry()->find_instruction("sum")).empty());
}

TEST_F(InPlaceTest, ASortsResultsMayTakeTheirOwnOperandsOnly) {
  EXPECT_EQ(sharing("sorted"),
            (std::vector<SharingPair>{{0, {}, {0}, Sharing::kSameSlot}, {1, {}, {1}, Sharing::kSameSlot}}));
}

TEST_F(InPlaceTest, OtherOpsShareNothing) {
  EXPECT_TRUE(sharing("zero").empty());
  EXPECT_TRUE(sharing("t").empty());
}

}  // namespace
}  // namespace insitu
