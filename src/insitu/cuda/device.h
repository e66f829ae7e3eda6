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

class Device {
 public:
  virtual ~Device() = default;
  virtual std::string name() const = 0;
  virtual StatusOr<DevicePointer> allocate(int64_t bytes) = 0;
  virtual Status free(DevicePointer pointer) = 0;
  virtual Status copy_to_device(DevicePointer to, const void* from, int64_t bytes) = 0;
  virtual Status copy_to_host(void* to, DevicePointer from, int64_t bytes) = 0;
  virtual Status copy_on_device(DevicePointer to, DevicePointer from, int64_t bytes) = 0;
  // Makes the kernels of `source` (a plan's: the prelude and its kernels) launchable by name.
  virtual Status load(const std::string& source) = 0;
  // Launches `kernel` over `threads` threads with `arguments` (pointers to each argument's
  // value, as cuLaunchKernel takes them) and waits for it.
  virtual Status launch(const std::string& kernel, int64_t threads, std::span<void*> arguments) = 0;
  // C = op(A) op(B) on a library (cuBLAS); unimplemented where there is none, and the executor
  // runs the plan's GEMM kernel instead.
  virtual Status gemm(const GemmCall& call, DevicePointer a, DevicePointer b, DevicePointer c) {
    (void)call, (void)a, (void)b, (void)c;
    return unimplemented("no GEMM library on this device");
  }
};

}  // namespace insitu::cuda
