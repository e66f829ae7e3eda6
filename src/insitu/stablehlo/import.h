// A VHLO portable artifact (what JAX hands a PJRT plugin, what jax.export writes) into insitu's
// IR (issue 37): bytecode.h reads the container, attributes.h the attributes and types, and this
// file maps each VHLO op to its HLO instruction.
//
// The mapping writes HLO text, one instruction per VHLO op, and parses it with insitu's own
// parser, so every check the HLO path makes (shapes, attributes, operand counts) is made here
// too. Constants are written as a placeholder and their bytes copied in after parsing (no
// weights through text). Regions become computations: a while's condition and body take one
// tuple parameter; the branches of if/case take the values they read from outside as a tuple
// operand (StableHLO regions may read enclosing values; HLO computations may not); reduce, sort,
// scatter and the other appliers take one scalar parameter per block argument. func_v1 "main"
// is the entry; its `tf.aliasing_output` and `jax.buffer_donor` argument attributes become the
// module's input_output_alias and buffer_donor.
//
// An op, attribute or type insitu cannot map is an error naming it and the byte offset of the op
// in the file; nothing is guessed (a Shardy attribute on an argument is kept out of the module
// but named in no error only because it carries no meaning for one device).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "insitu/ir/module.h"
#include "insitu/stablehlo/bytecode.h"

namespace insitu::stablehlo {

// The module as HLO text (constants as placeholders: constant(0) of their shape) and, per
// constant, its instruction name and bytes in insitu's storage (pointing into the file where
// they are stored as is: the File's bytes must outlive it).
struct HloText {
  std::string text;
  struct Constant {
    std::string name;
    std::span<const uint8_t> data;  // the file's bytes, when they are the storage as it is
    std::vector<uint8_t> owned;     // else (a splat expanded, booleans unpacked): the storage
    std::span<const uint8_t> bytes() const { return owned.empty() ? data : std::span<const uint8_t>(owned); }
  };
  std::vector<Constant> constants;
};
StatusOr<HloText> to_hlo_text(const bytecode::File& file);

// Whether `bytes` are StableHLO insitu reads: MLIR bytecode, or a jax.export artifact
// (exported.h) around it.
bool is_stablehlo(std::span<const uint8_t> bytes);

// Reads a VHLO artifact, or a jax.export artifact's module, into a module (`bytes` need not
// outlive it).
StatusOr<std::unique_ptr<Module>> read_vhlo(std::span<const uint8_t> bytes);

}  // namespace insitu::stablehlo
