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

// Whether every constant's value is in the text. A dump made without
// --xla_dump_large_constants writes big constants as `{...}`, and some writers give one scalar
// for an array; verify_module accepts such modules (fmt and explain can work on them), but
// running or optimizing one would invent values, so this returns a located error per constant
// instead. Returns the first; `constants_not_written` lists them all (for fmt's warning).
Status check_constants_known(const Module& module);
std::vector<const Instruction*> constants_not_written(const Module& module);

// Whether every layout says how insitu stores the array: dense, one element per byte_width
// bytes, dimensions in minor_to_major order (tiles and memory spaces change nothing on a
// CPU). A layout field that packs or sparsifies elements (E(n), D(..) with C, S or H, P(..),
// M(n), L(n), #(..), *(..)) is kept by the parser so it prints back, but running it would
// read the bytes wrongly: a located error naming the field, checked beside
// check_constants_known before a module is optimized or evaluated.
Status check_layouts_dense(const Module& module);

}  // namespace insitu
