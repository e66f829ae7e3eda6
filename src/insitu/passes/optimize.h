// optimize_module: the whole compile path from a parsed (or traced) module to what the runtime
// executes — the optimization pipeline, then buffer assignment — with XLA-style stage dumps.
//
//   module_0001.NAME.before_optimizations.txt
//   module_0001.NAME.0001.after_flatten-calls.txt ...          (one file per pass)
//   module_0001.NAME.after_optimizations.txt
//   module_0001.NAME.after_optimizations-buffer-assignment.txt
//   module_0001.NAME.after_optimizations-memory-usage-report.txt
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "insitu/passes/buffer_assignment.h"
#include "insitu/passes/donor_matching.h"
#include "insitu/passes/pipeline.h"

namespace insitu {

struct OptimizeOptions {
  std::string dump_to;          // a directory for stage dumps; empty: none
  int module_number = 1;        // the NNNN of module_NNNN in dump names
  bool strict_donation = false; // an unusable donor is an error instead of a report
  bool verify_each = true;      // run the verifier after every pass
  // Only these passes, in this order (pipeline.h's names): the module after them is the
  // result, without buffer assignment (`buffers` stays empty). Empty: the whole pipeline.
  std::vector<std::string> passes;
  // Called after every pass with its name and how long it took (the verifier included), for
  // compile traces (frontend's INSITU_TRACE).
  std::function<void(std::string_view pass, double seconds)> on_pass_done;
};

struct OptimizedModule {
  std::unique_ptr<Module> module;
  std::optional<BufferAssignment> buffers;
  // Donor matching's result: the aliases it added and the donors it could not use, each with
  // its reason. (The module records the unused ones too, for explain on re-parsed text.)
  DonorMatchingResult donors;
  double compile_seconds = 0;
  // The pipeline's timings, then "assign-buffers" (where it ran): `insitu opt --time-passes`.
  std::vector<PassTiming> pass_timings;
};

StatusOr<OptimizedModule> optimize_module(std::unique_ptr<Module> module, const OptimizeOptions& options = {});

// The optimized module as the CUDA device runs it: its unlooped fusions inlined (the device
// generates a fused loop or a reduce, not both in one kernel: fusion.h inline_unlooped_fusions)
// and its buffers assigned with what the device can do (BufferAssignmentOptions::for_cuda):
// the memory plan cuda/device_plan.h runs, so explain and `insitu opt --device cuda` say what
// the device holds.
Status retarget_for_cuda(OptimizedModule& optimized);


}  // namespace insitu
