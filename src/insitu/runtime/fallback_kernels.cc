// The evaluator fallback and custom-call (fallback_kernels.h).
#include "insitu/runtime/fallback_kernels.h"

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

bool has_fallback(Opcode opcode) {
  if (is_elementwise(opcode)) return true;
  switch (opcode) {
    case Opcode::kSelectAndScatter:
    case Opcode::kBitcastConvert:
    case Opcode::kIota:
    case Opcode::kBroadcast:
    case Opcode::kReshape:
    case Opcode::kTranspose:
    case Opcode::kSlice:
    case Opcode::kDynamicSlice:
    case Opcode::kDynamicUpdateSlice:
    case Opcode::kConcatenate:
    case Opcode::kPad:
    case Opcode::kReverse:
    case Opcode::kReduce:
    case Opcode::kReduceWindow:
    case Opcode::kDot:
    case Opcode::kGather:
    case Opcode::kScatter:
    case Opcode::kSort:
    case Opcode::kTopk:
    case Opcode::kFusion: return true;
    default: return false;
  }
}

StatusOr<Literal> run_fallback(const Instruction& instruction, std::span<const Literal* const> operands,
                               const EvaluatorOptions& options) {
  EvaluatorRunner runner(options);
  const Opcode opcode = instruction.opcode();
  if (opcode == Opcode::kMap) return eval::evaluate_map(instruction, operands, runner);
  if (is_elementwise(opcode) || opcode == Opcode::kBitcastConvert) return eval::evaluate_elementwise(instruction, operands);
  switch (opcode) {
    case Opcode::kIota:
    case Opcode::kBroadcast:
    case Opcode::kReshape:
    case Opcode::kTranspose:
    case Opcode::kSlice:
    case Opcode::kDynamicSlice:
    case Opcode::kDynamicUpdateSlice:
    case Opcode::kConcatenate:
    case Opcode::kPad:
    case Opcode::kReverse: return eval::evaluate_data_movement(instruction, operands);
    case Opcode::kReduce: return eval::evaluate_reduce(instruction, operands, runner);
    case Opcode::kReduceWindow: return eval::evaluate_reduce_window(instruction, operands, runner);
    case Opcode::kDot: return eval::evaluate_dot(instruction, operands);
    case Opcode::kGather: return eval::evaluate_gather(instruction, operands);
    case Opcode::kScatter: return eval::evaluate_scatter(instruction, operands, runner);
    case Opcode::kSort: return eval::evaluate_sort(instruction, operands, runner);
    case Opcode::kTopk: return eval::evaluate_topk(instruction, operands);
    case Opcode::kFusion: return evaluate_computation(*instruction.to_apply(), operands, options);
    default: break;
  }
  return unimplemented(str_cat("the runtime cannot run '", opcode_name(opcode), "' (%", instruction.name(), ")"),
                       instruction.location());
}

StatusOr<Literal> run_custom_call(const Instruction& instruction, std::span<const Literal* const> operands,
                                  const CustomCallRegistry* registry) {
  const std::string& target = instruction.custom_call.target;
  if ((registry == nullptr || registry->find(target) == nullptr) && eval::is_builtin_custom_call_target(target)) {
    EvaluatorOptions options;
    options.custom_calls = registry;
    EvaluatorRunner runner(options);
    return eval::evaluate_topk_custom_call(instruction, operands, runner);
  }
  return run_custom_call_kernel(instruction, operands, registry);
}

}  // namespace insitu
