// Runs an optimized module on a CUDA device (issue 12): its plan (device_plan.h) step by step,
// on a Device (the real one through the driver, or an emulated one in tests).
//
// Device memory is the plan's buffer assignment (device_plan.h), the CPU runtime's plan made
// with what the device can do: a run binds each allocation to device memory (a parameter's is
// the caller's leaf, a constant's was uploaded at create, each output's and the one temp arena
// are blocks of the executable's pool, by size: a warm run allocates nothing from the device)
// and every step's pointers are offsets into those. In-place updates (dynamic-update-slice,
// scatter, an aliasing custom kernel, an elementwise result over an operand that dies there or
// a donated parameter), views and the reuse of dead values' bytes are the assignment's, decided
// once for both devices; copies run only where the assignment's module has them. Kernels and
// GEMMs are queued, and a run waits once, at its end. GEMMs run on the device's library (cuBLAS
// through the driver) or, where it has none, as the plan's generated kernel. While loops and
// conditionals are driven by the host: after the condition's steps the pred (or branch index)
// is copied back, a few bytes per iteration. A registered kernel's custom-call runs its CUDA
// body with each aliased output in its operand's memory (in place), its grid's table uploaded
// at create. Arguments and results are host literals or host memory (run, run_host) or device
// pointers (run_on_device): every transfer is counted in CudaStats, none is hidden.
#pragma once

#include <memory>
#include <mutex>
#include <span>
#include <unordered_map>
#include <vector>

#include "insitu/cuda/device.h"
#include "insitu/cuda/device_plan.h"
#include "insitu/ir/literal.h"
#include "insitu/ir/module.h"
#include "insitu/support/check.h"

namespace insitu::cuda {

struct CudaStats {
  int64_t kernels_launched = 0;
  int64_t gemms_on_library = 0;  // dots run by the device's GEMM library (cuBLAS) instead
  int64_t bytes_to_device = 0;  // arguments, constants, nothing else
  int64_t bytes_to_host = 0;    // results, and each loop's pred / conditional's index
  int64_t bytes_copied_on_device = 0;
  int64_t device_bytes_allocated = 0;  // new device memory this run took (0 once the pool is warm)
  int64_t peak_device_bytes = 0;       // the most pool memory the run held at once (the arena whole)
};

class CudaExecutable {
 public:
  // Plans `module` (optimized: passes/optimize.h, fusions inlined for the device) on `buffers`,
  // its assignment made with BufferAssignmentOptions::for_cuda (retarget_for_cuda makes both;
  // null: assigned here and kept, buffers()), loads the plan's kernels and uploads the
  // constants and the custom kernels' grid tables. `device` must outlive the executable.
  // Custom-calls resolve through `custom_calls` (null: CustomCallTable::global()).
  static StatusOr<std::unique_ptr<CudaExecutable>> create(std::unique_ptr<Module> module, Device& device,
                                                          const CustomCallTable* custom_calls = nullptr,
                                                          const BufferAssignment* buffers = nullptr);
  ~CudaExecutable();
  CudaExecutable(const CudaExecutable&) = delete;
  CudaExecutable& operator=(const CudaExecutable&) = delete;

  // One literal per entry parameter; the entry's result (a tuple literal for a tuple).
  StatusOr<Literal> run(std::span<const Literal> arguments, CudaStats* stats = nullptr);

  // The same on memory already on the device: one pointer per entry parameter leaf (depth-first),
  // the caller's. A parameter the module aliases to an output (input_output_alias: the caller
  // donated it) is that output's memory, returned as it, the same pointer: its producer writes
  // there (the assignment put it there; copy insertion copied first where the old value is
  // still read after). The others are only read. Returns one pointer per result leaf: the aliased parameters' own, or new
  // allocations the caller now owns (free them with the device, or give them back to this
  // executable's pool with release_result, so the next run reuses them). Nothing crosses to the
  // host but the loops' preds and the conditionals' branch indices.
  StatusOr<std::vector<DevicePointer>> run_on_device(std::span<const DevicePointer> argument_leaves,
                                                     CudaStats* stats = nullptr);
  // The same between host memory: arguments[i] holds entry parameter leaf i's bytes (depth-first),
  // results[j] receives result leaf j's. Each argument is copied into a block of the pool and
  // each result copied back (bytes_to_device, bytes_to_host), so the caller's memory is only
  // read, then written, and may be the same for an argument and a result (a donated buffer
  // updated in place, as the CPU runtime's execute_borrowed). Sizes are the caller's to get
  // right (parameter_leaves(), result_leaves()). The blocks go back to the pool: a warm call
  // allocates nothing on the device.
  Status run_host(std::span<const uint8_t* const> arguments, std::span<uint8_t* const> results,
                  CudaStats* stats = nullptr);
  // A result run_on_device allocated, back to the pool once the caller is done with it (a step
  // loop's outputs then cost no allocation); anything else is an invalid-argument error.
  Status release_result(DevicePointer result);

  const DevicePlan& plan() const { return plan_; }
  // The buffer assignment create made the plan on, when it made one (no `buffers` given).
  const BufferAssignment& buffers() const {
    INSITU_CHECK(buffers_ != nullptr) << "the caller of CudaExecutable::create holds the assignment";
    return *buffers_;
  }
  const Module& module() const { return *module_; }
  Device& device() const { return device_; }
  // The entry's parameter leaves and result leaves, depth-first (all arrays: create refuses tokens).
  const std::vector<Shape>& parameter_leaves() const { return parameter_leaves_; }
  const std::vector<Shape>& result_leaves() const { return result_leaves_; }

 private:
  CudaExecutable(std::unique_ptr<Module> module, Device& device) : module_(std::move(module)), device_(device) {}
  struct Run;
  // The pool: a free block of exactly `bytes`, else a new one (counted in stats); and back.
  StatusOr<DevicePointer> take_block(int64_t bytes, CudaStats& stats);
  void give_back_block(DevicePointer block, int64_t bytes);
  // The entry over `argument_leaves` (one per parameter leaf) in `run`: its root's leaves.
  StatusOr<std::vector<DevicePointer>> run_entry(Run& run, std::span<const DevicePointer> argument_leaves);

  std::unique_ptr<Module> module_;
  Device& device_;
  DevicePlan plan_;
  std::vector<Shape> parameter_leaves_, result_leaves_;
  DeviceModule kernels_ = 0;  // the plan's kernels, loaded at create (0: not loaded)
  std::mutex pool_mutex_;
  std::unordered_map<int64_t, std::vector<DevicePointer>> free_blocks_;  // by byte size
  std::unordered_map<DevicePointer, int64_t> results_out_;  // pool blocks run_on_device returned: bytes
  std::unique_ptr<BufferAssignment> buffers_;  // the plan's memory, when create assigned it
  std::unordered_map<size_t, DevicePointer> constant_blocks_;          // constant allocations, filled at create
  std::unordered_map<const Instruction*, DevicePointer> constant_copies_;  // constants copied per run
  std::unordered_map<const Instruction*, DevicePointer> grid_tables_;  // custom-calls': likewise
};

}  // namespace insitu::cuda
