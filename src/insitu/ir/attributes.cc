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

std::string_view comparison_direction_name(ComparisonDirection direction) {
  return name_of_enum(kDirections, direction, "?");
}
std::optional<ComparisonDirection> parse_comparison_direction(std::string_view name) {
  return enum_from_name(kDirections, name);
}
std::string_view comparison_type_name(ComparisonType type) { return name_of_enum(kTypes, type, ""); }
std::optional<ComparisonType> parse_comparison_type(std::string_view name) { return enum_from_name(kTypes, name); }

}  // namespace insitu
