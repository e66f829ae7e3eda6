// Shape inference: the dispatcher, the shared helpers, and the rules for the opcodes whose
// shape is structural (parameter, constant, iota, tuple, get-tuple-element, copies, bitcast,
// opt-barrier, custom-call). The other groups live in shape_inference_*.cc.
#include "insitu/ir/shape_inference.h"

#include "insitu/ir/shape_inference_internal.h"

namespace insitu {
namespace shape_inference_internal {

Status error_at(const Instruction& instruction, const std::string& message) {
  return invalid_argument(str_cat("%", instruction.name(), ": ", message), instruction.location());
}

std::optional<int64_t> checked_sum_of_products(std::initializer_list<std::pair<int64_t, int64_t>> terms) {
  int64_t sum = 0;
  for (const auto& [a, b] : terms) {
    int64_t product;
    if (__builtin_mul_overflow(a, b, &product) || __builtin_add_overflow(sum, product, &sum)) return std::nullopt;
  }
  return sum;
}

Status check_operand_count(const Instruction& instruction, int64_t count) {
  if (instruction.operand_count() == count) return ok_status();
  return invalid_argument(str_cat(opcode_name(instruction.opcode()), " needs ", count,
                                  count == 1 ? " operand" : " operands", ", %", instruction.name(),
                                  " has ", instruction.operand_count()),
                          instruction.location());
}

Status check_min_operand_count(const Instruction& instruction, int64_t count) {
  if (instruction.operand_count() >= count) return ok_status();
  return invalid_argument(str_cat(opcode_name(instruction.opcode()), " needs at least ", count,
                                  count == 1 ? " operand" : " operands", ", %", instruction.name(),
                                  " has ", instruction.operand_count()),
                          instruction.location());
}

Status check_array_operand(const Instruction& instruction, int64_t i) {
  const Shape& shape = instruction.operand(i)->shape();
  if (shape.is_array()) return ok_status();
  return error_at(instruction, str_cat(opcode_name(instruction.opcode()), " operand ", i, " (%",
                                       instruction.operand(i)->name(), ") must be an array, got ",
                                       text(shape)));
}

StatusOr<const Computation*> called_computation(const Instruction& instruction, int64_t i,
                                                std::string_view role) {
  const auto& called = instruction.called_computations();
  if (i < static_cast<int64_t>(called.size()) && called[i] != nullptr) return called[i];
  return error_at(instruction, str_cat(opcode_name(instruction.opcode()), " needs a ", role,
                                       " computation; add ", role, "=%name"));
}

Status check_computation_parameters(const Instruction& instruction, const Computation& computation,
                                    std::string_view role, const std::vector<Shape>& parameters) {
  auto expected = [&] {
    return "(" + str_join(parameters, ", ", [](const Shape& s) { return text(s); }) + ")";
  };
  if (computation.root() == nullptr)
    return error_at(instruction, str_cat(role, " computation %", computation.name(), " has no ROOT"));
  if (computation.parameter_count() != static_cast<int64_t>(parameters.size())) {
    return error_at(instruction,
                    str_cat(role, " computation %", computation.name(), " takes ",
                            computation.parameter_count(), " parameters, but ",
                            opcode_name(instruction.opcode()), " passes ", parameters.size(), " ",
                            expected()));
  }
  for (size_t p = 0; p < parameters.size(); ++p) {
    const Instruction* parameter = computation.parameter(static_cast<int64_t>(p));
    if (parameter == nullptr)
      return error_at(instruction, str_cat(role, " computation %", computation.name(), " has no parameter(", p, ")"));
    if (!parameter->shape().compatible(parameters[p])) {
      return error_at(instruction,
                      str_cat(role, " computation %", computation.name(), " parameter ", p, " is ",
                              text(parameter->shape()), ", but ", opcode_name(instruction.opcode()),
                              " passes ", text(parameters[p]), "; expected signature ", expected()));
    }
  }
  return ok_status();
}

std::string dims_text(const std::vector<int64_t>& dims) { return "{" + str_join(dims, ",") + "}"; }

Shape with_element_type(const Shape& shape, PrimitiveType type) {
  Shape out = Shape::array(type, shape.dimensions(), shape.layout());
  for (int64_t i = 0; i < shape.rank(); ++i) out.set_dynamic_dimension(i, shape.dynamic_dimensions()[i]);
  return out;
}

namespace {

StatusOr<Shape> infer_get_tuple_element(const Instruction& instruction) {
  INSITU_RETURN_IF_ERROR(check_operand_count(instruction, 1));
  const Shape& tuple = instruction.operand(0)->shape();
  if (!tuple.is_tuple())
    return error_at(instruction, str_cat("get-tuple-element needs a tuple operand, got ", text(tuple)));
  if (instruction.tuple_index < 0 || instruction.tuple_index >= tuple.tuple_size()) {
    return error_at(instruction, str_cat("index=", instruction.tuple_index, " is out of range for ",
                                         text(tuple), " (", tuple.tuple_size(), " elements)"));
  }
  return tuple.tuple_shape(instruction.tuple_index);
}

StatusOr<Shape> infer_iota(const Instruction& instruction) {
  INSITU_RETURN_IF_ERROR(check_operand_count(instruction, 0));
  const Shape& shape = instruction.shape();
  if (!shape.is_array() || shape.rank() == 0)
    return error_at(instruction, str_cat("iota needs an array shape of rank >= 1, got ", text(shape)));
  if (instruction.iota_dimension < 0 || instruction.iota_dimension >= shape.rank()) {
    return error_at(instruction, str_cat("iota_dimension=", instruction.iota_dimension,
                                         " is out of range for ", text(shape)));
  }
  return shape;
}

StatusOr<Shape> infer_constant(const Instruction& instruction) {
  INSITU_RETURN_IF_ERROR(check_operand_count(instruction, 0));
  // `{...}`: the dump left the value out; the module is still well formed (running it is
  // refused by check_constants_known).
  if (instruction.constant_value == ConstantValue::kElided) return instruction.shape();
  if (!instruction.literal.valid()) return error_at(instruction, "constant has no value");
  return instruction.literal.shape();
}

StatusOr<Shape> infer_copy_start(const Instruction& instruction) {
  INSITU_RETURN_IF_ERROR(check_operand_count(instruction, 1));
  // (destination, source, u32[] context), as XLA's copy-start.
  const Shape& operand = instruction.operand(0)->shape();
  return Shape::tuple({operand, operand, Shape::scalar(PrimitiveType::kU32)});
}

StatusOr<Shape> infer_copy_done(const Instruction& instruction) {
  INSITU_RETURN_IF_ERROR(check_operand_count(instruction, 1));
  const Shape& operand = instruction.operand(0)->shape();
  if (!operand.is_tuple() || operand.tuple_size() < 2) {
    return error_at(instruction,
                    str_cat("copy-done needs the (destination, source, context) tuple of a copy-start, got ",
                            text(operand)));
  }
  return operand.tuple_shape(0);
}

// async-start: ((operands...), the called computation's result, context...) with the context
// as written; a result written `()` is not bound yet (XLA's partially bound async ops, bound
// by a later update), and so is not checked. async-update and async-done take an async-start
// or -update of the same computation (the parser gives them its computation when they do not
// name one); a done returns that computation's result.
StatusOr<Shape> infer_async(const Instruction& instruction) {
  const Opcode opcode = instruction.opcode();
  if (opcode == Opcode::kAsyncStart) {
    if (instruction.called_computations().size() != 1 || instruction.called_computations()[0]->root() == nullptr)
      return error_at(instruction, "async-start needs calls= naming one computation");
    const Shape& written = instruction.shape();
    if (!written.is_tuple() || written.tuple_size() < 2)
      return error_at(instruction, str_cat("async-start's shape must be ((operands), result, context...), got ",
                                           text(written)));
    std::vector<Shape> operands;
    for (const Instruction* operand : instruction.operands()) operands.push_back(operand->shape());
    const Shape& result = written.tuple_shape(1);
    const bool unbound = result.is_tuple() && result.tuple_size() == 0;
    std::vector<Shape> elements = {Shape::tuple(std::move(operands)),
                                   unbound ? result : instruction.called_computations()[0]->root()->shape()};
    for (int64_t i = 2; i < written.tuple_size(); ++i) elements.push_back(written.tuple_shape(i));
    return Shape::tuple(std::move(elements));
  }
  if (instruction.operand_count() < 1)
    return error_at(instruction, str_cat(opcode_name(opcode), " needs the async-start or -update it continues"));
  const Instruction& operand = *instruction.operand(0);
  if ((operand.opcode() != Opcode::kAsyncStart && operand.opcode() != Opcode::kAsyncUpdate) ||
      (!instruction.called_computations().empty() &&
       operand.called_computations() != instruction.called_computations()))
    return error_at(instruction, str_cat(opcode_name(opcode), " %", instruction.name(),
                                         " must take an async-start or async-update of the computation it calls"));
  if (opcode == Opcode::kAsyncUpdate) return instruction.shape();  // it may bind more operands
  if (!operand.shape().is_tuple() || operand.shape().tuple_size() < 2)
    return error_at(instruction, str_cat("async-done's operand must be an async tuple, got ", text(operand.shape())));
  // The chain's computation decides the result, also where late binding left it `()` so far
  // (a computation returning `()` leaves the done's written shape; running it is refused).
  if (instruction.called_computations().size() == 1 && instruction.called_computations()[0]->root() != nullptr &&
      !(instruction.called_computations()[0]->root()->shape().is_tuple() &&
        instruction.called_computations()[0]->root()->shape().tuple_size() == 0))
    return instruction.called_computations()[0]->root()->shape();
  const Shape& result = operand.shape().tuple_shape(1);
  return result.is_tuple() && result.tuple_size() == 0 ? instruction.shape() : result;
}

StatusOr<Shape> infer_bitcast(const Instruction& instruction) {
  INSITU_RETURN_IF_ERROR(check_operand_count(instruction, 1));
  INSITU_RETURN_IF_ERROR(check_array_operand(instruction, 0));
  const Shape& operand = instruction.operand(0)->shape();
  const Shape& shape = instruction.shape();
  // XLA:CPU: a bitcast reinterprets the dense buffer, so only the byte size must agree.
  if (!shape.is_array() || shape.byte_size() != operand.byte_size()) {
    return error_at(instruction,
                    str_cat("bitcast from ", text(operand), " (", operand.byte_size(), " bytes) to ",
                            text(shape), " (", shape.byte_size(),
                            " bytes) changes the byte size; use reshape or convert"));
  }
  return shape;
}

Status check_custom_call(const Instruction& instruction) {
  const CustomCallAttributes& attributes = instruction.custom_call;
  if (attributes.operand_layout_constraints) {
    const auto& constraints = *attributes.operand_layout_constraints;
    if (static_cast<int64_t>(constraints.size()) != instruction.operand_count()) {
      return error_at(instruction, str_cat("operand_layout_constraints has ", constraints.size(),
                                           " shapes but the custom-call has ", instruction.operand_count(),
                                           " operands; write one shape per operand"));
    }
    for (int64_t i = 0; i < instruction.operand_count(); ++i) {
      if (!constraints[i].compatible(instruction.operand(i)->shape())) {
        return error_at(instruction, str_cat("operand_layout_constraints[", i, "] is ", text(constraints[i]),
                                             " but operand ", i, " (%", instruction.operand(i)->name(),
                                             ") is ", text(instruction.operand(i)->shape())));
      }
    }
  }
  return ok_status();
}

// custom-call and fusion output_to_operand_aliasing: both sides exist and have one shape.
Status check_output_operand_aliasing(const Instruction& instruction, const std::vector<OutputOperandAlias>& aliasing) {
  for (const OutputOperandAlias& alias : aliasing) {
    std::string what = str_cat("output_to_operand_aliasing ", shape_index_to_string(alias.output_index),
                               ": (", alias.operand_number, ", ", shape_index_to_string(alias.operand_index), ")");
    if (alias.operand_number < 0 || alias.operand_number >= instruction.operand_count()) {
      return error_at(instruction, str_cat(what, ": operand ", alias.operand_number,
                                           " does not exist (the ", opcode_name(instruction.opcode()), " has ",
                                           instruction.operand_count(), " operands)"));
    }
    const Shape* output = instruction.shape().subshape(alias.output_index);
    if (output == nullptr) {
      return error_at(instruction, str_cat(what, ": output index ", shape_index_to_string(alias.output_index),
                                           " does not exist in ", text(instruction.shape())));
    }
    const Shape& operand_shape = instruction.operand(alias.operand_number)->shape();
    const Shape* operand = operand_shape.subshape(alias.operand_index);
    if (operand == nullptr) {
      return error_at(instruction, str_cat(what, ": operand index ", shape_index_to_string(alias.operand_index),
                                           " does not exist in ", text(operand_shape)));
    }
    // The same bytes, so an array may become a buffer in place (Pin) and back (Unpin).
    Shape output_array = *output, operand_array = *operand;
    output_array.set_buffer(false);
    operand_array.set_buffer(false);
    if (!output_array.compatible(operand_array)) {
      return error_at(instruction, str_cat(what, ": output ", text(*output), " and operand ", text(*operand),
                                           " differ; an aliased output must have its operand's shape"));
    }
  }
  return ok_status();
}

}  // namespace
}  // namespace shape_inference_internal

StatusOr<Shape> infer_shape(const Instruction& instruction) {
  using namespace shape_inference_internal;
  const Opcode opcode = instruction.opcode();
  if (is_elementwise(opcode) && opcode != Opcode::kMap) return infer_elementwise_shape(instruction);
  switch (opcode) {
    case Opcode::kParameter:
      INSITU_RETURN_IF_ERROR(check_operand_count(instruction, 0));
      if (instruction.parameter_number < 0)
        return error_at(instruction, str_cat("parameter number ", instruction.parameter_number, " is negative"));
      return instruction.shape();
    case Opcode::kConstant: return infer_constant(instruction);
    case Opcode::kIota: return infer_iota(instruction);
    case Opcode::kTuple: {
      std::vector<Shape> elements;
      for (const Instruction* operand : instruction.operands()) elements.push_back(operand->shape());
      return Shape::tuple(std::move(elements));
    }
    case Opcode::kGetTupleElement: return infer_get_tuple_element(instruction);
    case Opcode::kCopy:
    case Opcode::kOptimizationBarrier:
      INSITU_RETURN_IF_ERROR(check_operand_count(instruction, 1));
      return instruction.operand(0)->shape();
    case Opcode::kAfterAll:  // token[] from tokens (XLA writes it without a shape at times)
      for (int64_t i = 0; i < instruction.operand_count(); ++i)
        if (!instruction.operand(i)->shape().is_token())
          return error_at(instruction, str_cat("after-all operand ", i, " (%", instruction.operand(i)->name(),
                                               ") must be a token, got ", instruction.operand(i)->shape().to_string(false)));
      return Shape::token();
    case Opcode::kAsyncStart: case Opcode::kAsyncUpdate: case Opcode::kAsyncDone: return infer_async(instruction);
    case Opcode::kCopyStart: return infer_copy_start(instruction);
    case Opcode::kCopyDone: return infer_copy_done(instruction);
    case Opcode::kBitcast: return infer_bitcast(instruction);
    case Opcode::kBitcastConvert:
      return infer_elementwise_shape(instruction);
    case Opcode::kBroadcast: case Opcode::kReshape: case Opcode::kTranspose: case Opcode::kSlice:
    case Opcode::kDynamicSlice: case Opcode::kDynamicUpdateSlice: case Opcode::kConcatenate:
    case Opcode::kPad: case Opcode::kReverse:
      return infer_data_movement_shape(instruction);
    case Opcode::kDot: return infer_dot_shape(instruction);
    case Opcode::kConvolution: return infer_convolution_shape(instruction);
    case Opcode::kGather: return infer_gather_shape(instruction);
    case Opcode::kScatter: return infer_scatter_shape(instruction);
    case Opcode::kFusion:
      INSITU_RETURN_IF_ERROR(check_output_operand_aliasing(instruction, instruction.fusion_output_to_operand_aliasing));
      return infer_called_computation_shape(instruction);
    case Opcode::kReduce: case Opcode::kReduceWindow: case Opcode::kSort: case Opcode::kWhile:
    case Opcode::kConditional: case Opcode::kCall: case Opcode::kMap:
      return infer_called_computation_shape(instruction);
    case Opcode::kCustomCall:
      INSITU_RETURN_IF_ERROR(check_custom_call(instruction));
      INSITU_RETURN_IF_ERROR(check_output_operand_aliasing(instruction, instruction.custom_call.output_to_operand_aliasing));
      return instruction.shape();
    default:
      // No rule: the written shape is taken as is (the evaluator reports the opcode).
      return instruction.shape();
  }
}

std::optional<PrimitiveType> mixed_float_type(Opcode opcode, PrimitiveType lhs, PrimitiveType rhs) {
  switch (opcode) {
    case Opcode::kAdd: case Opcode::kSubtract: case Opcode::kMultiply: case Opcode::kDivide:
    case Opcode::kMaximum: case Opcode::kMinimum: case Opcode::kPower: case Opcode::kRemainder:
    case Opcode::kAtan2:
      break;
    default:
      return std::nullopt;
  }
  if (lhs == rhs || !is_floating(lhs) || !is_floating(rhs) || byte_width(lhs) == byte_width(rhs))
    return std::nullopt;
  return byte_width(lhs) > byte_width(rhs) ? lhs : rhs;
}

bool can_infer_shape(Opcode opcode) {
  switch (opcode) {
    case Opcode::kConvert: case Opcode::kBitcastConvert: case Opcode::kStochasticConvert:
      return false;  // the result element type is only in the written shape
    case Opcode::kTuple: case Opcode::kGetTupleElement: case Opcode::kCopy: case Opcode::kOptimizationBarrier:
    case Opcode::kCopyStart: case Opcode::kCopyDone: case Opcode::kTranspose: case Opcode::kSlice:
    case Opcode::kDynamicSlice: case Opcode::kDynamicUpdateSlice: case Opcode::kConcatenate: case Opcode::kPad:
    case Opcode::kReverse: case Opcode::kDot: case Opcode::kConvolution: case Opcode::kGather: case Opcode::kScatter: case Opcode::kReduce:
    case Opcode::kReduceWindow: case Opcode::kSort: case Opcode::kWhile: case Opcode::kConditional:
    case Opcode::kCall: case Opcode::kMap: case Opcode::kAfterAll:
      return true;
    default:
      return is_elementwise(opcode);
  }
}

}  // namespace insitu
