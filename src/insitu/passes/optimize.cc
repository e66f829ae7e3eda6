#include "insitu/passes/optimize.h"

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "insitu/ir/printer.h"
#include "insitu/ir/verifier.h"
#include "insitu/passes/fusion.h"
#include "insitu/passes/pipeline.h"
#include "insitu/support/str.h"

namespace insitu {
namespace {

Status write_dump(const std::string& directory, const std::string& name, const std::string& text) {
  std::filesystem::path path = std::filesystem::path(directory) / name;
  std::ofstream file(path, std::ios::binary);
  if (!file) return invalid_argument(str_cat("cannot write dump file '", path.string(), "'"));
  file << text;
  return file.good() ? ok_status() : invalid_argument(str_cat("cannot write dump file '", path.string(), "'"));
}

// "module_0001.jit_f" with the characters XLA replaces in dump names (/ \ [ ] space) made '_'.
std::string dump_file_prefix(const Module& module, int module_number) {
  char number[16];
  std::snprintf(number, sizeof(number), "%04d", module_number);
  std::string name = module.name();
  for (char& c : name)
    if (c == '/' || c == '\\' || c == '[' || c == ']' || c == ' ') c = '_';
  return str_cat("module_", number, ".", name);
}

}  // namespace

StatusOr<OptimizedModule> optimize_module(std::unique_ptr<Module> module, const OptimizeOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  INSITU_RETURN_IF_ERROR(check_constants_known(*module));
  INSITU_RETURN_IF_ERROR(check_layouts_dense(*module));
  const bool dumping = !options.dump_to.empty();
  const std::string prefix = dump_file_prefix(*module, options.module_number);
  if (dumping) {
    std::error_code error;
    std::filesystem::create_directories(options.dump_to, error);
    if (error) return invalid_argument(str_cat("cannot create --dump-to directory '", options.dump_to, "': ", error.message()));
    INSITU_RETURN_IF_ERROR(write_dump(options.dump_to, prefix + ".before_optimizations.txt", print_module(*module)));
  }

  Status dump_status;
  PipelineOptions pipeline_options;
  pipeline_options.verify_each = options.verify_each;
  const Pipeline* running = nullptr;  // the pipeline below, whose timings after_pass reads
  if (dumping || options.on_pass_done) {
    pipeline_options.after_pass = [&](int index, std::string_view pass, const Module& stage) {
      if (options.on_pass_done) {
        const PassTiming& timing = running->timings().back();
        options.on_pass_done(pass, timing.seconds + timing.verify_seconds);
      }
      if (!dumping) return;
      char number[16];
      std::snprintf(number, sizeof(number), "%04d", index + 1);
      Status status = write_dump(options.dump_to, str_cat(prefix, ".", number, ".after_", pass, ".txt"), print_module(stage));
      if (dump_status.ok()) dump_status = status;
    };
  }
  Pipeline pipeline(std::move(pipeline_options));
  running = &pipeline;
  PassResults pass_results;
  if (options.passes.empty()) {
    for (auto& pass : optimization_passes(&pass_results)) pipeline.add(std::move(pass));
  } else {
    INSITU_ASSIGN_OR_RETURN(std::vector<std::unique_ptr<Pass>> passes, passes_by_name(options.passes, &pass_results));
    for (auto& pass : passes) pipeline.add(std::move(pass));
  }
  INSITU_RETURN_IF_ERROR(pipeline.run(*module).status());
  INSITU_RETURN_IF_ERROR(dump_status);

  OptimizedModule result;
  result.pass_timings = pipeline.timings();
  // Donor matching's own result; without that pass, what an earlier run recorded in the module.
  if (pass_results.donor_matching) {
    result.donors = std::move(*pass_results.donor_matching);
  } else {
    result.donors.unused = recorded_unused_donors(*module);
  }
  if (!options.passes.empty()) {  // a partial pipeline: the module after those passes, no buffers
    result.compile_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    result.module = std::move(module);
    return result;
  }
  if (options.strict_donation && !result.donors.unused.empty()) {
    const UnusedDonor& donor = result.donors.unused.front();
    return invalid_argument(str_cat("--strict-donation: donated parameter ", donor.parameter_number, " ",
                                    shape_index_to_string(donor.parameter_index), " is not usable (", donor_reason_name(donor.reason),
                                    "): ", donor.detail),
                            module->header_attribute_location("buffer_donor"));
  }
  const auto assign_start = std::chrono::steady_clock::now();
  INSITU_ASSIGN_OR_RETURN(BufferAssignment buffers, assign_buffers(*module));
  result.buffers.emplace(std::move(buffers));
  result.pass_timings.push_back(
      {"assign-buffers", std::chrono::duration<double>(std::chrono::steady_clock::now() - assign_start).count(), 0, true});
  result.compile_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (dumping) {
    INSITU_RETURN_IF_ERROR(write_dump(options.dump_to, prefix + ".after_optimizations.txt", print_module(*module)));
    INSITU_RETURN_IF_ERROR(write_dump(options.dump_to, prefix + ".after_optimizations-buffer-assignment.txt",
                                      result.buffers->to_string()));
    INSITU_RETURN_IF_ERROR(write_dump(options.dump_to, prefix + ".after_optimizations-memory-usage-report.txt",
                                      result.buffers->memory_usage_report()));
  }
  result.module = std::move(module);
  return result;
}

Status retarget_for_cuda(OptimizedModule& optimized) {
  inline_unlooped_fusions(*optimized.module);
  INSITU_ASSIGN_OR_RETURN(BufferAssignment buffers,
                          assign_buffers(*optimized.module, BufferAssignmentOptions::for_cuda()));
  optimized.buffers = std::move(buffers);
  return ok_status();
}

}  // namespace insitu
