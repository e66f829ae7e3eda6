// HLO text parser: XLA's async shorthand. `op-start(...)` wraps `op` in a computation of its
// own; `op-update`/`op-done` (and async-update/-done written without calls=) take their start's
// computation; operands bound late by updates (`call-start()` ... `call-update(%s, %p0)`)
// become the wrapped op's operands, as XLA's parser desugars them.
#include "insitu/ir/parser_impl.h"
#include "insitu/ir/shape_inference.h"
#include "insitu/support/str.h"

namespace insitu::parser_internal {

Instruction* Parser::wrap_in_async_start(Computation& computation, std::unique_ptr<Instruction> op, Shape shape,
                                         const Token& name_token) {
  Computation* wrapped =
      add_made_up_computation(computation, str_cat(op->name(), ".async_wrapped"), name_token.location);
  auto start = std::make_unique<Instruction>(Opcode::kAsyncStart, op->name(), std::move(shape));
  start->set_location(name_token.location);
  for (int64_t i = 0; i < op->operand_count(); ++i) {
    Instruction* operand = op->operand(i);
    start->append_operand(operand);
    auto parameter = std::make_unique<Instruction>(Opcode::kParameter, str_cat("param_", i), operand->shape());
    parameter->parameter_number = i;
    parameter->set_location(name_token.location);
    op->replace_operand(i, wrapped->add_instruction(std::move(parameter)));
  }
  wrapped->set_root(wrapped->add_instruction(std::move(op)));
  start->set_called_computations({wrapped});
  Instruction* added = computation.add_instruction(std::move(start));
  shorthand_starts_.push_back(added);
  return added;
}

void Parser::bind_late_operands(Instruction& start) {
  Computation& wrapped = *start.called_computations()[0];
  Instruction& op = *wrapped.root();
  auto add_parameter = [&](const Shape& shape) {
    const int64_t number = wrapped.parameter_count();
    auto parameter = std::make_unique<Instruction>(Opcode::kParameter, str_cat("param_", number), shape);
    parameter->parameter_number = number;
    parameter->set_location(start.location());
    op.append_operand(wrapped.insert_instruction_before(std::move(parameter), &op));
  };
  // The chain is linear: each link has one update or done continuing it. A result left `()`
  // at the start takes the first one a later link writes (a done's shape is its result).
  auto unbound = [](const Shape& shape) { return shape.is_tuple() && shape.tuple_size() == 0; };
  std::optional<Shape> result;
  for (const Instruction* link = &start;;) {
    std::vector<const Instruction*> next_links;
    for (const Instruction* user : link->users())
      if ((user->opcode() == Opcode::kAsyncUpdate || user->opcode() == Opcode::kAsyncDone) && user->operand(0) == link)
        next_links.push_back(user);
    if (next_links.size() != 1) break;
    const Instruction* next = next_links[0];
    if (next->opcode() == Opcode::kAsyncDone) {
      if (!result && !unbound(next->shape())) result = next->shape();
      break;
    }
    if (!result && next->shape().is_tuple() && next->shape().tuple_size() >= 2 && !unbound(next->shape().tuple_shape(1)))
      result = next->shape().tuple_shape(1);
    for (int64_t i = 1; i < next->operand_count(); ++i) add_parameter(next->operand(i)->shape());
    link = next;
  }
  // (for call and fusion, whose callee's parameters are the op's operands)
  if ((op.opcode() == Opcode::kCall || op.opcode() == Opcode::kFusion) && op.called_computations().size() == 1) {
    const Computation& callee = *op.called_computations()[0];
    for (int64_t i = op.operand_count(); i < callee.parameter_count(); ++i)
      if (callee.parameter(i) != nullptr) add_parameter(callee.parameter(i)->shape());
    if (!result && callee.root() != nullptr) result = callee.root()->shape();
  }
  // (an op whose shape is inferred gets it from its operands; the others from the chain)
  if (unbound(op.shape()) && result && !can_infer_shape(op.opcode())) op.set_shape(*result);
}

Status Parser::resolve_async_links() {
  for (const AsyncLink& link : async_links_) {
    // (an update may bind more operands after the async tuple: the first one is the chain)
    const Instruction* start = link.instruction->operand_count() >= 1 ? link.instruction->operand(0) : nullptr;
    while (start != nullptr && start->opcode() == Opcode::kAsyncUpdate)
      start = start->operand_count() >= 1 ? start->operand(0) : nullptr;
    const bool found = start != nullptr && start->opcode() == Opcode::kAsyncStart &&
                       start->called_computations().size() == 1 &&
                       start->called_computations()[0]->root() != nullptr &&
                       (!link.op || start->called_computations()[0]->root()->opcode() == *link.op);
    if (!found)
      return error_at(link.token, str_cat("%", link.instruction->name(), ": ", link.token.text,
                                          " needs an operand that comes from ",
                                          link.op ? str_cat(opcode_name(*link.op), "-start") : std::string("async-start"),
                                          " (through its updates)"));
    link.instruction->set_called_computations(start->called_computations());
  }
  for (Instruction* start : shorthand_starts_) bind_late_operands(*start);
  return ok_status();
}

}  // namespace insitu::parser_internal
