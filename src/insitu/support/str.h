// Small string helpers std lacks: str_cat, str_join.
#pragma once

#include <sstream>
#include <string>
#include <string_view>

namespace insitu {

// str_cat("operand ", 3, " has shape ", shape.to_string())
template <typename... Args>
std::string str_cat(const Args&... args) {
  std::ostringstream out;
  (out << ... << args);
  return out.str();
}

// str_join({1, 2, 3}, ",") == "1,2,3"; format(out, element) may customize each element.
template <typename Range>
std::string str_join(const Range& range, std::string_view separator) {
  std::ostringstream out;
  bool first = true;
  for (const auto& element : range) {
    if (!first) out << separator;
    first = false;
    out << element;
  }
  return out.str();
}

template <typename Range, typename Format>
std::string str_join(const Range& range, std::string_view separator, Format format) {
  std::string out;
  bool first = true;
  for (const auto& element : range) {
    if (!first) out += separator;
    first = false;
    out += format(element);
  }
  return out;
}

}  // namespace insitu
