// The evaluator's dispatcher: walks a computation in program order, keeps one value per
// instruction, and hands each opcode family to its file (ops.h). Control flow (while,
// conditional, call, fusion), tuples and custom calls are handled here.
#include "insitu/evaluator/evaluator.h"

#include <chrono>
#include <unordered_map>

#include "insitu/evaluator/collectives.h"
#include "insitu/evaluator/ops.h"
#include "insitu/ir/verifier.h"
#include "insitu/support/str.h"

namespace insitu {
namespace {

class Interpreter final : public eval::ComputationRunner {
 public:
  explicit Interpreter(const EvaluatorOptions& options) : options_(options) {}

  StatusOr<Literal> run(const Computation& computation, eval::Operands arguments) override {
    if (static_cast<int64_t>(arguments.size()) != computation.parameter_count()) {
      return invalid_argument(str_cat("computation ", computation.name(), " takes ", computation.parameter_count(),
                                      " arguments, got ", arguments.size()),
                              computation.location());
    }
    std::unordered_map<const Instruction*, Literal> values;
    std::vector<const Literal*> operand_values;
    for (Instruction* instruction : computation.instructions()) {
      operand_values.clear();
      for (Instruction* operand : instruction->operands()) operand_values.push_back(&values.at(operand));
      StatusOr<Literal> value = evaluate_instruction(*instruction, operand_values, arguments);
      if (!value.ok()) return value.status().with_location(instruction->location());
      // Values are logical (row-major); the layout is the instruction's, so that a bitcast
      // of this value reads the bytes this instruction's layout puts in memory.
      if (value->shape().compatible(instruction->shape())) value->set_shape_layouts(instruction->shape());
      values.emplace(instruction, std::move(value).value());
    }
    INSITU_CHECK(computation.root() != nullptr) << "computation " << computation.name() << " has no root";
    return std::move(values.at(computation.root()));
  }

 private:
  // An async chain holds ((bound operands), result, context...) with the contexts zero. Its
  // computation runs at the link that binds its last operand: the start, or an update binding
  // the rest (XLA's late binding); later updates forward the value and done takes the result.
  // Binding more operands than the computation takes, or finishing before all are bound, is
  // refused.
  StatusOr<Literal> evaluate_async(const Instruction& instruction, eval::Operands operands) {
    auto refuse = [&](const std::string& why) {
      return invalid_argument(str_cat(opcode_name(instruction.opcode()), " %", instruction.name(), ": ", why),
                              instruction.location());
    };
    for (const RawAttribute& attribute : instruction.extra_attributes)
      if (attribute.key != "async_execution_thread")  // the thread it runs on: no value depends on it
        return refuse(str_cat(attribute.key, "=", attribute.value, " is not supported yet"));
    if (instruction.called_computations().size() != 1)
      return refuse("needs calls= naming the computation it runs");
    const Computation& computation = *instruction.called_computations()[0];
    const bool start = instruction.opcode() == Opcode::kAsyncStart;
    if (!start && (operands.empty() || !operands[0]->shape().is_tuple() || operands[0]->shape().tuple_size() < 2))
      return refuse("needs the async-start or -update it continues");
    // What the chain bound before this link, and what this link binds.
    std::vector<Literal> bound;
    if (!start)
      for (int64_t i = 0; i < operands[0]->element(0).shape().tuple_size(); ++i)
        bound.push_back(operands[0]->element(0).element(i));
    const bool ran_before = !start && static_cast<int64_t>(bound.size()) == computation.parameter_count();
    for (size_t i = start ? 0 : 1; i < operands.size(); ++i) bound.push_back(*operands[i]);
    const int64_t count = static_cast<int64_t>(bound.size());
    if (count > computation.parameter_count())
      return refuse(str_cat("binds ", count, " operands, but %", computation.name(), " takes ",
                            computation.parameter_count()));
    if (instruction.opcode() == Opcode::kAsyncDone) {
      if (count < computation.parameter_count())
        return refuse(str_cat("the chain binds ", count, " of the ", computation.parameter_count(),
                              " operands %", computation.name(), " takes"));
      if (operands[0]->element(1).shape() != instruction.shape())
        return refuse(str_cat("%", computation.name(), " returns ", operands[0]->element(1).shape().to_string(),
                              ", not the done's ", instruction.shape().to_string()));
      return operands[0]->element(1);
    }
    const Shape& shape = instruction.shape();
    if (!shape.is_tuple() || shape.tuple_size() < 2) return refuse("needs the shape ((operands), result, context...)");
    Literal result;
    if (ran_before) {
      result = operands[0]->element(1);
    } else if (count == computation.parameter_count()) {
      std::vector<const Literal*> inputs;
      for (const Literal& operand : bound) inputs.push_back(&operand);
      INSITU_ASSIGN_OR_RETURN(result, run(computation, inputs));
    } else {
      result = Literal(shape.tuple_shape(1));  // not bound yet: written `()` or a placeholder
    }
    std::vector<Literal> parts;
    parts.push_back(Literal::tuple(std::move(bound)));
    parts.push_back(std::move(result));
    for (int64_t i = 2; i < shape.tuple_size(); ++i) parts.push_back(Literal(shape.tuple_shape(i)));
    return Literal::tuple(std::move(parts));
  }


