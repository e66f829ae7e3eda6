// Kernel calls in traced code: functional (call_kernel) and mutating (call_kernel_mutating),
// the two spellings of the seed's in-place plus-one.
//
//   Tensor y = call_kernel("plus_one", {x})[0];   // functional; y aliases x's buffer in the
//                                                 // kernel, so x is dead after it or is copied
//   call_kernel_mutating("plus_one", {x});        // torch mutates_args=("x",): x now holds the
//                                                 // new value, and so does the caller's array
//
// Both emit `custom-call(...), custom_call_target="NAME"` with output_to_operand_aliasing taken
// from the signature of NAME's entry in the tracer's CustomCallTable (for a registered
// KernelSpec, its input_output_aliases: kernel/registry.h), so the module's
// aliasing is the kernel's, never lost on the way (the seed's bug: a kernel declared without the
// alias still read its input, which forced a copy). The mutating form is functionalized: the
// aliased output becomes the input's new SSA value (Tensor::rebind), and if the input was a
// parameter, tracing appends the write-back (tracer.h).
//
// A target that is not a KernelSpec is traced from a table entry that carries a `signature`.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "insitu/frontend/tracer.h"

namespace insitu {

// Emits the kernel call; returns its outputs. `out_shapes` overrides the kernel's (for
// shape-polymorphic kernels whose outputs do not alias an input).
std::vector<Tensor> call_kernel(std::string_view name, const std::vector<Tensor>& inputs,
                                const std::vector<Shape>& out_shapes = {});

// Emits the kernel call and writes each aliased output back into its input (the inputs are
// mutated, as torch's mutates_args declares). `mutates_args`, when given, must name exactly the
// inputs the kernel aliases: declaring a mutation the kernel does not alias would be lost
// (jax#24656), and an aliased input left undeclared is an error too ("MUST be accurate").
// Returns the outputs that are not aliased to an input.
std::vector<Tensor> call_kernel_mutating(std::string_view name, const std::vector<Tensor>& inputs,
                                         std::optional<std::vector<int64_t>> mutates_args = std::nullopt);

}  // namespace insitu
