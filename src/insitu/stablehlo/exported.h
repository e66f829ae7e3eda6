// A jax.export artifact (`Exported.serialize()`: a FlatBuffer of JAX's export schema,
// jax/_src/export/serialization.fbs) holds the program as a VHLO artifact (its
// mlir_module_serialized field) beside its calling convention. This reads the fields insitu
// needs without a FlatBuffers library: the module bytes and the platforms it was exported for.
//
// The module runs as serialized: its arguments are the ones JAX kept (module_kept_var_idx), and
// an export for several platforms (whose main takes a platform index first) or with effects
// (tokens) is an error saying so rather than a guess at the calling convention.
#pragma once

#include <cstdint>
#include <optional>
#include <span>

#include "insitu/support/status.h"

namespace insitu::stablehlo {

// Whether `bytes` look like a jax.export artifact (a FlatBuffer whose module field is MLIR
// bytecode); read_exported says what is wrong when it does not.
bool is_exported(std::span<const uint8_t> bytes);

// The module's MLIR bytecode inside a jax.export artifact (a view into `bytes`).
StatusOr<std::span<const uint8_t>> read_exported(std::span<const uint8_t> bytes);

}  // namespace insitu::stablehlo
