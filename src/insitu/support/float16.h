// IEEE half (f16) and bfloat16 (bf16) storage types with round-to-nearest-even conversion.
//
// Both are plain 16-bit storage; arithmetic happens in float (as XLA's evaluator does:
// compute in f32, round the result back per op).
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>

namespace insitu {

// Neither is an aggregate, so that no generic `T(number)` can store a number as bits.
struct BFloat16 {
  uint16_t bits = 0;

  constexpr BFloat16() = default;
  static BFloat16 from_bits(uint16_t bits) {
    BFloat16 value;
    value.bits = bits;
    return value;
  }
  static BFloat16 from_float(float value) {
    uint32_t u = std::bit_cast<uint32_t>(value);
    if ((u & 0x7fffffffu) > 0x7f800000u) return from_bits(static_cast<uint16_t>((u >> 16) | 0x40));  // quiet NaN
    uint32_t rounding = 0x7fffu + ((u >> 16) & 1u);  // round to nearest, ties to even
    return from_bits(static_cast<uint16_t>((u + rounding) >> 16));
  }
  float to_float() const { return std::bit_cast<float>(static_cast<uint32_t>(bits) << 16); }
  bool operator==(const BFloat16&) const = default;
};

struct Half {
  uint16_t bits = 0;

  constexpr Half() = default;
  static Half from_bits(uint16_t bits) {
    Half value;
    value.bits = bits;
    return value;
  }
  static Half from_float(float value) {
    uint32_t u = std::bit_cast<uint32_t>(value);
    uint16_t sign = static_cast<uint16_t>((u >> 16) & 0x8000u);
    uint32_t abs = u & 0x7fffffffu;
    if (abs > 0x7f800000u) return from_bits(sign | 0x7e00u);             // NaN
    if (abs >= 0x477ff000u) return from_bits(sign | 0x7c00u);            // overflow -> inf
    if (abs < 0x38800000u) {                                             // subnormal or zero
      // value = abs_float * 2^24 rounded to an integer count of 2^-24 units.
      float scaled = std::bit_cast<float>(abs) * 16777216.0f;            // exact for these magnitudes
      uint32_t units = static_cast<uint32_t>(scaled);
      float fraction = scaled - static_cast<float>(units);
      if (fraction > 0.5f || (fraction == 0.5f && (units & 1u))) ++units;
      return from_bits(static_cast<uint16_t>(sign | units));
    }
    uint32_t mantissa_odd = (abs >> 13) & 1u;
    abs += 0xc8000fffu + mantissa_odd;  // rebias exponent (-112 << 23) and round to nearest even
    return from_bits(static_cast<uint16_t>(sign | (abs >> 13)));
  }
  float to_float() const {
    uint32_t sign = (static_cast<uint32_t>(bits) & 0x8000u) << 16;
    uint32_t exponent = (bits >> 10) & 0x1fu;
    uint32_t mantissa = bits & 0x3ffu;
    if (exponent == 0) {
      float magnitude = static_cast<float>(mantissa) * (1.0f / 16777216.0f);
      return std::bit_cast<float>(std::bit_cast<uint32_t>(magnitude) | sign);
    }
    if (exponent == 31) return std::bit_cast<float>(sign | 0x7f800000u | (mantissa << 13));
    return std::bit_cast<float>(sign | ((exponent + 112) << 23) | (mantissa << 13));
  }
  bool operator==(const Half&) const = default;
};

}  // namespace insitu
