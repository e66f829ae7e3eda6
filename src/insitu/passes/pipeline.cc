#include "insitu/passes/pipeline.h"

#include <chrono>
#include <cstdio>

#include "insitu/ir/verifier.h"
#include "insitu/passes/bitcast_lowering.h"
#include "insitu/passes/conditional_in_place.h"
#include "insitu/passes/scan_in_place.h"
#include "insitu/passes/copy_elimination.h"
#include "insitu/passes/copy_insertion.h"
#include "insitu/passes/cse.h"
#include "insitu/passes/schedule.h"
#include "insitu/passes/donor_matching.h"
#include "insitu/passes/flatten_calls.h"
#include "insitu/passes/fusion.h"
#include "insitu/passes/row_fusion.h"
#include "insitu/passes/layout_assignment.h"
#include "insitu/passes/loop_peeling.h"
#include "insitu/passes/slice_update_folding.h"
#include "insitu/passes/simplify.h"
#include "insitu/support/str.h"

namespace insitu {

Pipeline& Pipeline::add(std::unique_ptr<Pass> pass) {
  INSITU_CHECK(pass != nullptr) << "adding a null pass";
  passes_.push_back(std::move(pass));
  return *this;
}

std::vector<std::string_view> Pipeline::pass_names() const {
  std::vector<std::string_view> names;
  for (const auto& pass : passes_) names.push_back(pass->name());
  return names;
}

std::string pass_timing_table(std::span<const PassTiming> timings) {
  std::string out = "pass                       seconds    verify  changed\n";
  double total = 0;
  char line[128];
  for (const PassTiming& timing : timings) {
    std::snprintf(line, sizeof(line), "%-24s %9.4f %9.4f  %s\n", timing.pass.c_str(), timing.seconds, timing.verify_seconds,
                  timing.changed ? "yes" : "no");
    out += line;
    total += timing.seconds + timing.verify_seconds;
  }
  std::snprintf(line, sizeof(line), "%-24s %9.4f\n", "total", total);
  return out + line;
}

StatusOr<bool> Pipeline::run(Module& module) {
  using Clock = std::chrono::steady_clock;
  auto seconds_since = [](Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); };
  timings_.clear();
  // An invalid input is the caller's error, located in its text, not a pass's bug.
  if (options_.verify_each) {
    const auto start = Clock::now();
    Status verified = verify_module(module);
    timings_.push_back({"verify-input", 0, seconds_since(start), false});
    INSITU_RETURN_IF_ERROR(verified);
  }
  bool changed = false;
  for (size_t i = 0; i < passes_.size(); ++i) {
    Pass& pass = *passes_[i];
    auto start = Clock::now();
    StatusOr<bool> pass_changed = pass.run(module);
    PassTiming& timing = timings_.emplace_back(PassTiming{std::string(pass.name()), seconds_since(start), 0, false});
    if (!pass_changed.ok())
      return pass_changed.status().with_context(str_cat("in pass ", pass.name()));
    changed |= *pass_changed;
    timing.changed = *pass_changed;
    if (options_.verify_each && *pass_changed) {
      start = Clock::now();
      Status verified = verify_module(module);
      timing.verify_seconds = seconds_since(start);
      if (!verified.ok())
        return internal_error(str_cat("the module is invalid after pass ", pass.name(),
                                      " (a bug in that pass): ", verified.message()),
                              verified.location());
    }
    if (options_.after_pass) options_.after_pass(static_cast<int>(i), pass.name(), module);
  }
  return changed;
}

