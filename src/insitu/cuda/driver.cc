#include "insitu/cuda/driver.h"
#include "insitu/cuda/ptx_cache.h"

#include <dlfcn.h>

#include <algorithm>
#include <cstdlib>

#include "insitu/cuda/codegen.h"
#include "insitu/cuda/device_plan.h"
#include "insitu/support/str.h"

namespace insitu::cuda {

// The driver API's C signatures (cuda.h), with its handles as void* and CUdeviceptr as uint64_t.
struct Driver::Api {
  int (*cuInit)(unsigned) = nullptr;
  int (*cuDeviceGetCount)(int*) = nullptr;
  int (*cuDeviceGet)(int*, int) = nullptr;
  int (*cuDeviceGetName)(char*, int, int) = nullptr;
  int (*cuDevicePrimaryCtxRetain)(void**, int) = nullptr;
  int (*cuDevicePrimaryCtxRelease)(int) = nullptr;
  int (*cuCtxSetCurrent)(void*) = nullptr;
  int (*cuCtxSynchronize)() = nullptr;
  int (*cuMemAlloc)(uint64_t*, size_t) = nullptr;
  int (*cuMemFree)(uint64_t) = nullptr;
  int (*cuMemcpyHtoD)(uint64_t, const void*, size_t) = nullptr;
  int (*cuMemcpyDtoH)(void*, uint64_t, size_t) = nullptr;
  int (*cuMemcpyDtoD)(uint64_t, uint64_t, size_t) = nullptr;
  int (*cuModuleLoadData)(void**, const void*) = nullptr;
  int (*cuModuleUnload)(void*) = nullptr;
  int (*cuModuleGetFunction)(void**, void*, const char*) = nullptr;
  int (*cuLaunchKernel)(void*, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, void*, void**,
                        void**) = nullptr;
  int (*cuGetErrorName)(int, const char**) = nullptr;
};

// cuBLAS's C API (cublas_api.h): the handle as void*, enums as int.
struct Driver::Blas {
  void* library = nullptr;
  void* handle = nullptr;
  int (*create)(void**) = nullptr;
  int (*destroy)(void*) = nullptr;
  int (*sgemm)(void*, int, int, int, int, int, const float*, const float*, int, long long, const float*, int, long long,
               const float*, float*, int, long long, int) = nullptr;
  int (*dgemm)(void*, int, int, int, int, int, const double*, const double*, int, long long, const double*, int,
               long long, const double*, double*, int, long long, int) = nullptr;
  // cublas<S|D>gemvStridedBatched (CUDA 11.6 on): null where this cuBLAS lacks them (GEMMs then).
  int (*sgemv)(void*, int, int, int, const float*, const float*, int, long long, const float*, int, long long,
               const float*, float*, int, long long, int) = nullptr;
  int (*dgemv)(void*, int, int, int, const double*, const double*, int, long long, const double*, int, long long,
               const double*, double*, int, long long, int) = nullptr;
  ~Blas() {
    if (handle != nullptr && destroy != nullptr) destroy(handle);
    if (library != nullptr) dlclose(library);
  }
};

namespace {

// dlsym of the versioned names the driver exports for the functions whose ABI changed (_v2).
template <typename F>
bool resolve(void* library, F& function, const char* name, const char* v2 = nullptr) {
  void* symbol = v2 != nullptr ? dlsym(library, v2) : nullptr;
  if (symbol == nullptr) symbol = dlsym(library, name);
  function = reinterpret_cast<F>(symbol);
  return symbol != nullptr;
}

}  // namespace

Status Driver::check(int result, const char* call) const {
  if (result == 0) return ok_status();
  const char* name = nullptr;
  if (api_ && api_->cuGetErrorName != nullptr) api_->cuGetErrorName(result, &name);
  return internal_error(
      str_cat("CUDA driver: ", call, " failed: ", name != nullptr ? std::string(name) : str_cat("error ", result)));
}

Status Driver::make_current() const { return check(api_->cuCtxSetCurrent(context_), "cuCtxSetCurrent"); }

StatusOr<std::unique_ptr<Driver>> Driver::open() {
  std::unique_ptr<Driver> driver(new Driver());
  driver->library_ = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (driver->library_ == nullptr)
    return failed_precondition(str_cat("no CUDA driver on this machine (dlopen libcuda.so.1: ", dlerror(), ")"));
  driver->api_ = std::make_unique<Api>();
  Api& api = *driver->api_;
  void* library = driver->library_;
  const bool resolved =
      resolve(library, api.cuInit, "cuInit") && resolve(library, api.cuDeviceGetCount, "cuDeviceGetCount") &&
      resolve(library, api.cuDeviceGet, "cuDeviceGet") && resolve(library, api.cuDeviceGetName, "cuDeviceGetName") &&
      resolve(library, api.cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain") &&
      resolve(library, api.cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease", "cuDevicePrimaryCtxRelease_v2") &&
      resolve(library, api.cuCtxSetCurrent, "cuCtxSetCurrent") &&
      resolve(library, api.cuCtxSynchronize, "cuCtxSynchronize") &&
      resolve(library, api.cuMemAlloc, "cuMemAlloc", "cuMemAlloc_v2") &&
      resolve(library, api.cuMemFree, "cuMemFree", "cuMemFree_v2") &&
      resolve(library, api.cuMemcpyHtoD, "cuMemcpyHtoD", "cuMemcpyHtoD_v2") &&
      resolve(library, api.cuMemcpyDtoH, "cuMemcpyDtoH", "cuMemcpyDtoH_v2") &&
      resolve(library, api.cuMemcpyDtoD, "cuMemcpyDtoD", "cuMemcpyDtoD_v2") &&
      resolve(library, api.cuModuleLoadData, "cuModuleLoadData") &&
      resolve(library, api.cuModuleUnload, "cuModuleUnload") &&
      resolve(library, api.cuModuleGetFunction, "cuModuleGetFunction") &&
      resolve(library, api.cuLaunchKernel, "cuLaunchKernel") && resolve(library, api.cuGetErrorName, "cuGetErrorName");
  if (!resolved) return failed_precondition("the CUDA driver (libcuda.so.1) lacks a function insitu needs: too old a driver");
  if (Status status = driver->check(api.cuInit(0), "cuInit"); !status.ok())
    return failed_precondition(str_cat("no usable GPU: ", status.message()));
  int count = 0;
  INSITU_RETURN_IF_ERROR(driver->check(api.cuDeviceGetCount(&count), "cuDeviceGetCount"));
  if (count == 0) return failed_precondition("the CUDA driver sees no GPU");
  INSITU_RETURN_IF_ERROR(driver->check(api.cuDeviceGet(&driver->device_, 0), "cuDeviceGet"));
  INSITU_RETURN_IF_ERROR(
      driver->check(api.cuDevicePrimaryCtxRetain(&driver->context_, driver->device_), "cuDevicePrimaryCtxRetain"));
  const char* sync = std::getenv("INSITU_CUDA_SYNC");
  driver->synchronous_ = sync != nullptr && std::string(sync) == "1";
  return driver;
}

Status Driver::gemm(const GemmCall& call, DevicePointer a, DevicePointer b, DevicePointer c) {
  INSITU_RETURN_IF_ERROR(make_current());
  if (!blas_) {
    auto blas = std::make_unique<Blas>();
    blas->library = dlopen("libcublas.so.13", RTLD_NOW | RTLD_LOCAL);
    if (blas->library == nullptr) blas->library = dlopen("libcublas.so", RTLD_NOW | RTLD_LOCAL);
    if (blas->library == nullptr) return unimplemented("cuBLAS is not installed (libcublas.so.13)");
    const bool resolved = resolve(blas->library, blas->create, "cublasCreate_v2") &&
                          resolve(blas->library, blas->destroy, "cublasDestroy_v2") &&
                          resolve(blas->library, blas->sgemm, "cublasSgemmStridedBatched") &&
                          resolve(blas->library, blas->dgemm, "cublasDgemmStridedBatched");
    if (!resolved) return unimplemented("cuBLAS lacks cublas<S|D>gemmStridedBatched");
    blas->sgemv = reinterpret_cast<decltype(blas->sgemv)>(dlsym(blas->library, "cublasSgemvStridedBatched"));
    blas->dgemv = reinterpret_cast<decltype(blas->dgemv)>(dlsym(blas->library, "cublasDgemvStridedBatched"));
    if (int status = blas->create(&blas->handle); status != 0)
      return internal_error(str_cat("cuBLAS: cublasCreate failed: status ", status));
    blas_ = std::move(blas);
  }
  const CublasGemm g = cublas_gemm(call);
  const int op_first = g.transpose_first ? 1 : 0, op_second = g.transpose_second ? 1 : 0;  // CUBLAS_OP_T : _N
  int status = 0;
  const std::optional<CublasGemv> v = cublas_gemv(call);
  if (v && call.type == PrimitiveType::kF32 && blas_->sgemv != nullptr) {  // one column: a GEMV
    const float one = 1, zero = 0;
    status = blas_->sgemv(blas_->handle, v->transpose ? 1 : 0, static_cast<int>(v->rows), static_cast<int>(v->cols),
                          &one, reinterpret_cast<const float*>(b), static_cast<int>(v->ld), v->stride_matrix,
                          reinterpret_cast<const float*>(a), static_cast<int>(v->incx), v->stride_x, &zero,
                          reinterpret_cast<float*>(c), 1, v->stride_y, static_cast<int>(v->batch));
  } else if (v && call.type == PrimitiveType::kF64 && blas_->dgemv != nullptr) {
    const double one = 1, zero = 0;
    status = blas_->dgemv(blas_->handle, v->transpose ? 1 : 0, static_cast<int>(v->rows), static_cast<int>(v->cols),
                          &one, reinterpret_cast<const double*>(b), static_cast<int>(v->ld), v->stride_matrix,
                          reinterpret_cast<const double*>(a), static_cast<int>(v->incx), v->stride_x, &zero,
                          reinterpret_cast<double*>(c), 1, v->stride_y, static_cast<int>(v->batch));
  } else if (call.type == PrimitiveType::kF32) {
    const float one = 1, zero = 0;
    status = blas_->sgemm(blas_->handle, op_first, op_second, static_cast<int>(g.m), static_cast<int>(g.n),
                          static_cast<int>(g.k), &one, reinterpret_cast<const float*>(b), static_cast<int>(g.ld_first),
                          g.stride_first, reinterpret_cast<const float*>(a), static_cast<int>(g.ld_second),
                          g.stride_second, &zero, reinterpret_cast<float*>(c), static_cast<int>(g.ld_out),
                          g.stride_out, static_cast<int>(g.batch));
  } else if (call.type == PrimitiveType::kF64) {
    const double one = 1, zero = 0;
    status = blas_->dgemm(blas_->handle, op_first, op_second, static_cast<int>(g.m), static_cast<int>(g.n),
                          static_cast<int>(g.k), &one, reinterpret_cast<const double*>(b), static_cast<int>(g.ld_first),
                          g.stride_first, reinterpret_cast<const double*>(a), static_cast<int>(g.ld_second),
                          g.stride_second, &zero, reinterpret_cast<double*>(c), static_cast<int>(g.ld_out),
                          g.stride_out, static_cast<int>(g.batch));
  } else {
    return unimplemented(str_cat("cuBLAS GEMM of ", primitive_type_name(call.type)));
  }
  if (status != 0) return internal_error(str_cat("cuBLAS: gemm failed: status ", status));
  return synchronous_ ? check(api_->cuCtxSynchronize(), "cuBLAS gemm") : ok_status();
}

Driver::~Driver() {
  blas_.reset();  // before the context goes
  if (api_ && context_ != nullptr) {
    if (make_current().ok())
      for (const auto& [handle, loaded] : modules_) api_->cuModuleUnload(loaded.module);
    api_->cuDevicePrimaryCtxRelease(device_);
  }
  if (library_ != nullptr) dlclose(library_);
}

std::string Driver::device_name() const {
  char name[256] = {};
  if (api_->cuDeviceGetName(name, sizeof(name) - 1, device_) != 0) return "?";
  return name;
}

StatusOr<DevicePointer> Driver::allocate(int64_t bytes) {
  INSITU_RETURN_IF_ERROR(make_current());
  uint64_t pointer = 0;
  INSITU_RETURN_IF_ERROR(check(api_->cuMemAlloc(&pointer, static_cast<size_t>(std::max<int64_t>(bytes, 1))), "cuMemAlloc"));
  return pointer;
}

Status Driver::free(DevicePointer pointer) {
  INSITU_RETURN_IF_ERROR(make_current());
  return check(api_->cuMemFree(pointer), "cuMemFree");
}

Status Driver::copy_to_device(DevicePointer to, const void* from, int64_t bytes) {
  if (bytes == 0) return ok_status();
  INSITU_RETURN_IF_ERROR(make_current());
  return check(api_->cuMemcpyHtoD(to, from, static_cast<size_t>(bytes)), "cuMemcpyHtoD");
}

Status Driver::copy_to_host(void* to, DevicePointer from, int64_t bytes) {
  if (bytes == 0) return ok_status();
  INSITU_RETURN_IF_ERROR(make_current());
  return check(api_->cuMemcpyDtoH(to, from, static_cast<size_t>(bytes)), "cuMemcpyDtoH");
}

Status Driver::copy_on_device(DevicePointer to, DevicePointer from, int64_t bytes) {
  if (bytes == 0) return ok_status();
  INSITU_RETURN_IF_ERROR(make_current());
  return check(api_->cuMemcpyDtoD(to, from, static_cast<size_t>(bytes)), "cuMemcpyDtoD");
}

StatusOr<DeviceModule> Driver::load(const std::string& source) {
  INSITU_ASSIGN_OR_RETURN(std::string ptx, cached_ptx(source));
  return load_ptx(ptx);
}

StatusOr<DeviceModule> Driver::load_ptx(const std::string& ptx) {
  INSITU_RETURN_IF_ERROR(make_current());
  Loaded loaded;
  INSITU_RETURN_IF_ERROR(check(api_->cuModuleLoadData(&loaded.module, ptx.c_str()), "cuModuleLoadData"));
  const DeviceModule handle = next_module_++;
  modules_.emplace(handle, std::move(loaded));
  return handle;
}

void Driver::unload(DeviceModule module) {
  auto found = modules_.find(module);
  if (found == modules_.end()) return;
  if (make_current().ok()) api_->cuModuleUnload(found->second.module);
  modules_.erase(found);
}

Status Driver::launch(DeviceModule module, const std::string& kernel, int64_t threads, std::span<void*> arguments) {
  auto loaded = modules_.find(module);
  if (loaded == modules_.end()) return failed_precondition(str_cat("launch of ", kernel, ": module ", module, " is not loaded"));
  INSITU_RETURN_IF_ERROR(make_current());
  void*& function = loaded->second.functions[kernel];
  if (function == nullptr)
    INSITU_RETURN_IF_ERROR(check(api_->cuModuleGetFunction(&function, loaded->second.module, kernel.c_str()),
                                 str_cat("cuModuleGetFunction(", kernel, ")").c_str()));
  constexpr int64_t kBlock = 256;
  const int64_t blocks = std::max<int64_t>(1, (threads + kBlock - 1) / kBlock);
  // (The kernel's name goes into a message only on failure: no string per launch.)
  if (int launched = api_->cuLaunchKernel(function, static_cast<unsigned>(blocks), 1, 1, kBlock, 1, 1, 0, nullptr,
                                          arguments.data(), nullptr);
      launched != 0)
    return check(launched, str_cat("cuLaunchKernel(", kernel, ")").c_str());
  if (!synchronous_) return ok_status();
  const int finished = api_->cuCtxSynchronize();
  return finished == 0 ? ok_status() : check(finished, str_cat("kernel ", kernel).c_str());
}

Status Driver::synchronize() {
  INSITU_RETURN_IF_ERROR(make_current());
  Status status = check(api_->cuCtxSynchronize(), "cuCtxSynchronize");
  if (status.ok()) return status;
  return internal_error(str_cat(status.message(), " (a kernel queued since the last synchronization failed; ",
                                "INSITU_CUDA_SYNC=1 waits for each launch, naming the kernel)"));
}

}  // namespace insitu::cuda
