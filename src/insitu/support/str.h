// Small string helpers std lacks: str_cat, str_join, content_hash.
#pragma once

#include <cstdint>
#include <cstdio>
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

// Two 64-bit hashes of `bytes` (FNV-1a, and a multiply-xorshift over its bytes) as 32 hex
// digits: a name for content (the PTX cache's file names, the PJRT plugin's fingerprints).
inline std::string content_hash(std::string_view bytes) {
  uint64_t fnv = 14695981039346656037ull, mix = 0x9e3779b97f4a7c15ull;
  for (unsigned char c : bytes) {
    fnv = (fnv ^ c) * 1099511628211ull;
    mix = (mix ^ c) * 0xbf58476d1ce4e5b9ull;
    mix ^= mix >> 31;
  }
  char name[33];
  std::snprintf(name, sizeof(name), "%016llx%016llx", static_cast<unsigned long long>(fnv),
                static_cast<unsigned long long>(mix));
  return name;
}

}  // namespace insitu
