// The reference evaluator: a simple, obviously correct interpreter of HLO over Literals.
//
// It is the oracle every optimized run is checked against, never what is benchmarked. It
// follows XLA's HloEvaluator semantics: integer division by zero and overflow as XLA defines
// them, f16/bf16 computed in f32 and rounded per op, dynamic-slice start indices clamped into
// range, scatter updates applied in index order. A custom-call runs its target's `evaluate`
// from a CustomCallTable; an aliased kernel updates its operand's value in place. An opcode
// the evaluator does not support is a located "unsupported opcode" error naming it.
#pragma once

#include <span>
#include <vector>

#include "insitu/evaluator/custom_call_table.h"
#include "insitu/ir/module.h"

namespace insitu {

struct DeviceContext;  // collectives.h

struct EvaluatorOptions {
  const CustomCallTable* custom_calls = &CustomCallTable::global();
  // A while loop running more iterations than this is an error (0: unlimited).
  int64_t max_while_iterations = 0;
  // A bound on the run time in seconds (0: none), checked at every while iteration: past it
  // the loop ends with a resource-exhausted error at the while.
  double timeout_seconds = 0;
  // This device's place among the devices running the module (collectives.h); null runs one
  // device alone, which is all a module without collectives needs.
  const DeviceContext* device = nullptr;
};

// Runs the entry computation on one Literal per entry parameter.
StatusOr<Literal> evaluate_module(const Module& module, std::span<const Literal> arguments,
                                  const EvaluatorOptions& options = {});

// Runs one computation of a module on the given arguments.
StatusOr<Literal> evaluate_computation(const Computation& computation, std::span<const Literal* const> arguments,
                                       const EvaluatorOptions& options = {});

}  // namespace insitu
