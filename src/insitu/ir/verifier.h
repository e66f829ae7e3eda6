// Verifier: the HLO invariants XLA's HloVerifier checks, as located, explained errors.
//
// - every instruction's shape follows from its operands and attributes (shape_inference.h),
//   for every opcode insitu supports; other opcodes are checked for operand presence only;
// - called computations exist and have the signature the caller needs (a reduce's to_apply
//   takes scalars and returns one, a while body maps the state to itself, ...);
// - the entry interface (entry_computation_layout) is compatible with the entry computation;
// - input_output_alias and buffer_donor as XLA checks them: indices in range, byte sizes equal,
//   a parameter is never both donor and aliased, no parameter leaf aliased twice, no output
//   aliased twice, must-alias shapes identical (layout and memory space included).
#pragma once

#include "insitu/ir/module.h"

namespace insitu {

Status verify_module(const Module& module);

}  // namespace insitu
