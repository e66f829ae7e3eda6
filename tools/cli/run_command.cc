#include "cli/run_command.h"

#include <chrono>
#include <filesystem>
#include <fstream>
#include <optional>

#include "cli/arguments.h"
#include "insitu/evaluator/collectives.h"
#include "insitu/evaluator/evaluator.h"
#include "insitu/ir/npy.h"
#include "cli/literal_format.h"
#include "cli/module_loader.h"
#include "insitu/kernel/plugin.h"
#include "insitu/runtime/stats_json.h"
#include "insitu/kernel/grid_executor.h"
#include "insitu/ir/copy_reason.h"
#include "insitu/passes/explain.h"
#include "insitu/passes/optimize.h"
#include "insitu/runtime/executable.h"
#include "insitu/runtime/mpi_communicator.h"
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
  // Every output is written to a temporary name first and renamed only when all were written:
  // a failure leaves no partial set of outputs behind.
  std::vector<std::pair<std::string, std::string>> written;  // (temporary, final)
  auto remove_written = [&] {
    for (const auto& [temporary, final_path] : written) std::filesystem::remove(temporary, error);
  };
  for (size_t i = 0; i < leaves.size(); ++i) {
    const std::string path = (std::filesystem::path(dir) / str_cat("output_", i, ".npy")).string();
    const std::string temporary = path + ".partial";
    written.emplace_back(temporary, path);
    if (Status status = write_npy_file(temporary, *leaves[i]); !status.ok()) {
      remove_written();
      return status;
    }
  }
  for (const auto& [temporary, final_path] : written) {
    std::filesystem::rename(temporary, final_path, error);
    if (error) {
      remove_written();
      return invalid_argument(str_cat("cannot write '", final_path, "': ", error.message()));
    }
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

// The optimized module on the runtime, on the CPU or the CUDA device (--device), ready to run.
StatusOr<std::unique_ptr<Executable>> build_executable(const Module& module, const RunOptions& options,
                                                       nlohmann::json& stats) {
  Clock::time_point compile_start = Clock::now();
  const std::optional<DeviceKind> device = device_kind_named(options.device);
  if (!device) return invalid_argument(str_cat("--device must be cpu or cuda, not '", options.device, "'"));
  OptimizeOptions optimize;
  optimize.strict_donation = options.strict_donation;
  INSITU_ASSIGN_OR_RETURN(OptimizedModule optimized, optimize_module(module.clone(), optimize));
  stats["unused_donors"] = optimized.donors.unused.size();  // before create takes the result
  INSITU_ASSIGN_OR_RETURN(std::unique_ptr<Executable> executable,
                          Executable::create(std::move(optimized),
                                             {.max_memory_bytes = options.max_memory_bytes, .device = *device}));
  stats["compile_seconds"] = seconds_since(compile_start);
  return executable;
}

// Runs `executable` once (as `device` among many, or alone when null). Every argument belongs
// to this run, so each parameter the module aliases to an output is donated: it is updated in
// place. `stats` gets the run's fields.
StatusOr<Literal> execute_once(Executable& executable, const std::vector<Literal>& arguments,
                               const RunOptions& options, const DeviceContext* device, nlohmann::json& stats) {
  std::vector<BufferHandle> handles;
  ExecuteOptions execute;
  for (const Executable::Argument& argument : executable.arguments()) {
    const Literal* leaf = arguments.at(argument.parameter_number).subliteral(argument.index);
    INSITU_CHECK(leaf != nullptr) << "bound arguments do not match the entry parameters";
    INSITU_ASSIGN_OR_RETURN(BufferHandle handle, BufferHandle::from_literal(*leaf));
    handles.push_back(std::move(handle));
    execute.donate.push_back(argument.aliased_output.has_value());
  }
  ExecutionStats run_stats;
  execute.threads = options.threads;
  execute.stats = &run_stats;
  execute.timeout_seconds = options.timeout_seconds;
  execute.device = device;
  INSITU_ASSIGN_OR_RETURN(std::vector<BufferHandle> results,
                          executable.execute(std::move(handles), execute));

  const Shape& result_shape = executable.module().entry()->root()->shape();
  Literal result(result_shape);
  size_t next = 0;
  Status status;
  result_shape.for_each_leaf([&](const Shape& leaf_shape, const ShapeIndex& index) {
    if (!status.ok() || !leaf_shape.is_array()) return;
    StatusOr<Literal> leaf = results.at(next++).to_literal();
    if (!leaf.ok()) {
      status = leaf.status();
      return;
    }
    *result.mutable_subliteral(index) = std::move(leaf).value();
  });
  INSITU_RETURN_IF_ERROR(status);
  stats.update(run_stats_json(executable, run_stats));
  return result;
}

StatusOr<Literal> run_optimized(const Module& module, const std::vector<Literal>& arguments, const RunOptions& options,
                                nlohmann::json& stats) {
  INSITU_ASSIGN_OR_RETURN(std::unique_ptr<Executable> executable, build_executable(module, options, stats));
  return execute_once(*executable, arguments, options, nullptr, stats);
}

// `{device}`, `{replica}` and `{partition}` in an --arg path, for device `d`.
std::string device_path(std::string path, const DeviceGrid& grid, int64_t d) {
  const std::pair<std::string, int64_t> fields[] = {
      {"{device}", d}, {"{replica}", d / grid.partitions}, {"{partition}", d % grid.partitions}};
  for (const auto& [field, value] : fields)
    for (size_t at = path.find(field); at != std::string::npos; at = path.find(field, at))
      path.replace(at, field.size(), std::to_string(value));
  return path;
}

// The results of the devices this process ran: all of them in-process, one under MPI.
struct DeviceResults {
  std::vector<int64_t> devices;
  std::vector<Literal> values;
};

// Every device of a module whose header says replica_count x num_partitions > 1: one thread per
// device in this process with one InProcessCommunicator (evaluator/collectives.h), or, with
// `mpi` (this process is one rank of `mpirun -np N`), the device numbered by the rank.
StatusOr<DeviceResults> run_devices(const Module& module, const RunOptions& options, MpiCommunicator* mpi,
                                    nlohmann::json& stats) {
  const DeviceGrid grid = device_grid(module);
  if (mpi != nullptr && mpi->size() != grid.devices())
    return invalid_argument(str_cat("module ", module.name(), " runs on ", grid.devices(), " device(s) (", grid.replicas,
                                    " replica(s) x ", grid.partitions, " partition(s)), but this MPI job has ",
                                    mpi->size(), " rank(s): run mpirun -np ", grid.devices()));
  DeviceResults out;
  for (int64_t d = 0; d < grid.devices(); ++d)
    if (mpi == nullptr || d == mpi->rank()) out.devices.push_back(d);
  std::vector<std::vector<Literal>> arguments(grid.devices());
  for (int64_t d : out.devices) {
    std::vector<std::string> paths;
    for (const std::string& path : options.arg_paths) paths.push_back(device_path(path, grid, d));
    StatusOr<std::vector<Literal>> bound = bind_arguments(module, paths);
    if (!bound.ok()) return bound.status().with_context(str_cat("arguments of device ", d));
    arguments[d] = std::move(bound).value();
  }
  stats["devices"] = grid.devices();
  if (mpi != nullptr) stats["mpi_rank"] = mpi->rank();
  if (options.reference && mpi == nullptr) {
    INSITU_ASSIGN_OR_RETURN(out.values, evaluate_devices(module, arguments, {.timeout_seconds = options.timeout_seconds},
                                                         options.collective_timeout_seconds));
    return out;
  }
  if (options.reference) {  // one device of many, in the evaluator, over MPI
    const int64_t d = mpi->rank();
    DeviceContext context{mpi, grid, d};
    INSITU_ASSIGN_OR_RETURN(Literal value, evaluate_module(module, arguments[d],
                                                           {.timeout_seconds = options.timeout_seconds, .device = &context}));
    out.values.push_back(std::move(value));
    return out;
  }
  INSITU_ASSIGN_OR_RETURN(std::unique_ptr<Executable> executable, build_executable(module, options, stats));
  if (mpi != nullptr) {
    DeviceContext context{mpi, grid, mpi->rank()};
    INSITU_ASSIGN_OR_RETURN(Literal value, execute_once(*executable, arguments[mpi->rank()], options, &context, stats));
    out.values.push_back(std::move(value));
    return out;
  }
  std::vector<nlohmann::json> device_stats(grid.devices());
  INSITU_ASSIGN_OR_RETURN(
      out.values, run_on_device_threads(
                      grid, options.collective_timeout_seconds,
                      [&](DeviceContext& context) {
                        return execute_once(*executable, arguments[context.device], options, &context,
                                            device_stats[context.device]);
                      },
                      /*name_device=*/true));
  stats.update(device_stats[0]);  // every device runs the same module: device 0's figures
  return out;
}

}  // namespace

