#include "insitu/ir/attributes.h"
#include "insitu/support/enum_names.h"

#include <array>
#include <utility>

namespace insitu {
namespace {

constexpr std::array<std::pair<ComparisonDirection, std::string_view>, 6> kDirections = {{
    {ComparisonDirection::kEq, "EQ"}, {ComparisonDirection::kNe, "NE"}, {ComparisonDirection::kGe, "GE"},
    {ComparisonDirection::kGt, "GT"}, {ComparisonDirection::kLe, "LE"}, {ComparisonDirection::kLt, "LT"},
}};
constexpr std::array<std::pair<ComparisonType, std::string_view>, 4> kTypes = {{
    {ComparisonType::kFloat, "FLOAT"}, {ComparisonType::kTotalOrder, "TOTALORDER"},
    {ComparisonType::kSigned, "SIGNED"}, {ComparisonType::kUnsigned, "UNSIGNED"},
}};

}  // namespace

std::optional<DotAlgorithm> parse_dot_algorithm(std::string_view name) {
  using P = PrimitiveType;
  struct Row {
    std::string_view name;
    DotAlgorithm algorithm;
  };
  static const Row kAlgorithms[] = {
      {"unset", {}},
      {"dot_f32_f32_f32", {}},
      {"dot_f64_f64_f64", {}},
      {"dot_any_f8_any_f8_f32", {DotInput::kOperands, P::kF32, 1, 1}},
      {"dot_any_f8_any_f8_f32_fast_accum", {DotInput::kOperands, P::kF32, 1, 1}},
      {"dot_f16_f16_f16", {DotInput::kF16, P::kF16, 1, 1}},
      {"dot_f16_f16_f32", {DotInput::kF16, P::kF32, 1, 1}},
      {"dot_bf16_bf16_bf16", {DotInput::kBF16, P::kBF16, 1, 1}},
      {"dot_bf16_bf16_f32", {DotInput::kBF16, P::kF32, 1, 1}},
      {"dot_bf16_bf16_f32_x3", {DotInput::kBF16, P::kF32, 2, 3}},
      {"dot_bf16_bf16_f32_x6", {DotInput::kBF16, P::kF32, 3, 6}},
      {"dot_bf16_bf16_f32_x9", {DotInput::kBF16, P::kF32, 3, 9}},
      {"dot_tf32_tf32_f32", {DotInput::kTF32, P::kF32, 1, 1}},
      {"dot_tf32_tf32_f32_x3", {DotInput::kTF32, P::kF32, 2, 3}},
  };
  for (const Row& row : kAlgorithms)
    if (row.name == name) return row.algorithm;
  return std::nullopt;
}

std::string_view comparison_direction_name(ComparisonDirection direction) {
  return name_of_enum(kDirections, direction, "?");
}
std::optional<ComparisonDirection> parse_comparison_direction(std::string_view name) {
  return enum_from_name(kDirections, name);
}
std::string_view comparison_type_name(ComparisonType type) { return name_of_enum(kTypes, type, ""); }
std::optional<ComparisonType> parse_comparison_type(std::string_view name) { return enum_from_name(kTypes, name); }

}  // namespace insitu
