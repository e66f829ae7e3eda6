// The generated CUDA kernels on a GPU, against the reference evaluator: the same cases as the
// host run (corpus_kernels.h), compiled by NVRTC for the device's architecture, each launched
// through the driver on its inputs in device memory, its result copied back and compared (bit
// for bit, or within 1e-5 where libdevice's transcendental functions differ from insitu's).
// Without a GPU (no libcuda.so.1, or no device) the test skips and says why: CI has none;
// scripts/gpu-check runs it where there is one.
#include <gtest/gtest.h>

#include <cstdio>

#include "corpus_kernels.h"
#include "insitu/cuda/driver.h"

namespace insitu::cuda {
namespace {

using namespace testing;

TEST(CudaGpuRun, CorpusKernelsAgreeWithTheEvaluatorOnTheGpu) {
  StatusOr<std::unique_ptr<Driver>> driver = Driver::open();
  if (!driver.ok()) GTEST_SKIP() << driver.status().message();
  if (!cuda_available()) GTEST_SKIP() << "built without NVRTC: the kernels cannot be compiled";
  CorpusKernels corpus = corpus_kernels();
  ASSERT_GE(corpus.cases.size(), 50u);
  std::string source = kernel_prelude();
  for (const Case& c : corpus.cases) source += c.kernel.source;
  StatusOr<std::string> ptx = compile_to_ptx(source, "corpus_kernels.cu");
  ASSERT_TRUE(ptx.ok()) << ptx.status().to_string();
  StatusOr<DeviceModule> module = (*driver)->load_ptx(*ptx);
  ASSERT_TRUE(module.ok()) << module.status().to_string();
  int exact = 0, tolerant = 0;
  for (const Case& c : corpus.cases) {
    // Device copies of every input; the output (for an in-place update, the operand's buffer).
    std::vector<DevicePointer> inputs;
    for (const Literal& input : c.inputs) {
      StatusOr<DevicePointer> pointer = (*driver)->allocate(input.size_bytes());
      ASSERT_TRUE(pointer.ok()) << pointer.status().to_string();
      ASSERT_TRUE((*driver)->copy_to_device(*pointer, input.untyped_data(), input.size_bytes()).ok());
      inputs.push_back(*pointer);
    }
    const bool in_place = c.opcode == Opcode::kDynamicUpdateSlice;
    StatusOr<DevicePointer> out = in_place ? StatusOr<DevicePointer>(inputs[0])
                                           : (*driver)->allocate(c.expected.size_bytes());
    ASSERT_TRUE(out.ok());
    long long threads = in_place ? c.inputs[1].element_count() : c.expected.element_count();
    std::vector<DevicePointer> values = inputs;  // in place: buffer, update, start indices
    if (!in_place) values.push_back(*out);
    std::vector<void*> arguments;
    for (DevicePointer& value : values) arguments.push_back(&value);
    arguments.push_back(&threads);
    Status launched = (*driver)->launch(*module, c.kernel.name, threads, arguments);
    if (launched.ok()) launched = (*driver)->synchronize();  // this kernel's failure, named
    ASSERT_TRUE(launched.ok()) << c.where << ": " << launched.to_string();
    Literal actual(c.expected.shape());
    ASSERT_TRUE((*driver)->copy_to_host(actual.untyped_data(), *out, actual.size_bytes()).ok());
    EXPECT_EQ(mismatch(actual, c.expected, c.tolerant), "") << c.where << "\n" << c.kernel.source;
    ++(c.tolerant ? tolerant : exact);
    for (DevicePointer pointer : inputs) {
      ASSERT_TRUE((*driver)->free(pointer).ok());
    }
    if (!in_place) {
      ASSERT_TRUE((*driver)->free(*out).ok());
    }
  }
  std::printf("CUDA kernels on %s: %zu corpus kernels agree with the evaluator (%d bit for bit, %d within 1e-5)\n",
              (*driver)->device_name().c_str(), corpus.cases.size(), exact, tolerant);
}

TEST(CudaGpuRun, WithoutAGpuOpenSaysWhy) {
  StatusOr<std::unique_ptr<Driver>> driver = Driver::open();
  if (driver.ok()) GTEST_SKIP() << "this machine has a GPU: " << (*driver)->device_name();
  EXPECT_FALSE(driver.status().message().empty());
  EXPECT_TRUE(driver.status().message().find("CUDA") != std::string::npos ||
              driver.status().message().find("GPU") != std::string::npos)
      << driver.status().message();
}

}  // namespace
}  // namespace insitu::cuda
