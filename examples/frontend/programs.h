// The frontend example programs, as functions so that tests/frontend can run each with 1 and 2
// threads and the example executables (*_example.cc) can print what they did.
//
//   plus_one_mutating    the seed's in-place kernel, torch's mutates_args spelling
//   plus_one_donated     the same kernel, functional + donate_argnums (JAX's spelling)
//   kv_cache_decode      one token per step appended to a preallocated cache, in place
//   adam_step            params and both moments updated in place by one kernel
//   tiled_grid           a tiled kernel over a 2-D parallel grid with ragged edge tiles
#pragma once

#include <string>

#include "insitu/support/status.h"

namespace insitu::examples {

struct ExampleResult {
  std::string report;      // the mutated/returned values, optimized HLO, explain's verdict
  bool correct = false;    // values equal the directly computed ones
  bool in_place = false;   // the caller's buffer was written (data pointer unchanged), where it applies
  int64_t copies = 0;      // copy instructions in the optimized module
  int64_t bytes_copied = 0;
};

StatusOr<ExampleResult> run_plus_one_mutating(int threads);
StatusOr<ExampleResult> run_plus_one_donated(int threads);
StatusOr<ExampleResult> run_kv_cache_decode(int threads);
StatusOr<ExampleResult> run_adam_step(int threads);
StatusOr<ExampleResult> run_tiled_grid(int threads);

// Runs one of the above from an example's main(): threads from argv[1] (default 2); prints the
// report; exit status 0 when correct.
int example_main(int argc, char** argv, StatusOr<ExampleResult> (*run)(int threads));

}  // namespace insitu::examples
