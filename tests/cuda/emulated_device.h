// Shared by the CUDA executor tests: an emulated device (device memory is host memory; the
// plan's kernels are compiled by the host compiler, with the shim of host_run_test.cc, into a
// shared library whose launchers run each kernel over its grid), modules loaded as written and
// as optimized, random arguments, and a leaf-by-leaf comparison.
#pragma once

#include <dlfcn.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <random>
#include <span>
#include <regex>
#include <sstream>

#include "corpus_kernels.h"
#include "insitu/cuda/driver.h"
#include "insitu/cuda/executor.h"
#include "insitu/passes/fusion.h"

namespace insitu::cuda::testing {

// Host memory as device memory; kernels from a shared library the host compiler builds.
//
// With INSITU_CUDA_TESTS_ON_GPU=1 in the environment (scripts/gpu-check) every call goes to GPU 0
// through the driver instead, so each test written for the emulated device also runs on the
// GPU (GEMMs on cuBLAS); the counts below (live blocks, allocations, modules) are kept alike.
class EmulatedDevice final : public Device {
 public:
  EmulatedDevice() {
    const char* on_gpu = std::getenv("INSITU_CUDA_TESTS_ON_GPU");
    if (on_gpu == nullptr || std::string(on_gpu) != "1") return;
    StatusOr<std::unique_ptr<Driver>> driver = Driver::open();
    if (driver.ok()) {
      gpu_ = std::move(driver).value();
    } else {
      ADD_FAILURE() << "INSITU_CUDA_TESTS_ON_GPU=1 but " << driver.status().to_string() << " (emulating instead)";
    }
  }
  ~EmulatedDevice() override {
    for (const auto& [module, library] : libraries_) dlclose(library);
    if (gpu_)
      for (const auto& [module, loaded] : gpu_modules_) gpu_->unload(loaded);
  }
  bool on_gpu() const { return gpu_ != nullptr; }
  std::string name() const override {
    return gpu_ ? str_cat("GPU 0 (", gpu_->name(), ") in place of the emulated device") : "emulated CUDA device (the host)";
  }
  StatusOr<DevicePointer> allocate(int64_t bytes) override {
    DevicePointer pointer = 0;
    if (gpu_) {
      INSITU_ASSIGN_OR_RETURN(pointer, gpu_->allocate(std::max<int64_t>(bytes, 1)));
    } else {
      void* memory = std::calloc(static_cast<size_t>(std::max<int64_t>(bytes, 1)), 1);
      if (memory == nullptr) return resource_exhausted("emulated device: out of memory");
      pointer = reinterpret_cast<DevicePointer>(memory);
    }
    ++live_;
    ++allocations_;
    return pointer;
  }
  Status free(DevicePointer pointer) override {
    if (gpu_) INSITU_RETURN_IF_ERROR(gpu_->free(pointer));
    else std::free(reinterpret_cast<void*>(pointer));
    --live_;
    return ok_status();
  }
  Status copy_to_device(DevicePointer to, const void* from, int64_t bytes) override {
    if (gpu_) return gpu_->copy_to_device(to, from, bytes);
    if (bytes > 0) std::memcpy(reinterpret_cast<void*>(to), from, static_cast<size_t>(bytes));
    return ok_status();
  }
  Status copy_to_host(void* to, DevicePointer from, int64_t bytes) override {
    if (gpu_) return gpu_->copy_to_host(to, from, bytes);
    if (bytes > 0) std::memcpy(to, reinterpret_cast<const void*>(from), static_cast<size_t>(bytes));
    return ok_status();
  }
  Status copy_on_device(DevicePointer to, DevicePointer from, int64_t bytes) override {
    if (gpu_) return gpu_->copy_on_device(to, from, bytes);
    return copy_to_device(to, reinterpret_cast<const void*>(from), bytes);
  }
  Status synchronize() override { return gpu_ ? gpu_->synchronize() : ok_status(); }
  Status gemm(const GemmCall& call, DevicePointer a, DevicePointer b, DevicePointer c) override {
    return gpu_ ? gpu_->gemm(call, a, b, c) : Device::gemm(call, a, b, c);
  }
  // Each kernel gets a launcher: launch_NAME(void** arguments, long long threads).
  StatusOr<DeviceModule> load(const std::string& source) override {
    if (gpu_) {
      INSITU_ASSIGN_OR_RETURN(DeviceModule loaded, gpu_->load(source));
      gpu_modules_[++loads_] = loaded;
      return DeviceModule{loads_};
    }
    std::string program = str_cat(kHostShim, source);
    static const std::regex kSignature(R"(extern "C" __global__ void (\w+)\(([^)]*)\))");
    for (std::sregex_iterator it(source.begin(), source.end(), kSignature), end; it != end; ++it) {
      const std::string name = (*it)[1];
      std::string parameters = (*it)[2], call;
      size_t index = 0;
      for (size_t begin = 0; begin <= parameters.size(); ++index) {
        size_t comma = parameters.find(", ", begin);
        if (comma == std::string::npos) comma = parameters.size();
        std::string parameter = parameters.substr(begin, comma - begin);
        begin = comma + 2;
        const size_t star = parameter.rfind('*');  // a pointer (aliased ones are not __restrict__)
        const bool pointer = star != std::string::npos;
        const std::string type = pointer ? parameter.substr(0, star + 1) : "long long";
        if (!call.empty()) call += ", ";
        call += pointer ? str_cat("(", type, ")(*(const uint64_t*)a[", index, "])") : str_cat("*(long long*)a[", index, "]");
      }
      // Threads run one at a time, last to first (blocks and threads within them): a kernel whose
      // threads read what others write (an output over an operand read at other positions)
      // sees the other order from the one a sequential loop would hide it in.
      program += str_cat("extern \"C\" void launch_", name, "(void** a, long long threads) {\n  blockDim.x = 128;\n",
                         "  for (long long b = (threads + 127) / 128; b-- > 0;) {\n    blockIdx.x = (unsigned)b;\n",
                         "    for (int t = 128; t-- > 0;) { threadIdx.x = (unsigned)t; ", name, "(", call, "); }\n  }\n}\n");
    }
    const std::string base = str_cat(fs::temp_directory_path().string(), "/insitu_emulated_", ::getpid(), "_", loads_++);
    {
      std::ofstream file(base + ".cc");
      file << program;
    }
    const std::string command = str_cat(INSITU_HOST_CXX, " -std=c++17 -O1 -ffp-contract=off -w -shared -fPIC -o ",
                                        base, ".so ", base, ".cc 2>", base, ".log");
    if (std::system(command.c_str()) != 0) return internal_error(str_cat("emulated device: the host compiler failed: ", base, ".log"));
    void* library = dlopen((base + ".so").c_str(), RTLD_NOW | RTLD_LOCAL);
    if (library == nullptr) return internal_error(str_cat("emulated device: dlopen: ", dlerror()));
    fs::remove(base + ".cc");
    fs::remove(base + ".so");
    fs::remove(base + ".log");
    libraries_[loads_] = library;
    return DeviceModule{loads_};
  }
  void unload(DeviceModule module) override {
    if (auto found = gpu_modules_.find(module); found != gpu_modules_.end()) {
      gpu_->unload(found->second);
      gpu_modules_.erase(found);
    }
    if (auto found = libraries_.find(module); found != libraries_.end()) {
      dlclose(found->second);
      libraries_.erase(found);
    }
  }
  Status launch(DeviceModule module, const std::string& kernel, int64_t threads, std::span<void*> arguments) override {
    if (auto loaded = gpu_modules_.find(module); loaded != gpu_modules_.end())
      return gpu_->launch(loaded->second, kernel, threads, arguments);
    auto library = libraries_.find(module);
    if (library == libraries_.end()) return failed_precondition(str_cat("emulated device: module ", module, " is not loaded"));
    using Launcher = void (*)(void**, long long);
    auto launcher = reinterpret_cast<Launcher>(dlsym(library->second, ("launch_" + kernel).c_str()));
    if (launcher == nullptr) return not_found(str_cat("emulated device: no kernel ", kernel));
    launcher(arguments.data(), threads);
    return ok_status();
  }
  int64_t live() const { return live_; }
  int64_t allocations() const { return allocations_; }  // allocate calls so far
  size_t modules() const { return libraries_.size() + gpu_modules_.size(); }  // loaded, not unloaded

