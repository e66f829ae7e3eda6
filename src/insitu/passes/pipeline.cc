#include "insitu/passes/pipeline.h"

#include "insitu/ir/verifier.h"
#include "insitu/passes/bitcast_lowering.h"
#include "insitu/passes/copy_elimination.h"
#include "insitu/passes/copy_insertion.h"
#include "insitu/passes/schedule.h"
#include "insitu/passes/donor_matching.h"
#include "insitu/passes/flatten_calls.h"
#include "insitu/passes/fusion.h"
#include "insitu/passes/layout_assignment.h"
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

StatusOr<bool> Pipeline::run(Module& module) {
  bool changed = false;
  for (size_t i = 0; i < passes_.size(); ++i) {
    Pass& pass = *passes_[i];
    StatusOr<bool> pass_changed = pass.run(module);
    if (!pass_changed.ok())
      return pass_changed.status().with_context(str_cat("in pass ", pass.name()));
    changed |= *pass_changed;
    if (options_.verify_each) {
      Status verified = verify_module(module);
      if (!verified.ok())
        return internal_error(str_cat("the module is invalid after pass ", pass.name(),
                                      " (a bug in that pass): ", verified.message()),
                              verified.location());
    }
    if (options_.after_pass) options_.after_pass(static_cast<int>(i), pass.name(), module);
  }
  return changed;
}

std::vector<std::unique_ptr<Pass>> optimization_passes() {
  std::vector<std::unique_ptr<Pass>> passes;
  // Each control-flow computation gets one caller; calls and fusions are inlined.
  passes.push_back(make_pass("flatten-calls", flatten_calls));
  // Bitcasts that reorder elements (by their layouts) become transposes: data stays row-major.
  passes.push_back(make_pass("bitcast-lowering", lower_bitcasts));
  // Tuple forwarding and dead code, so later analyses see values, not packing.
  passes.push_back(make_pass("simplify", simplify));
  // Layouts and memory spaces; copies only where a custom call's constraint really differs.
  passes.push_back(make_pass("layout-assignment", assign_layouts));
  // Elementwise chains (with their broadcasts) become kLoop fusions: computed in cache, one buffer.
  passes.push_back(make_pass("fusion", fuse_elementwise));
  // buffer_donor -> input_output_alias, by dataflow first, then by size where copy-free.
  passes.push_back(make_pass("donor-matching", [](Module& module) -> StatusOr<bool> {
    INSITU_ASSIGN_OR_RETURN(DonorMatchingResult result, match_donors(module));
    return result.changed;
  }));
  // Readers of a buffer's old value before the instruction that overwrites it
  passes.push_back(make_pass("schedule", schedule_module));
  // Only the copies the program needs, each with a reason, decided on the instruction order.
  passes.push_back(make_pass("copy-insertion", insert_copies));
  // Copies whose removal no rule objects to (user copies included) go away
  passes.push_back(make_pass("copy-elimination", eliminate_copies));
  return passes;
}

Pipeline optimization_pipeline(PipelineOptions options) {
  Pipeline pipeline(std::move(options));
  for (auto& pass : optimization_passes()) pipeline.add(std::move(pass));
  return pipeline;
}

}  // namespace insitu
