// Elementwise ops of the reference evaluator: the entry points (ops.h), select, clamp and map.
// The op families live beside it: elementwise_unary.cc, elementwise_binary.cc,
// elementwise_compare.cc, elementwise_convert.cc; the shared loops in elementwise_internal.h.
//
// Operand shapes come from the operand Literals; the result has the instruction's shape, whose
// element type and dimensions must be what the op produces (the verifier normally ensures it;
// here a mismatch is a located error rather than a wrong value).
#include <cmath>
#include <cstring>

#include "insitu/evaluator/apply_util.h"
#include "insitu/evaluator/elementwise_internal.h"
#include "insitu/evaluator/ops.h"
#include "insitu/ir/shape_inference.h"

namespace insitu::eval {

Status unsupported_type_error(const Instruction& instruction, PrimitiveType type) {
  return invalid_argument(str_cat(opcode_name(instruction.opcode()), " %", instruction.name(),
                                  " does not support element type ", primitive_type_name(type),
                                  " (XLA rejects it too); convert the operand to a supported type first"),
                          instruction.location());
}

Status check_result_shape(const Instruction& instruction, PrimitiveType type, const std::vector<int64_t>& dimensions) {
  const Shape& shape = instruction.shape();
  if (shape.is_array() && shape.element_type() == type && shape.dimensions() == dimensions) return ok_status();
  return invalid_argument(
      str_cat(opcode_name(instruction.opcode()), " %", instruction.name(), " produces ",
              Shape::array(type, dimensions).to_string(false), " but its shape says ", shape.to_string(false),
              "; fix the instruction's shape"),
      instruction.location());
}

Status check_operand_dimensions(const Instruction& instruction, const Literal& operand, int64_t index,
                                const std::vector<int64_t>& dimensions) {
  if (operand.shape().is_array() && operand.shape().dimensions() == dimensions) return ok_status();
  return invalid_argument(str_cat(opcode_name(instruction.opcode()), " %", instruction.name(), ": operand ", index,
                                  " has shape ", operand.shape().to_string(false), " but the op needs dimensions [",
                                  str_join(dimensions, ","), "]; reshape or broadcast it first"),
                          instruction.location());
}

namespace {

Status check_operand_count(const Instruction& instruction, Operands operands, size_t count) {
  if (operands.size() == count) return ok_status();
  return invalid_argument(str_cat(opcode_name(instruction.opcode()), " %", instruction.name(), " takes ", count,
                                  " operands, got ", operands.size()),
                          instruction.location());
}

Status check_array_operands(const Instruction& instruction, Operands operands) {
  for (size_t i = 0; i < operands.size(); ++i) {
    if (!operands[i]->shape().is_array()) {
      return invalid_argument(str_cat(opcode_name(instruction.opcode()), " %", instruction.name(), ": operand ", i,
                                      " is ", operands[i]->shape().to_string(false), ", not an array"),
                              instruction.location());
    }
  }
  return ok_status();
}

// select(pred, on_true, on_false): pred is an array of the operands' shape or a scalar.
StatusOr<Literal> evaluate_select(const Instruction& instruction, const Literal& pred, const Literal& on_true,
                                  const Literal& on_false) {
  if (pred.shape().element_type() != PrimitiveType::kPred) {
    return invalid_argument(str_cat("select %", instruction.name(), ": the selector must be pred, got ",
                                    pred.shape().to_string(false)),
                            instruction.location());
  }
  if (on_true.shape().element_type() != on_false.shape().element_type()) {
    return invalid_argument(str_cat("select %", instruction.name(), ": on_true and on_false differ in element type (",
                                    on_true.shape().to_string(false), " vs ", on_false.shape().to_string(false), ")"),
                            instruction.location());
  }
  const std::vector<int64_t>& dimensions = on_true.shape().dimensions();
  INSITU_RETURN_IF_ERROR(check_operand_dimensions(instruction, on_false, 2, dimensions));
  if (pred.shape().rank() != 0) INSITU_RETURN_IF_ERROR(check_operand_dimensions(instruction, pred, 0, dimensions));
  INSITU_RETURN_IF_ERROR(check_result_shape(instruction, on_true.shape().element_type(), dimensions));
  Literal result(instruction.shape());
  const auto choose = pred.data<bool>();
  const int64_t width = byte_width(on_true.shape().element_type());
  for (int64_t i = 0; i < result.element_count(); ++i) {
    const Literal& source = choose[choose.size() == 1 ? 0 : i] ? on_true : on_false;
    std::memcpy(result.untyped_data() + i * width, source.untyped_data() + i * width, static_cast<size_t>(width));
  }
  return result;
}

// clamp(min, x, max): clamp_value (element_arithmetic.h); min and max may be scalars.
StatusOr<Literal> evaluate_clamp(const Instruction& instruction, const Literal& low, const Literal& x,
                                 const Literal& high) {
  const PrimitiveType type = x.shape().element_type();
  for (const Literal* bound : {&low, &high}) {
    if (bound->shape().element_type() != type) {
      return invalid_argument(str_cat("clamp %", instruction.name(), ": bound ", bound->shape().to_string(false),
                                      " differs in element type from the operand ", x.shape().to_string(false)),
                              instruction.location());
    }
    if (bound->shape().rank() != 0)
      INSITU_RETURN_IF_ERROR(check_operand_dimensions(instruction, *bound, bound == &low ? 0 : 2, x.shape().dimensions()));
  }
  return dispatch_element_type(type, [&](auto tag) -> StatusOr<Literal> {
    using T = decltype(tag);
    if constexpr (kIsComplex<T>) {
      return unsupported_type_error(instruction, type);
    } else {
      INSITU_RETURN_IF_ERROR(check_result_shape(instruction, type, x.shape().dimensions()));
      Literal result(instruction.shape());
      auto lows = low.data<T>(), values = x.data<T>(), highs = high.data<T>();
      auto out = result.data<T>();
      for (size_t i = 0; i < values.size(); ++i) {
        out[i] = to_stored<T>(clamp_value(to_compute(lows[lows.size() == 1 ? 0 : i]), to_compute(values[i]),
                                          to_compute(highs[highs.size() == 1 ? 0 : i])));
      }
      return result;
    }
  });
}

}  // namespace

StatusOr<Literal> evaluate_elementwise(const Instruction& instruction, Operands operands) {
  INSITU_RETURN_IF_ERROR(check_array_operands(instruction, operands));
  const Opcode opcode = instruction.opcode();
  switch (opcode) {
    case Opcode::kSelect:
      INSITU_RETURN_IF_ERROR(check_operand_count(instruction, operands, 3));
      return evaluate_select(instruction, *operands[0], *operands[1], *operands[2]);
    case Opcode::kClamp:
      INSITU_RETURN_IF_ERROR(check_operand_count(instruction, operands, 3));
      return evaluate_clamp(instruction, *operands[0], *operands[1], *operands[2]);
    case Opcode::kConvert:
      INSITU_RETURN_IF_ERROR(check_operand_count(instruction, operands, 1));
      return evaluate_convert(instruction, *operands[0]);
    case Opcode::kStochasticConvert:
      INSITU_RETURN_IF_ERROR(check_operand_count(instruction, operands, 2));
      return evaluate_stochastic_convert(instruction, *operands[0], *operands[1]);
    case Opcode::kBitcastConvert:
      INSITU_RETURN_IF_ERROR(check_operand_count(instruction, operands, 1));
      return evaluate_bitcast_convert(instruction, *operands[0]);
    case Opcode::kReducePrecision:
      INSITU_RETURN_IF_ERROR(check_operand_count(instruction, operands, 1));
      return evaluate_reduce_precision(instruction, *operands[0]);
    case Opcode::kReal:
    case Opcode::kImag:
    case Opcode::kIsFinite:
      INSITU_RETURN_IF_ERROR(check_operand_count(instruction, operands, 1));
      return evaluate_unary(instruction, *operands[0]);
    default: break;
  }
  if (is_elementwise_unary(opcode)) {
    INSITU_RETURN_IF_ERROR(check_operand_count(instruction, operands, 1));
    return evaluate_unary(instruction, *operands[0]);
  }
  if (is_elementwise_binary(opcode)) {
    INSITU_RETURN_IF_ERROR(check_operand_count(instruction, operands, 2));
    // mixed precision (shape_inference.h): both operands widen exactly to the result's type
    if (std::optional<PrimitiveType> mixed = mixed_float_type(opcode, operands[0]->shape().element_type(),
                                                              operands[1]->shape().element_type()))
      return evaluate_binary(instruction, convert_literal(*operands[0], *mixed), convert_literal(*operands[1], *mixed));
    return evaluate_binary(instruction, *operands[0], *operands[1]);
  }
  return unimplemented(str_cat("'", opcode_name(opcode), "' is not an elementwise op the evaluator knows"),
                       instruction.location());
}

StatusOr<Literal> evaluate_map(const Instruction& instruction, Operands operands, ComputationRunner& runner) {
  INSITU_RETURN_IF_ERROR(check_array_operands(instruction, operands));
  INSITU_ASSIGN_OR_RETURN(const Computation* to_apply, find_to_apply(instruction));
  if (operands.empty()) {
    return invalid_argument(str_cat("map %", instruction.name(), " needs at least one operand"),
                            instruction.location());
  }
  const std::vector<int64_t>& dimensions = operands[0]->shape().dimensions();
  for (size_t i = 1; i < operands.size(); ++i)
    INSITU_RETURN_IF_ERROR(check_operand_dimensions(instruction, *operands[i], static_cast<int64_t>(i), dimensions));
  INSITU_RETURN_IF_ERROR(check_result_shape(instruction, instruction.shape().element_type(), dimensions));
  Literal result(instruction.shape());
  std::vector<Literal> scalars(operands.size());
  std::vector<const Literal*> arguments(operands.size());
  for (int64_t linear = 0; linear < result.element_count(); ++linear) {
    for (size_t i = 0; i < operands.size(); ++i) {
      scalars[i] = scalar_at(*operands[i], linear);
      arguments[i] = &scalars[i];
    }
    INSITU_ASSIGN_OR_RETURN(Literal value, runner.run(*to_apply, arguments));
    if (!value.shape().is_array() || value.shape().rank() != 0 ||
        value.shape().element_type() != instruction.shape().element_type()) {
      return invalid_argument(str_cat("map %", instruction.name(), ": to_apply returned ",
                                      value.shape().to_string(false), " but the map needs a ",
                                      primitive_type_name(instruction.shape().element_type()), " scalar"),
                              instruction.location());
    }
    store_scalar(result, linear, value);
  }
  return result;
}

}  // namespace insitu::eval
