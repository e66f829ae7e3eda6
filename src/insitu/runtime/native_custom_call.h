// The runtime's part of a custom-call table entry (evaluator/custom_call_table.h,
// CustomCallParts): how a call site runs natively over the runtime's own buffers.
//
// Executable::create asks an entry for its NativeCustomCallPart once per call site and prepares
// it for the site's shapes; without one the runtime runs the entry's `evaluate` on copies.
#pragma once

#include <functional>
#include <span>

#include "insitu/ir/instruction.h"
#include "insitu/runtime/kernels.h"
#include "insitu/runtime/thread_pool.h"

namespace insitu {

struct ExecutionStats;

// One call site's native kernel, prepared for its shapes: runs once per call over one ArrayView
// per operand (an array, row-major, in the runtime's buffers) and one per array leaf of the
// result. For every output_to_operand_aliasing pair buffer assignment gives the output the
// operand's memory; other outputs hold nothing the kernel may rely on (it initializes them,
// counting any copy in `stats`).
using PreparedCustomCall = std::function<Status(const Instruction& call, std::span<const ArrayView> operands,
                                                std::span<const ArrayView> outputs, ThreadPool& pool,
                                                ExecutionStats& stats)>;

// Prepares a call site at Executable::create for its operand and result shapes (specialize,
// validate, race-check there, not per call). An error fails create, located at the call.
struct NativeCustomCallPart {
  std::function<StatusOr<PreparedCustomCall>(const Instruction& call, std::span<const Shape* const> operands,
                                             std::span<const Shape* const> outputs)>
      prepare;
};

}  // namespace insitu
