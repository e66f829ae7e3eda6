// Pipeline: runs passes in order over a module, verifying between them and reporting each
// stage, the way Halide's Lower.cpp reads as a linear script of lowering steps.
//
//   Pipeline pipeline = optimization_pipeline({.after_pass = dump_stage});
//   StatusOr<bool> changed = pipeline.run(module);
//
// The verifier runs on the input (an invalid input is the caller's error, located in its text)
// and after each pass that changed the module (verify_each, on by default; a pass that says it
// changed nothing left the verified module as it was); a failure after a pass is reported as an
// error naming the pass that broke the module, so a bad pass is found at once instead of as a
// confusing failure three passes later. `after_pass` sees the module after every pass (stage
// dumps: `opt --dump-to`).
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "insitu/passes/donor_matching.h"
#include "insitu/passes/pass.h"

namespace insitu {

// Where a pipeline's time went: one entry per pass run, in order (`insitu opt --time-passes`).
struct PassTiming {
  std::string pass;            // its name in the pass table ("verify-input" for the check before)
  double seconds = 0;          // the pass itself
  double verify_seconds = 0;   // the verifier after it (0 where it changed nothing)
  bool changed = false;
};

// The timings as a table: a row per entry (pass, seconds, verify seconds, changed), then the
// total.
std::string pass_timing_table(std::span<const PassTiming> timings);

struct PipelineOptions {
  bool verify_each = true;
  // Called after every pass with its 0-based position, its name and the module it produced.
  std::function<void(int index, std::string_view pass_name, const Module&)> after_pass;
};

class Pipeline {
 public:
  explicit Pipeline(PipelineOptions options = {}) : options_(std::move(options)) {}

  Pipeline& add(std::unique_ptr<Pass> pass);
  // Runs every pass in order; true iff any pass changed the module. Stops at the first failing
  // pass or failed verification, with an error that names the pass.
  StatusOr<bool> run(Module& module);

  std::vector<std::string_view> pass_names() const;
  // The last run's timings: the input's verification, then every pass that ran (up to the
  // failing one).
  const std::vector<PassTiming>& timings() const { return timings_; }

 private:
  PipelineOptions options_;
  std::vector<PassTiming> timings_;
  std::vector<std::unique_ptr<Pass>> passes_;
};

// What passes of the table found beyond the module they changed, typed (not read back from
// module attributes): filled as the passes run.
struct PassResults {
  std::optional<DonorMatchingResult> donor_matching;  // set once donor-matching has run
};

// The optimization passes in order, from one table (pipeline.cc, which says why each sits
// where it does; describe_optimization_passes prints it). Buffer assignment is not a module
// pass: it is computed from the optimized module afterwards. `results`, when given, must
// outlive the passes.
std::vector<std::unique_ptr<Pass>> optimization_passes(PassResults* results = nullptr);
std::vector<std::string_view> optimization_pass_names();
// The table as text (`insitu opt --passes=help`): one line per pass, "name: why", in order.
std::string describe_optimization_passes();
// The named passes of that table in the order given (`insitu opt --passes=a,b`, per-pass
// tests); an unknown name is an error listing the valid ones. A pass whose precondition an
// earlier one establishes says which to run first.
StatusOr<std::vector<std::unique_ptr<Pass>>> passes_by_name(std::span<const std::string> names,
                                                           PassResults* results = nullptr);

// A Pipeline holding optimization_passes().
Pipeline optimization_pipeline(PipelineOptions options = {});

}  // namespace insitu
