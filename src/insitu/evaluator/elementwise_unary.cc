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
  if (is_sub_byte_integral(x.shape().element_type())) {  // these two count the type's own bits
    if (instruction.opcode() == Opcode::kClz)
      return map_sub_byte_pattern(instruction, x, nullptr, [](uint32_t v, uint32_t, int bits) -> uint64_t {
        return static_cast<uint64_t>(std::countl_zero(v) - (32 - bits));
      });
    if (instruction.opcode() == Opcode::kPopulationCount)
      return map_sub_byte_pattern(instruction, x, nullptr,
                                  [](uint32_t v, uint32_t, int) -> uint64_t { return static_cast<uint64_t>(std::popcount(v)); });
  }
  switch (instruction.opcode()) {
    case Opcode::kAbs: return map_unary<kInt | kFloatOrComplex>(instruction, x, [](auto v) { return abs_value(v); });
    case Opcode::kNegate: return map_unary<kInt | kFloatOrComplex>(instruction, x, [](auto v) { return negate_value(v); });
    case Opcode::kSign: return map_unary<kInt | kFloatOrComplex>(instruction, x, [](auto v) { return sign_value(v); });
    case Opcode::kNot: return map_unary<kPred | kInt>(instruction, x, [](auto v) { return logical_not(v); });
    case Opcode::kClz: return map_unary<kInt>(instruction, x, [](auto v) { return count_leading_zeros(v); });
    case Opcode::kPopulationCount: return map_unary<kInt>(instruction, x, [](auto v) { return population_count(v); });

    case Opcode::kIsFinite: return map_unary<kFloat>(instruction, x, [](auto v) -> bool { return std::isfinite(v); });
    case Opcode::kReal: return map_unary<kFloatOrComplex>(instruction, x, [](auto v) { return real_part(v); });
    case Opcode::kImag: return map_unary<kFloatOrComplex>(instruction, x, [](auto v) { return imaginary_part(v); });
    default: break;
  }
  StatusOr<Literal> result = Literal();
  if (with_float_unary(instruction.opcode(), [&](auto function, auto complex_too) {
        if constexpr (decltype(complex_too)::value) result = map_unary<kFloatOrComplex>(instruction, x, function);
        else result = map_unary<kFloat>(instruction, x, function);
      }))
    return result;
  INSITU_UNREACHABLE("evaluate_unary called for " << opcode_name(instruction.opcode()));
  return unsupported_type_error(instruction, x.shape().element_type());
}

}  // namespace insitu::eval
