// The module-level interface checks of the verifier: entry_computation_layout against the
// entry computation, and input_output_alias / buffer_donor as XLA's
// HloInputOutputAliasConfig::Verify, HloBufferDonorConfig::Verify and HloVerifier check them.
// Errors are located at the module header (line 1) when the module came from text.
#pragma once

#include "insitu/ir/module.h"

namespace insitu {

// Preconditions: the module has an entry computation with a root and parameters 0..n-1.
Status verify_entry_computation_layout(const Module& module);
Status verify_input_output_alias(const Module& module);
Status verify_buffer_donors(const Module& module);

}  // namespace insitu
