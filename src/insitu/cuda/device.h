// What insitu's CUDA executor needs from a GPU: device memory, explicit transfers, the plan's
// kernels loaded and launched by name. Driver (driver.h) is the real one; tests run the same
// executor on an emulated device that runs the generated kernels on the host
// (tests/cuda/executor_test.cc), so the executor is checked where there is no GPU.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "insitu/cuda/codegen.h"
#include "insitu/support/status.h"

namespace insitu::cuda {

using DevicePointer = uint64_t;  // CUdeviceptr
using DeviceModule = int64_t;    // a load's kernels (Device::load)

// Work runs in the order it is queued (one stream): a copy or launch starts after everything
// queued before it, and copy_to_host returns once its bytes are on the host.
class Device {
 public:
  virtual ~Device() = default;
  virtual std::string name() const = 0;
  virtual StatusOr<DevicePointer> allocate(int64_t bytes) = 0;
  virtual Status free(DevicePointer pointer) = 0;
  virtual Status copy_to_device(DevicePointer to, const void* from, int64_t bytes) = 0;
  virtual Status copy_to_host(void* to, DevicePointer from, int64_t bytes) = 0;
  virtual Status copy_on_device(DevicePointer to, DevicePointer from, int64_t bytes) = 0;
  // Makes the kernels of `source` (a plan's: the prelude and its kernels) launchable by name
  // through the module returned, beside every module loaded before: each executable keeps its
  // own (kernel names repeat across plans). unload lets one go.
  virtual StatusOr<DeviceModule> load(const std::string& source) = 0;
  virtual void unload(DeviceModule module) = 0;
  // Queues `kernel` of `module` over `threads` threads with `arguments` (pointers to each
  // argument's value, as cuLaunchKernel takes them), after everything queued before it. Its
  // failure may be reported by a later call: synchronize's at the latest.
  virtual Status launch(DeviceModule module, const std::string& kernel, int64_t threads,
                        std::span<void*> arguments) = 0;
  // Waits for everything queued; a queued kernel's failure is reported here.
  virtual Status synchronize() { return ok_status(); }
  // C = op(A) op(B) on a library (cuBLAS), queued like a launch; unimplemented where there is
  // none, and the executor runs the plan's GEMM kernel instead.
  virtual Status gemm(const GemmCall& call, DevicePointer a, DevicePointer b, DevicePointer c) {
    (void)call, (void)a, (void)b, (void)c;
    return unimplemented("no GEMM library on this device");
  }
};

}  // namespace insitu::cuda
