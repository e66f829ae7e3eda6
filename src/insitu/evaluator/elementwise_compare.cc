// compare: every direction (EQ NE LT LE GT GE) under each comparison type.
//
//   FLOAT       IEEE comparison: NaN is unordered, -0 == +0 (the default for floats).
//   TOTALORDER  compares sign-magnitude bit patterns:
//               -NaN < -inf < ... < -0 < +0 < ... < +inf < +NaN (NaNs equal only to themselves).
//   SIGNED / UNSIGNED  integer order; the default for signed / unsigned integers and pred.
// Complex numbers compare for EQ and NE only. As in XLA's verifier, a type that does not fit
// the operands' element type (UNSIGNED on s32, SIGNED on f32, ...) is an error.
#include <bit>
#include <cstring>

#include "insitu/evaluator/elementwise_internal.h"

namespace insitu::eval {
namespace {

// Whether `type` may be used with operands of category `category`.
bool comparison_type_fits(ComparisonType type, unsigned category) {
  switch (type) {
    case ComparisonType::kDefault: return true;
    case ComparisonType::kFloat: return (category & (kFloat | kComplex)) != 0;
    case ComparisonType::kTotalOrder: return (category & kFloat) != 0;
    case ComparisonType::kSigned: return category == kSigned;
    case ComparisonType::kUnsigned: return (category & (kUnsigned | kPred)) != 0;
  }
  return false;
}

}  // namespace

StatusOr<Literal> evaluate_compare(const Instruction& instruction, const Literal& a, const Literal& b) {
  if (a.shape().element_type() != b.shape().element_type()) {
    return invalid_argument(str_cat("compare %", instruction.name(), " has operands of different element types (",
                                    primitive_type_name(a.shape().element_type()), " and ",
                                    primitive_type_name(b.shape().element_type()), "): convert one of them"),
                            instruction.location());
  }
  INSITU_RETURN_IF_ERROR(check_operand_dimensions(instruction, b, 1, a.shape().dimensions()));
  INSITU_RETURN_IF_ERROR(check_result_shape(instruction, PrimitiveType::kPred, a.shape().dimensions()));
  const ComparisonDirection direction = instruction.comparison_direction;
  const ComparisonType type = instruction.comparison_type;
  return dispatch_element_type(a.shape().element_type(), [&](auto tag) -> StatusOr<Literal> {
    using T = decltype(tag);
    if (!comparison_type_fits(type, category_of<T>())) {
      return invalid_argument(str_cat("compare %", instruction.name(), ": type=", comparison_type_name(type),
                                      " does not fit operands of ", primitive_type_name(kTypeOf<T>),
                                      "; use the type matching the element type (or leave type= out)"),
                              instruction.location());
    }
    if constexpr (kIsComplex<T>) {
      if (direction != ComparisonDirection::kEq && direction != ComparisonDirection::kNe) {
        return invalid_argument(str_cat("compare %", instruction.name(), ": direction=",
                                        comparison_direction_name(direction),
                                        " is not defined for complex numbers; only EQ and NE are"),
                                instruction.location());
      }
    }
    Literal result(instruction.shape());
    auto lhs = a.data<T>();
    auto rhs = b.data<T>();
    auto out = result.data<bool>();
    for (size_t i = 0; i < lhs.size(); ++i) {
      if constexpr (kIsComplex<T>) {
        out[i] = (lhs[i] == rhs[i]) == (direction == ComparisonDirection::kEq);
      } else if constexpr (category_of<T>() == kFloat) {
        out[i] = type == ComparisonType::kTotalOrder
                     ? compare_keys(direction, total_order_key(lhs[i]), total_order_key(rhs[i]))
                     : compare_keys(direction, to_compute(lhs[i]), to_compute(rhs[i]));
      } else {
        out[i] = compare_keys(direction, to_compute(lhs[i]), to_compute(rhs[i]));
      }
    }
    return result;
  });
}

}  // namespace insitu::eval
