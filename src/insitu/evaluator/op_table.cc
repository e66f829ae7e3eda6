// The evaluator's per-op table (ops.h): one case per opcode family, shared by the evaluator and
// the runtime's fallback so that both run the same function for every op.
#include "insitu/evaluator/ops.h"
#include "insitu/ir/computation.h"
#include "insitu/support/str.h"

namespace insitu::eval {
namespace {

enum class OpFunction : uint8_t {
  kNone, kElementwise, kMap, kDataMovement, kReduce, kReduceWindow, kSelectAndScatter, kDot, kGather,
  kScatter, kSort, kTopk, kApply,
};

OpFunction op_function(Opcode opcode) {
  if (opcode == Opcode::kMap) return OpFunction::kMap;
  if (is_elementwise(opcode) || opcode == Opcode::kBitcastConvert) return OpFunction::kElementwise;
  switch (opcode) {
    case Opcode::kIota:
    case Opcode::kBroadcast:
    case Opcode::kReshape:
    case Opcode::kBitcast:
    case Opcode::kTranspose:
    case Opcode::kSlice:
    case Opcode::kDynamicSlice:
    case Opcode::kDynamicUpdateSlice:
    case Opcode::kConcatenate:
    case Opcode::kPad:
    case Opcode::kReverse: return OpFunction::kDataMovement;
    case Opcode::kReduce: return OpFunction::kReduce;
    case Opcode::kReduceWindow: return OpFunction::kReduceWindow;
    case Opcode::kSelectAndScatter: return OpFunction::kSelectAndScatter;
    case Opcode::kDot: return OpFunction::kDot;
    case Opcode::kGather: return OpFunction::kGather;
    case Opcode::kScatter: return OpFunction::kScatter;
    case Opcode::kSort: return OpFunction::kSort;
    case Opcode::kTopk: return OpFunction::kTopk;
    case Opcode::kCall:
    case Opcode::kFusion: return OpFunction::kApply;  // the called computation on the operands
    default: return OpFunction::kNone;
  }
}

}  // namespace

bool has_op_function(Opcode opcode) { return op_function(opcode) != OpFunction::kNone; }

StatusOr<Literal> evaluate_op(const Instruction& instruction, Operands operands, ComputationRunner& runner) {
  switch (op_function(instruction.opcode())) {
    case OpFunction::kElementwise: return evaluate_elementwise(instruction, operands);
    case OpFunction::kMap: return evaluate_map(instruction, operands, runner);
    case OpFunction::kDataMovement: return evaluate_data_movement(instruction, operands);
    case OpFunction::kReduce: return evaluate_reduce(instruction, operands, runner);
    case OpFunction::kReduceWindow: return evaluate_reduce_window(instruction, operands, runner);
    case OpFunction::kSelectAndScatter: return evaluate_select_and_scatter(instruction, operands, runner);
    case OpFunction::kDot: return evaluate_dot(instruction, operands);
    case OpFunction::kGather: return evaluate_gather(instruction, operands);
    case OpFunction::kScatter: return evaluate_scatter(instruction, operands, runner);
    case OpFunction::kSort: return evaluate_sort(instruction, operands, runner);
    case OpFunction::kTopk: return evaluate_topk(instruction, operands);
    case OpFunction::kApply: return runner.run(*instruction.to_apply(), operands);
    case OpFunction::kNone: break;
  }
  return unimplemented(str_cat("unsupported opcode '", opcode_name(instruction.opcode()), "' in %",
                               instruction.name(), ": the reference evaluator cannot run it"),
                       instruction.location());
}

StatusOr<Literal> evaluate_custom_call(const Instruction& instruction, Operands operands,
                                       const CustomCallTable* table, ComputationRunner& runner) {
  const std::string& name = instruction.custom_call.target;
  const CustomCallTarget* target = table != nullptr ? table->find(name) : nullptr;
  if ((target == nullptr || !target->evaluate) && is_builtin_custom_call_target(name))
    return evaluate_topk_custom_call(instruction, operands, runner);
  return run_custom_call_kernel(instruction, operands, table);
}

}  // namespace insitu::eval
