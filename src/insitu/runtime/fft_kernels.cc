// fft natively: the evaluator's transforms (evaluator/fft.h) over the step's slices, one batch
// element per task.
#include "insitu/evaluator/fft.h"
#include "insitu/runtime/kernels.h"

namespace insitu {
namespace {

struct FftKernelPlan final : KernelPlan {
  eval::FftPlan plan;
};

Status fft_kernel(const KernelCall& call) {
  const eval::FftPlan& plan = static_cast<const FftKernelPlan&>(*call.plan).plan;
  const uint8_t* in = call.operands[0].data;
  uint8_t* out = call.out().data;
  const int64_t work = std::max<int64_t>(1, plan.in_elements * 16);
  run_range(call.pool, plan.batch, std::max<int64_t>(1, kParallelElements / work), [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) eval::run_fft(plan, i, in, out);
  });
  return ok_status();
}

}  // namespace

SelectedKernel select_fft(const Instruction& instruction, std::span<const ArrayView> operands,
                          std::span<const ArrayView> outputs) {
  if (instruction.opcode() != Opcode::kFft || operands.size() != 1 || outputs.size() != 1) return std::nullopt;
  if (operands[0].scalar || outputs[0].scalar) return std::nullopt;
  // A bad instruction: the fallback reports the evaluator's located error.
  StatusOr<eval::FftPlan> plan = eval::plan_fft(instruction, *operands[0].shape);
  if (!plan.ok()) return std::nullopt;
  auto kernel_plan = std::make_unique<FftKernelPlan>();
  kernel_plan->plan = *std::move(plan);
  return NativeKernel{&fft_kernel, std::move(kernel_plan)};
}

}  // namespace insitu
