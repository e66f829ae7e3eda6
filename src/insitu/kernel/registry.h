// Registering kernels: a KernelSpec becomes the entry for HLO `custom-call(...),
// custom_call_target="NAME"` in a CustomCallTable (evaluator/custom_call_table.h).
//
// register_kernel validates the spec (grid rank vs dimension_semantics, one BlockSpec per input
// and output, block ranks, aliases in range; per call, shapes and dtypes and the static race
// check of race_check.h) and adds one entry with all its parts: the signature (for the
// frontend's call_kernel), `evaluate` (the reference evaluator runs the grid over the result
// Literal single-threaded in grid order: the oracle) and `native` (the runtime runs the grid
// over its buffers on its ThreadPool). A duplicate name is an error naming both origins (e.g.
// both plugin libraries).
#pragma once

#include <string>
#include <string_view>

#include "insitu/evaluator/custom_call_table.h"
#include "insitu/kernel/kernel.h"
#include "insitu/support/status.h"

namespace insitu {

// Into CustomCallTable::global(), or into `table`.
Status register_kernel(KernelSpec spec, std::string origin = "builtin");
Status register_kernel(KernelSpec spec, std::string origin, CustomCallTable& table);

// What call_kernel needs to trace a call of `spec`: its outputs and aliases.
CustomCallSignature kernel_signature(const KernelSpec& spec);

// Validates a spec without registering it (what register_kernel checks).
Status validate_kernel_spec(const KernelSpec& spec);

// The origin static registrations use: the shared library that contains the registering code
// (dladdr), or "builtin" for the main program.
std::string current_library_origin(const void* address_in_library);

namespace internal {
// Registers at static-initialization time; a failure is reported on stderr and remembered
// (static_registration_errors) rather than aborting, so that the CLI can report it.
bool register_static_kernel(KernelSpec (*factory)(), const void* address_in_library);
}  // namespace internal

// Errors from INSITU_REGISTER_KERNEL registrations so far (e.g. duplicate names), then cleared.
std::vector<Status> take_static_registration_errors();
// How many INSITU_REGISTER_KERNEL registrations have run (failed ones too): a plugin library
// whose loading adds none is not an insitu plugin.
int64_t static_registration_count();

}  // namespace insitu

// Registers the kernel a `KernelSpec factory()` function returns, at static initialization (in
// the main program or in a plugin library loaded with --plugin).
// The anchor has internal linkage, so its address lies in the registering library even when
// another loaded library defines the same factory symbol (which dynamic linking would interpose).
#define INSITU_REGISTER_KERNEL(factory)                                                          \
  static const char INSITU_CONCAT(insitu_kernel_anchor_, __LINE__) = 0;                          \
  [[maybe_unused]] static const bool INSITU_CONCAT(insitu_kernel_registered_, __LINE__) =        \
      ::insitu::internal::register_static_kernel(&(factory), &INSITU_CONCAT(insitu_kernel_anchor_, __LINE__))