  StatusOr<Literal> evaluate_instruction(const Instruction& instruction, eval::Operands operands,
                                         eval::Operands arguments) {
    const Opcode opcode = instruction.opcode();
    if (eval::has_op_function(opcode)) return eval::evaluate_op(instruction, operands, *this);
    if (is_collective_opcode(opcode)) return evaluate_collective(instruction, operands, options_.device, *this);
    switch (opcode) {
      case Opcode::kParameter: {
        const Literal& argument = *arguments[instruction.parameter_number];
        if (!argument.shape().compatible(instruction.shape())) {
          return invalid_argument(str_cat("argument ", instruction.parameter_number, " has shape ",
                                          argument.shape().to_string(false), " but parameter %", instruction.name(),
                                          " expects ", instruction.shape().to_string(false)),
                                  instruction.location());
        }
        return argument;
      }
      case Opcode::kConstant: return instruction.literal;
      case Opcode::kTuple: {
        std::vector<Literal> elements;
        for (const Literal* operand : operands) elements.push_back(*operand);
        return Literal::tuple(std::move(elements));
      }
      case Opcode::kGetTupleElement: return operands[0]->element(instruction.tuple_index);
      case Opcode::kCopy:
      case Opcode::kOptimizationBarrier:
      case Opcode::kAddDependency: return *operands[0];  // (value, token): the value
      case Opcode::kAfterAll: return Literal(Shape::token());
      case Opcode::kCopyDone: return operands[0]->element(0);  // copy-start's destination
      case Opcode::kCopyStart:  // (destination, source, context)
        return Literal::tuple({*operands[0], *operands[0], Literal::scalar<uint32_t>(0)});
      case Opcode::kWhile: return evaluate_while(instruction, *operands[0]);
      case Opcode::kConditional: return evaluate_conditional(instruction, operands);
      case Opcode::kCustomCall: return evaluate_custom_call(instruction, operands);
      case Opcode::kAsyncStart:
      case Opcode::kAsyncUpdate:
      case Opcode::kAsyncDone: return evaluate_async(instruction, operands);
      default: return eval::evaluate_op(instruction, operands, *this);  // its located error
    }
  }

  StatusOr<Literal> evaluate_while(const Instruction& instruction, Literal state) {
    for (int64_t iteration = 0;; ++iteration) {
      if (options_.max_while_iterations > 0 && iteration >= options_.max_while_iterations) {
        return failed_precondition(str_cat("while %", instruction.name(), " ran more than ",
                                           options_.max_while_iterations, " iterations"),
                                   instruction.location());
      }
      if (options_.timeout_seconds > 0 &&
          std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count() > options_.timeout_seconds)
        return resource_exhausted(str_cat("the evaluation ran past its ", options_.timeout_seconds, " s deadline (at %",
                                          instruction.name(), ", iteration ", iteration,
                                          "); raise the timeout or check that the loop ends"),
                                  instruction.location());
      const Literal* state_argument[] = {&state};
      INSITU_ASSIGN_OR_RETURN(Literal keep_going, run(*instruction.while_condition(), state_argument));
      if (keep_going.data<bool>()[0] == false) return state;
      INSITU_ASSIGN_OR_RETURN(state, run(*instruction.while_body(), state_argument));
    }
  }

  StatusOr<Literal> evaluate_conditional(const Instruction& instruction, eval::Operands operands) {
    const Literal& selector = *operands[0];
    const int64_t branch_count = static_cast<int64_t>(instruction.called_computations().size());
    int64_t branch;
    if (selector.shape().element_type() == PrimitiveType::kPred) {
      branch = selector.data<bool>()[0] ? 0 : 1;  // true_computation first
    } else {
      branch = selector.get_integer(0);
      // XLA: an out-of-range branch index runs the last branch.
      if (branch < 0 || branch >= branch_count) branch = branch_count - 1;
    }
    const Literal* argument[] = {operands[1 + branch]};
    return run(*instruction.called_computations()[branch], argument);
  }

  StatusOr<Literal> evaluate_custom_call(const Instruction& instruction, eval::Operands operands) {
    return eval::evaluate_custom_call(instruction, operands, options_.custom_calls, *this);
  }

  const EvaluatorOptions& options_;
  const std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
};

}  // namespace

StatusOr<Literal> evaluate_computation(const Computation& computation, std::span<const Literal* const> arguments,
                                       const EvaluatorOptions& options) {
  Interpreter interpreter(options);
  return interpreter.run(computation, arguments);
}

StatusOr<Literal> evaluate_module(const Module& module, std::span<const Literal> arguments,
                                  const EvaluatorOptions& options) {
  if (module.entry() == nullptr) return invalid_argument("module " + module.name() + " has no ENTRY computation");
  INSITU_RETURN_IF_ERROR(check_constants_known(module));
  INSITU_RETURN_IF_ERROR(check_layouts_dense(module));
  std::vector<const Literal*> pointers;
  for (const Literal& argument : arguments) pointers.push_back(&argument);
  return evaluate_computation(*module.entry(), pointers, options);
}

}  // namespace insitu
