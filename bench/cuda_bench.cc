// The GPU benchmarks of issue 12, each against a baseline measured in the same run on the same
// device: a device-to-device copy of 1 GiB (cuMemcpyDtoD) gives the memory bandwidth.
//
//   decode step   K and V caches of 512 MiB each (f32[256, 4096, 128]), donated: the new position
//                 written in place, attention over every position. Counters: floor_ratio (time
//                 per step over the time the copy's bandwidth needs for the bytes the step
//                 touches: each cache read once), bytes_copied (on the device; 0 expected),
//                 caches_in_place (1 when both caches came back as the same pointers).
//   elementwise   tanh(x * 0.5) + 1 over 256M floats, x donated and written over: 1 GiB read
//                 and 1 GiB written; floor_ratio against the copy of as many bytes.
//   matmul        C = A B, f32 4096^3, through insitu (cuBLAS when it is installed) beside one
//                 cublasSgemm-shaped call of the driver's own (Driver::gemm): library_ratio.
//
// Without a GPU every benchmark is skipped with the reason. Run by scripts/gpu-check:
//   build-gpu/bench/cuda_bench --benchmark_min_time=0.5 --benchmark_format=json
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <vector>

#include "bench/cuda_programs.h"
#include "insitu/cuda/codegen.h"
#include "insitu/cuda/driver.h"
#include "insitu/cuda/executor.h"
#include "insitu/ir/parser.h"
#include "insitu/passes/optimize.h"

