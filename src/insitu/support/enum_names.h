// Spelling an enum and reading it back through one table of {value, name} pairs, so an enum's
// names are written once (dtype.cc, attributes.cc, copy_reason.cc, donor_matching.cc):
//   constexpr std::pair<Color, std::string_view> kColorNames[] = {{Color::kRed, "red"}, ...};
//   name_of_enum(kColorNames, Color::kRed, "?")  -> "red"
//   enum_from_name(kColorNames, "red")           -> Color::kRed (nullopt for an unknown name)
// Linear search: the tables are small and these run at parse and print time, not per element.
#pragma once

#include <iterator>
#include <optional>
#include <string_view>
#include <type_traits>

namespace insitu {

template <typename Table, typename Enum>
constexpr std::string_view name_of_enum(const Table& table, Enum value, std::string_view otherwise) {
  for (const auto& [entry, name] : table)
    if (entry == value) return name;
  return otherwise;
}

template <typename Table>
constexpr auto enum_from_name(const Table& table, std::string_view name)
    -> std::optional<std::remove_cvref_t<decltype(std::begin(table)->first)>> {
  for (const auto& [entry, text] : table)
    if (text == name) return entry;
  return std::nullopt;
}

}  // namespace insitu
