// while_loop, fori_loop and cond (control_flow.h).
#include "insitu/frontend/control_flow.h"

#include "insitu/frontend/ops.h"
#include "insitu/frontend/ops_internal.h"

namespace insitu {
namespace {

using frontend_internal::tracer_for;

Shape tuple_shape_of(const std::vector<Tensor>& values) {
  std::vector<Shape> shapes;
  for (const Tensor& value : values) shapes.push_back(value.shape());
  return Shape::tuple(std::move(shapes));
}

Instruction* pack(Tracer* tracer, const std::vector<Tensor>& values) {
  auto tuple = std::make_unique<Instruction>(Opcode::kTuple, tracer->unique_name("tuple"), tuple_shape_of(values));
  for (const Tensor& value : values) tuple->append_operand(value.value());
  return tracer->emit(std::move(tuple));
}

std::vector<Tensor> unpack(Tracer* tracer, Instruction* tuple) {
  std::vector<Tensor> values;
  for (int64_t i = 0; i < tuple->shape().tuple_size(); ++i) {
    auto element = std::make_unique<Instruction>(Opcode::kGetTupleElement, tracer->unique_name("get-tuple-element"),
                                                 tuple->shape().tuple_shape(i));
    element->append_operand(tuple);
    element->tuple_index = i;
    values.push_back(Tensor::from_instruction(tracer, tracer->emit(std::move(element))));
  }
  return values;
}

Instruction* add_tuple_parameter(Tracer* tracer, const Shape& shape) {
  auto parameter = std::make_unique<Instruction>(Opcode::kParameter, tracer->unique_name("carry"), shape);
  parameter->parameter_number = 0;
  return tracer->emit(std::move(parameter), /*infer=*/false);
}

// Traces `fn` over the elements of one tuple parameter of `shape` into a new computation whose
// root is the tuple of its results (or, with `single`, its one result).
Computation* trace_region(Tracer* tracer, std::string_view name, std::string_view scope, const Shape& shape,
                          const std::function<std::vector<Tensor>(const std::vector<Tensor>&)>& fn, bool single) {
  tracer->begin_computation(name, scope);
  Instruction* parameter = add_tuple_parameter(tracer, shape);
  std::vector<Tensor> results = fn(unpack(tracer, parameter));
  bool valid = !results.empty() || !single;
  for (const Tensor& result : results) valid = valid && result.valid();
  if (!valid) {
    tracer->record_error(invalid_argument(str_cat(scope, " returned an empty Tensor")));
    return tracer->end_computation(parameter);
  }
  return tracer->end_computation(single ? results[0].value() : pack(tracer, results));
}

}  // namespace

std::vector<Tensor> while_loop(const LoopCondition& condition, const LoopBody& body, const std::vector<Tensor>& init) {
  Tracer* tracer = tracer_for("while", init);
  if (tracer == nullptr) return std::vector<Tensor>(init.size());
  const Shape shape = tuple_shape_of(init);
  Computation* condition_computation = trace_region(
      tracer, "condition", "while/cond", shape, [&](const std::vector<Tensor>& carry) { return std::vector<Tensor>{condition(carry)}; },
      /*single=*/true);
  Computation* body_computation = trace_region(tracer, "body", "while/body", shape, body, /*single=*/false);
  Instruction* state = pack(tracer, init);
  auto loop = std::make_unique<Instruction>(Opcode::kWhile, tracer->unique_name("while"), shape);
  loop->append_operand(state);
  loop->set_called_computations({condition_computation, body_computation});
  return unpack(tracer, tracer->emit(std::move(loop)));
}

std::vector<Tensor> fori_loop(int64_t lower, int64_t upper, const ForiBody& body, const std::vector<Tensor>& init) {
  std::vector<Tensor> carry = {scalar(static_cast<double>(lower), PrimitiveType::kS32)};
  carry.insert(carry.end(), init.begin(), init.end());
  std::vector<Tensor> final_carry = while_loop(
      [&](const std::vector<Tensor>& state) {
        return compare(state[0], scalar(static_cast<double>(upper), PrimitiveType::kS32), ComparisonDirection::kLt);
      },
      [&](const std::vector<Tensor>& state) {
        std::vector<Tensor> rest(state.begin() + 1, state.end());
        std::vector<Tensor> next = {state[0] + 1.0};
        std::vector<Tensor> updated = body(state[0], rest);
        next.insert(next.end(), updated.begin(), updated.end());
        return next;
      },
      carry);
  return std::vector<Tensor>(final_carry.begin() + 1, final_carry.end());
}

std::vector<Tensor> cond(const Tensor& predicate, const Branch& on_true, const Branch& on_false,
                         const std::vector<Tensor>& operands) {
  std::vector<Tensor> all = operands;
  all.push_back(predicate);
  Tracer* tracer = tracer_for("conditional", all);
  if (tracer == nullptr) return {};
  const Shape shape = tuple_shape_of(operands);
  Computation* true_computation = trace_region(tracer, "on_true", "cond/true", shape, on_true, false);
  Computation* false_computation = trace_region(tracer, "on_false", "cond/false", shape, on_false, false);
  Instruction* true_operand = pack(tracer, operands);
  Instruction* false_operand = pack(tracer, operands);
  auto conditional = std::make_unique<Instruction>(Opcode::kConditional, tracer->unique_name("conditional"),
                                                   true_computation->root()->shape());
  conditional->append_operand(predicate.value());
  conditional->append_operand(true_operand);
  conditional->append_operand(false_operand);
  conditional->set_called_computations({true_computation, false_computation});
  return unpack(tracer, tracer->emit(std::move(conditional)));
}

}  // namespace insitu
