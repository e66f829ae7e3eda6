// An Executable on a CUDA device (ExecutableOptions::device = kCuda): the same checks and
// donation rules as on the CPU (executable.cc), the run itself by the device executable
// (cuda/executor.h: CudaExecutable::run_host), which copies the arguments to the device and
// the results back, counted.
//
// A donated argument aliased to an output gets that output's bytes back in its own host
// buffer, which is returned as the output (the same data pointer, as on the CPU): the device
// copy of it is the run's own block, so reading the old value while the new one is written
// never races, and a donation saves the host a result allocation.
#include <chrono>
#include <mutex>

#include "insitu/cuda/driver.h"
#include "insitu/cuda/executor.h"
#include "insitu/passes/optimize.h"
#include "insitu/runtime/executable.h"
#include "insitu/runtime/program.h"  // ~Executable destroys the programs
#include "insitu/support/str.h"

namespace insitu {

struct Executable::OnDevice {
  std::unique_ptr<cuda::Device> opened;  // the driver, when create opened it (declared first: destroyed last)
  std::unique_ptr<cuda::CudaExecutable> executable;
  std::mutex calls;  // one call at a time: a driver serves one thread
  // Per argument: the result leaf it is written as when donated (input_output_alias), else -1.
  std::vector<int> aliased_result;
};

// Here, where OnDevice is complete.
Executable::Executable(const Module& module, BufferAssignment assignment, ExecutableOptions options)
    : module_(&module), assignment_(std::move(assignment)), options_(options) {}
Executable::~Executable() = default;

std::optional<DeviceKind> device_kind_named(std::string_view name) {
  if (name == "cpu") return DeviceKind::kCpu;
  if (name == "cuda") return DeviceKind::kCuda;
  return std::nullopt;
}

std::string Executable::device_name() const {
  return on_device_ ? on_device_->executable->device().name() : "cpu";
}

namespace {

// What a call on the device adds to ExecutionStats; the peak is the plan's (the buffer
// assignment's, as on the CPU and in explain), not the pool's (which holds the arena whole).
ExecutionStats device_stats(const cuda::CudaStats& counted, int64_t planned_peak) {
  ExecutionStats stats;
  stats.bytes_copied = counted.bytes_copied_on_device;
  stats.peak_memory_bytes = planned_peak;
  stats.bytes_to_device = counted.bytes_to_device;
  stats.bytes_to_host = counted.bytes_to_host;
  stats.kernels_launched = counted.kernels_launched;
  return stats;
}

// The CPU's per-call options that mean nothing on the device are refused, not ignored.
Status check_device_options(const ExecuteOptions& options) {
  if (options.device != nullptr)
    return unimplemented("collectives on a CUDA device: run the module's devices on the CPU");
  if (options.timeout_seconds > 0) return unimplemented("a call timeout on a CUDA device");
  if (options.profile) return unimplemented("per-step profiling on a CUDA device");
  return ok_status();
}

}  // namespace

StatusOr<std::unique_ptr<Executable>> Executable::create_on_cuda(OptimizedModule optimized, ExecutableOptions options) {
  // The module and its buffers as the device runs them (passes/optimize.h retarget_for_cuda:
  // reduce fusions inlined, the assignment made with what the device can do): the plan's, and
  // this executable's, so explain and the stats give the device's plan.
  INSITU_RETURN_IF_ERROR(retarget_for_cuda(optimized));
  auto on_device = std::make_unique<OnDevice>();
  cuda::Device* device = options.cuda_device;
  if (device == nullptr) {
    INSITU_ASSIGN_OR_RETURN(std::unique_ptr<cuda::Driver> driver, cuda::Driver::open());
    on_device->opened = std::move(driver);
    device = on_device->opened.get();
  }
  INSITU_ASSIGN_OR_RETURN(on_device->executable,
                          cuda::CudaExecutable::create(std::move(optimized.module), *device, options.custom_calls,
                                                       &*optimized.buffers));
  const Module& module = on_device->executable->module();
  std::unique_ptr<Executable> executable(new Executable(module, std::move(*optimized.buffers), options));
  executable->describe_arguments();
  const std::vector<Shape>& results = on_device->executable->result_leaves();
  executable->result_count_ = results.size();
  std::vector<ShapeIndex> result_indices;
  module.entry()->root()->shape().for_each_leaf(
      [&](const Shape&, const ShapeIndex& index) { result_indices.push_back(index); });
  for (const Argument& argument : executable->arguments_) {
    int result = -1;
    for (size_t j = 0; j < result_indices.size() && argument.aliased_output && result < 0; ++j)
      if (result_indices[j] == *argument.aliased_output && results[j].compatible(argument.shape))
        result = static_cast<int>(j);
    on_device->aliased_result.push_back(result);
  }
  executable->on_device_ = std::move(on_device);
  return executable;
}

StatusOr<std::vector<BufferHandle>> Executable::execute_on_cuda(std::vector<std::shared_ptr<Buffer>>& arguments,
                                                                const ExecuteOptions& options,
                                                                Reservations& reservations) {
  const auto start = std::chrono::steady_clock::now();
  INSITU_RETURN_IF_ERROR(check_device_options(options));
  OnDevice& on_device = *on_device_;
  const std::vector<Shape>& leaves = on_device.executable->result_leaves();
  std::vector<std::shared_ptr<Buffer>> results(leaves.size());
  std::vector<const uint8_t*> argument_bytes;
  for (size_t i = 0; i < arguments.size(); ++i) {
    argument_bytes.push_back(arguments[i]->data());
    const int j = on_device.aliased_result[i];
    const bool donated = i < options.donate.size() && options.donate[i];
    if (donated && j >= 0 && results[static_cast<size_t>(j)] == nullptr) results[static_cast<size_t>(j)] = arguments[i];
  }
  std::vector<uint8_t*> result_bytes;
  for (size_t j = 0; j < leaves.size(); ++j) {
    if (results[j] == nullptr) {
      INSITU_ASSIGN_OR_RETURN(results[j], Buffer::allocate(leaves[j], false, "a result"));
    }
    result_bytes.push_back(results[j]->data());
  }
  cuda::CudaStats counted;
  {
    std::lock_guard<std::mutex> lock(on_device.calls);
    INSITU_RETURN_IF_ERROR(on_device.executable->run_host(argument_bytes, result_bytes, &counted));
  }
  reservations.commit();
  std::vector<BufferHandle> handles;
  for (std::shared_ptr<Buffer>& result : results) handles.emplace_back(std::move(result));
  ExecutionStats stats = device_stats(counted, assignment_.peak_memory_bytes());
  finish_call(stats, options, start);
  return handles;
}

Status Executable::execute_borrowed_on_cuda(std::span<uint8_t* const> arguments, std::span<uint8_t* const> results,
                                            const ExecuteOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  INSITU_RETURN_IF_ERROR(check_device_options(options));
  std::vector<const uint8_t*> argument_bytes(arguments.begin(), arguments.end());
  cuda::CudaStats counted;
  {
    std::lock_guard<std::mutex> lock(on_device_->calls);
    INSITU_RETURN_IF_ERROR(on_device_->executable->run_host(argument_bytes, results, &counted));
  }
  ExecutionStats stats = device_stats(counted, assignment_.peak_memory_bytes());
  finish_call(stats, options, start);
  return ok_status();
}

}  // namespace insitu
