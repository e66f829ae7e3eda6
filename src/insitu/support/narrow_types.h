// Storage types for XLA's narrow element types: the 8- and 4-bit floats (f8e4m3fn, f8e5m2, ...,
// f8e8m0fnu, f4e2m1fn) and the sub-byte integers (s4, u4, s2, u2, s1, u1).
//
// Every one is stored in one byte per element, as ml_dtypes stores them and as XLA stores an
// array without a packing layout (`E(4)`): insitu never packs, so a packing layout is a storage
// choice of XLA's backends that never shows in values. A sub-byte integer is kept canonical in
// its byte (sign-extended for s*, upper bits zero for u*).
//
// Arithmetic happens in a wider type (float for the narrow floats, int32/uint32 for the
// integers) and is rounded or wrapped back after every op, as ml_dtypes and XLA's evaluator do.
// For +, -, *, / and sqrt, f32's 24 bits are more than 2p+2 of every narrow float's precision
// p, so computing in f32 and rounding again is the same as rounding the exact result once.
//
// Conversions follow ml_dtypes (checked over every code and a million f32 values in
// python/tests/test_narrow_types.py): round to nearest even from the exact value; what
// overflow, infinity and NaN become depends on the format (NarrowFloatKind).
#pragma once

#include <array>
#include <cstdint>
#include <type_traits>

namespace insitu {

// Which special values a narrow float has.
enum class NarrowFloatKind : uint8_t {
  kIeee,              // inf and NaN as IEEE (f8e4m3, f8e5m2, f8e3m4): overflow -> inf
  kFiniteNan,         // no inf; S.1111.111 is NaN (f8e4m3fn): overflow and inf -> NaN
  kFiniteUnsignedZero,  // no inf, no -0; 0x80 is the only NaN (the *fnuz): overflow -> NaN
  kExponentOnly,      // 2^(e-127), no sign, no zero; 0xff is NaN (f8e8m0fnu)
  kFiniteNoNan,       // no inf, no NaN (f4e2m1fn): overflow and inf saturate
};

struct NarrowFloatFormat {
  int exponent_bits;
  int mantissa_bits;
  int bias;
  NarrowFloatKind kind;
  constexpr bool operator==(const NarrowFloatFormat&) const = default;
};

// The code of the value nearest `value` (ties to even), with the format's rules for overflow,
// infinity and NaN. Exact for every double, so every float.
uint8_t encode_narrow_float(const NarrowFloatFormat& format, double value);
// The value of a code (exact in float; NaN codes give a quiet NaN with the code's sign).
float decode_narrow_float(const NarrowFloatFormat& format, uint8_t bits);
// The largest finite value of the format.
double narrow_float_max(const NarrowFloatFormat& format);

template <NarrowFloatFormat F>
struct NarrowFloat {
  static constexpr NarrowFloatFormat kFormat = F;
  uint8_t bits = 0;

  // Not an aggregate, so that no generic `static_cast<T>(number)` can store a number as bits.
  constexpr NarrowFloat() = default;
  static NarrowFloat from_bits(uint8_t bits) {
    NarrowFloat value;
    value.bits = bits;
    return value;
  }
  static NarrowFloat from_double(double value) { return from_bits(encode_narrow_float(F, value)); }
  static NarrowFloat from_float(float value) { return from_double(value); }
  float to_float() const { return table()[bits]; }
  bool operator==(const NarrowFloat&) const = default;

 private:
  static const std::array<float, 256>& table() {
    static const std::array<float, 256> values = [] {
      std::array<float, 256> t{};
      for (int code = 0; code < 256; ++code) t[code] = decode_narrow_float(F, static_cast<uint8_t>(code));
      return t;
    }();
    return values;
  }
};

using Float8E4M3FN = NarrowFloat<NarrowFloatFormat{4, 3, 7, NarrowFloatKind::kFiniteNan}>;
using Float8E4M3 = NarrowFloat<NarrowFloatFormat{4, 3, 7, NarrowFloatKind::kIeee}>;
using Float8E5M2 = NarrowFloat<NarrowFloatFormat{5, 2, 15, NarrowFloatKind::kIeee}>;
using Float8E3M4 = NarrowFloat<NarrowFloatFormat{3, 4, 3, NarrowFloatKind::kIeee}>;
using Float8E4M3FNUZ = NarrowFloat<NarrowFloatFormat{4, 3, 8, NarrowFloatKind::kFiniteUnsignedZero}>;
using Float8E5M2FNUZ = NarrowFloat<NarrowFloatFormat{5, 2, 16, NarrowFloatKind::kFiniteUnsignedZero}>;
using Float8E4M3B11FNUZ = NarrowFloat<NarrowFloatFormat{4, 3, 11, NarrowFloatKind::kFiniteUnsignedZero}>;
using Float8E8M0FNU = NarrowFloat<NarrowFloatFormat{8, 0, 127, NarrowFloatKind::kExponentOnly}>;
using Float4E2M1FN = NarrowFloat<NarrowFloatFormat{2, 1, 1, NarrowFloatKind::kFiniteNoNan}>;

// A kBits-bit two's complement (kSigned) or unsigned integer in one byte.
template <int kBits, bool kSigned>
struct IntN {
  using Storage = std::conditional_t<kSigned, int8_t, uint8_t>;
  using Compute = std::conditional_t<kSigned, int32_t, uint32_t>;
  static constexpr int kBitCount = kBits;
  static constexpr int64_t kMin = kSigned ? -(int64_t{1} << (kBits - 1)) : 0;
  static constexpr int64_t kMax = kSigned ? (int64_t{1} << (kBits - 1)) - 1 : (int64_t{1} << kBits) - 1;
  Storage value = 0;

  // Not an aggregate, so that no generic `static_cast<T>(number)` skips the wrapping.
  constexpr IntN() = default;

  // The value modulo 2^kBits (integer arithmetic wraps, as in every integer type).
  static IntN wrap(uint64_t value) {
    const uint64_t low = value & ((uint64_t{1} << kBits) - 1);
    if constexpr (kSigned) {
      const int64_t signed_low = (low >> (kBits - 1)) ? static_cast<int64_t>(low) - (int64_t{1} << kBits)
                                                      : static_cast<int64_t>(low);
      return from_storage(static_cast<Storage>(signed_low));
    } else {
      return from_storage(static_cast<Storage>(low));
    }
  }
  // The kBits-bit pattern, upper bits zero (for bit-level ops: logical shift, popcount, ...).
  uint32_t pattern() const { return static_cast<uint32_t>(static_cast<uint8_t>(value)) & ((1u << kBits) - 1); }
  Compute get() const { return static_cast<Compute>(value); }
  bool operator==(const IntN&) const = default;

 private:
  static IntN from_storage(Storage storage) {
    IntN result;
    result.value = storage;
    return result;
  }
};

using Int1 = IntN<1, true>;
using Int2 = IntN<2, true>;
using Int4 = IntN<4, true>;
using UInt1 = IntN<1, false>;
using UInt2 = IntN<2, false>;
using UInt4 = IntN<4, false>;

template <typename T> struct IsNarrowFloat : std::false_type {};
template <NarrowFloatFormat F> struct IsNarrowFloat<NarrowFloat<F>> : std::true_type {};
template <typename T> inline constexpr bool kIsNarrowFloat = IsNarrowFloat<T>::value;

template <typename T> struct IsSubByteInt : std::false_type {};
template <int B, bool S> struct IsSubByteInt<IntN<B, S>> : std::true_type {};
template <typename T> inline constexpr bool kIsSubByteInt = IsSubByteInt<T>::value;

}  // namespace insitu
