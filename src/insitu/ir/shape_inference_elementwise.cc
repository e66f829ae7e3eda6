// Shape inference for elementwise ops: unary and binary arithmetic, logical ops, shifts,
// compare, complex/real/imag/is-finite, select, clamp, convert, bitcast-convert and
// reduce-precision. HLO has no implicit broadcasting: operands have the result's dimensions
// (XLA's verifier: "Implicit broadcast is not allowed in HLO"), and one element type.
#include "insitu/ir/shape_inference.h"
#include "insitu/ir/shape_inference_internal.h"

namespace insitu::shape_inference_internal {
namespace {

bool type_allowed(OperandTypes rule, PrimitiveType type) {
  switch (rule) {
    case OperandTypes::kAnyArray: return is_array_type(type);
    case OperandTypes::kPredOrInteger: return type == PrimitiveType::kPred || is_integral(type);
    case OperandTypes::kInteger: return is_integral(type);
    case OperandTypes::kFloat: return is_floating(type);
    case OperandTypes::kFloatOrComplex: return is_floating(type) || is_complex(type);
    case OperandTypes::kSigned: return is_signed_integral(type) || is_floating(type) || is_complex(type);
    case OperandTypes::kNumber: return is_integral(type) || is_floating(type) || is_complex(type);
  }
  return false;
}

std::string_view rule_text(OperandTypes rule) {
  switch (rule) {
    case OperandTypes::kAnyArray: return "array";
    case OperandTypes::kPredOrInteger: return "pred or integer";
    case OperandTypes::kInteger: return "integer";
    case OperandTypes::kFloat: return "floating-point";
    case OperandTypes::kFloatOrComplex: return "floating-point or complex";
    case OperandTypes::kSigned: return "signed integer, floating-point or complex";
    case OperandTypes::kNumber: return "integer, floating-point or complex";
  }
  return "";
}

Status check_type_rule(const Instruction& instruction, PrimitiveType type) {
  const OperandTypes rule = operand_types(instruction.opcode());
  if (type_allowed(rule, type)) return ok_status();
  return error_at(instruction, str_cat(opcode_name(instruction.opcode()), " needs ", rule_text(rule),
                                       " operands, got ", type_text(type)));
}

// All operands arrays with the dimensions of operand 0 and (if same_type) its element type.
Status check_same_shapes(const Instruction& instruction, int64_t first, bool same_type) {
  const Shape& reference = instruction.operand(first)->shape();
  for (int64_t i = first; i < instruction.operand_count(); ++i) {
    INSITU_RETURN_IF_ERROR(check_array_operand(instruction, i));
    const Shape& shape = instruction.operand(i)->shape();
    if (shape.dimensions() != reference.dimensions()) {
      return error_at(instruction, str_cat(opcode_name(instruction.opcode()), " operands must have one shape (HLO has no implicit broadcast), got ",
                                           text(reference), " and ", text(shape), "; broadcast explicitly"));
    }
    if (same_type && shape.element_type() != reference.element_type()) {
      return error_at(instruction, str_cat(opcode_name(instruction.opcode()),
                                           " operands must have one element type, got ", text(reference),
                                           " and ", text(shape), "; convert one of them"));
    }
  }
  return ok_status();
}

StatusOr<Shape> infer_unary(const Instruction& instruction) {
  INSITU_RETURN_IF_ERROR(check_operand_count(instruction, 1));
  INSITU_RETURN_IF_ERROR(check_array_operand(instruction, 0));
  const Shape& operand = instruction.operand(0)->shape();
  INSITU_RETURN_IF_ERROR(check_type_rule(instruction, operand.element_type()));
  switch (instruction.opcode()) {
    case Opcode::kAbs: case Opcode::kReal: case Opcode::kImag:
      return with_element_type(operand, complex_component_type(operand.element_type()));
    case Opcode::kIsFinite:
      return with_element_type(operand, PrimitiveType::kPred);
    case Opcode::kReducePrecision:
      if (instruction.exponent_bits < 1 || instruction.mantissa_bits < 0) {
        return error_at(instruction, str_cat("reduce-precision needs exponent_bits >= 1 and mantissa_bits >= 0, got ",
                                             instruction.exponent_bits, " and ", instruction.mantissa_bits));
      }
      return operand;
    default:
      return operand;
  }
}

StatusOr<Shape> infer_binary(const Instruction& instruction) {
  INSITU_RETURN_IF_ERROR(check_operand_count(instruction, 2));
  if (instruction.operand(0)->shape().is_array() && instruction.operand(1)->shape().is_array()) {
    if (std::optional<PrimitiveType> mixed =
            mixed_float_type(instruction.opcode(), instruction.operand(0)->shape().element_type(),
                             instruction.operand(1)->shape().element_type())) {
      INSITU_RETURN_IF_ERROR(check_same_shapes(instruction, 0, /*same_type=*/false));
      return with_element_type(instruction.operand(0)->shape(), *mixed);
    }
  }
  INSITU_RETURN_IF_ERROR(check_same_shapes(instruction, 0, /*same_type=*/true));
  const Shape& lhs = instruction.operand(0)->shape();
  switch (instruction.opcode()) {
    case Opcode::kCompare:
      return with_element_type(lhs, PrimitiveType::kPred);
    case Opcode::kComplex:
      if (lhs.element_type() == PrimitiveType::kF32) return with_element_type(lhs, PrimitiveType::kC64);
      if (lhs.element_type() == PrimitiveType::kF64) return with_element_type(lhs, PrimitiveType::kC128);
      return error_at(instruction, str_cat("complex needs f32 or f64 operands, got ", type_text(lhs.element_type())));
    default:
      INSITU_RETURN_IF_ERROR(check_type_rule(instruction, lhs.element_type()));
      return lhs;
  }
}

StatusOr<Shape> infer_select(const Instruction& instruction) {
  INSITU_RETURN_IF_ERROR(check_operand_count(instruction, 3));
  for (int64_t i = 0; i < 3; ++i) INSITU_RETURN_IF_ERROR(check_array_operand(instruction, i));
  INSITU_RETURN_IF_ERROR(check_same_shapes(instruction, 1, /*same_type=*/true));
  const Shape& predicate = instruction.operand(0)->shape();
  const Shape& on_true = instruction.operand(1)->shape();
  if (predicate.element_type() != PrimitiveType::kPred)
    return error_at(instruction, str_cat("select needs a pred predicate, got ", text(predicate)));
  if (predicate.rank() != 0 && predicate.dimensions() != on_true.dimensions()) {
    return error_at(instruction, str_cat("select predicate ", text(predicate), " must be a scalar or have the shape of the selected values ",
                                         text(on_true)));
  }
  return on_true;
}

StatusOr<Shape> infer_clamp(const Instruction& instruction) {
  INSITU_RETURN_IF_ERROR(check_operand_count(instruction, 3));
  for (int64_t i = 0; i < 3; ++i) INSITU_RETURN_IF_ERROR(check_array_operand(instruction, i));
  const Shape& operand = instruction.operand(1)->shape();
  for (int64_t i : {0, 2}) {
    const Shape& bound = instruction.operand(i)->shape();
    if (bound.element_type() != operand.element_type() ||
        (bound.rank() != 0 && bound.dimensions() != operand.dimensions())) {
      return error_at(instruction, str_cat("clamp ", i == 0 ? "min " : "max ", text(bound),
                                           " must be a scalar or have the operand's shape, with its element type ",
                                           text(operand)));
    }
  }
  return operand;
}

StatusOr<Shape> infer_convert(const Instruction& instruction) {
  INSITU_RETURN_IF_ERROR(check_operand_count(instruction, 1));
  INSITU_RETURN_IF_ERROR(check_array_operand(instruction, 0));
  const Shape& operand = instruction.operand(0)->shape();
  PrimitiveType to = instruction.shape().element_type();
  if (!is_array_type(to))
    return error_at(instruction, str_cat("convert needs an array result, got ", text(instruction.shape())));
  if (is_complex(operand.element_type()) && !is_complex(to)) {
    return error_at(instruction, str_cat("convert from complex ", type_text(operand.element_type()), " to ", type_text(to),
                                         " is not defined; use real or imag"));
  }
  return with_element_type(operand, to);
}

// stochastic-convert(x, random): x a float array, random unsigned of x's width and dimensions
// (XLA's rules); the result has x's dimensions and the written element type.
StatusOr<Shape> infer_stochastic_convert(const Instruction& instruction) {
  INSITU_RETURN_IF_ERROR(check_operand_count(instruction, 2));
  for (int64_t i = 0; i < 2; ++i) INSITU_RETURN_IF_ERROR(check_array_operand(instruction, i));
  const Shape& operand = instruction.operand(0)->shape();
  const Shape& random = instruction.operand(1)->shape();
  const PrimitiveType to = instruction.shape().element_type();
  if (!is_floating(operand.element_type()))
    return error_at(instruction, str_cat("stochastic-convert rounds a float array, got ", text(operand)));
  if (!is_unsigned_integral(random.element_type()) || bit_width(random.element_type()) != bit_width(operand.element_type()))
    return error_at(instruction, str_cat("stochastic-convert's random operand must be unsigned with the operand's ",
                                         bit_width(operand.element_type()), " bits, got ", text(random)));
  if (random.dimensions() != operand.dimensions())
    return error_at(instruction, str_cat("stochastic-convert's random operand ", text(random),
                                         " must have the operand's dimensions ", text(operand)));
  if (!is_array_type(to))
    return error_at(instruction, str_cat("stochastic-convert needs an array result, got ", text(instruction.shape())));
  return with_element_type(operand, to);
}

StatusOr<Shape> infer_bitcast_convert(const Instruction& instruction) {
  INSITU_RETURN_IF_ERROR(check_operand_count(instruction, 1));
  INSITU_RETURN_IF_ERROR(check_array_operand(instruction, 0));
  const Shape& operand = instruction.operand(0)->shape();
  PrimitiveType from = operand.element_type();
  PrimitiveType to = instruction.shape().element_type();
  if (!is_array_type(to))
    return error_at(instruction, str_cat("bitcast-convert needs an array result, got ", text(instruction.shape())));
  if (is_complex(from) != is_complex(to))
    return error_at(instruction, str_cat("bitcast-convert between complex and real types (", type_text(from), " => ",
                                         type_text(to), ") is not allowed"));
  int64_t from_bits = bit_width(from), to_bits = bit_width(to);
  Shape result = with_element_type(operand, to);
  if (from_bits == to_bits) return result;
  std::vector<int64_t> dims = operand.dimensions();
  if (from_bits > to_bits) {
    // A wide element becomes a new minor dimension of narrow ones: s32[4] -> u8[4,4].
    dims.push_back(from_bits / to_bits);
  } else {
    int64_t ratio = to_bits / from_bits;
    if (dims.empty() || dims.back() != ratio) {
      return error_at(instruction, str_cat("bitcast-convert from ", text(operand), " to ", type_text(to),
                                           " needs a last dimension of ", ratio, " (the ratio of bit widths)"));
    }
    dims.pop_back();
  }
  return Shape::array(to, dims);
}

}  // namespace

StatusOr<Shape> infer_elementwise_shape(const Instruction& instruction) {
  Opcode opcode = instruction.opcode();
  if (is_elementwise_binary(opcode)) return infer_binary(instruction);
  switch (opcode) {
    case Opcode::kSelect: return infer_select(instruction);
    case Opcode::kClamp: return infer_clamp(instruction);
    case Opcode::kConvert: return infer_convert(instruction);
    case Opcode::kBitcastConvert: return infer_bitcast_convert(instruction);
    case Opcode::kStochasticConvert: return infer_stochastic_convert(instruction);
    default: return infer_unary(instruction);
  }
}

}  // namespace insitu::shape_inference_internal
