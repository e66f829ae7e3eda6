// Internal to the kernel layer: how a registered KernelSpec runs from HLO custom-calls, in the
// reference evaluator (the oracle: single-threaded, grid order, over the result Literal) and in
// the runtime (natively over its buffers, on its ThreadPool).
//
// The module's output_to_operand_aliasing is authoritative. For a kernel alias (input i,
// output o): when the call aliases them, the output already holds the operand's value in the
// operand's memory and the kernel runs in place; when it does not, the output is first
// initialized from the operand (a copy the runtime counts in ExecutionStats). An input the
// module aliases to an output the kernel does not declare is copied aside first (counted), so
// the kernel never sees one buffer it did not ask for.
#pragma once

#include <memory>

#include "insitu/cuda/kernel_grid.h"
#include "insitu/evaluator/custom_call_table.h"
#include "insitu/kernel/grid_executor.h"
#include "insitu/runtime/executable.h"
#include "insitu/runtime/kernels.h"
#include "insitu/runtime/native_custom_call.h"

namespace insitu {

EvaluateCustomCall make_evaluator_kernel(std::shared_ptr<const KernelSpec> spec);
// The runtime's preparation of a kernel's call sites (NativeCustomCallPart::prepare).
decltype(NativeCustomCallPart::prepare) make_native_kernel(std::shared_ptr<const KernelSpec> spec);
// The CUDA layout of a kernel's call sites (KernelGridPart::plan): the specialized
// spec's every grid step with its blocks; refused for a kernel without a CUDA body, with a
// sequential grid axis, scratch or staged blocks.
decltype(KernelGridPart::plan) make_kernel_grid_layout(std::shared_ptr<const KernelSpec> spec);

// The spec for a call with these operand/result shapes: specialized (KernelSpec::specialize)
// and validated, with the static race check run once per kernel and shapes.
StatusOr<std::shared_ptr<const KernelSpec>> prepare_kernel_call(const std::shared_ptr<const KernelSpec>& spec,
                                                               std::span<const GridOperand> inputs,
                                                               std::span<const GridOperand> outputs);

}  // namespace insitu