namespace {

// run_command for a module on many devices: each device's result under a "device D (replica R,
// partition P):" line; --save DIR writes DIR/device_D/output_I.npy.
int run_devices_command(const Module& module, const RunOptions& options, double load_seconds, CliContext& context) {
  nlohmann::json stats = {{"mode", options.reference ? "reference" : "optimized"}, {"threads", options.threads}};
  std::unique_ptr<MpiCommunicator> mpi;
  if (launched_by_mpi()) {
    StatusOr<std::unique_ptr<MpiCommunicator>> created = MpiCommunicator::create(options.collective_timeout_seconds);
    if (!created.ok()) return report_error(context, created.status());
    mpi = std::move(created).value();
  }
  Clock::time_point run_start = Clock::now();
  StatusOr<DeviceResults> results = run_devices(module, options, mpi.get(), stats);
  if (!results.ok()) {
    if (mpi == nullptr) return report_error(context, results.status(), options.module_path);
    // The other ranks may wait at a collective for this one: say why, then end the whole job.
    report_error(context, results.status().with_context(str_cat("rank ", mpi->rank())), options.module_path);
    context.err.flush();
    mpi->abort(mpi->rank(), results.status());
    return 1;
  }
  if (options.reference) stats.update({{"compile_seconds", load_seconds}, {"run_seconds", seconds_since(run_start)}});
  const DeviceGrid grid = device_grid(module);
  for (size_t k = 0; k < results->devices.size(); ++k) {
    const int64_t d = results->devices[k];
    context.out << "device " << d << " (replica " << d / grid.partitions << ", partition " << d % grid.partitions
                << "):\n"
                << format_result(results->values[k]) << "\n";
    if (!options.save_dir.empty()) {
      const std::string dir = (std::filesystem::path(options.save_dir) / str_cat("device_", d)).string();
      if (Status status = save_results(results->values[k], dir); !status.ok()) return report_error(context, status);
    }
  }
  if (!options.stats_path.empty()) {
    const std::string path = mpi == nullptr ? options.stats_path : str_cat(options.stats_path, ".rank", mpi->rank());
    if (Status status = write_stats(path, stats); !status.ok()) return report_error(context, status);
  }
  return 0;
}

}  // namespace

