// NativeCustomCalls: custom-call targets the runtime runs natively over its buffers.
//
// Executable::create looks a custom-call's target up here and prepares it for the step; a target
// not found here takes the Literal path (fallback_kernels.cc, which copies operands and
// results). A native kernel receives one
// ArrayView per operand (each an array, row-major, in the runtime's buffers) and one per array
// leaf of the result. For every output_to_operand_aliasing pair of the call, buffer assignment
// gives the output the operand's memory; the kernel must not assume anything about outputs
// the module does not alias (it initializes them itself, counting any copy in `stats`). The
// kernel layer (src/insitu/kernel) fills this registry when kernels register.
#pragma once

#include <functional>
#include <map>
#include <mutex>
#include <span>
#include <string>

#include "insitu/runtime/executable.h"
#include "insitu/runtime/kernels.h"

namespace insitu {

// One custom-call step's kernel, prepared for the step's shapes; runs once per call.
using PreparedCustomCall = std::function<Status(const Instruction& call, std::span<const ArrayView> operands,
                                                std::span<const ArrayView> outputs, ThreadPool& pool,
                                                ExecutionStats& stats)>;

// A target's kernel, prepared once per call site at Executable::create for the step's operand
// and result shapes (specialized, validated, race-checked there, not per call). An error
// fails create, located at the call.
using NativeCustomCall = std::function<StatusOr<PreparedCustomCall>(
    const Instruction& call, std::span<const Shape* const> operands, std::span<const Shape* const> outputs)>;

class NativeCustomCalls {
 public:
  // Replaces any earlier entry for `target` (the kernel registry reports duplicates).
  void register_kernel(std::string target, NativeCustomCall kernel);
  const NativeCustomCall* find(std::string_view target) const;

  static NativeCustomCalls& global();

 private:
  mutable std::mutex mutex_;
  std::map<std::string, NativeCustomCall, std::less<>> kernels_;
};

}  // namespace insitu
