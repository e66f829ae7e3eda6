// The CUDA driver, opened at run time (dlopen of libcuda.so.1): device memory, PTX modules and
// kernel launches for insitu's GPU device (issue 12). Nothing links against the driver, so the
// same insitu builds and runs on machines without one; Driver::open() then says why there is
// no GPU, and device tests skip with that message.
//
// Every call returns a Status naming the driver function and its error (cuGetErrorName); every
// transfer between host and device is an explicit call here, so a caller can count it.
// One device (ordinal 0) and its primary context, made current on the calling thread by each
// call. Not thread-safe beyond that: one Driver per thread of work. Launches and GEMMs are
// queued on the default stream, not waited for (synchronize does).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <unordered_map>

#include "insitu/cuda/device.h"
#include "insitu/support/status.h"

namespace insitu::cuda {

class Driver final : public Device {
 public:
  // The driver and device 0, or why not (no libcuda.so.1, no device, cuInit's error).
  static StatusOr<std::unique_ptr<Driver>> open();
  ~Driver();
  Driver(const Driver&) = delete;
  Driver& operator=(const Driver&) = delete;

  std::string device_name() const;
  std::string name() const override { return device_name(); }

  StatusOr<DevicePointer> allocate(int64_t bytes) override;
  Status free(DevicePointer pointer) override;
  Status copy_to_device(DevicePointer to, const void* from, int64_t bytes) override;
  Status copy_to_host(void* to, DevicePointer from, int64_t bytes) override;
  Status copy_on_device(DevicePointer to, DevicePointer from, int64_t bytes) override;

  // Loads PTX (the plan's kernels) as a module of its own; functions are then found by name.
  StatusOr<DeviceModule> load_ptx(const std::string& ptx);
  // The source's PTX for this device (compiled, or cached: ptx_cache.h), then load_ptx.
  StatusOr<DeviceModule> load(const std::string& source) override;
  void unload(DeviceModule module) override;
  // Queues `kernel` (blocks of 256 threads) on the context's default stream; with
  // INSITU_CUDA_SYNC=1 in the environment every launch and GEMM is waited for, so a failing
  // kernel is named by its own launch rather than by the next synchronization.
  Status launch(DeviceModule module, const std::string& kernel, int64_t threads, std::span<void*> arguments) override;
  // cuCtxSynchronize; a queued kernel's failure says so.
  Status synchronize() override;
  // cublas<S|D>gemmStridedBatched (libcublas.so.13 or libcublas.so, opened at the first call);
  // unimplemented when cuBLAS is not installed.
  Status gemm(const GemmCall& call, DevicePointer a, DevicePointer b, DevicePointer c) override;

  struct Api;  // the driver functions, resolved by dlsym
  struct Blas;  // cuBLAS's

 private:
  Driver() = default;
  Status check(int result, const char* call) const;
  Status make_current() const;
  void* library_ = nullptr;
  std::unique_ptr<Api> api_;
  int device_ = 0;
  void* context_ = nullptr;  // CUcontext (the device's primary context)
  struct Loaded {
    void* module = nullptr;                              // CUmodule
    std::unordered_map<std::string, void*> functions;  // CUfunction by name, found on first launch
  };
  std::unordered_map<DeviceModule, Loaded> modules_;
  DeviceModule next_module_ = 1;
  bool synchronous_ = false;  // INSITU_CUDA_SYNC=1
  std::unique_ptr<Blas> blas_;
};

}  // namespace insitu::cuda
