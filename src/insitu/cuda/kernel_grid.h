// The CUDA device's part of a custom-call table entry (evaluator/custom_call_table.h,
// CustomCallParts): a kernel's grid laid out for a device that runs every grid step at once.
//
// The plan (device_plan.cc) asks an entry for its KernelGridPart per call site and generates a
// wrapper around the kernel's CUDA body (codegen.h, generate_custom_kernel); an entry without
// one cannot run on the device, a located refusal.
#pragma once

#include <functional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "insitu/ir/instruction.h"

namespace insitu {

// Per grid step, per operand then output: where its block starts in the array and its extent
// (clipped at ragged edges), and the kernel's CUDA body: `cuda_source` defines the __device__
// function `cuda_function` (kernel/kernel.h says how it is called).
struct KernelGridBlock {
  std::vector<int64_t> start, extent;  // elements, per dimension of the array
};
struct KernelGridLayout {
  int64_t steps = 1;
  std::vector<std::vector<int64_t>> dimensions;  // per operand, then per output: the array's
  std::vector<KernelGridBlock> blocks;           // steps x (operands + outputs), step-major
  std::vector<std::pair<int64_t, int64_t>> input_output_aliases;  // the kernel's (input, output)
  std::string cuda_source;
  std::string cuda_function;
};

// Lays out a call site for its operand and result shapes; an error, located at the call, says
// why the kernel cannot run on such a device (no CUDA body, a sequential grid axis, scratch).
struct KernelGridPart {
  std::function<StatusOr<KernelGridLayout>(const Instruction& call, std::span<const Shape* const> operands,
                                           std::span<const Shape* const> outputs)>
      plan;
};

}  // namespace insitu
