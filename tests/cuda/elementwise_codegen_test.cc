// CUDA C++ for elementwise fusions, compiled through NVRTC for sm_90 (no GPU needed): every
// elementwise loop fusion of the JAX corpus's optimized modules generates and compiles; what
// the generator does not handle is a located "no CUDA kernel" error naming the op.
#include "test_util.h"
#include "insitu/cuda/codegen.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "insitu/ir/computation.h"
#include "insitu/ir/module.h"
#include "insitu/ir/parser.h"
#include "insitu/support/str.h"

namespace insitu::cuda {
namespace {

namespace fs = std::filesystem;


const Instruction& root(const Module& module) { return *module.entry()->root(); }

constexpr const char* kGelu = R"(HloModule gelu

fused {
  x = f32[1024] parameter(0)
  half = f32[] constant(0.5)
  h = f32[1024] broadcast(half), dimensions={}
  scale = f32[] parameter(1)
  s = f32[1024] broadcast(scale), dimensions={}
  xs = f32[1024] multiply(x, s)
  t = f32[1024] tanh(xs)
  one = f32[] constant(1)
  o = f32[1024] broadcast(one), dimensions={}
  u = f32[1024] add(t, o)
  hx = f32[1024] multiply(h, x)
  big = pred[1024] compare(x, o), direction=GT
  y = f32[1024] multiply(hx, u)
  ROOT r = f32[1024] select(big, x, y)
}

ENTRY e {
  a = f32[1024] parameter(0)
  k = f32[] parameter(1)
  ROOT f = f32[1024] fusion(a, k), kind=kLoop, calls=fused
}
)";

TEST(CudaCodegen, ElementwiseFusionBecomesOneKernel) {
  std::unique_ptr<Module> module = parse_text(kGelu);
  ASSERT_NE(module, nullptr);
  StatusOr<GeneratedKernel> kernel = generate_elementwise_kernel(root(*module), "gelu_kernel");
  ASSERT_TRUE(kernel.ok()) << kernel.status().to_string();
  EXPECT_NE(kernel->source.find("extern \"C\" __global__ void gelu_kernel(const float* __restrict__ p0, "
                                "const float* __restrict__ p1, float* __restrict__ out, long long n)"),
            std::string::npos)
      << kernel->source;
  EXPECT_NE(kernel->source.find("p1[0]"), std::string::npos);  // the scalar parameter, read once per thread
  EXPECT_NE(kernel->source.find("tanhf("), std::string::npos);
  EXPECT_NE(kernel->source.find("0x1p-1f"), std::string::npos);  // 0.5 exactly
  if (!cuda_available()) GTEST_SKIP() << "built without NVRTC: the source was generated, not compiled";
  StatusOr<std::string> ptx = compile_to_ptx(kernel_prelude() + kernel->source, "gelu.cu");
  ASSERT_TRUE(ptx.ok()) << ptx.status().to_string();
  EXPECT_NE(ptx->find(".entry gelu_kernel"), std::string::npos);
  EXPECT_NE(ptx->find(".target sm_90"), std::string::npos);
}

TEST(CudaCodegen, WhatIsNotGeneratedIsALocatedErrorNamingTheOp) {
  std::unique_ptr<Module> module = parse_text(R"(HloModule t

fused {
  x = f32[4,8] parameter(0)
  ROOT t = f32[8,4] transpose(x), dimensions={1,0}
}

ENTRY e {
  a = f32[4,8] parameter(0)
  ROOT f = f32[8,4] fusion(a), kind=kLoop, calls=fused
}
)");
  ASSERT_NE(module, nullptr);
  StatusOr<GeneratedKernel> kernel = generate_elementwise_kernel(root(*module), "k");
  ASSERT_FALSE(kernel.ok());
  EXPECT_NE(kernel.status().message().find(
                "no CUDA kernel for %t (transpose): it reads a fusion operand of shape f32[4,8], not the fusion's f32[8,4]"),
            std::string::npos)
      << kernel.status().to_string();
  EXPECT_EQ(kernel.status().location().line, 5);  // the transpose's, not its parameter's
}

TEST(CudaCodegen, NvrtcErrorsCarryTheLog) {
  if (!cuda_available()) GTEST_SKIP() << "built without NVRTC";
  StatusOr<std::string> ptx = compile_to_ptx("__global__ void broken( { }", "broken.cu");
  ASSERT_FALSE(ptx.ok());
  EXPECT_NE(ptx.status().message().find("NVRTC could not compile broken.cu for compute_90"), std::string::npos)
      << ptx.status().to_string();
}

// Every kLoop fusion of the JAX corpus's optimized modules that is elementwise generates, and
// each module's kernels compile together for sm_90.
TEST(CudaCodegen, JaxCorpusElementwiseFusionsCompileForSm90) {
  int generated = 0, refused = 0, modules = 0;
  for (const auto& entry : fs::directory_iterator(fs::path(INSITU_SOURCE_DIR) / "tests" / "data" / "jax")) {
    std::ifstream in(entry.path() / "after_optimizations.hlo");
    std::stringstream text;
    text << in.rdbuf();
    std::unique_ptr<Module> module = parse_text(text.str());
    ASSERT_NE(module, nullptr) << entry.path();
    std::string source;
    int here = 0;
    for (const Computation* computation : module->computations())
      for (const Instruction* instruction : computation->instructions()) {
        if (instruction->opcode() != Opcode::kFusion || instruction->fusion_kind != "kLoop") continue;
        StatusOr<GeneratedKernel> kernel = generate_elementwise_kernel(*instruction, str_cat("k", here));
        if (!kernel.ok()) {
          ++refused;
          EXPECT_NE(kernel.status().message().find("no CUDA kernel for %"), std::string::npos)
              << kernel.status().to_string();
          continue;
        }
        source += kernel->source;
        ++here;
      }
    generated += here;
    if (here == 0 || !cuda_available()) continue;
    ++modules;
    StatusOr<std::string> ptx = compile_to_ptx(kernel_prelude() + source, entry.path().filename().string() + ".cu");
    ASSERT_TRUE(ptx.ok()) << entry.path() << ": " << ptx.status().to_string() << "\n" << source;
    EXPECT_NE(ptx->find(".entry k0"), std::string::npos);
  }
  EXPECT_GE(generated, 20) << generated << " generated, " << refused << " refused";
  RecordProperty("generated", generated);
  RecordProperty("refused", refused);
  std::printf("CUDA codegen over the JAX corpus: %d elementwise fusions generated (%d modules compiled), %d refused\n",
              generated, modules, refused);
}

}  // namespace
}  // namespace insitu::cuda
