// StableHLO's text form (what `jax.jit(f).lower(x).as_text()` prints, and what `mlir-opt` or a
// person writes): the module, func.func/call/return, every StableHLO op in its printed form or
// MLIR's generic form, the CHLO ops JAX leaves in its text (square, erf, erf_inv, top_k and the
// unary functions insitu has as HLO ops), types, attributes and attribute aliases; `loc(...)` is
// read and dropped (an error names the line and column in the text instead).
//
// The text becomes the same bytecode::File a VHLO artifact becomes (each StableHLO op its VHLO op,
// its attributes the VHLO properties in name order, the defaults the printed form leaves out
// filled in), so one importer (import.h) maps both: a module read as text and as bytecode give the
// same HLO. Errors carry the text's line and column (Status::location); an op, attribute or type
// insitu cannot read is an error naming it, never a guess.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "insitu/stablehlo/attributes.h"
#include "insitu/stablehlo/bytecode.h"

namespace insitu::stablehlo {

// A module read from text: the File (ops and their property blobs) and the attributes and types
// it indexes, already decoded (Symbols takes them as they are).
struct TextFile {
  bytecode::File file;
  std::vector<Attribute> attributes;
  std::vector<Type> types;
  std::deque<std::vector<uint8_t>> storage;  // bytes the File's and attributes' spans point into
};

// Whether `bytes` look like StableHLO text: after blank lines, comments and attribute aliases, a
// `module`, `builtin.module` or `func.func`.
bool is_stablehlo_text(std::span<const uint8_t> bytes);

// Reads the text (which must outlive the result: the File's text view points into it).
StatusOr<std::unique_ptr<TextFile>> read_text(std::string_view text);

}  // namespace insitu::stablehlo
