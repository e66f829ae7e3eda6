#include "insitu/support/narrow_types.h"

#include <cmath>
#include <limits>

namespace insitu {
namespace {

int sign_shift(const NarrowFloatFormat& f) { return f.exponent_bits + f.mantissa_bits; }
int max_exponent_field(const NarrowFloatFormat& f) { return (1 << f.exponent_bits) - 1; }

// The code of a finite, nonnegative value that is exactly representable and at most the max.
uint8_t encode_exact(const NarrowFloatFormat& f, double value) {
  if (f.kind == NarrowFloatKind::kExponentOnly) {
    int exponent = 0;
    std::frexp(value, &exponent);
    return static_cast<uint8_t>(exponent - 1 + f.bias);
  }
  if (value == 0) return 0;
  int exponent = 0;
  std::frexp(value, &exponent);
  --exponent;  // value = 1.m * 2^exponent
  const int min_normal_exponent = 1 - f.bias;
  if (exponent < min_normal_exponent)  // subnormal: a count of the smallest step
    return static_cast<uint8_t>(std::ldexp(value, f.bias - 1 + f.mantissa_bits));
  const auto mantissa = static_cast<unsigned>(std::ldexp(std::ldexp(value, -exponent) - 1, f.mantissa_bits));
  return static_cast<uint8_t>(((exponent + f.bias) << f.mantissa_bits) | mantissa);
}

}  // namespace

double narrow_float_max(const NarrowFloatFormat& f) {
  const int top = max_exponent_field(f);
  const double full_mantissa = 2 - std::ldexp(1.0, -f.mantissa_bits);
  switch (f.kind) {
    case NarrowFloatKind::kIeee: return std::ldexp(full_mantissa, top - 1 - f.bias);
    case NarrowFloatKind::kFiniteNan: return std::ldexp(full_mantissa - std::ldexp(1.0, -f.mantissa_bits), top - f.bias);
    case NarrowFloatKind::kExponentOnly: return std::ldexp(1.0, top - 1 - f.bias);
    case NarrowFloatKind::kFiniteUnsignedZero:
    case NarrowFloatKind::kFiniteNoNan: return std::ldexp(full_mantissa, top - f.bias);
  }
  return 0;
}

float decode_narrow_float(const NarrowFloatFormat& f, uint8_t bits) {
  constexpr float kNan = std::numeric_limits<float>::quiet_NaN();
  if (f.kind == NarrowFloatKind::kExponentOnly)
    return bits == 0xff ? kNan : std::ldexp(1.0f, static_cast<int>(bits) - f.bias);
  bits &= static_cast<uint8_t>((2u << sign_shift(f)) - 1);  // a 4-bit float ignores the byte's upper bits
  const bool negative = (bits >> sign_shift(f)) & 1;
  const int exponent = (bits >> f.mantissa_bits) & max_exponent_field(f);
  const unsigned mantissa = bits & ((1u << f.mantissa_bits) - 1);
  const float sign = negative ? -1.0f : 1.0f;
  if (f.kind == NarrowFloatKind::kFiniteUnsignedZero && bits == 0x80) return -kNan;  // its sign bit is set
  if (f.kind == NarrowFloatKind::kIeee && exponent == max_exponent_field(f))
    return mantissa == 0 ? sign * std::numeric_limits<float>::infinity() : std::copysign(kNan, sign);
  if (f.kind == NarrowFloatKind::kFiniteNan && exponent == max_exponent_field(f) &&
      mantissa == (1u << f.mantissa_bits) - 1)
    return std::copysign(kNan, sign);
  if (exponent == 0) return sign * std::ldexp(static_cast<float>(mantissa), 1 - f.bias - f.mantissa_bits);
  return sign * std::ldexp(1.0f + std::ldexp(static_cast<float>(mantissa), -f.mantissa_bits), exponent - f.bias);
}

uint8_t encode_narrow_float(const NarrowFloatFormat& f, double value) {
  const bool negative = std::signbit(value);
  const uint8_t sign = negative ? static_cast<uint8_t>(1u << sign_shift(f)) : 0;
  const uint8_t top = static_cast<uint8_t>(max_exponent_field(f));
  // The code a NaN, and any value beyond the largest finite one, becomes.
  auto not_a_number = [&]() -> uint8_t {
    switch (f.kind) {
      case NarrowFloatKind::kIeee: return sign | (top << f.mantissa_bits) | (1u << (f.mantissa_bits - 1));
      case NarrowFloatKind::kFiniteNan: return sign | static_cast<uint8_t>((1u << sign_shift(f)) - 1);
      case NarrowFloatKind::kFiniteUnsignedZero: return 0x80;
      case NarrowFloatKind::kExponentOnly: return 0xff;
      // No NaN: ml_dtypes (and XLA:CPU, checked) give a zero of the opposite sign.
      case NarrowFloatKind::kFiniteNoNan: return negative ? 0 : static_cast<uint8_t>(1u << sign_shift(f));
    }
    return 0;
  };
  if (std::isnan(value)) return not_a_number();
  if (f.kind == NarrowFloatKind::kExponentOnly && (negative || value == 0)) return not_a_number();
  const double magnitude = std::fabs(value);
  const double max = narrow_float_max(f);
  double rounded = std::numeric_limits<double>::infinity();
  if (std::isfinite(magnitude)) {
    // Round to a multiple of the spacing at this magnitude (subnormal spacing below the
    // smallest normal); nearbyint rounds ties to even, and the division and product are exact.
    const bool exponent_only = f.kind == NarrowFloatKind::kExponentOnly;
    const int min_normal_exponent = 1 - f.bias;
    int exponent = 0;
    std::frexp(magnitude, &exponent);
    --exponent;
    const int step_exponent =
        exponent < min_normal_exponent ? (exponent_only ? min_normal_exponent - 1 : min_normal_exponent) - f.mantissa_bits
                                       : exponent - f.mantissa_bits;
    rounded = std::ldexp(std::nearbyint(std::ldexp(magnitude, -step_exponent)), step_exponent);
  }
  if (rounded > max) {
    if (f.kind == NarrowFloatKind::kIeee) return sign | static_cast<uint8_t>(top << f.mantissa_bits);
    if (f.kind != NarrowFloatKind::kFiniteNoNan) return not_a_number();
    rounded = max;  // saturate
  }
  if (rounded == 0) {
    // f8e8m0fnu has no zero: ml_dtypes gives its smallest code.
    if (f.kind == NarrowFloatKind::kExponentOnly) return 0;
    return f.kind == NarrowFloatKind::kFiniteUnsignedZero ? 0 : sign;
  }
  return static_cast<uint8_t>(sign | encode_exact(f, rounded));
}

}  // namespace insitu
