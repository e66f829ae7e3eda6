// The native kernel families by op family (opcode.def's fourth column). Adding an opcode
// to a family is a line in opcode.def and a case in that family's selector; a new family is a
// OpFamily value, one row here and its kernel file.
#include "insitu/runtime/kernels.h"

namespace insitu {
namespace {

SelectedKernel select_nothing(const Instruction&, std::span<const ArrayView>, std::span<const ArrayView>) {
  return std::nullopt;
}

using Selector = SelectedKernel (*)(const Instruction&, std::span<const ArrayView>, std::span<const ArrayView>);

Selector selector_of(OpFamily family) {
  switch (family) {
    case OpFamily::kElementwise: return &select_elementwise;
    case OpFamily::kDataMovement: return &select_data_movement;
    case OpFamily::kDynamicSlice: return &select_dynamic_slice;
    case OpFamily::kDot: return &select_dot;
    case OpFamily::kReduce: return &select_reduce;
    case OpFamily::kReduceWindow: return &select_reduce_window;
    case OpFamily::kSelectAndScatter: return &select_select_and_scatter;
    case OpFamily::kFusion: return &select_fusion;
    case OpFamily::kSort: return &select_sort;
    case OpFamily::kTopk: return &select_topk;
    case OpFamily::kGather: return &select_gather;
    case OpFamily::kScatter: return &select_scatter;
    case OpFamily::kLinalg: return &select_linalg;
    case OpFamily::kConvolution: return &select_convolution;
    case OpFamily::kFft: return &select_fft;
    case OpFamily::kRngBitGenerator: return &select_rng_bit_generator;
    case OpFamily::kCustomCall: return &select_builtin_custom_call;  // without a table entry
    default: return &select_nothing;  // structural steps and the fallback's opcodes
  }
}

}  // namespace

SelectedKernel select_kernel(const Instruction& instruction, std::span<const ArrayView> operands,
                             std::span<const ArrayView> outputs) {
  if (outputs.empty()) return std::nullopt;
  return selector_of(op_family(instruction.opcode()))(instruction, operands, outputs);
}

bool run_native_kernel(const Instruction& instruction, std::span<const ArrayView> operands,
                       std::span<const ArrayView> outputs, ThreadPool& pool, Status* status) {
  SelectedKernel kernel = select_kernel(instruction, operands, outputs);
  if (!kernel) return false;
  Status result = kernel->run(KernelCall{instruction, kernel->plan.get(), operands, outputs, pool});
  if (status != nullptr) *status = std::move(result);
  return true;
}

}  // namespace insitu