namespace {

// A pass whose only result is the module.
template <StatusOr<bool> (*fn)(Module&)>
StatusOr<bool> plain(Module& module, PassResults&) {
  return fn(module);
}

StatusOr<bool> match_donors_pass(Module& module, PassResults& results) {
  INSITU_ASSIGN_OR_RETURN(DonorMatchingResult result, match_donors(module));
  const bool changed = result.changed;
  results.donor_matching = std::move(result);
  return changed;
}

// The optimization passes, in pipeline order, each with why it sits where it does.
struct PassEntry {
  std::string_view name;
  std::string_view why;
  StatusOr<bool> (*run)(Module&, PassResults&);
};

constexpr PassEntry kPasses[] = {
    {"loop-peeling", "before flatten-calls (which inlines the peeled iteration): a loop that surely runs once reads "
                     "a caller-owned initial value in place in its first iteration instead of copying it",
     plain<peel_loops>},
    {"flatten-calls", "every later analysis assumes one call site per while/conditional computation",
     plain<flatten_calls>},
    {"bitcast-lowering", "before simplify: bitcasts that reorder elements become transposes (data stays row-major)",
     plain<lower_bitcasts>},
    {"simplify", "tuple forwarding and dead code, so later analyses see values, not packing", plain<simplify>},
    {"cse", "after simplify (values forwarded), before the passes that match values by identity (scan-in-place, "
            "slice-update-folding, buffer assignment's windows): equal pure instructions become one",
     plain<eliminate_common_subexpressions>},
    {"scan-in-place", "after simplify (calls inlined, tuples forwarded), before slice-update-folding: a scan's ys "
                      "written into its xs, which then folds as any block read and written back",
     plain<update_scans_in_place>},
    {"slice-update-folding",
     "after simplify, before fusion: a block read out, updated and written back becomes one in-place update",
     plain<fold_slice_updates>},
    {"layout-assignment", "copies only where a custom call's layout constraint really differs", plain<assign_layouts>},
    {"fusion",
     "after layout-assignment, before copies are decided: elementwise chains with their broadcasts become kLoop "
     "fusions (one buffer, computed in cache), a row reduce of such a chain a kInput fusion (the chain never "
     "written), a dot with its strided block operands a kCustom fusion (blocks read where they lie)",
     plain<fuse>},
    {"reshape-bitcasts", "after fusion, before copies are decided: a row-major reshape is its operand's bytes",
     plain<reshapes_to_bitcasts>},
    {"row-fusion",
     "after reshape-bitcasts (a [rows] value and its [rows, 1] bitcast are one), before copies are decided: the "
     "reduces and fusions of one row computation (a layer norm, a softmax) become one kCustom fusion the runtime "
     "runs a chunk of rows at a time, each chunk through every member in cache",
     plain<fuse_rows>},
    {"conditional-in-place",
     "after row-fusion (a branch's computed results are fusions), before copies are decided: a result one branch "
     "passes through and the others compute is written over the operand, so the passing branch copies nothing",
     plain<write_conditionals_in_place>},
    {"donor-matching", "buffer_donor -> input_output_alias before copies are decided (by dataflow, then by size)",
     match_donors_pass},
    {"schedule", "readers of a buffer's old value before its in-place writer: copy insertion reads this order",
     plain<schedule_module>},
    {"copy-insertion", "only the copies the program needs on that order, each with a reason", plain<insert_copies>},
    {"copy-elimination", "last: copies whose removal no rule objects to (user copies included) go away",
     plain<eliminate_copies>},
};

}  // namespace

std::string describe_optimization_passes() {
  std::string text = "The optimization passes, in pipeline order (then buffer assignment):\n";
  for (const PassEntry& entry : kPasses) text += str_cat("  ", entry.name, ": ", entry.why, "\n");
  return text;
}

std::vector<std::string_view> optimization_pass_names() {
  std::vector<std::string_view> names;
  for (const PassEntry& entry : kPasses) names.push_back(entry.name);
  return names;
}

namespace {

std::unique_ptr<Pass> make_entry_pass(const PassEntry& entry, std::shared_ptr<PassResults> results) {
  return make_pass(entry.name, [run = entry.run, results = std::move(results)](Module& module) {
    return run(module, *results);
  });
}

// Results nobody reads: owned by the passes.
std::shared_ptr<PassResults> results_or_own(PassResults* results) {
  return results ? std::shared_ptr<PassResults>(std::shared_ptr<PassResults>(), results) : std::make_shared<PassResults>();
}

}  // namespace

std::vector<std::unique_ptr<Pass>> optimization_passes(PassResults* results) {
  std::shared_ptr<PassResults> shared = results_or_own(results);
  std::vector<std::unique_ptr<Pass>> passes;
  for (const PassEntry& entry : kPasses) passes.push_back(make_entry_pass(entry, shared));
  return passes;
}

StatusOr<std::vector<std::unique_ptr<Pass>>> passes_by_name(std::span<const std::string> names, PassResults* results) {
  std::shared_ptr<PassResults> shared = results_or_own(results);
  std::vector<std::unique_ptr<Pass>> passes;
  for (const std::string& name : names) {
    const PassEntry* found = nullptr;
    for (const PassEntry& entry : kPasses)
      if (entry.name == name) found = &entry;
    if (found == nullptr)
      return invalid_argument(str_cat("unknown pass '", name, "' (passes: ", str_join(optimization_pass_names(), ", "),
                                      ")"));
    passes.push_back(make_entry_pass(*found, shared));
  }
  return passes;
}

Pipeline optimization_pipeline(PipelineOptions options) {
  Pipeline pipeline(std::move(options));
  for (auto& pass : optimization_passes()) pipeline.add(std::move(pass));
  return pipeline;
}

}  // namespace insitu
