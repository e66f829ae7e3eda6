// insitu as a PJRT plugin (issue 38): the PJRT C API (pjrt_c_api.h, API 0.81, which jaxlib 0.12
// loads), so that JAX, or any PJRT host, runs its programs on insitu as on a device of its own.
//
//   JAX --(jax_plugins entry point: python/insitu/jax_plugin.py)--> register_plugin("insitu", c_api=api())
//   jax.jit(f, donate_argnums=...) on jax.devices("insitu")[0]:
//     PJRT_Client_Compile(VHLO bytecode) --stablehlo::read_vhlo--> optimize_module --> Executable
//     PJRT_LoadedExecutable_Execute(buffers) --> Executable::execute (inline; events come back ready)
//
// One device, `insitu:0`, a CPU: its buffers are insitu's own memory (runtime/buffer.h), which
// the host reads where it lies (IsOnCpu, OpaqueDeviceMemoryDataPointer). Host memory lent
// with kImmutableZeroCopy/kMutableZeroCopy is used where it lies too (no copy) when it is dense.
//
// Donation reaches the plugin only in the program: JAX writes `tf.aliasing_output` (or
// `jax.buffer_donor`) on a donated argument, and the reader makes that the module's aliasing.
// An argument so marked, not listed in the call's non_donatable_input_indices, is consumed by
// the call (PJRT_Buffer_IsDeleted is true after it): written in place and returned as its output
// (same memory) when the runtime may write it; when it may not (host memory lent immutable, or
// memory another framework holds through IncreaseExternalReferenceCount), the call works on a
// copy, so nobody sees a value change under them.
//
// Calls run inline on the caller's thread, with the client's worker threads (create option
// "threads", an integer; 0, the default: every core); every event comes back ready.
//
// A host built against an older header passes shorter argument structs: fields past a struct's
// struct_size that later API versions added (the execute options' non_donatable list, the host_*
// memory stats) are neither read nor written (INSITU_PJRT_HAS).
//
// Errors are insitu's located messages (Status::to_string), with the C API's codes. What the
// plugin does not do is an UNIMPLEMENTED error naming the function, never a crash: more than one
// device, topologies, async transfers, send/recv callbacks, non-row-major layouts.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "insitu/runtime/executable.h"

struct PJRT_Api;

namespace insitu::pjrt {

// The plugin's function table, the same for the process's life.
const PJRT_Api* api();

// What insitu made of a program the plugin compiled (and some executable of JAX's still holds),
// found by the fingerprint the plugin gave it (PJRT_Executable_Fingerprint; in JAX,
// compiled.runtime_executable().fingerprint): the executable (its optimized module, its last
// call's stats) and explain's report. nullopt when no such program is alive.
struct CompiledProgram {
  std::shared_ptr<const Executable> executable;
  std::string explanation_text, explanation_json;
};
std::optional<CompiledProgram> compiled_program(std::string_view fingerprint);

}  // namespace insitu::pjrt