namespace insitu::cuda {
namespace {

using Clock = std::chrono::steady_clock;

// The driver, opened once for the process, or why there is none.
StatusOr<Driver*> driver() {
  static StatusOr<std::unique_ptr<Driver>>* opened = new StatusOr<std::unique_ptr<Driver>>(Driver::open());
  if (!opened->ok()) return opened->status();
  return opened->value().get();
}

bool skip_without_gpu(benchmark::State& state, Driver*& device) {
  StatusOr<Driver*> found = driver();
  if (!found.ok()) {
    state.SkipWithError(found.status().message().c_str());
    return true;
  }
  if (!cuda_available()) {
    state.SkipWithError("built without NVRTC: no kernels");
    return true;
  }
  device = *found;
  return false;
}

bool failed(benchmark::State& state, const Status& status) {
  if (status.ok()) return false;
  state.SkipWithError(status.to_string().c_str());
  return true;
}

// Seconds per byte of a device-to-device copy of `bytes` (the median of 5), through `device`.
StatusOr<double> copy_seconds_per_byte(Driver& device, int64_t bytes) {
  INSITU_ASSIGN_OR_RETURN(DevicePointer from, device.allocate(bytes));
  INSITU_ASSIGN_OR_RETURN(DevicePointer to, device.allocate(bytes));
  std::vector<double> times;
  Status status = ok_status();
  for (int k = 0; k < 6 && status.ok(); ++k) {
    const Clock::time_point start = Clock::now();
    status = device.copy_on_device(to, from, bytes);
    if (status.ok()) status = device.synchronize();
    if (k > 0) times.push_back(std::chrono::duration<double>(Clock::now() - start).count());  // the first warms up
  }
  (void)device.free(from);
  (void)device.free(to);
  INSITU_RETURN_IF_ERROR(status);
  std::sort(times.begin(), times.end());
  return times[times.size() / 2] / static_cast<double>(2 * bytes);  // read and written
}

StatusOr<std::unique_ptr<CudaExecutable>> compile(const std::string& text, Device& device) {
  INSITU_ASSIGN_OR_RETURN(std::unique_ptr<Module> module, parse_module(text));
  INSITU_ASSIGN_OR_RETURN(OptimizedModule optimized, optimize_module(std::move(module)));
  return CudaExecutable::create(std::move(optimized.module), device);
}

// The executable of `text` on `device`, and zeroed device arrays, one per entry parameter.
struct Prepared {
  std::unique_ptr<CudaExecutable> executable;
  std::vector<DevicePointer> arguments;
};
StatusOr<Prepared> prepare(const std::string& text, Device& device) {
  Prepared prepared;
  INSITU_ASSIGN_OR_RETURN(prepared.executable, compile(text, device));
  INSITU_ASSIGN_OR_RETURN(std::unique_ptr<Module> module, parse_module(text));
  for (int64_t p = 0; p < module->entry()->parameter_count(); ++p) {
    const int64_t bytes = module->entry()->parameter(p)->shape().byte_size();
    INSITU_ASSIGN_OR_RETURN(DevicePointer pointer, device.allocate(bytes));
    prepared.arguments.push_back(pointer);
    const std::vector<uint8_t> zeros(static_cast<size_t>(bytes), 0);
    INSITU_RETURN_IF_ERROR(device.copy_to_device(pointer, zeros.data(), bytes));
  }
  return prepared;
}

// Runs `executable` on `arguments` once per iteration; the results that are not arguments go
// back to its pool after each (release_result), as a step loop would give them. Sets
// floor_ratio from `bytes_touched` and the copy bandwidth.
void run_steps(benchmark::State& state, Driver& device, CudaExecutable& executable,
               std::vector<DevicePointer>& arguments, int64_t bytes_touched) {
  StatusOr<double> per_byte = copy_seconds_per_byte(device, int64_t{1} << 30);
  if (failed(state, per_byte.status())) return;
  CudaStats stats;
  for (auto _ : state) {
    stats = CudaStats{};
    StatusOr<std::vector<DevicePointer>> results = executable.run_on_device(arguments, &stats);  // synchronizes
    if (failed(state, results.status())) return;
    for (DevicePointer result : *results)  // a new output goes back to the pool for the next step
      if (std::find(arguments.begin(), arguments.end(), result) == arguments.end())
        (void)executable.release_result(result);
  }
  state.counters["bytes_copied"] = static_cast<double>(stats.bytes_copied_on_device);
  state.counters["device_bytes_allocated"] = static_cast<double>(stats.device_bytes_allocated);
  state.counters["kernels"] = static_cast<double>(stats.kernels_launched);
  state.counters["floor_seconds"] = *per_byte * static_cast<double>(bytes_touched);
  state.counters["floor_ratio"] = benchmark::Counter(*per_byte * static_cast<double>(bytes_touched),
                                                     benchmark::Counter::kIsIterationInvariantRate |
                                                         benchmark::Counter::kInvert);
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * bytes_touched);
}

void BM_DecodeStep(benchmark::State& state) {
  Driver* device = nullptr;
  if (skip_without_gpu(state, device)) return;
  constexpr int64_t kHeads = 256, kLength = 4096, kDim = 128;
  StatusOr<Prepared> step = prepare(bench::decode_step_hlo(kHeads, kLength, kDim), *device);
  if (failed(state, step.status())) return;
  const std::vector<DevicePointer>& arguments = step->arguments;
  const int64_t cache_bytes = kHeads * kLength * kDim * 4;
  run_steps(state, *device, *step->executable, step->arguments, 2 * cache_bytes);
  // Both caches were written in place: the step returns their own pointers.
  StatusOr<std::vector<DevicePointer>> last = step->executable->run_on_device(arguments);
  if (failed(state, last.status())) return;
  state.counters["caches_in_place"] = (*last)[0] == arguments[0] && (*last)[1] == arguments[1] ? 1 : 0;
  (void)step->executable->release_result((*last)[2]);
  for (DevicePointer pointer : arguments) (void)device->free(pointer);
}
BENCHMARK(BM_DecodeStep)->Unit(benchmark::kMicrosecond)->UseRealTime();

void BM_ElementwiseChain(benchmark::State& state) {
  Driver* device = nullptr;
  if (skip_without_gpu(state, device)) return;
  constexpr int64_t kCount = int64_t{1} << 28;  // 1 GiB of f32
  StatusOr<Prepared> chain = prepare(bench::elementwise_chain_hlo(kCount, /*donated=*/true), *device);  // over x
  if (failed(state, chain.status())) return;
  run_steps(state, *device, *chain->executable, chain->arguments, 2 * kCount * 4);
  for (DevicePointer pointer : chain->arguments) (void)device->free(pointer);
}
BENCHMARK(BM_ElementwiseChain)->Unit(benchmark::kMicrosecond)->UseRealTime();

void BM_Matmul(benchmark::State& state) {
  Driver* device = nullptr;
  if (skip_without_gpu(state, device)) return;
  constexpr int64_t kN = 4096;
  StatusOr<Prepared> matmul = prepare(bench::matmul_hlo(kN), *device);
  if (failed(state, matmul.status())) return;
  CudaExecutable* executable = matmul->executable.get();
  const std::vector<DevicePointer>& arguments = matmul->arguments;
  // The library's own call on the same operands, timed first: the baseline.
  const DeviceStep* gemm = nullptr;
  for (const DeviceStep& step : executable->plan().steps)
    if (step.kind == StepKind::kGemm) gemm = &step;
  if (gemm == nullptr) {
    state.SkipWithError("the matmul was not planned as a GEMM");
    return;
  }
  StatusOr<DevicePointer> c = device->allocate(kN * kN * 4);
  if (failed(state, c.status())) return;
  std::vector<double> library;
  for (int k = 0; k < 6; ++k) {
    const Clock::time_point start = Clock::now();
    Status status = device->gemm(gemm->gemm, arguments[0], arguments[1], *c);
    if (status.ok()) status = device->synchronize();
    if (failed(state, status)) return;
    if (k > 0) library.push_back(std::chrono::duration<double>(Clock::now() - start).count());
  }
  std::sort(library.begin(), library.end());
  CudaStats stats;
  for (auto _ : state) {
    stats = CudaStats{};
    StatusOr<std::vector<DevicePointer>> results = executable->run_on_device(arguments, &stats);
    if (failed(state, results.status())) return;
    for (DevicePointer result : *results) (void)executable->release_result(result);
  }
  state.counters["gemms_on_library"] = static_cast<double>(stats.gemms_on_library);
  state.counters["library_seconds"] = library[library.size() / 2];
  state.counters["library_ratio"] = benchmark::Counter(library[library.size() / 2],
                                                       benchmark::Counter::kIsIterationInvariantRate |
                                                           benchmark::Counter::kInvert);
  state.counters["FLOPS"] = benchmark::Counter(2.0 * kN * kN * kN, benchmark::Counter::kIsIterationInvariantRate);
  (void)device->free(*c);
  for (DevicePointer pointer : arguments) (void)device->free(pointer);
}
BENCHMARK(BM_Matmul)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace insitu::cuda

BENCHMARK_MAIN();
