#include "insitu/run_command.h"

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>  // JSON output: Debian's nlohmann-json3-dev

#include "insitu/arguments.h"
#include "insitu/evaluator/evaluator.h"
#include "insitu/ir/npy.h"
#include "insitu/literal_format.h"
#include "insitu/module_loader.h"
#include "insitu/plugins.h"
#include "insitu/support/str.h"

namespace insitu::cli {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

int64_t total_bytes(const Literal& literal) {
  if (!literal.shape().is_tuple()) return literal.size_bytes();
  int64_t bytes = 0;
  for (const Literal& element : literal.elements()) bytes += total_bytes(element);
  return bytes;
}

void collect_array_leaves(const Literal& literal, std::vector<const Literal*>& leaves) {
  if (literal.shape().is_tuple()) {
    for (const Literal& element : literal.elements()) collect_array_leaves(element, leaves);
  } else if (literal.shape().is_array()) {
    leaves.push_back(&literal);
  }
}

Status save_results(const Literal& result, const std::string& dir) {
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  if (error) return invalid_argument(str_cat("cannot create --save directory '", dir, "': ", error.message()));
  std::vector<const Literal*> leaves;
  collect_array_leaves(result, leaves);
  for (size_t i = 0; i < leaves.size(); ++i) {
    std::string path = (std::filesystem::path(dir) / str_cat("output_", i, ".npy")).string();
    INSITU_RETURN_IF_ERROR(write_npy_file(path, *leaves[i]));
  }
  return ok_status();
}

Status write_stats(const std::string& path, const nlohmann::json& stats) {
  std::ofstream file(path, std::ios::trunc);
  if (!file) return invalid_argument(str_cat("cannot write --stats file '", path, "'"));
  file << stats.dump(2) << "\n";
  if (!file) return invalid_argument(str_cat("writing --stats file '", path, "' failed"));
  return ok_status();
}

}  // namespace

int run_command(const RunOptions& options, CliContext& context) {
  for (const std::string& plugin : options.plugins) {
    Status status = load_plugin(plugin);
    if (!status.ok()) return report_error(context, status);
  }

  Clock::time_point compile_start = Clock::now();
  StatusOr<std::unique_ptr<Module>> module = load_module(context, options.module_path);
  if (!module.ok()) return report_error(context, module.status(), options.module_path);
  // "Compilation" is parsing and verifying until the optimizing pipeline exists.
  double compile_seconds = seconds_since(compile_start);

  StatusOr<std::vector<Literal>> arguments = bind_arguments(**module, options.arg_paths);
  if (!arguments.ok()) return report_error(context, arguments.status());

  // The reference evaluator serves both modes until the runtime exists.
  Clock::time_point run_start = Clock::now();
  StatusOr<Literal> result = evaluate_module(**module, *arguments);
  double run_seconds = seconds_since(run_start);
  if (!result.ok()) return report_error(context, result.status(), options.module_path);

  context.out << format_result(*result) << "\n";

  if (!options.save_dir.empty()) {
    Status status = save_results(*result, options.save_dir);
    if (!status.ok()) return report_error(context, status);
  }
  if (!options.stats_path.empty()) {
    // peak_memory_bytes: arguments plus results, a stand-in until buffer assignment computes
    // the real peak (every live buffer at the worst point, aliased buffers counted once).
    int64_t peak = total_bytes(*result);
    for (const Literal& argument : *arguments) peak += total_bytes(argument);
    nlohmann::json stats = {
        {"copies_executed", 0},
        {"bytes_copied", 0},
        {"peak_memory_bytes", peak},
        {"compile_seconds", compile_seconds},
        {"run_seconds", run_seconds},
        {"mode", options.reference ? "reference" : "optimized"},  // what was asked for
        {"executor", "reference-evaluator"},                  // what ran (no runtime yet)
        {"threads", options.threads},
    };
    Status status = write_stats(options.stats_path, stats);
    if (!status.ok()) return report_error(context, status);
  }
  return 0;
}

}  // namespace insitu::cli