int run_command(const RunOptions& options, CliContext& context) {
  set_check_races(options.check_races);  // kernel grids record and check their block accesses
  for (const std::string& plugin : options.plugins) {
    Status status = load_plugin(plugin);
    if (!status.ok()) return report_error(context, status);
  }

  Clock::time_point load_start = Clock::now();
  StatusOr<std::unique_ptr<Module>> module = load_module(context, options.module_path);
  if (!module.ok()) return report_error(context, module.status(), options.module_path);
  const double load_seconds = seconds_since(load_start);

  if (device_grid(**module).devices() > 1) {
    if (options.device != "cpu")
      return report_error(context, unimplemented("a module for many devices runs on the CPU only (--device cpu)"),
                          options.module_path);
    return run_devices_command(**module, options, load_seconds, context);
  }

  StatusOr<std::vector<Literal>> arguments = bind_arguments(**module, options.arg_paths);
  if (!arguments.ok()) return report_error(context, arguments.status());

  nlohmann::json stats = {{"mode", options.reference ? "reference" : "optimized"}, {"threads", options.threads}};
  StatusOr<Literal> result = Literal();
  if (options.reference) {
    // The oracle: no copies, no buffers; peak is arguments plus results.
    Clock::time_point run_start = Clock::now();
    result = evaluate_module(**module, *arguments, {.timeout_seconds = options.timeout_seconds});
    if (result.ok()) {
      int64_t peak = total_bytes(*result);
      for (const Literal& argument : *arguments) peak += total_bytes(argument);
      stats.update({{"copies_executed", 0}, {"bytes_copied", 0}, {"peak_memory_bytes", peak},
                    {"compile_seconds", load_seconds}, {"run_seconds", seconds_since(run_start)}});
    }
  } else {
    result = run_optimized(**module, *arguments, options, stats);
    if (result.ok()) stats["compile_seconds"] = stats["compile_seconds"].get<double>() + load_seconds;
  }
  if (!result.ok()) return report_error(context, result.status(), options.module_path);

  context.out << format_result(*result) << "\n";

  if (!options.save_dir.empty()) {
    Status status = save_results(*result, options.save_dir);
    if (!status.ok()) return report_error(context, status);
  }
  if (!options.stats_path.empty()) {
    Status status = write_stats(options.stats_path, stats);
    if (!status.ok()) return report_error(context, status);
  }
  return 0;
}

}  // namespace insitu::cli
