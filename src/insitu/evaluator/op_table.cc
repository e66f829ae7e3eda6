// The evaluator's per-op table (ops.h): one case per opcode family, shared by the evaluator and
// the runtime's fallback so that both run the same function for every op.
#include "insitu/evaluator/lapack.h"
#include "insitu/evaluator/ops.h"
#include "insitu/ir/computation.h"
#include "insitu/support/str.h"

namespace insitu::eval {
namespace {

enum class OpFunction : uint8_t {
  kNone, kElementwise, kMap, kDataMovement, kReduce, kReduceWindow, kSelectAndScatter, kDot, kGather,
  kScatter, kSort, kTopk, kLinalg, kConvolution, kFft, kRngBitGenerator, kApply, kScan, kDimensionSize, kBatchNorm,
};

// From opcode.def's op family: an opcode joins a family there, and the evaluator runs the
// family's function for it (the function switches on the opcode where a family has several).
// A bitcast (kForward: it moves nothing on a device) is evaluated as the data movement it is.
OpFunction op_function(Opcode opcode) {
  if (opcode == Opcode::kBitcast) return OpFunction::kDataMovement;
  switch (op_family(opcode)) {
    case OpFamily::kElementwise: return OpFunction::kElementwise;
    case OpFamily::kMap: return OpFunction::kMap;
    case OpFamily::kDataMovement:
    case OpFamily::kDynamicSlice: return OpFunction::kDataMovement;
    case OpFamily::kReduce: return OpFunction::kReduce;
    case OpFamily::kReduceWindow: return OpFunction::kReduceWindow;
    case OpFamily::kSelectAndScatter: return OpFunction::kSelectAndScatter;
    case OpFamily::kDot: return OpFunction::kDot;
    case OpFamily::kGather: return OpFunction::kGather;
    case OpFamily::kScatter: return OpFunction::kScatter;
    case OpFamily::kSort: return OpFunction::kSort;
    case OpFamily::kTopk: return OpFunction::kTopk;
    case OpFamily::kLinalg: return OpFunction::kLinalg;
    case OpFamily::kConvolution: return OpFunction::kConvolution;
    case OpFamily::kFft: return OpFunction::kFft;
    case OpFamily::kRngBitGenerator: return OpFunction::kRngBitGenerator;
    case OpFamily::kScan: return OpFunction::kScan;
    case OpFamily::kDimensionSize: return OpFunction::kDimensionSize;
    case OpFamily::kBatchNorm: return OpFunction::kBatchNorm;
    case OpFamily::kCall:
    case OpFamily::kFusion: return OpFunction::kApply;  // the called computation on the operands
    default: return OpFunction::kNone;  // structural steps, collectives (evaluate_collective), kNone
  }
}

}  // namespace

bool is_builtin_custom_call_target(std::string_view target) {
  return target == "TopK" || target == kUnreadMemoryTarget || is_lapack_target(target) ||
         is_placement_annotation(target);
}

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
    case OpFunction::kLinalg: return evaluate_linalg(instruction, operands);
    case OpFunction::kConvolution: return evaluate_convolution(instruction, operands);
    case OpFunction::kFft: return evaluate_fft(instruction, operands);
    case OpFunction::kRngBitGenerator: return evaluate_rng_bit_generator(instruction, operands);
    case OpFunction::kApply: return runner.run(*instruction.to_apply(), operands);
    case OpFunction::kScan: return evaluate_scan(instruction, operands, runner);
    case OpFunction::kDimensionSize:
      return instruction.opcode() == Opcode::kGetDimensionSize ? evaluate_get_dimension_size(instruction, operands)
                                                                : evaluate_set_dimension_size(instruction, operands);
    case OpFunction::kBatchNorm: return evaluate_batch_norm(instruction, operands);
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
  if ((target == nullptr || !target->evaluate) && is_placement_annotation(name)) {
    // Where the value lives (host memory, a device, a sharding), not what it is.
    if (operands.size() != 1 || !operands[0]->shape().compatible(instruction.shape()))
      return invalid_argument(str_cat("custom-call %", instruction.name(), ": ", name,
                                      " takes one operand of its result's shape"),
                              instruction.location());
    return *operands[0];
  }
  if ((target == nullptr || !target->evaluate) && name == kUnreadMemoryTarget) {
    if (!operands.empty() || !instruction.shape().is_array())
      return invalid_argument(str_cat("custom-call %", instruction.name(), ": ", name,
                                      " takes no operands and makes one array"),
                              instruction.location());
    return Literal(instruction.shape());  // no one reads it before it is written: zeros
  }
  if ((target == nullptr || !target->evaluate) && is_builtin_custom_call_target(name))
    return name == "TopK" ? evaluate_topk_custom_call(instruction, operands, runner)
                          : evaluate_lapack_custom_call(instruction, operands);
  return run_custom_call_kernel(instruction, operands, table);
}

}  // namespace insitu::eval
