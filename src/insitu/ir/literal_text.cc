// XLA literal text for Literal::to_string and Literal::values_to_string.
//
// The spelling follows XLA's literal printer (xla/literal.cc): rank-1 arrays as "{1, 2, 3}",
// rank >= 2 as nested braces with a space inside every brace that holds more than one element
// ("{ { 1, 2 }, { 3, 4 } }" on one line), pred arrays as 0/1 and pred scalars as true/false,
// complex numbers as "(re, im)". Floating-point values print the way XLA's RoundTripFpToString
// does: the short "%g" form when it reads back bit-exactly, otherwise the max_digits10 form, so
// every constant parses back to the same bits.
#include <bit>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <limits>
#include <span>
#include <string>
#include <vector>

#include "insitu/ir/literal.h"
#include "insitu/support/str.h"

namespace insitu {
namespace {

std::string format_g(int digits, double value) {
  char buffer[64];
  std::snprintf(buffer, sizeof(buffer), "%.*g", digits, value);
  return buffer;
}

// "(0x...)" after "nan" when a NaN carries a payload other than the plain quiet bit, as XLA
// prints it; `mantissa_bits` is the width of the type's mantissa field.
std::string nan_payload_suffix(uint64_t bits, int mantissa_bits) {
  uint64_t mask = (uint64_t{1} << mantissa_bits) - 1;
  uint64_t payload = bits & mask;
  uint64_t quiet = uint64_t{1} << (mantissa_bits - 1);
  if (payload == quiet) return "";
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "(0x%llx)", static_cast<unsigned long long>(payload));
  return buffer;
}

std::string float_to_string(float value) {
  std::string text = format_g(std::numeric_limits<float>::digits10, value);
  if (!std::isnan(value) && std::strtof(text.c_str(), nullptr) != value)
    text = format_g(std::numeric_limits<float>::max_digits10, value);
  if (std::isnan(value)) text += nan_payload_suffix(std::bit_cast<uint32_t>(value), 23);
  return text;
}

std::string double_to_string(double value) {
  std::string text = format_g(std::numeric_limits<double>::digits10, value);
  if (!std::isnan(value) && std::strtod(text.c_str(), nullptr) != value)
    text = format_g(std::numeric_limits<double>::max_digits10, value);
  if (std::isnan(value)) text += nan_payload_suffix(std::bit_cast<uint64_t>(value), 52);
  return text;
}

// bf16 and f16 print with their max_digits10 (4 and 5), as XLA's GenericRoundTripFpToString.
std::string bfloat16_to_string(BFloat16 value) {
  float f = value.to_float();
  std::string text = format_g(4, f);
  if (std::isnan(f)) text += nan_payload_suffix(value.bits, 7);
  return text;
}

std::string half_to_string(Half value) {
  float f = value.to_float();
  std::string text = format_g(5, f);
  if (std::isnan(f)) text += nan_payload_suffix(value.bits, 10);
  return text;
}

// The narrow floats print with "%.*g" and their max_digits10 (ceil(1 + p log10 2) for p
// significand bits), as XLA does; NaN payloads only for the IEEE-style formats.
template <NarrowFloatFormat F>
std::string narrow_float_to_string(NarrowFloat<F> value) {
  const int significand_bits = F.mantissa_bits + 1;
  const int max_digits10 = 1 + (significand_bits * 30103 + 99999) / 100000;
  const float f = value.to_float();
  std::string text = format_g(max_digits10, f);
  if (std::isnan(f) && F.kind == NarrowFloatKind::kIeee) text += nan_payload_suffix(value.bits, F.mantissa_bits);
  return text;
}

template <typename T>
std::string element_to_string(T value, bool pred_as_digit) {
  if constexpr (std::is_same_v<T, bool>) {
    if (pred_as_digit) return value ? "1" : "0";
    return value ? "true" : "false";
  } else if constexpr (std::is_same_v<T, float>) {
    return float_to_string(value);
  } else if constexpr (std::is_same_v<T, double>) {
    return double_to_string(value);
  } else if constexpr (std::is_same_v<T, BFloat16>) {
    return bfloat16_to_string(value);
  } else if constexpr (std::is_same_v<T, Half>) {
    return half_to_string(value);
  } else if constexpr (kIsNarrowFloat<T>) {
    return narrow_float_to_string(value);
  } else if constexpr (kIsSubByteInt<T>) {
    return std::to_string(value.get());
  } else if constexpr (std::is_same_v<T, std::complex<float>>) {
    return "(" + float_to_string(value.real()) + ", " + float_to_string(value.imag()) + ")";
  } else if constexpr (std::is_same_v<T, std::complex<double>>) {
    return "(" + double_to_string(value.real()) + ", " + double_to_string(value.imag()) + ")";
  } else {
    return std::to_string(value);
  }
}

// One array's values, XLA's DenseArrayPrintHelper without the shape.
std::string array_values_to_string(const Literal& literal, bool oneline) {
  const Shape& shape = literal.shape();
  const int64_t rank = shape.rank();
  const std::string linebreak = oneline ? " " : "\n";
  std::string out;
  dispatch_element_type(shape.element_type(), [&](auto tag) {
    using T = decltype(tag);
    std::span<const T> data = literal.data<T>();
    int64_t linear = 0;
    // dims_left: how many dimensions remain below this level; index_path: indices above.
    std::vector<int64_t> index_path;
    std::function<void(int64_t)> print_level = [&](int64_t level) {
      if (level == rank) {
        out += element_to_string<T>(data[linear++], /*pred_as_digit=*/rank > 0);
        return;
      }
      const int64_t size = shape.dimension(level);
      const int64_t dims_left = rank - level;
      // Opening brace.
      if (rank == 1) {
        out += "{";
      } else if (dims_left == 1) {
        out += std::string(oneline ? "" : "  ") + "{" + (size <= 1 ? "" : " ");
      } else if (rank > 3 && !index_path.empty()) {
        out += "{ /*i" + std::to_string(index_path.size() - 1) + "=" + std::to_string(index_path.back()) +
               "*/" + (size > 0 ? linebreak : "");
      } else {
        out += "{" + linebreak;
      }
      for (int64_t i = 0; i < size; ++i) {
        index_path.push_back(i);
        print_level(level + 1);
        index_path.pop_back();
        if (i < size - 1) out += "," + (dims_left > 1 ? linebreak : std::string(" "));
      }
      // Closing brace.
      if (rank == 1) {
        out += "}";
      } else if (dims_left == 1) {
        out += std::string(size <= 1 ? "" : " ") + "}";
      } else {
        out += linebreak + "}";
      }
    };
    // A zero-element array whose outer dimensions are large prints as `{}` (the nested form
    // would be one `{}` per row: 10^12 of them for an f32[1000000000000,0]).
    int64_t rows = 1;  // the `{}`s the nested form prints (counted up to 65)
    for (int64_t i = 0; i < rank && shape.dimension(i) != 0 && rows <= 64; ++i) rows *= shape.dimension(i);
    if (shape.element_count() == 0 && rank > 1 && rows > 64) {
      out += "{}";
      return;
    }
    print_level(0);
  });
  return out;
}

}  // namespace

std::string Literal::values_to_string() const {
  if (shape_.is_tuple()) {
    return "(" + str_join(elements_, ", ", [](const Literal& e) { return e.values_to_string(); }) + ")";
  }
  if (shape_.is_token()) return "token";
  if (!shape_.is_array()) return "invalid";
  return array_values_to_string(*this, /*oneline=*/true);
}

std::string Literal::to_string() const {
  if (shape_.is_tuple()) return shape_.to_string(false) + " " + values_to_string();
  if (!shape_.is_array()) return values_to_string();
  return shape_.to_string(false) + " " + array_values_to_string(*this, /*oneline=*/false);
}

}  // namespace insitu
