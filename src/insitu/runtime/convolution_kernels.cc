// convolution natively: convolution.h's loop over the step's slices, output elements split
// over the pool, for operands of the result's element type (a mix runs the fallback, which
// converts them first).
#include "insitu/evaluator/convolution.h"
#include "insitu/runtime/element_compute.h"
#include "insitu/runtime/kernels.h"

namespace insitu {
namespace {

struct ConvolutionKernelPlan final : KernelPlan {
  eval::ConvolutionPlan plan;
};

template <typename T>
Status convolution_kernel(const KernelCall& call) {
  const eval::ConvolutionPlan& plan = static_cast<const ConvolutionKernelPlan&>(*call.plan).plan;
  const T* lhs = reinterpret_cast<const T*>(call.operands[0].data);
  const T* rhs = reinterpret_cast<const T*>(call.operands[1].data);
  T* out = reinterpret_cast<T*>(call.out().data);
  const int64_t per_element = std::max<int64_t>(1, plan.window_positions * plan.input_feature_group_size);
  run_range(call.pool, call.out().element_count(), std::max<int64_t>(1, kParallelElements / per_element),
            [&](int64_t begin, int64_t end) { eval::convolve<T>(plan, lhs, rhs, out, begin, end); });
  return ok_status();
}

}  // namespace

SelectedKernel select_convolution(const Instruction& instruction, std::span<const ArrayView> operands,
                                  std::span<const ArrayView> outputs) {
  if (instruction.opcode() != Opcode::kConvolution || operands.size() != 2 || outputs.size() != 1) return std::nullopt;
  if (operands[0].scalar || operands[1].scalar || outputs[0].scalar) return std::nullopt;
  const PrimitiveType type = outputs[0].type();
  for (const ArrayView& operand : operands)
    if (operand.type() != type) return std::nullopt;  // converted first: the fallback does that
  // A bad instruction: the fallback reports the evaluator's located error.
  StatusOr<eval::ConvolutionPlan> plan = eval::plan_convolution(instruction, *operands[0].shape, *operands[1].shape);
  if (!plan.ok()) return std::nullopt;
  KernelFn run = nullptr;
  kernels::dispatch_native_numeric(type, [&](auto tag) { run = &convolution_kernel<decltype(tag)>; });
  if (run == nullptr) return std::nullopt;
  auto kernel_plan = std::make_unique<ConvolutionKernelPlan>();
  kernel_plan->plan = *std::move(plan);
  return NativeKernel{run, std::move(kernel_plan)};
}

}  // namespace insitu
