// Internal to the runtime: ops without a builtin kernel run through the reference evaluator's
// per-op functions (evaluator/ops.h) on Literal copies of their operand slices; custom-call
// through a CustomCallTable, the result pre-filled from aliased operands as the evaluator
// does. Correct, not fast: the executor copies the result back into the output slices.
#pragma once

#include <span>

#include "insitu/evaluator/evaluator.h"

namespace insitu {

// Whether run_fallback can run the opcode.
bool has_fallback(Opcode opcode);

StatusOr<Literal> run_fallback(const Instruction& instruction, std::span<const Literal* const> operands,
                               const EvaluatorOptions& options);

// Whether the evaluator implements custom-call `target` itself (TopK), without a table entry.
bool has_builtin_custom_call(std::string_view target);

StatusOr<Literal> run_custom_call(const Instruction& instruction, std::span<const Literal* const> operands,
                                  const CustomCallTable* table);

}  // namespace insitu
