// Binary elementwise ops of the reference evaluator (compare lives in elementwise_compare.cc).
//
// Integer semantics follow XLA's HloEvaluator exactly:
//   add/subtract/multiply wrap (two's complement);
//   x / 0 == -1 for signed, all ones for unsigned; INT_MIN / -1 == INT_MIN;
//   x % 0 == x; INT_MIN % -1 == 0;
//   shifts by an amount >= the bit width (negative amounts included, read as unsigned) give 0,
//   or -1 for an arithmetic right shift of a negative value;
//   power: x^0 == 1^x == 1, a negative exponent gives 0 (x != 1), otherwise repeated squaring
//   that wraps; pred power is lhs || !rhs.
// maximum/minimum propagate NaN (the first NaN operand wins).
#include <cmath>
#include <complex>
#include <limits>

#include "insitu/evaluator/elementwise_internal.h"

namespace insitu::eval {
namespace {




template <typename T>
T arctangent2(T y, T x) {
  if constexpr (kIsComplex<T>) {
    const T i(0, 1);
    return -i * std::log((x + i * y) / std::sqrt(x * x + y * y));
  } else {
    return std::atan2(y, x);
  }
}

// The high half of the double-width product.
template <typename T>
T multiply_high(T lhs, T rhs) {
  constexpr int kBits = std::numeric_limits<std::make_unsigned_t<T>>::digits;
  if constexpr (kBits == 64) {
    using Wide = std::conditional_t<std::is_signed_v<T>, __int128, unsigned __int128>;
    return static_cast<T>((static_cast<Wide>(lhs) * static_cast<Wide>(rhs)) >> 64);
  } else {
    using Wide = std::conditional_t<std::is_signed_v<T>, int64_t, uint64_t>;
    return static_cast<T>((static_cast<Wide>(lhs) * static_cast<Wide>(rhs)) >> kBits);
  }
}

// complex(real, imag): f32 pairs make c64, f64 pairs make c128.
StatusOr<Literal> make_complex(const Instruction& instruction, const Literal& real, const Literal& imag) {
  const PrimitiveType type = real.shape().element_type();
  if (type == PrimitiveType::kF32) {
    return map_binary<kFloat>(instruction, real, imag, [](float re, float im) { return std::complex<float>(re, im); });
  }
  if (type == PrimitiveType::kF64) {
    return map_binary<kFloat>(instruction, real, imag,
                              [](double re, double im) { return std::complex<double>(re, im); });
  }
  return invalid_argument(str_cat("complex %", instruction.name(), " needs f32 or f64 operands, got ",
                                  primitive_type_name(type), ": convert them to f32 or f64 first"),
                          instruction.location());
}

}  // namespace

StatusOr<Literal> evaluate_binary(const Instruction& instruction, const Literal& a, const Literal& b) {
  // Arithmetic in the unsigned type makes overflow wrap; pred arithmetic is C++ bool arithmetic.
  auto add = [](auto x, auto y) {
    using T = decltype(x);
    if constexpr (std::is_integral_v<T>) return static_cast<T>(as_unsigned(x) + as_unsigned(y));
    else return x + y;
  };
  auto subtract = [](auto x, auto y) {
    using T = decltype(x);
    if constexpr (std::is_integral_v<T>) return static_cast<T>(as_unsigned(x) - as_unsigned(y));
    else return x - y;
  };
  auto multiply = [](auto x, auto y) {
    using T = decltype(x);
    if constexpr (std::is_integral_v<T>) return static_cast<T>(as_unsigned(x) * as_unsigned(y));
    else return x * y;
  };
  if (is_sub_byte_integral(a.shape().element_type())) {  // these three see the type's own width
    auto as_signed = [](uint32_t pattern, int bits) {
      return ((pattern >> (bits - 1)) & 1) ? int64_t(pattern) - (int64_t{1} << bits) : int64_t(pattern);
    };
    if (instruction.opcode() == Opcode::kShiftRightLogical)
      return map_sub_byte_pattern(instruction, a, &b, [](uint32_t x, uint32_t amount, int bits) -> uint64_t {
        return amount >= static_cast<uint32_t>(bits) ? 0 : x >> amount;  // amounts read as unsigned
      });
    // As for every width, the operand is read as signed (u4 0xf >> 1 == 0xf).
    if (instruction.opcode() == Opcode::kShiftRightArithmetic)
      return map_sub_byte_pattern(instruction, a, &b, [as_signed](uint32_t x, uint32_t amount, int bits) -> uint64_t {
        const int64_t value = as_signed(x, bits);
        return static_cast<uint64_t>(amount >= static_cast<uint32_t>(bits) ? (value < 0 ? -1 : 0) : value >> amount);
      });
    if (instruction.opcode() == Opcode::kMulhi) {
      const bool is_signed = is_signed_integral(a.shape().element_type());
      return map_sub_byte_pattern(instruction, a, &b, [is_signed, as_signed](uint32_t x, uint32_t y, int bits) -> uint64_t {
        auto value = [&](uint32_t pattern) { return is_signed ? as_signed(pattern, bits) : int64_t(pattern); };
        return static_cast<uint64_t>((value(x) * value(y)) >> bits);  // exact product, its high half
      });
    }
  }
  switch (instruction.opcode()) {
    case Opcode::kAdd: return map_binary<kAny>(instruction, a, b, add);
    case Opcode::kSubtract: return map_binary<kAny>(instruction, a, b, subtract);
    case Opcode::kMultiply: return map_binary<kAny>(instruction, a, b, multiply);
    case Opcode::kDivide: return map_binary<kAny>(instruction, a, b, [](auto x, auto y) { return divide_value(x, y); });
    case Opcode::kRemainder:
      return map_binary<kPred | kReal>(instruction, a, b, [](auto x, auto y) { return remainder_value(x, y); });
    case Opcode::kMaximum:
      return map_binary<kPred | kReal>(instruction, a, b, [](auto x, auto y) { return maximum_value(x, y); });
    case Opcode::kMinimum:
      return map_binary<kPred | kReal>(instruction, a, b, [](auto x, auto y) { return minimum_value(x, y); });
    case Opcode::kPower: return map_binary<kAny>(instruction, a, b, [](auto x, auto y) { return power_value(x, y); });
    case Opcode::kAtan2:
      return map_binary<kFloat | kComplex>(instruction, a, b, [](auto y, auto x) { return arctangent2(y, x); });
    case Opcode::kAnd:
      return map_binary<kPred | kInt>(instruction, a, b, [](auto x, auto y) { return decltype(x)(x & y); });
    case Opcode::kOr:
      return map_binary<kPred | kInt>(instruction, a, b, [](auto x, auto y) { return decltype(x)(x | y); });
    case Opcode::kXor:
      return map_binary<kPred | kInt>(instruction, a, b, [](auto x, auto y) { return decltype(x)(x ^ y); });
    case Opcode::kShiftLeft:
      return map_binary<kInt>(instruction, a, b, [](auto x, auto y) { return shift_left_value(x, y); });
    case Opcode::kShiftRightLogical:
      return map_binary<kInt>(instruction, a, b, [](auto x, auto y) { return shift_right_logical_value(x, y); });
    case Opcode::kShiftRightArithmetic:
      return map_binary<kInt>(instruction, a, b, [](auto x, auto y) { return shift_right_arithmetic_value(x, y); });
    case Opcode::kMulhi:
      return map_binary<kInt>(instruction, a, b, [](auto x, auto y) { return multiply_high(x, y); });
    case Opcode::kComplex: return make_complex(instruction, a, b);
    case Opcode::kCompare: return evaluate_compare(instruction, a, b);
    default: break;
  }
  INSITU_UNREACHABLE("evaluate_binary called for " << opcode_name(instruction.opcode()));
  return unsupported_type_error(instruction, a.shape().element_type());
}

}  // namespace insitu::eval
