// The evaluator fallback and custom-call (fallback_kernels.h).
#include "insitu/runtime/fallback_kernels.h"

#include "insitu/evaluator/collectives.h"
#include "insitu/evaluator/ops.h"
#include "insitu/support/str.h"

namespace insitu {
namespace {

// Runs to_apply computations (reduce, scatter, sort, map) with the reference evaluator.
class EvaluatorRunner final : public eval::ComputationRunner {
 public:
  explicit EvaluatorRunner(const EvaluatorOptions& options) : options_(options) {}
  StatusOr<Literal> run(const Computation& computation, eval::Operands arguments) override {
    return evaluate_computation(computation, arguments, options_);
  }

 private:
  const EvaluatorOptions& options_;
};

}  // namespace

bool has_fallback(Opcode opcode) { return eval::has_op_function(opcode) || is_collective_opcode(opcode); }

StatusOr<Literal> run_fallback(const Instruction& instruction, std::span<const Literal* const> operands,
                               const EvaluatorOptions& options) {
  EvaluatorRunner runner(options);
  if (is_collective_opcode(instruction.opcode()))
    return evaluate_collective(instruction, operands, options.device, runner);
  return eval::evaluate_op(instruction, operands, runner);
}

bool has_builtin_custom_call(std::string_view target) { return eval::is_builtin_custom_call_target(target); }

StatusOr<Literal> run_custom_call(const Instruction& instruction, std::span<const Literal* const> operands,
                                  const CustomCallTable* table) {
  EvaluatorOptions options;
  options.custom_calls = table;
  EvaluatorRunner runner(options);
  return eval::evaluate_custom_call(instruction, operands, table, runner);
}

}  // namespace insitu
