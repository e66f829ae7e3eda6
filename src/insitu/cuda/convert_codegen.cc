// The CUDA expressions of the convert ops (the CPU's are runtime/convert_kernels.cc), for the
// elementwise generator (elementwise_codegen.cc): convert, whose float -> integer is spelled out
// since a C++ cast of an out-of-range float is undefined, and stochastic-convert, the steps of
// the evaluator's stochastic_convert_value (evaluator/element_arithmetic.h).
#include <cstdio>
#include <limits>

#include "insitu/cuda/codegen_internal.h"
#include "insitu/support/str.h"

namespace insitu::cuda::detail {
namespace {

// An integer type's largest and smallest values as C++ literals.
std::string max_literal(PrimitiveType type) {
  const int bits = static_cast<int>(bit_width(type));
  if (is_unsigned_integral(type))
    return bits == 64 ? std::string("18446744073709551615ull") : str_cat((uint64_t{1} << bits) - 1, "u");
  return bits == 64 ? std::string("9223372036854775807ll") : str_cat((int64_t{1} << (bits - 1)) - 1);
}
std::string min_literal(PrimitiveType type) {
  const int bits = static_cast<int>(bit_width(type));
  if (is_unsigned_integral(type)) return "0u";
  return bits == 64 ? std::string("(-9223372036854775807ll - 1)")
                    : str_cat("(", -((int64_t{1} << (bits - 1)) - 1), " - 1)");
}

// `value` as an exact hexadecimal literal of float (suffix "f") or double.
std::string float_literal(double value, bool is_float) {
  char text[64];
  std::snprintf(text, sizeof(text), "%a", is_float ? static_cast<double>(static_cast<float>(value)) : value);
  return str_cat(text, is_float ? "f" : "");
}

}  // namespace

StatusOr<std::string> convert_expression(const Instruction& convert, const std::string& x, const std::string& type) {
  // Float to integer truncates toward zero and saturates, NaN -> 0 (the evaluator's, and XLA's rules).
  const PrimitiveType from = convert.operand(0)->shape().element_type();
  const PrimitiveType to = convert.shape().element_type();
  if (!is_floating(from) || to == PrimitiveType::kPred || is_floating(to)) return str_cat("(", type, ")(", x, ")");
  const std::string suffix = from == PrimitiveType::kF64 ? "" : "f";
  const int bits = static_cast<int>(bit_width(to));
  const bool is_unsigned = is_unsigned_integral(to);
  const std::string high = str_cat("0x1p", is_unsigned ? bits : bits - 1, suffix);
  const std::string low = is_unsigned ? str_cat("0", suffix == "f" ? ".0f" : ".0") : str_cat("-", high);
  return str_cat("(", x, " != ", x, " ? (", type, ")0 : ", x, " >= ", high, " ? (", type, ")", max_literal(to), " : ", x,
                 " <= ", low, " ? (", type, ")", min_literal(to), " : (", type, ")(", x, "))");
}

StatusOr<std::string> stochastic_convert_expression(const Instruction& op, const std::string& x,
                                                    const std::string& random, const std::string& type) {
  const PrimitiveType from = op.operand(0)->shape().element_type();
  const PrimitiveType to = op.shape().element_type();
  const bool from_supported = from == PrimitiveType::kF16 || from == PrimitiveType::kBF16 ||
                              from == PrimitiveType::kF32 || from == PrimitiveType::kF64;
  if (!from_supported || !is_signed_integral(to) || bit_width(to) < 8)
    return refuse(op, "stochastic-convert rounds f16, bf16, f32 and f64 to s8, s16, s32 and s64 only");
  // x arrives in its compute type: float for f16 and bf16 (exact), else its own.
  const bool is_float = from != PrimitiveType::kF64;
  const int to_bits = static_cast<int>(bit_width(to)), random_bits = static_cast<int>(bit_width(from));
  const std::string unsigned_to = to_bits == 8 ? "unsigned char" : to_bits == 16 ? "unsigned short"
                                  : to_bits == 32 ? "unsigned int" : "unsigned long long";
  const std::string random_type = random_bits == 16 ? "unsigned short" : random_bits == 32 ? "unsigned int"
                                                                                            : "unsigned long long";
  const std::string fabs = is_float ? "fabsf" : "fabs", floor = is_float ? "floorf" : "floor";
  const std::string whole = str_cat(floor, "(", fabs, "(", x, "))");
  // Rounded down, plus one when the random bits are below the fraction scaled to 2^bits (exact).
  const std::string rounded =
      str_cat("(", unsigned_to, ")((", unsigned_to, ")(", type, ")", whole, " + (", unsigned_to, ")(", random, " < (",
              random_type, ")((", fabs, "(", x, ") - ", whole, ") * 0x1p", random_bits, is_float ? "f" : "", "))",
              ")");
  const double lowest = -std::ldexp(1.0, to_bits - 1);
  const double highest = to_bits == 64 ? std::ldexp(1.0, 63) : std::ldexp(1.0, to_bits - 1) - 1;
  return str_cat("(", x, " <= ", float_literal(lowest, is_float), " ? (", type, ")", min_literal(to), " : ", x,
                 " >= ", float_literal(highest, is_float), " ? (", type, ")", max_literal(to), " : ", x, " != ", x,
                 " ? (", type, ")0 : (", type, ")(", x, " < 0 ? (", unsigned_to, ")((", unsigned_to, ")0 - ", rounded,
                 ") : ", rounded, "))");
}

}  // namespace insitu::cuda::detail