 private:
  std::unique_ptr<Driver> gpu_;                        // INSITU_CUDA_TESTS_ON_GPU=1
  std::map<DeviceModule, DeviceModule> gpu_modules_;  // the driver's module, by the one returned
  std::map<DeviceModule, void*> libraries_;  // each load's library, by the module it returned
  DeviceModule loads_ = 0;
  int64_t live_ = 0;
  int64_t allocations_ = 0;
};

// A module as written (for the evaluator) and as insitu's pipeline optimizes it (for the device).
struct Loaded {
  std::unique_ptr<Module> written, optimized;
};

inline StatusOr<Loaded> load_text(const std::string& text) {
  Loaded loaded;
  INSITU_ASSIGN_OR_RETURN(loaded.written, parse_module(text));
  INSITU_ASSIGN_OR_RETURN(std::unique_ptr<Module> parsed, parse_module(text));
  INSITU_ASSIGN_OR_RETURN(OptimizedModule optimized, optimize_module(std::move(parsed)));
  loaded.optimized = std::move(optimized.module);
  inline_unlooped_fusions(*loaded.optimized);  // as Executable::create_on_cuda does
  return loaded;
}

inline StatusOr<Loaded> load(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return load_text(text.str());
}

inline fs::path corpus_module(const std::string& program) {
  return fs::path(INSITU_SOURCE_DIR) / "tests" / "data" / "jax" / program / "before_optimizations.hlo";
}

inline Literal random_argument(const Shape& shape, std::mt19937& rng) {
  if (!shape.is_tuple()) return random_input(shape, rng);
  std::vector<Literal> elements;
  for (int64_t i = 0; i < shape.tuple_size(); ++i) elements.push_back(random_argument(shape.tuple_shape(i), rng));
  return Literal::tuple(std::move(elements));
}

// One random argument per entry parameter of `module`.
inline std::vector<Literal> random_arguments(const Module& module, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<Literal> arguments;
  for (int64_t p = 0; p < module.entry()->parameter_count(); ++p)
    arguments.push_back(random_argument(module.entry()->parameter(p)->shape(), rng));
  return arguments;
}

// Leaf by leaf: integers exactly, floats within 1e-4 relative (the generated GEMM sums in the
// element type, the evaluator's dot may not; bf16 and f16 within a step of their precision, where a
// libm ulp may round over), NaN where the other has NaN.
inline std::string differs(const Literal& actual, const Literal& expected) {
  if (expected.shape().is_tuple()) {
    if (!actual.shape().is_tuple() || actual.shape().tuple_size() != expected.shape().tuple_size()) return "shapes";
    for (int64_t i = 0; i < expected.shape().tuple_size(); ++i)
      if (std::string d = differs(actual.element(i), expected.element(i)); !d.empty()) return str_cat("{", i, "} ", d);
    return "";
  }
  const PrimitiveType type = expected.shape().element_type();
  for (int64_t i = 0; i < expected.element_count(); ++i) {
    if (is_floating(type)) {  // bf16 and f16 within one step of their precision (a libm ulp may round over)
      const double relative = type == PrimitiveType::kBF16 ? 8e-3 : type == PrimitiveType::kF16 ? 1e-3 : 1e-4;
      const double a = actual.get_double(i), e = expected.get_double(i);
      if ((std::isnan(a) && std::isnan(e)) || a == e) continue;
      if (std::isfinite(a) && std::isfinite(e) && std::fabs(a - e) <= relative * (0.1 + std::fabs(e))) continue;
      return str_cat("element ", i, ": device ", a, ", evaluator ", e);
    }
    if (actual.get_integer(i) != expected.get_integer(i))
      return str_cat("element ", i, ": device ", actual.get_integer(i), ", evaluator ", expected.get_integer(i));
  }
  return "";
}


// Each argument in device memory of its own (the caller frees it), for run_on_device.
inline StatusOr<std::vector<DevicePointer>> upload(Device& device, std::span<const Literal> arguments) {
  std::vector<DevicePointer> pointers;
  for (const Literal& argument : arguments) {
    INSITU_ASSIGN_OR_RETURN(DevicePointer pointer, device.allocate(argument.size_bytes()));
    pointers.push_back(pointer);
    INSITU_RETURN_IF_ERROR(device.copy_to_device(pointer, argument.untyped_data(), argument.size_bytes()));
  }
  return pointers;
}

// "" when `actual` has `expected`'s bits (NaN payloads included), else the first output (of a
// tuple: of its first `outputs` elements, all when -1) that differs, both printed.
inline std::string not_identical(const Literal& actual, const Literal& expected, int64_t outputs = -1) {
  if (!expected.shape().is_tuple())
    return actual == expected ? "" : str_cat(actual.to_string(), " vs ", expected.to_string());
  if (outputs < 0) outputs = expected.shape().tuple_size();
  for (int64_t k = 0; k < outputs; ++k)
    if (!(actual.element(k) == expected.element(k)))
      return str_cat("output ", k, ": ", actual.element(k).to_string(), " vs ", expected.element(k).to_string());
  return "";
}

// run_on_device's result leaves against the evaluator's result (a tuple's elements, in order):
// "" or what differs first.
inline std::string differs_on_device(Device& device, std::span<const DevicePointer> results, const Literal& expected) {
  const int64_t count = expected.shape().is_tuple() ? expected.shape().tuple_size() : 1;
  if (static_cast<int64_t>(results.size()) != count) return str_cat(results.size(), " results for ", count);
  for (int64_t i = 0; i < count; ++i) {
    const Literal& want = expected.shape().is_tuple() ? expected.element(i) : expected;
    Literal actual(want.shape());
    if (Status status = device.copy_to_host(actual.untyped_data(), results[i], actual.size_bytes()); !status.ok())
      return status.to_string();
    if (std::string d = differs(actual, want); !d.empty()) return str_cat("output ", i, ": ", d);
  }
  return "";
}

// A module as written (for the evaluator) beside its executable on `device`.
struct OnDevice {
  std::unique_ptr<Module> written;
  std::unique_ptr<CudaExecutable> executable;
};

// The plan's kernels also go through NVRTC where it is installed, as on a GPU (the emulated
// device compiles them with the host compiler).
inline StatusOr<OnDevice> compile_on(Device& device, const std::string& text) {
  INSITU_ASSIGN_OR_RETURN(Loaded loaded, load_text(text));
  OnDevice on;
  on.written = std::move(loaded.written);
  INSITU_ASSIGN_OR_RETURN(on.executable, CudaExecutable::create(std::move(loaded.optimized), device));
  if (cuda_available()) INSITU_RETURN_IF_ERROR(compile_to_ptx(on.executable->plan().source, "compile_on.cu").status());
  return on;
}

// The device's result and the evaluator's on the module as written, for `arguments`.
struct BothResults {
  Literal actual, expected;
};

inline StatusOr<BothResults> run_both(const OnDevice& on, std::span<const Literal> arguments) {
  BothResults results;
  INSITU_ASSIGN_OR_RETURN(results.expected, evaluate_module(*on.written, arguments));
  INSITU_ASSIGN_OR_RETURN(results.actual, on.executable->run(arguments));
  return results;
}

}  // namespace insitu::cuda::testing
