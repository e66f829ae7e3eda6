// Element arithmetic shared by the reference evaluator and the runtime's native kernels, so the
// two compute every element the same way (the runtime is checked bit for bit against the
// evaluator): f16/bf16 and the narrow floats are computed in f32 and rounded to nearest even
// after every op; sub-byte integers (s4, u4, ...) in int32/uint32, wrapped back after every op;
// integers wrap through their unsigned type; convert follows XLA's Literal::Convert
// (float -> integer truncates and saturates, NaN -> 0; x -> pred is x != 0; -> f16/bf16
// rounds through f32; -> a narrow float rounds once from the exact value; real -> complex has
// imaginary part 0; complex -> real is rejected before converting).
#pragma once

#include "insitu/ir/opcode.h"

#include <bit>
#include <cmath>
#include <cstring>
#include <complex>
#include <limits>
#include <type_traits>

#include "insitu/evaluator/float_functions.h"
#include "insitu/ir/attributes.h"
#include "insitu/ir/dtype.h"

namespace insitu {

template <typename T>
inline constexpr bool kIsComplex = std::is_same_v<T, std::complex<float>> || std::is_same_v<T, std::complex<double>>;

template <typename T> struct ComputeTypeOf { using type = std::conditional_t<kIsSmallFloat<T>, float, T>; };
template <int B, bool S> struct ComputeTypeOf<IntN<B, S>> { using type = typename IntN<B, S>::Compute; };
// The type arithmetic happens in: f32 for f16/bf16/narrow floats, int32/uint32 for sub-byte
// integers, the storage type otherwise.
template <typename T> using ComputeType = typename ComputeTypeOf<T>::type;

template <typename T>
inline ComputeType<T> to_compute(T value) {
  if constexpr (kIsSmallFloat<T>) return value.to_float();
  else if constexpr (kIsSubByteInt<T>) return value.get();
  else return value;
}

template <typename Stored, typename Value>
inline Stored to_stored(Value value) {
  if constexpr (kIsSmallFloat<Stored>) return Stored::from_float(value);
  else if constexpr (kIsSubByteInt<Stored>) return Stored::wrap(static_cast<uint64_t>(value));  // wraps
  else return static_cast<Stored>(value);
}

// The type a dot or convolution of T multiplies and accumulates in (after its operands were
// converted to T): f32 for f16/bf16, integers modulo 2^64, T otherwise; and the conversions in
// and out of it (integers wrap to T's width at the end).
template <typename T>
struct AccumulatorFor {
  using type = std::conditional_t<kIsSmallFloat<T>, float,
                                  std::conditional_t<(std::is_integral_v<T> && !std::is_same_v<T, bool>) || kIsSubByteInt<T>,
                                                     uint64_t, T>>;
};
template <typename T> using AccumulatorOf = typename AccumulatorFor<T>::type;

template <typename Accumulator, typename T>
inline Accumulator accumulate_widen(T value) {
  if constexpr (kIsSmallFloat<T>) return value.to_float();
  else if constexpr (kIsSubByteInt<T>) return static_cast<Accumulator>(value.get());
  else return static_cast<Accumulator>(value);  // signed integers: modular, i.e. sign-extended
}

template <typename T, typename Accumulator>
inline T accumulate_narrow(Accumulator value) {
  if constexpr (kIsSmallFloat<T>) return T::from_float(value);
  else if constexpr (kIsSubByteInt<T>) return T::wrap(value);
  else return static_cast<T>(value);  // integers wrap to the result width
}

// Integer arithmetic that wraps (two's complement) instead of overflowing: operands are widened
// to an unsigned type at least as wide as int, as XLA's evaluator does.
template <typename T>
inline auto as_unsigned(T value) {
  return static_cast<std::make_unsigned_t<decltype(value + value)>>(value);
}

// maximum/minimum: a NaN operand wins (lhs first); otherwise the larger/smaller, with -0 < +0
// (as XLA:CPU computes them: max(-0, +0) = +0 and min(+0, -0) = -0 in either order).
template <typename T>
inline T maximum_value(T lhs, T rhs) {
  if constexpr (std::is_floating_point_v<T>) {
    if (std::isnan(lhs)) return lhs;
    if (std::isnan(rhs)) return rhs;
    if (lhs == rhs) return std::signbit(lhs) ? rhs : lhs;
  }
  return (lhs < rhs) ? rhs : lhs;
}

template <typename T>
inline T minimum_value(T lhs, T rhs) {
  if constexpr (std::is_floating_point_v<T>) {
    if (std::isnan(lhs)) return lhs;
    if (std::isnan(rhs)) return rhs;
    if (lhs == rhs) return std::signbit(lhs) ? lhs : rhs;
  }
  return (rhs < lhs) ? rhs : lhs;
}

// Floating-point unary functions, one definition for the evaluator and the runtime kernels
// (exp, expm1, log, tanh, logistic, erf of f32: float_functions.h, vectorizable):
// calls fn(function, std::bool_constant<complex too>) for `opcode`; false for other opcodes.
template <typename Fn>
bool with_float_unary(Opcode opcode, Fn&& fn) {
  using yes = std::true_type;
  using no = std::false_type;
  switch (opcode) {
    case Opcode::kExp: fn([](auto v) { return exp_of(v); }, yes{}); return true;
    case Opcode::kLog: fn([](auto v) { return log_of(v); }, yes{}); return true;
    case Opcode::kSqrt: fn([](auto v) { return std::sqrt(v); }, yes{}); return true;
    case Opcode::kRsqrt: fn([](auto v) { return decltype(v)(1) / std::sqrt(v); }, yes{}); return true;
    case Opcode::kLogistic: fn([](auto v) { return logistic_of(v); }, yes{}); return true;
    case Opcode::kTanh: fn([](auto v) { return tanh_of(v); }, yes{}); return true;
    case Opcode::kSin: fn([](auto v) { return std::sin(v); }, yes{}); return true;
    case Opcode::kCos: fn([](auto v) { return std::cos(v); }, yes{}); return true;
    case Opcode::kSinh: fn([](auto v) { return std::sinh(v); }, yes{}); return true;
    case Opcode::kCosh: fn([](auto v) { return std::cosh(v); }, yes{}); return true;
    case Opcode::kAsin: fn([](auto v) { return std::asin(v); }, yes{}); return true;
    case Opcode::kAcos: fn([](auto v) { return std::acos(v); }, yes{}); return true;
    case Opcode::kAtan: fn([](auto v) { return std::atan(v); }, yes{}); return true;
    case Opcode::kAsinh: fn([](auto v) { return std::asinh(v); }, yes{}); return true;
    case Opcode::kAcosh: fn([](auto v) { return std::acosh(v); }, yes{}); return true;
    case Opcode::kAtanh: fn([](auto v) { return std::atanh(v); }, yes{}); return true;
    // XLA's evaluator has no complex version of these.
    case Opcode::kExpm1: fn([](auto v) { return expm1_of(v); }, no{}); return true;
    case Opcode::kLog1p: fn([](auto v) { return std::log1p(v); }, no{}); return true;
    case Opcode::kCbrt: fn([](auto v) { return std::cbrt(v); }, no{}); return true;
    case Opcode::kTan: fn([](auto v) { return std::tan(v); }, no{}); return true;
    case Opcode::kErf: fn([](auto v) { return erf_of(v); }, no{}); return true;
    case Opcode::kFloor: fn([](auto v) { return std::floor(v); }, no{}); return true;
    case Opcode::kCeil: fn([](auto v) { return std::ceil(v); }, no{}); return true;
    case Opcode::kRoundNearestAfz: fn([](auto v) { return std::round(v); }, no{}); return true;
    // nearbyint rounds ties to even in the default rounding mode, which insitu never changes.
    case Opcode::kRoundNearestEven: fn([](auto v) { return std::nearbyint(v); }, no{}); return true;
    default: return false;
  }
}

// Leading zeros of the value's bits. (XLA's evaluator widens negative s8/s16/s32 values to
// 64 bits first and reports bits-64, a negative count; insitu reports the bit count, 0, as
// XLA's compiled backends do.)
template <typename T>
T count_leading_zeros(T x) {
  return static_cast<T>(std::countl_zero(static_cast<std::make_unsigned_t<T>>(x)));
}

template <typename T>
T population_count(T x) {
  return static_cast<T>(std::popcount(static_cast<std::make_unsigned_t<T>>(x)));
}

// clamp(lo, x, hi) = min(max(x, lo), hi); a NaN in any operand is the result (lo first).
template <typename T>
inline T clamp_value(T lo, T value, T hi) {
  if constexpr (std::is_floating_point_v<T>) {
    if (std::isnan(lo)) return lo;
    if (std::isnan(value)) return value;
    if (std::isnan(hi)) return hi;
  }
  return minimum_value(maximum_value(value, lo), hi);
}

// x % 0 == x; INT_MIN % -1 == 0; floats: fmod; pred: x % false == x.
template <typename T>
inline T remainder_value(T lhs, T rhs) {
  if constexpr (std::is_same_v<T, bool>) {
    return rhs ? false : lhs;
  } else if constexpr (std::is_integral_v<T>) {
    if (rhs == 0) return lhs;
    if constexpr (std::is_signed_v<T>) {
      if (rhs == -1 && lhs == std::numeric_limits<T>::min()) return 0;
    }
    return static_cast<T>(lhs % rhs);
  } else {
    return std::fmod(lhs, rhs);
  }
}

// An amount >= the bit width (read as unsigned, so negative amounts too) shifts everything out.
template <typename T>
inline bool shift_out_of_range(T amount) {
  return static_cast<std::make_unsigned_t<T>>(amount) >= std::numeric_limits<std::make_unsigned_t<T>>::digits;
}

template <typename T>
inline T shift_left_value(T lhs, T rhs) {
  if (shift_out_of_range(rhs)) return T(0);
  return static_cast<T>(static_cast<std::make_unsigned_t<T>>(as_unsigned(lhs) << rhs));
}

template <typename T>
inline T shift_right_logical_value(T lhs, T rhs) {
  if (shift_out_of_range(rhs)) return T(0);
  return static_cast<T>(static_cast<std::make_unsigned_t<T>>(lhs) >> rhs);
}

template <typename T>
inline T shift_right_arithmetic_value(T lhs, T rhs) {
  const auto value = static_cast<std::make_signed_t<T>>(lhs);
  if (shift_out_of_range(rhs)) return static_cast<T>(value < 0 ? -1 : 0);
  return static_cast<T>(value >> rhs);
}

// divide: integer x / 0 is all ones (-1 signed, the maximum unsigned; pred x / 0 is true) and
// INT_MIN / -1 is INT_MIN, as XLA; floats IEEE.
template <typename T>
inline T divide_value(T lhs, T rhs) {
  if constexpr (std::is_integral_v<T>) {
    if (rhs == 0) return static_cast<T>(-1);
    if constexpr (std::is_signed_v<T>)
      if (rhs == -1 && lhs == std::numeric_limits<T>::min()) return lhs;
    return static_cast<T>(lhs / rhs);
  } else {
    return lhs / rhs;
  }
}

// power: x^0 == 1^x == 1; integers square in the unsigned type with an int exponent (a negative
// exponent gives 0); pred is lhs || !rhs; floats std::pow.
template <typename T>
inline T power_value(T lhs, T rhs) {
  if (lhs == T(1) || rhs == T(0)) return T(1);
  if constexpr (std::is_same_v<T, bool>) {
    return lhs || !rhs;
  } else if constexpr (std::is_integral_v<T>) {
    if constexpr (std::is_signed_v<T>) {
      if (rhs < 0) return T(0);  // lhs == 1 was handled above
    }
    // XLA squares in the unsigned type with an `int` exponent (a wider exponent is truncated).
    using U = std::make_unsigned_t<T>;
    U base = static_cast<U>(lhs);
    U result = 1;
    for (int exponent = static_cast<int>(rhs); exponent > 0; exponent >>= 1) {
      if (exponent & 1) result = static_cast<U>(as_unsigned(result) * as_unsigned(base));
      base = static_cast<U>(as_unsigned(base) * as_unsigned(base));
    }
    return static_cast<T>(result);
  } else if constexpr (kIsComplex<T>) {
    // inf^(a + 0i) is inf for a > 0 and 0 for a < 0 (Kahan, "Much Ado About Nothing's Sign Bit").
    bool lhs_is_positive_infinity = lhs.imag() == 0 && lhs.real() > 0 && std::isinf(lhs.real());
    if (lhs_is_positive_infinity && rhs.imag() == 0 && rhs.real() > 0) return lhs;
    if (lhs_is_positive_infinity && rhs.imag() == 0 && rhs.real() < 0) return T(0);
    return std::pow(lhs, rhs);
  } else {
    return std::pow(lhs, rhs);
  }
}

// sign: -1, 0 or 1 for integers; floats keep -0, +0 and NaN.
template <typename T>
inline T sign_value(T x) {
  if constexpr (std::is_integral_v<T>) {
    return static_cast<T>((T(0) < x) - (x < T(0)));
  } else if constexpr (kIsComplex<T>) {
    auto magnitude = std::abs(x);
    return magnitude == 0 ? T(0) : x / magnitude;
  } else {
    return std::isnan(x) ? x : std::copysign(static_cast<T>(x != T(0)), x);  // keeps -0 and +0
  }
}

// A float's storage bits as a signed integer ordered like the IEEE total order
// (-NaN < -inf < ... < -0 < 0 < ... < inf < NaN): compare's type=TOTALORDER.
template <typename T>
inline auto total_order_key(T value) {
  if constexpr (kIsNarrowFloat<T>) {
    // The sign is the format's top bit (bit 3 of a 4-bit float); f8e8m0fnu has none.
    constexpr NarrowFloatFormat f = T::kFormat;
    if constexpr (f.kind == NarrowFloatKind::kExponentOnly) {
      return static_cast<int32_t>(value.bits);
    } else {
      constexpr int kBits = 1 + f.exponent_bits + f.mantissa_bits;
      const int32_t magnitude = value.bits & ((1 << (kBits - 1)) - 1);
      return ((value.bits >> (kBits - 1)) & 1) ? -1 - magnitude : magnitude;
    }
  } else {
    using Signed = std::conditional_t<sizeof(T) == 2, int16_t, std::conditional_t<sizeof(T) == 4, int32_t, int64_t>>;
    using Unsigned = std::make_unsigned_t<Signed>;
    Signed bits;
    std::memcpy(&bits, &value, sizeof(T));
    // negative values: flip the magnitude bits so that larger magnitudes order lower
    const Unsigned flip = bits < 0 ? static_cast<Unsigned>(std::numeric_limits<Signed>::max()) : Unsigned(0);
    return static_cast<Signed>(static_cast<Unsigned>(bits) ^ flip);
  }
}

template <typename Key>
inline bool compare_keys(ComparisonDirection direction, Key lhs, Key rhs) {
  switch (direction) {
    case ComparisonDirection::kEq: return lhs == rhs;
    case ComparisonDirection::kNe: return lhs != rhs;
    case ComparisonDirection::kLt: return lhs < rhs;
    case ComparisonDirection::kLe: return lhs <= rhs;
    case ComparisonDirection::kGt: return lhs > rhs;
    case ComparisonDirection::kGe: return lhs >= rhs;
  }
  return false;
}

// Calls fn(T{}) for the numeric types with native kernels (f32, f64, s32, s64, u32, u64 (jax's
// random bits), bf16, f16) and returns true; false for any other type. The runtime's kernels
// and the communicators' native all-reduce use it.
template <typename Fn>
bool dispatch_native_numeric(PrimitiveType type, Fn&& fn) {
  switch (type) {
    case PrimitiveType::kF32: fn(float{}); return true;
    case PrimitiveType::kF64: fn(double{}); return true;
    case PrimitiveType::kS32: fn(int32_t{}); return true;
    case PrimitiveType::kS64: fn(int64_t{}); return true;
    case PrimitiveType::kU32: fn(uint32_t{}); return true;
    case PrimitiveType::kU64: fn(uint64_t{}); return true;
    case PrimitiveType::kBF16: fn(BFloat16{}); return true;
    case PrimitiveType::kF16: fn(Half{}); return true;
    default: return false;
  }
}

template <typename To, typename From>
inline To convert_value(From value);

// Element i of an iota: small floats via float (as Eigen's half types convert), integers wrap,
// complex gets (i, 0). One definition for the evaluator and the runtime.
template <typename T>
inline T iota_value(int64_t i) {
  if constexpr (std::is_same_v<T, bool>) return i != 0;
  else if constexpr (kIsSmallFloat<T>) return T::from_float(static_cast<float>(i));
  else return convert_value<T>(i);
}

template <typename To, typename From>
inline To convert_value(From value) {
  if constexpr (std::is_same_v<To, From>) {
    return value;
  } else if constexpr (kIsSmallFloat<From>) {
    return convert_value<To>(value.to_float());
  } else if constexpr (kIsSubByteInt<From>) {
    return convert_value<To>(value.get());
  } else if constexpr (kIsNarrowFloat<To>) {
    if constexpr (kIsComplex<From>) {
      INSITU_UNREACHABLE("complex to real conversion is rejected before converting");
      return To{};
    } else {
      return To::from_double(static_cast<double>(value));  // one rounding from the exact value
    }
  } else if constexpr (kIsSubByteInt<To>) {
    if constexpr (kIsComplex<From>) {
      INSITU_UNREACHABLE("complex to real conversion is rejected before converting");
      return To{};
    } else if constexpr (std::is_floating_point_v<From>) {  // saturates, NaN -> 0 (as XLA:CPU)
      if (std::isnan(value)) return To{};
      if (value >= static_cast<From>(To::kMax)) return To::wrap(static_cast<uint64_t>(To::kMax));
      if (value <= static_cast<From>(To::kMin)) return To::wrap(static_cast<uint64_t>(To::kMin));
      return To::wrap(static_cast<uint64_t>(static_cast<int64_t>(value)));
    } else {
      return To::wrap(static_cast<uint64_t>(value));  // integers wrap
    }
  } else if constexpr (kIsComplex<To>) {
    using Part = typename To::value_type;
    if constexpr (kIsComplex<From>) return To(static_cast<Part>(value.real()), static_cast<Part>(value.imag()));
    else return To(static_cast<Part>(value), Part(0));
  } else if constexpr (kIsComplex<From>) {
    INSITU_UNREACHABLE("complex to real conversion is rejected before converting");
    return To{};
  } else if constexpr (kIsSmallFloat<To>) {
    return To::from_float(static_cast<float>(value));
  } else if constexpr (std::is_same_v<To, bool>) {
    return value != From(0);
  } else if constexpr (std::is_integral_v<To> && std::is_floating_point_v<From>) {
    if (std::isnan(value)) return To(0);
    if (value >= static_cast<From>(std::numeric_limits<To>::max())) return std::numeric_limits<To>::max();
    if (value <= static_cast<From>(std::numeric_limits<To>::lowest())) return std::numeric_limits<To>::lowest();
    return static_cast<To>(value);
  } else {
    return static_cast<To>(value);  // integer narrowing wraps (C++20), int -> float rounds to nearest
  }
}

// stochastic-convert of one element (XLA's StochasticConvertDecomposer, float -> signed integer):
// |x| rounds down, then up by one when `random` (unsigned, x's width) is below the fraction
// scaled to 2^bits, so it rounds up with probability equal to the fraction; the sign is put back
// (wrapping, as XLA's integer ops); x <= To's lowest gives lowest, x >= its max gives max (both
// compared in x's type); NaN gives 0. f16 and bf16 compute in f32, exactly. One definition for
// the evaluator and the runtime; cuda/convert_codegen.cc writes the same steps as source.
template <typename To, typename From, typename Random>
inline To stochastic_convert_value(From value, Random random) {
  static_assert(std::is_signed_v<To> && std::is_integral_v<To> && std::is_unsigned_v<Random>);
  using F = std::conditional_t<std::is_same_v<From, double>, double, float>;
  using U = std::make_unsigned_t<To>;
  const F x = convert_value<F>(value);
  if (x <= static_cast<F>(std::numeric_limits<To>::lowest())) return std::numeric_limits<To>::lowest();
  if (x >= static_cast<F>(std::numeric_limits<To>::max())) return std::numeric_limits<To>::max();
  if (std::isnan(x)) return To(0);
  const F magnitude = std::fabs(x), whole = std::floor(magnitude);
  // The fraction times 2^bits, exact (a power of two) and below 2^bits, so it fits Random.
  const F scaled = (magnitude - whole) * std::ldexp(F(1), static_cast<int>(8 * sizeof(Random)));
  const U rounded = static_cast<U>(static_cast<U>(static_cast<To>(whole)) + (random < static_cast<Random>(scaled) ? 1 : 0));
  return static_cast<To>(x < F(0) ? static_cast<U>(U(0) - rounded) : rounded);
}

// Calls fn(From{}, Random{}, To{}) for the types stochastic_convert_value takes: f16, bf16, f32,
// f64 operands (random of their width) to s8, s16, s32, s64; false for any other pair (XLA's
// decomposer converts to signed integers only; f8 operands are not done).
template <typename Fn>
inline bool dispatch_stochastic_convert(PrimitiveType from, PrimitiveType to, Fn&& fn) {
  auto with_to = [&](auto from_tag, auto random_tag) {
    switch (to) {
      case PrimitiveType::kS8: fn(from_tag, random_tag, int8_t{}); return true;
      case PrimitiveType::kS16: fn(from_tag, random_tag, int16_t{}); return true;
      case PrimitiveType::kS32: fn(from_tag, random_tag, int32_t{}); return true;
      case PrimitiveType::kS64: fn(from_tag, random_tag, int64_t{}); return true;
      default: return false;
    }
  };
  switch (from) {
    case PrimitiveType::kF16: return with_to(Half{}, uint16_t{});
    case PrimitiveType::kBF16: return with_to(BFloat16{}, uint16_t{});
    case PrimitiveType::kF32: return with_to(float{}, uint32_t{});
    case PrimitiveType::kF64: return with_to(double{}, uint64_t{});
    default: return false;
  }
}

}  // namespace insitu
