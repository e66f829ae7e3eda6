#include "insitu/ir/attributes.h"

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

std::string_view comparison_direction_name(ComparisonDirection direction) {
  for (const auto& [d, name] : kDirections)
    if (d == direction) return name;
  return "?";
}
std::optional<ComparisonDirection> parse_comparison_direction(std::string_view name) {
  for (const auto& [d, n] : kDirections)
    if (n == name) return d;
  return std::nullopt;
}
std::string_view comparison_type_name(ComparisonType type) {
  for (const auto& [t, name] : kTypes)
    if (t == type) return name;
  return "";
}
std::optional<ComparisonType> parse_comparison_type(std::string_view name) {
  for (const auto& [t, n] : kTypes)
    if (n == name) return t;
  return std::nullopt;
}

}  // namespace insitu
