// rng-bit-generator natively: the evaluator's generators (evaluator/rng_bit_generator.h) over
// the step's slices (the state in, the new state and the bits out).
#include "insitu/evaluator/rng_bit_generator.h"
#include "insitu/runtime/kernels.h"

#include <cstring>

namespace insitu {
namespace {

struct RngKernelPlan final : KernelPlan {
  eval::RngPlan plan;
};

Status rng_kernel(const KernelCall& call) {
  const eval::RngPlan& plan = static_cast<const RngKernelPlan&>(*call.plan).plan;
  // The state is a few words: read it before the new state may land on it.
  uint64_t state[3] = {0, 0, 0};
  std::memcpy(state, call.operands[0].data, static_cast<size_t>(plan.state_size) * 8);
  uint64_t out_state[3] = {0, 0, 0};
  eval::generate_random_bits(plan, state, out_state, call.outputs[1].data);
  std::memcpy(call.outputs[0].data, out_state, static_cast<size_t>(plan.state_size) * 8);
  return ok_status();
}

}  // namespace

SelectedKernel select_rng_bit_generator(const Instruction& instruction, std::span<const ArrayView> operands,
                                        std::span<const ArrayView> outputs) {
  if (instruction.opcode() != Opcode::kRngBitGenerator || operands.size() != 1 || outputs.size() != 2)
    return std::nullopt;
  if (operands[0].scalar || outputs[0].scalar || outputs[1].scalar) return std::nullopt;
  // A bad instruction: the fallback reports the evaluator's located error.
  StatusOr<eval::RngPlan> plan = eval::plan_rng_bit_generator(instruction, *operands[0].shape);
  if (!plan.ok()) return std::nullopt;
  auto kernel_plan = std::make_unique<RngKernelPlan>();
  kernel_plan->plan = *std::move(plan);
  return NativeKernel{&rng_kernel, std::move(kernel_plan)};
}

}  // namespace insitu
