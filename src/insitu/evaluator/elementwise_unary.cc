// Unary elementwise ops of the reference evaluator: one line per opcode, a functor and the
// element-type categories XLA's HloEvaluator accepts for it (shape inference and the typed
// visitor together). Integer ops wrap; f16/bf16 compute in f32 and round back.
#include <bit>
#include <cmath>
#include <limits>

#include "insitu/evaluator/elementwise_internal.h"

namespace insitu::eval {
namespace {

template <typename T>
auto abs_value(T x) {
  if constexpr (std::is_integral_v<T> && std::is_signed_v<T>) {
    return x < 0 ? static_cast<T>(0u - as_unsigned(x)) : x;  // abs(INT_MIN) == INT_MIN
  } else if constexpr (std::is_integral_v<T>) {
    return x;
  } else {
    return std::abs(x);
  }
}

template <typename T>
T negate_value(T x) {
  if constexpr (std::is_integral_v<T>) return static_cast<T>(0u - as_unsigned(x));  // -INT_MIN == INT_MIN
  else return -x;
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

template <typename T>
T logical_not(T x) {
  if constexpr (std::is_same_v<T, bool>) return !x;
  else return static_cast<T>(~x);
}

template <typename T>
auto real_part(T x) {
  if constexpr (kIsComplex<T>) return x.real();
  else return x;
}

template <typename T>
auto imaginary_part(T x) {
  if constexpr (kIsComplex<T>) return x.imag();
  else return T(0);
}

}  // namespace

StatusOr<Literal> evaluate_unary(const Instruction& instruction, const Literal& x) {
  constexpr unsigned kFloatOrComplex = kFloat | kComplex;
  switch (instruction.opcode()) {
    case Opcode::kAbs: return map_unary<kInt | kFloatOrComplex>(instruction, x, [](auto v) { return abs_value(v); });
    case Opcode::kNegate: return map_unary<kInt | kFloatOrComplex>(instruction, x, [](auto v) { return negate_value(v); });
    case Opcode::kSign: return map_unary<kInt | kFloatOrComplex>(instruction, x, [](auto v) { return sign_value(v); });
    case Opcode::kNot: return map_unary<kPred | kInt>(instruction, x, [](auto v) { return logical_not(v); });
    case Opcode::kClz: return map_unary<kInt>(instruction, x, [](auto v) { return count_leading_zeros(v); });
    case Opcode::kPopulationCount: return map_unary<kInt>(instruction, x, [](auto v) { return population_count(v); });

    case Opcode::kExp: return map_unary<kFloatOrComplex>(instruction, x, [](auto v) { return std::exp(v); });
    case Opcode::kLog: return map_unary<kFloatOrComplex>(instruction, x, [](auto v) { return std::log(v); });
    case Opcode::kSqrt: return map_unary<kFloatOrComplex>(instruction, x, [](auto v) { return std::sqrt(v); });
    case Opcode::kRsqrt:
      return map_unary<kFloatOrComplex>(instruction, x, [](auto v) { return decltype(v)(1) / std::sqrt(v); });
    case Opcode::kLogistic:
      return map_unary<kFloatOrComplex>(
          instruction, x, [](auto v) { return decltype(v)(1) / (decltype(v)(1) + std::exp(-v)); });
    case Opcode::kTanh: return map_unary<kFloatOrComplex>(instruction, x, [](auto v) { return std::tanh(v); });
    case Opcode::kSin: return map_unary<kFloatOrComplex>(instruction, x, [](auto v) { return std::sin(v); });
    case Opcode::kCos: return map_unary<kFloatOrComplex>(instruction, x, [](auto v) { return std::cos(v); });
    case Opcode::kSinh: return map_unary<kFloatOrComplex>(instruction, x, [](auto v) { return std::sinh(v); });
    case Opcode::kCosh: return map_unary<kFloatOrComplex>(instruction, x, [](auto v) { return std::cosh(v); });
    case Opcode::kAsin: return map_unary<kFloatOrComplex>(instruction, x, [](auto v) { return std::asin(v); });
    case Opcode::kAcos: return map_unary<kFloatOrComplex>(instruction, x, [](auto v) { return std::acos(v); });
    case Opcode::kAtan: return map_unary<kFloatOrComplex>(instruction, x, [](auto v) { return std::atan(v); });
    case Opcode::kAsinh: return map_unary<kFloatOrComplex>(instruction, x, [](auto v) { return std::asinh(v); });
    case Opcode::kAcosh: return map_unary<kFloatOrComplex>(instruction, x, [](auto v) { return std::acosh(v); });
    case Opcode::kAtanh: return map_unary<kFloatOrComplex>(instruction, x, [](auto v) { return std::atanh(v); });

    // XLA's evaluator has no complex version of these.
    case Opcode::kExpm1: return map_unary<kFloat>(instruction, x, [](auto v) { return std::expm1(v); });
    case Opcode::kLog1p: return map_unary<kFloat>(instruction, x, [](auto v) { return std::log1p(v); });
    case Opcode::kCbrt: return map_unary<kFloat>(instruction, x, [](auto v) { return std::cbrt(v); });
    case Opcode::kTan: return map_unary<kFloat>(instruction, x, [](auto v) { return std::tan(v); });
    case Opcode::kErf: return map_unary<kFloat>(instruction, x, [](auto v) { return std::erf(v); });
    case Opcode::kFloor: return map_unary<kFloat>(instruction, x, [](auto v) { return std::floor(v); });
    case Opcode::kCeil: return map_unary<kFloat>(instruction, x, [](auto v) { return std::ceil(v); });
    case Opcode::kRoundNearestAfz: return map_unary<kFloat>(instruction, x, [](auto v) { return std::round(v); });
    // nearbyint rounds ties to even in the default rounding mode, which insitu never changes.
    case Opcode::kRoundNearestEven: return map_unary<kFloat>(instruction, x, [](auto v) { return std::nearbyint(v); });

    case Opcode::kIsFinite: return map_unary<kFloat>(instruction, x, [](auto v) -> bool { return std::isfinite(v); });
    case Opcode::kReal: return map_unary<kFloatOrComplex>(instruction, x, [](auto v) { return real_part(v); });
    case Opcode::kImag: return map_unary<kFloatOrComplex>(instruction, x, [](auto v) { return imaginary_part(v); });
    default: break;
  }
  INSITU_UNREACHABLE("evaluate_unary called for " << opcode_name(instruction.opcode()));
  return unsupported_type_error(instruction, x.shape().element_type());
}

}  // namespace insitu::eval
