// Internal to the evaluator's elementwise ops (elementwise*.cc): element-type categories, the
// compute type of each storage type, and the loops that apply one functor per element.
//
// Each opcode is one line: a functor plus the set of element-type categories XLA accepts for it
//   case Opcode::kExp: return map_unary<kFloat | kComplex>(instruction, x, [](auto v) { return std::exp(v); });
// f16 and bf16 are computed in f32 and rounded back (round to nearest even) after every op, as
// XLA's HloEvaluator does. A type outside the set is a located error, never a silent result.
#pragma once

#include <complex>
#include <type_traits>
#include <utility>

#include "insitu/evaluator/element_arithmetic.h"
#include "insitu/evaluator/ops.h"
#include "insitu/support/str.h"

namespace insitu::eval {

// Element-type categories, combined as bit masks.
enum Category : unsigned {
  kPred = 1,
  kSigned = 2,
  kUnsigned = 4,
  kFloat = 8,    // f16, bf16, f32, f64
  kComplex = 16,
  kInt = kSigned | kUnsigned,
  kReal = kInt | kFloat,
  kAny = kPred | kInt | kFloat | kComplex,
};


template <typename T>
constexpr unsigned category_of() {
  if constexpr (std::is_same_v<T, bool>) return kPred;
  else if constexpr (kIsSubByteInt<T>) return std::is_signed_v<typename T::Compute> ? kSigned : kUnsigned;
  else if constexpr (std::is_integral_v<T> && std::is_signed_v<T>) return kSigned;
  else if constexpr (std::is_integral_v<T>) return kUnsigned;
  else if constexpr (kIsComplex<T>) return kComplex;
  else return kFloat;
}



// Where a functor's result is stored when the operand's storage type is T: a result in T's
// compute type (float for f16/bf16/narrow floats, int32/uint32 for s4/u4/...) is rounded or
// wrapped back to T; any other result type is stored as itself.
template <typename T, typename Result>
using StoredType = std::conditional_t<(kIsSmallFloat<T> || kIsSubByteInt<T>) && std::is_same_v<Result, ComputeType<T>>,
                                      T, Result>;



// "add does not support element type c64 ..." at the instruction.
Status unsupported_type_error(const Instruction& instruction, PrimitiveType type);
// Checks that the instruction's shape is an array of `type` with `dimensions`.
Status check_result_shape(const Instruction& instruction, PrimitiveType type, const std::vector<int64_t>& dimensions);
// Checks that an operand is an array with the given dimensions (operand `index` of the instruction).
Status check_operand_dimensions(const Instruction& instruction, const Literal& operand, int64_t index,
                                const std::vector<int64_t>& dimensions);

// result[i] = fn(x[i]) for an operand whose category is in kSupported.
template <unsigned kSupported, typename Fn>
StatusOr<Literal> map_unary(const Instruction& instruction, const Literal& x, Fn&& fn) {
  return dispatch_element_type(x.shape().element_type(), [&](auto tag) -> StatusOr<Literal> {
    using T = decltype(tag);
    if constexpr ((category_of<T>() & kSupported) != 0) {
      using Result = decltype(fn(std::declval<ComputeType<T>>()));
      using Out = StoredType<T, Result>;
      INSITU_RETURN_IF_ERROR(check_result_shape(instruction, kTypeOf<Out>, x.shape().dimensions()));
      Literal result(instruction.shape());
      auto in = x.data<T>();
      auto out = result.data<Out>();
      for (size_t i = 0; i < in.size(); ++i) out[i] = to_stored<Out>(fn(to_compute(in[i])));
      return result;
    } else {
      return unsupported_type_error(instruction, x.shape().element_type());
    }
  });
}

// result[i] = fn(a[i], b[i]) for two operands of one element type and shape.
template <unsigned kSupported, typename Fn>
StatusOr<Literal> map_binary(const Instruction& instruction, const Literal& a, const Literal& b, Fn&& fn) {
  if (a.shape().element_type() != b.shape().element_type()) {
    return invalid_argument(str_cat(opcode_name(instruction.opcode()), " %", instruction.name(),
                                    " has operands of different element types (",
                                    primitive_type_name(a.shape().element_type()), " and ",
                                    primitive_type_name(b.shape().element_type()), "): convert one of them"),
                            instruction.location());
  }
  INSITU_RETURN_IF_ERROR(check_operand_dimensions(instruction, b, 1, a.shape().dimensions()));
  return dispatch_element_type(a.shape().element_type(), [&](auto tag) -> StatusOr<Literal> {
    using T = decltype(tag);
    if constexpr ((category_of<T>() & kSupported) != 0) {
      using C = ComputeType<T>;
      using Result = decltype(fn(std::declval<C>(), std::declval<C>()));
      using Out = StoredType<T, Result>;
      INSITU_RETURN_IF_ERROR(check_result_shape(instruction, kTypeOf<Out>, a.shape().dimensions()));
      Literal result(instruction.shape());
      auto lhs = a.data<T>();
      auto rhs = b.data<T>();
      auto out = result.data<Out>();
      for (size_t i = 0; i < lhs.size(); ++i) out[i] = to_stored<Out>(fn(to_compute(lhs[i]), to_compute(rhs[i])));
      return result;
    } else {
      return unsupported_type_error(instruction, a.shape().element_type());
    }
  });
}

// The ops whose result depends on the width (clz, popcnt, shift-right-logical, mulhi) for
// s1/s2/s4/u1/u2/u4: fn(lhs bits, rhs bits, value bits) sees each element's kBits-bit pattern
// (upper bits zero), not its int32 compute value; the result pattern is wrapped back. `b` is
// null for a unary op. Only for sub-byte integer operands (is_sub_byte_integral).
template <typename Fn>
StatusOr<Literal> map_sub_byte_pattern(const Instruction& instruction, const Literal& a, const Literal* b, Fn&& fn) {
  if (b != nullptr && b->shape().element_type() != a.shape().element_type())
    return unsupported_type_error(instruction, b->shape().element_type());
  if (b != nullptr) INSITU_RETURN_IF_ERROR(check_operand_dimensions(instruction, *b, 1, a.shape().dimensions()));
  return dispatch_element_type(a.shape().element_type(), [&](auto tag) -> StatusOr<Literal> {
    using T = decltype(tag);
    if constexpr (kIsSubByteInt<T>) {
      INSITU_RETURN_IF_ERROR(check_result_shape(instruction, kTypeOf<T>, a.shape().dimensions()));
      Literal result(instruction.shape());
      auto lhs = a.data<T>();
      auto out = result.data<T>();
      for (size_t i = 0; i < lhs.size(); ++i) {
        const uint32_t rhs = b != nullptr ? b->data<T>()[i].pattern() : 0;
        out[i] = T::wrap(fn(lhs[i].pattern(), rhs, T::kBitCount));
      }
      return result;
    } else {
      INSITU_UNREACHABLE("map_sub_byte_pattern on " << primitive_type_name(kTypeOf<T>));
      return unsupported_type_error(instruction, kTypeOf<T>);
    }
  });
}

// The per-family evaluators, one file each.
StatusOr<Literal> evaluate_unary(const Instruction& instruction, const Literal& x);          // elementwise_unary.cc
StatusOr<Literal> evaluate_binary(const Instruction& instruction, const Literal& a, const Literal& b);  // elementwise_binary.cc
StatusOr<Literal> evaluate_compare(const Instruction& instruction, const Literal& a, const Literal& b);  // elementwise_compare.cc
StatusOr<Literal> evaluate_convert(const Instruction& instruction, const Literal& x);        // elementwise_convert.cc
StatusOr<Literal> evaluate_bitcast_convert(const Instruction& instruction, const Literal& x);  // elementwise_convert.cc
StatusOr<Literal> evaluate_stochastic_convert(const Instruction& instruction, const Literal& x,
                                              const Literal& random);  // elementwise_convert.cc
StatusOr<Literal> evaluate_reduce_precision(const Instruction& instruction, const Literal& x);  // elementwise_convert.cc

}  // namespace insitu::eval
