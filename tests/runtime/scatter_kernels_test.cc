// Native in-place scatter against the reference evaluator: assignment, add and a generic
// combiner, duplicate indices (combined in order), windows out of range (dropped), f32, s32
// and bf16, and 2-D windows.
#include "insitu/evaluator/evaluator.h"
#include "insitu/ir/parser.h"
#include "kernel_test_util.h"

namespace insitu {
namespace {

using testing_runtime::random_literal;
using testing_runtime::view_of;

std::string scatter_module(const std::string& type, const std::string& combiner) {
  // An empty combiner is assignment: the root is the update parameter itself.
  const std::string update = combiner.empty() ? "  ROOT update = " : "  update = ";
  return "HloModule s\n\ncombine {\n  current = " + type + "[] parameter(0)\n" + update + type +
         "[] parameter(1)\n" + combiner +
         "}\n\nENTRY main {\n"
         "  operand = " + type + "[9,5] parameter(0)\n"
         "  indices = s32[12,2] parameter(1)\n"
         "  updates = " + type + "[12,3] parameter(2)\n"
         "  ROOT scatter = " + type + "[9,5] scatter(operand, indices, updates), update_window_dims={1}, "
         "inserted_window_dims={0}, scatter_dims_to_operand_dims={0,1}, index_vector_dim=1, to_apply=combine\n"
         "}\n";
}

// Runs `module`'s root scatter natively, in place in operands[0], and expects the evaluator's
// result of the whole entry on the same operands.
void expect_in_place_matches(const Module& module, std::vector<Literal>& operands, const std::string& what) {
  std::vector<const Literal*> pointers = {&operands[0], &operands[1], &operands[2]};
  StatusOr<Literal> expected = evaluate_computation(*module.entry(), pointers);
  ASSERT_TRUE(expected.ok()) << expected.status().to_string();
  ThreadPool pool(2);
  std::vector<ArrayView> views = {view_of(operands[0]), view_of(operands[1]), view_of(operands[2])};
  Status status;
  ASSERT_TRUE(run_native_kernel(*module.entry()->root(), views, views[0], pool, &status));
  ASSERT_TRUE(status.ok()) << status.to_string();
  EXPECT_TRUE(operands[0] == *expected) << what;
}

void expect_scatter_matches(const std::string& text, PrimitiveType type, uint32_t seed) {
  StatusOr<std::unique_ptr<Module>> module = parse_module(text);
  ASSERT_TRUE(module.ok()) << module.status().to_string();
  std::mt19937 rng(seed);
  std::vector<Literal> operands = {random_literal(type, {9, 5}, rng),
                                   Literal(Shape::array(PrimitiveType::kS32, {12, 2})),
                                   random_literal(type, {12, 3}, rng)};
  // Rows 0..9 (9 is out of range: dropped) and columns -1..3 (-1 and 3 do not fit 3 wide);
  // few distinct rows, so duplicates combine.
  for (int32_t& index : operands[1].data<int32_t>()) index = static_cast<int32_t>(rng() % 4);
  operands[1].data<int32_t>()[0] = 9;
  operands[1].data<int32_t>()[3] = -1;
  expect_in_place_matches(**module, operands, text);
}

TEST(RuntimeScatterKernels, InPlaceScatterMatchesEvaluator) {
  for (const auto& [name, type] : {std::pair{"f32", PrimitiveType::kF32}, std::pair{"s32", PrimitiveType::kS32},
                                   std::pair{"bf16", PrimitiveType::kBF16}}) {
    const std::string t = name;
    for (uint32_t seed : {1u, 2u, 3u}) {
      expect_scatter_matches(scatter_module(t, ""), type, seed);
      expect_scatter_matches(scatter_module(t, "  ROOT r = " + t + "[] add(current, update)\n"), type, seed);
      expect_scatter_matches(scatter_module(t, "  ROOT r = " + t + "[] maximum(update, current)\n"), type, seed);
      expect_scatter_matches(scatter_module(t, "  m = " + t + "[] multiply(current, update)\n  ROOT r = " + t +
                                                   "[] subtract(m, update)\n"),
                             type, seed);
    }
  }
}

// Single elements (no update window dimension), the index vectors the indices' last dimension:
// the fast path of scatter_updates. Indices below 0 and past the end are dropped, duplicates
// combine in update order; a 1-D operand (as a Pallas masked store lowers) and a 2-D one.
TEST(RuntimeScatterKernels, SingleElementScattersMatchEvaluator) {
  const std::string one_d = R"(
HloModule single
combine {
  current = f32[] parameter(0)
  ROOT update = f32[] parameter(1)
}
adding {
  current = f32[] parameter(0)
  update = f32[] parameter(1)
  ROOT r = f32[] add(current, update)
}
ENTRY main {
  operand = f32[9,5] parameter(0)
  indices = s32[12,2] parameter(1)
  updates = f32[12] parameter(2)
  ROOT scatter = f32[9,5] scatter(operand, indices, updates), update_window_dims={}, inserted_window_dims={0,1}, scatter_dims_to_operand_dims={0,1}, index_vector_dim=1, to_apply=COMBINER
})";
  for (const std::string combiner : {"combine", "adding"}) {
    std::string text = one_d;
    text.replace(text.find("COMBINER"), 8, combiner);
    StatusOr<std::unique_ptr<Module>> module = parse_module(text);
    ASSERT_TRUE(module.ok()) << module.status().to_string();
    for (uint32_t seed : {1u, 2u, 3u, 4u}) {
      std::mt19937 rng(seed);
      std::vector<Literal> operands = {random_literal(PrimitiveType::kF32, {9, 5}, rng),
                                       Literal(Shape::array(PrimitiveType::kS32, {12, 2})),
                                       random_literal(PrimitiveType::kF32, {12}, rng)};
      // rows -2..10 and columns -2..6: some out of range either way, few distinct: duplicates
      int32_t* at = operands[1].data<int32_t>().data();
      for (int k = 0; k < 12; ++k) {
        at[2 * k] = static_cast<int32_t>(rng() % 13) - 2;
        at[2 * k + 1] = static_cast<int32_t>(rng() % 3);
      }
      at[1] = 5;  // column 5: past the end of 5
      at[3] = -1;
      expect_in_place_matches(**module, operands, combiner + " seed " + std::to_string(seed));
    }
  }
}

}  // namespace
}  // namespace insitu
