// The builtin custom calls natively: insitu_unread_memory (nothing to write) and the LAPACK
// targets (evaluator/lapack.h), planned once per call site, one matrix of the batch per task,
// over the step's slices. An aliased output is its operand's memory (each matrix is read whole
// before it is written).
#include "insitu/evaluator/lapack.h"
#include "insitu/runtime/kernels.h"

namespace insitu {
namespace {

struct LapackPlan final : KernelPlan {
  eval::LapackCall call;
};

Status lapack_kernel(const KernelCall& call) {
  const eval::LapackCall& plan = static_cast<const LapackPlan&>(*call.plan).call;
  std::vector<const uint8_t*> operands;
  std::vector<uint8_t*> outputs;
  for (const ArrayView& operand : call.operands) operands.push_back(operand.data);
  for (const ArrayView& output : call.outputs) outputs.push_back(output.data);
  const int64_t work = std::max<int64_t>(1, plan.m * plan.n * std::max(plan.m, plan.n));
  run_range(call.pool, plan.batch, std::max<int64_t>(1, kParallelElements / work), [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) eval::run_lapack_matrix(plan, i, operands, outputs);
  });
  return ok_status();
}

}  // namespace

SelectedKernel select_builtin_custom_call(const Instruction& call, std::span<const ArrayView> operands,
                                          std::span<const ArrayView> outputs) {
  if (call.opcode() == Opcode::kCustomCall && call.custom_call.target == kUnreadMemoryTarget && operands.empty())
    return NativeKernel{[](const KernelCall&) { return ok_status(); }, nullptr};  // nothing to write
  if (call.opcode() != Opcode::kCustomCall || !eval::is_lapack_target(call.custom_call.target)) return std::nullopt;
  std::vector<const Shape*> operand_shapes, output_shapes;
  for (const ArrayView& operand : operands) {
    if (operand.scalar) return std::nullopt;
    operand_shapes.push_back(operand.shape);
  }
  for (const ArrayView& output : outputs) output_shapes.push_back(output.shape);
  // A bad call: the fallback reports the evaluator's located error.
  StatusOr<eval::LapackCall> plan = eval::plan_lapack_call(call, operand_shapes, output_shapes);
  if (!plan.ok()) return std::nullopt;
  auto kernel_plan = std::make_unique<LapackPlan>();
  kernel_plan->call = *std::move(plan);
  return NativeKernel{&lapack_kernel, std::move(kernel_plan)};
}

}  // namespace insitu
