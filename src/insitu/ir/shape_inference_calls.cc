// Shape inference for ops that call computations: reduce, reduce-window, sort, while,
// conditional, call, map, fusion. Besides the result shape, each rule checks that the called
// computation has the signature the caller needs (XLA's VerifyReducerShape and friends).
#include "insitu/ir/shape_inference_internal.h"

namespace insitu::shape_inference_internal {
namespace {

Shape scalar_of(const Shape& shape) { return Shape::scalar(shape.element_type()); }
Shape tuple_or_single(std::vector<Shape> shapes) {
  return shapes.size() == 1 ? shapes[0] : Shape::tuple(std::move(shapes));
}

Status check_root(const Instruction& instruction, const Computation& computation, std::string_view role,
                  const Shape& expected) {
  if (computation.root()->shape().compatible(expected)) return ok_status();
  return error_at(instruction, str_cat(role, " computation %", computation.name(), " returns ",
                                       text(computation.root()->shape()), " but ", opcode_name(instruction.opcode()),
                                       " needs ", text(expected)));
}

// Checks a variadic reducer (reduce, reduce-window): operands are N inputs then N scalar inits,
// to_apply is (N accumulators, N input elements) -> N accumulators. Returns the init shapes.
StatusOr<std::vector<Shape>> check_reducer(const Instruction& instruction) {
  int64_t count = instruction.operand_count();
  if (count < 2 || count % 2 != 0)
    return invalid_argument(str_cat(opcode_name(instruction.opcode()), " needs N inputs and N init values (an even count >= 2), %",
                                    instruction.name(), " has ", count),
                            instruction.location());
  int64_t n = count / 2;
  for (int64_t i = 0; i < count; ++i) INSITU_RETURN_IF_ERROR(check_array_operand(instruction, i));
  const Shape& first = instruction.operand(0)->shape();
  std::vector<Shape> parameters, inits;
  for (int64_t i = 0; i < n; ++i) {
    const Shape& input = instruction.operand(i)->shape();
    const Shape& init = instruction.operand(n + i)->shape();
    if (input.dimensions() != first.dimensions())
      return error_at(instruction, str_cat(opcode_name(instruction.opcode()), " inputs ", text(first), " and ", text(input),
                                           " must have the same dimensions"));
    if (init.rank() != 0)
      return error_at(instruction, str_cat(opcode_name(instruction.opcode()), " init value ", i, " (%",
                                           instruction.operand(n + i)->name(), ") must be a scalar, got ", text(init)));
    inits.push_back(init);
  }
  parameters = inits;
  for (int64_t i = 0; i < n; ++i) parameters.push_back(scalar_of(instruction.operand(i)->shape()));
  INSITU_ASSIGN_OR_RETURN(const Computation* to_apply, called_computation(instruction, 0, "to_apply"));
  INSITU_RETURN_IF_ERROR(check_computation_parameters(instruction, *to_apply, "to_apply", parameters));
  INSITU_RETURN_IF_ERROR(check_root(instruction, *to_apply, "to_apply", tuple_or_single(inits)));
  return inits;
}

StatusOr<Shape> infer_reduce(const Instruction& instruction) {
  INSITU_ASSIGN_OR_RETURN(std::vector<Shape> inits, check_reducer(instruction));
  const Shape& input = instruction.operand(0)->shape();
  std::vector<bool> reduced(static_cast<size_t>(input.rank()), false);
  for (int64_t d : instruction.dimensions) {
    if (d < 0 || d >= input.rank() || reduced[d])
      return error_at(instruction, str_cat("reduce dimensions=", dims_text(instruction.dimensions),
                                           " must be distinct dimensions of ", text(input)));
    reduced[d] = true;
  }
  std::vector<int64_t> kept;
  for (int64_t d = 0; d < input.rank(); ++d)
    if (!reduced[d]) kept.push_back(input.dimension(d));
  std::vector<Shape> results;
  for (const Shape& init : inits) results.push_back(Shape::array(init.element_type(), kept));
  return tuple_or_single(results);
}

StatusOr<Shape> infer_reduce_window(const Instruction& instruction) {
  INSITU_ASSIGN_OR_RETURN(std::vector<Shape> inits, check_reducer(instruction));
  const Shape& input = instruction.operand(0)->shape();
  if (static_cast<int64_t>(instruction.window.size()) != input.rank())
    return error_at(instruction, str_cat("reduce-window window has ", instruction.window.size(),
                                         " dimensions but the input ", text(input), " has rank ", input.rank()));
  std::vector<int64_t> out;
  for (int64_t d = 0; d < input.rank(); ++d) {
    const WindowDimension& w = instruction.window[d];
    if (w.size <= 0 || w.stride <= 0 || w.base_dilation <= 0 || w.window_dilation <= 0)
      return error_at(instruction, str_cat("reduce-window window dimension ", d,
                                           " needs positive size, stride and dilations"));
    const int64_t n = input.dimension(d);
    const std::optional<int64_t> padded =
        checked_sum_of_products({{std::max<int64_t>(n - 1, 0), w.base_dilation}, {n == 0 ? 0 : 1, 1},
                                 {w.padding_low, 1}, {w.padding_high, 1}});
    const std::optional<int64_t> dilated_window = checked_sum_of_products({{w.size - 1, w.window_dilation}, {1, 1}});
    if (!padded || !dilated_window)
      return error_at(instruction, str_cat("reduce-window window dimension ", d, ": the dilated, padded sizes of an input of ",
                                           n, " and a window of ", w.size, " overflow 64 bits"));
    out.push_back(*padded < *dilated_window ? 0 : (*padded - *dilated_window) / w.stride + 1);
  }
  std::vector<Shape> results;
  for (const Shape& init : inits) results.push_back(Shape::array(init.element_type(), out));
  return tuple_or_single(results);
}

StatusOr<Shape> infer_sort(const Instruction& instruction) {
  INSITU_RETURN_IF_ERROR(check_min_operand_count(instruction, 1));
  const Shape& first = instruction.operand(0)->shape();
  std::vector<Shape> parameters, results;
  for (int64_t i = 0; i < instruction.operand_count(); ++i) {
    INSITU_RETURN_IF_ERROR(check_array_operand(instruction, i));
    const Shape& shape = instruction.operand(i)->shape();
    if (shape.dimensions() != first.dimensions())
      return error_at(instruction, str_cat("sort operands ", text(first), " and ", text(shape), " must have the same dimensions"));
    parameters.push_back(scalar_of(shape));
    parameters.push_back(scalar_of(shape));
    results.push_back(shape);
  }
  if (instruction.dimensions.size() != 1 || instruction.dimensions[0] < 0 || instruction.dimensions[0] >= first.rank())
    return error_at(instruction, str_cat("sort needs one dimension of ", text(first), ": dimensions={d}"));
  INSITU_ASSIGN_OR_RETURN(const Computation* comparator, called_computation(instruction, 0, "to_apply"));
  INSITU_RETURN_IF_ERROR(check_computation_parameters(instruction, *comparator, "comparator", parameters));
  INSITU_RETURN_IF_ERROR(check_root(instruction, *comparator, "comparator", Shape::scalar(PrimitiveType::kPred)));
  return tuple_or_single(results);
}

StatusOr<Shape> infer_while(const Instruction& instruction) {
  INSITU_RETURN_IF_ERROR(check_operand_count(instruction, 1));
  const Shape& state = instruction.operand(0)->shape();
  INSITU_ASSIGN_OR_RETURN(const Computation* condition, called_computation(instruction, 0, "condition"));
  INSITU_ASSIGN_OR_RETURN(const Computation* body, called_computation(instruction, 1, "body"));
  INSITU_RETURN_IF_ERROR(check_computation_parameters(instruction, *condition, "condition", {state}));
  INSITU_RETURN_IF_ERROR(check_root(instruction, *condition, "condition", Shape::scalar(PrimitiveType::kPred)));
  INSITU_RETURN_IF_ERROR(check_computation_parameters(instruction, *body, "body", {state}));
  INSITU_RETURN_IF_ERROR(check_root(instruction, *body, "body", state));
  return state;
}

StatusOr<Shape> infer_conditional(const Instruction& instruction) {
  INSITU_RETURN_IF_ERROR(check_min_operand_count(instruction, 2));
  const Shape& selector = instruction.operand(0)->shape();
  int64_t branch_count = static_cast<int64_t>(instruction.called_computations().size());
  bool is_pred = selector.is_array() && selector.rank() == 0 && selector.element_type() == PrimitiveType::kPred;
  bool is_index = selector.is_array() && selector.rank() == 0 && selector.element_type() == PrimitiveType::kS32;
  if (!is_pred && !is_index)
    return error_at(instruction, str_cat("conditional selector must be pred[] (two branches) or s32[] (a branch index), got ",
                                         text(selector)));
  if (is_pred && branch_count != 2)
    return error_at(instruction, str_cat("conditional with a pred[] selector needs 2 branches (true_computation, false_computation), got ",
                                         branch_count));
  if (branch_count < 1) return error_at(instruction, "conditional needs at least one branch computation");
  if (instruction.operand_count() != branch_count + 1)
    return invalid_argument(str_cat("conditional needs ", branch_count + 1, " operands (the selector and one per branch), %",
                                    instruction.name(), " has ", instruction.operand_count()),
                            instruction.location());
  Shape result;
  for (int64_t b = 0; b < branch_count; ++b) {
    std::string role = str_cat("branch ", b);
    INSITU_ASSIGN_OR_RETURN(const Computation* branch, called_computation(instruction, b, role));
    INSITU_RETURN_IF_ERROR(check_computation_parameters(instruction, *branch, role, {instruction.operand(b + 1)->shape()}));
    if (b == 0) result = branch->root()->shape();
    else INSITU_RETURN_IF_ERROR(check_root(instruction, *branch, role, result));
  }
  return result;
}

StatusOr<Shape> infer_call_like(const Instruction& instruction, std::string_view role) {
  INSITU_ASSIGN_OR_RETURN(const Computation* callee, called_computation(instruction, 0, role));
  std::vector<Shape> parameters;
  for (const Instruction* operand : instruction.operands()) parameters.push_back(operand->shape());
  INSITU_RETURN_IF_ERROR(check_computation_parameters(instruction, *callee, role, parameters));
  return callee->root()->shape();
}

StatusOr<Shape> infer_map(const Instruction& instruction) {
  INSITU_RETURN_IF_ERROR(check_min_operand_count(instruction, 1));
  const Shape& first = instruction.operand(0)->shape();
  std::vector<Shape> parameters;
  for (int64_t i = 0; i < instruction.operand_count(); ++i) {
    INSITU_RETURN_IF_ERROR(check_array_operand(instruction, i));
    const Shape& shape = instruction.operand(i)->shape();
    if (shape.dimensions() != first.dimensions())
      return error_at(instruction, str_cat("map operands ", text(first), " and ", text(shape), " must have the same dimensions"));
    parameters.push_back(scalar_of(shape));
  }
  const auto& dims = instruction.dimensions;
  for (size_t i = 0; i < dims.size(); ++i)
    if (dims.size() != static_cast<size_t>(first.rank()) || dims[i] != static_cast<int64_t>(i))
      return error_at(instruction, str_cat("map dimensions=", dims_text(dims), " must list every dimension of ", text(first), " in order"));
  INSITU_ASSIGN_OR_RETURN(const Computation* to_apply, called_computation(instruction, 0, "to_apply"));
  INSITU_RETURN_IF_ERROR(check_computation_parameters(instruction, *to_apply, "to_apply", parameters));
  const Shape& root = to_apply->root()->shape();
  if (!root.is_array() || root.rank() != 0)
    return error_at(instruction, str_cat("to_apply computation %", to_apply->name(), " must return a scalar, returns ", text(root)));
  return Shape::array(root.element_type(), first.dimensions());
}

}  // namespace

StatusOr<Shape> infer_called_computation_shape(const Instruction& instruction) {
  switch (instruction.opcode()) {
    case Opcode::kReduce: return infer_reduce(instruction);
    case Opcode::kReduceWindow: return infer_reduce_window(instruction);
    case Opcode::kSort: return infer_sort(instruction);
    case Opcode::kWhile: return infer_while(instruction);
    case Opcode::kConditional: return infer_conditional(instruction);
    case Opcode::kCall: return infer_call_like(instruction, "to_apply");
    case Opcode::kFusion: return infer_call_like(instruction, "calls");
    case Opcode::kMap: return infer_map(instruction);
    default: INSITU_UNREACHABLE("not a calling opcode: " << opcode_name(instruction.opcode()));
  }
  return instruction.shape();
}

}  // namespace insitu::shape_inference_internal
