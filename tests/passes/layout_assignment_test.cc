// layout-assignment: custom-call operand constraints cost a copy only on a real mismatch
// (minor_to_major or memory space, never tiles), input copies get their provenance, and the
// entry interface decides parameter and result layouts. Results unchanged.
#include "insitu/passes/layout_assignment.h"

#include <fstream>
#include <sstream>

#include "insitu/ir/copy_reason.h"
#include "pass_test_util.h"
#include "test_kernels.h"

namespace insitu {
namespace {

using testing::count_opcode;
using testing::expect_checks;
using testing::run_and_compare;

class LayoutAssignmentTest : public ::testing::Test {
 protected:
  void SetUp() override { testing::register_test_kernels(); }
};

const Instruction* only_copy(const Module& module) {
  const Instruction* found = nullptr;
  for (const Instruction* instruction : module.entry()->instructions())
    if (instruction->opcode() == Opcode::kCopy) {
      EXPECT_EQ(found, nullptr) << "more than one copy";
      found = instruction;
    }
  return found;
}

TEST_F(LayoutAssignmentTest, ConstraintDifferingOnlyInTilesCostsNothing) {
  auto module = parse_verified(R"(
HloModule m

ENTRY main {
  p = s32[4]{0:T(128)} parameter(0)
  ROOT k = s32[4]{0} custom-call(p), custom_call_target="test_negate", operand_layout_constraints={s32[4]{0}}, output_to_operand_aliasing={{}: (0, {})}
}
)");
  auto after = run_and_compare(*module, assign_layouts, /*expect_changed=*/false);
  EXPECT_EQ(count_opcode(*after, Opcode::kCopy), 0);
}

TEST_F(LayoutAssignmentTest, ConstraintWithOtherMinorToMajorCopiesOnce) {
  auto module = parse_verified(R"(
HloModule m

ENTRY main {
  p = f32[2,3]{1,0} parameter(0)
  q = f32[2,3]{0,1} parameter(1)
  ROOT k = f32[2,3]{1,0} custom-call(p, q), custom_call_target="test_negate", operand_layout_constraints={f32[2,3]{0,1}, f32[2,3]{0,1}}
}
)");
  auto after = run_and_compare(*module, assign_layouts, true);
  const Instruction* copy = only_copy(*after);
  ASSERT_NE(copy, nullptr);
  EXPECT_EQ(copy_reason(*copy), CopyReason::kLayoutChange);
  EXPECT_EQ(copy_detail(*copy),
            "custom-call %k (target \"test_negate\") requires operand 0 in layout {0,1}, but %p has {1,0}; "
            "producing %p in the required layout would avoid the copy");
  expect_checks(*after, R"(
CHECK: p = f32[2,3]{1,0} parameter(0)
CHECK: copy = f32[2,3]{0,1} copy(p), frontend_attributes={insitu_copy_detail="custom-call %k
CHECK-SAME: insitu_copy_reason="layout-change"}
CHECK-NEXT: ROOT k = f32[2,3]{1,0} custom-call(copy, q)
)");
}

TEST_F(LayoutAssignmentTest, ConstraintInAnotherMemorySpaceCopies) {
  auto module = parse_verified(R"(
HloModule m

ENTRY main {
  p = s32[4]{0} parameter(0)
  copy = s32[4]{0} negate(p)
  ROOT k = s32[4]{0} custom-call(copy), custom_call_target="test_negate", operand_layout_constraints={s32[4]{0:S(1)}}
}
)");
  auto after = run_and_compare(*module, assign_layouts, true);
  const Instruction* copy = only_copy(*after);
  ASSERT_NE(copy, nullptr);
  EXPECT_EQ(copy->name(), "copy.1");  // "copy" is taken
  EXPECT_EQ(copy->shape().to_string(), "s32[4]{0:S(1)}");
  EXPECT_EQ(copy_reason(*copy), CopyReason::kMemorySpaceChange);
  EXPECT_NE(copy_detail(*copy).find("requires operand 0 in memory space S(1)"), std::string::npos) << copy_detail(*copy);
  EXPECT_NE(copy_detail(*copy).find("(S(0)->S(1))"), std::string::npos) << copy_detail(*copy);
}

TEST_F(LayoutAssignmentTest, InputCopiesGetTheirReasons) {
  auto module = parse_verified(R"(
HloModule m

ENTRY main {
  p = f32[2,3]{1,0} parameter(0)
  plain = f32[2,3]{1,0} copy(p)
  transposed = f32[2,3]{0,1} copy(p)
  moved = f32[2,3]{1,0:S(3)} copy(p)
  tiled = f32[2,3]{1,0:T(8,128)} copy(p)
  explained = f32[2,3]{1,0} copy(p), frontend_attributes={insitu_copy_reason="loop-carried",insitu_copy_detail="kept"}
  ROOT t = (f32[2,3], f32[2,3], f32[2,3], f32[2,3], f32[2,3]) tuple(plain, transposed, moved, tiled, explained)
}
)");
  auto after = run_and_compare(*module, assign_layouts, true);
  auto reason_of = [&](std::string_view name) { return copy_reason(*after->entry()->find_instruction(name)); };
  auto detail_of = [&](std::string_view name) { return copy_detail(*after->entry()->find_instruction(name)); };
  EXPECT_EQ(reason_of("plain"), CopyReason::kUserCopy);
  EXPECT_EQ(reason_of("transposed"), CopyReason::kLayoutChange);
  EXPECT_EQ(detail_of("transposed"),
            "copy %transposed of %p was written in the input and changes its layout from {1,0} to {0,1}.");
  EXPECT_EQ(reason_of("moved"), CopyReason::kMemorySpaceChange);
  EXPECT_NE(detail_of("moved").find("(S(0)->S(3))"), std::string::npos) << detail_of("moved");
  EXPECT_EQ(reason_of("tiled"), CopyReason::kUserCopy);  // tiles do not change dense bytes
  EXPECT_EQ(reason_of("explained"), CopyReason::kLoopCarried);
  EXPECT_EQ(detail_of("explained"), "kept");
  EXPECT_EQ(count_opcode(*after, Opcode::kCopy), 5);
  // provenance is recorded once: a second run changes nothing
  run_and_compare(*after, assign_layouts, false);
}

TEST_F(LayoutAssignmentTest, EntryInterfaceDecidesParameterAndResultLayouts) {
  auto module = parse_verified(R"(
HloModule m, entry_computation_layout={(f32[2,3]{0,1}, (s32[4]{0:T(128)}, f32[]))->(f32[2,3]{0,1}, s32[4]{0})}

ENTRY main {
  p = f32[2,3]{1,0} parameter(0)
  q = (s32[4]{0}, f32[]) parameter(1)
  e = s32[4]{0} get-tuple-element(q), index=0
  n = f32[2,3]{1,0} negate(p)
  other = f32[2,3]{1,0} abs(n)
  ROOT t = (f32[2,3]{1,0}, s32[4]{0}) tuple(n, e)
}
)");
  auto after = run_and_compare(*module, assign_layouts, true);
  expect_checks(*after, R"(
CHECK: p = f32[2,3]{0,1} parameter(0)
CHECK-NEXT: q = (s32[4]{0:T(128)}, f32[]) parameter(1)
CHECK-NEXT: e = s32[4]{0:T(128)} get-tuple-element(q), index=0
CHECK-NEXT: n = f32[2,3]{1,0} negate(p)
CHECK-NEXT: other = f32[2,3]{1,0} abs(n)
CHECK-NEXT: copy = f32[2,3]{0,1} copy(n), frontend_attributes={insitu_copy_detail="the entry result {0} must be in layout {0,1}, but %n has {1,0} (entry_computation_layout says so); computing it in the interface layout would avoid the copy",insitu_copy_reason="layout-change"}
CHECK-NEXT: ROOT t.1 = (f32[2,3]{0,1}, s32[4]{0:T(128)}) tuple(copy, e)
)");
  EXPECT_EQ(count_opcode(*after, Opcode::kCopy), 1);
  run_and_compare(*after, assign_layouts, false);
}

// mlp_grad's weight gradients as JAX prints them: transpose{0,1} of a dot, while the interface
// wants {1,0}. The transpose is read by nothing but the root tuple, so it is computed in {1,0}
// (no copy). A bitcast's layout is its meaning and a parameter's is the caller's: those are copied.
TEST_F(LayoutAssignmentTest, ResultOpReadOnlyByTheRootComputesInTheInterfaceLayout) {
  auto module = parse_verified(R"(
HloModule m, entry_computation_layout={(f32[5,4]{1,0}, f32[5,16]{1,0}, f32[2,3]{1,0})->(f32[16,4]{1,0}, f32[3,2]{1,0}, f32[2,3]{0,1})}

ENTRY main {
  g = f32[5,4]{1,0} parameter(0)
  h = f32[5,16]{1,0} parameter(1)
  p = f32[2,3]{1,0} parameter(2)
  dot = f32[4,16]{1,0} dot(g, h), lhs_contracting_dims={0}, rhs_contracting_dims={0}
  transpose = f32[16,4]{0,1} transpose(dot), dimensions={1,0}
  bitcast = f32[3,2]{0,1} bitcast(p)
  ROOT t = (f32[16,4]{0,1}, f32[3,2]{0,1}, f32[2,3]{1,0}) tuple(transpose, bitcast, p)
}
)");
  auto after = run_and_compare(*module, assign_layouts, true);
  expect_checks(*after, R"(
CHECK: transpose = f32[16,4]{1,0} transpose(dot), dimensions={1,0}
CHECK-NEXT: bitcast = f32[3,2]{0,1} bitcast(p)
CHECK-NEXT: copy = f32[3,2]{1,0} copy(bitcast)
CHECK-NEXT: copy.1 = f32[2,3]{0,1} copy(p)
CHECK-NEXT: ROOT t.1 = (f32[16,4]{1,0}, f32[3,2]{1,0}, f32[2,3]{0,1}) tuple(transpose, copy, copy.1)
)");
  EXPECT_EQ(count_opcode(*after, Opcode::kCopy), 2);
}

std::string read_seed(std::string_view name) {
  std::ifstream file(std::string(INSITU_SEED_DIR) + "/" + std::string(name));
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

TEST_F(LayoutAssignmentTest, SeedBeforeOptimizationsNeedsNoCopy) {
  std::string text = read_seed("sync_tensors_graph.before_optimizations.hlo");
  ASSERT_FALSE(text.empty());
  auto module = parse_verified(text);
  ASSERT_NE(module, nullptr);
  auto after = run_and_compare(*module, assign_layouts, true);
  EXPECT_EQ(count_opcode(*after, Opcode::kCopy), 0);
  // the interface's tiled layout is adopted; the constraint {0} matches it on CPU
  EXPECT_EQ(after->entry()->parameter(0)->shape().to_string(), "s32[4]{0:T(128)}");
  EXPECT_EQ(after->entry()->find_instruction("custom-call.2")->shape().to_string(), "s32[4]{0:T(128)}");
  EXPECT_EQ(after->entry()->root()->shape().to_string(), "(s32[4]{0:T(128)})");
}

TEST_F(LayoutAssignmentTest, SeedAfterOptimizationsExplainsCopy3) {
  std::string text = read_seed("sync_tensors_graph.after_optimizations.hlo");
  auto module = parse_verified(text);
  ASSERT_NE(module, nullptr);
  auto after = run_and_compare(*module, assign_layouts, true);
  const Instruction* copy = after->entry()->find_instruction("copy.3");
  ASSERT_NE(copy, nullptr);
  EXPECT_EQ(copy_reason(*copy), CopyReason::kMemorySpaceChange);
  EXPECT_EQ(copy_detail(*copy),
            "copy %copy.3 of %p0.1 was written in the input and moves it from memory space S(0) to S(3) "
            "(S(0)->S(3)). It is required because %p0.1 is aliased to output {0} (input_output_alias) while "
            "custom-call %name (target \"tpu_custom_call\"), which declares no output_to_operand_aliasing, "
            "still reads it: the output would overwrite the kernel's input. Declaring "
            "output_to_operand_aliasing={{}: (0, {})} on the custom call (with a kernel that writes in place) "
            "makes the copy unnecessary.");
  EXPECT_EQ(count_opcode(*after, Opcode::kCopy), 1);
}

}  // namespace
}  // namespace insitu
