// The CUDA plan of optimized modules: a dot's GEMM call computes the dot (a naive row-major GEMM
// run from the call's fields, and a column-major one from the cuBLAS form of it, against the
// evaluator), and over the JAX corpus every module
// either plans fully or stops at a located error naming the op with no CUDA form yet.
#include "insitu/cuda/device_plan.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <fstream>
#include <random>
#include <sstream>

#include "insitu/cuda/codegen.h"
#include "insitu/evaluator/evaluator.h"
#include "insitu/ir/module.h"
#include "insitu/ir/parser.h"
#include "insitu/passes/explain.h"
#include "insitu/passes/fusion.h"
#include "insitu/passes/optimize.h"
#include "insitu/support/str.h"

namespace insitu::cuda {
namespace {

namespace fs = std::filesystem;

// C = op(A) op(B) from the call's fields alone, as cuBLAS would be asked (row-major), once per
// call (gemm_offsets), into `outputs` elements.
std::vector<double> run_gemm(const GemmCall& g, const std::vector<double>& a, const std::vector<double>& b,
                             int64_t outputs) {
  std::vector<double> c(static_cast<size_t>(outputs));
  for (const GemmOffsets& o : gemm_offsets(g))
    for (int64_t s = 0; s < g.batch; ++s)
      for (int64_t i = 0; i < g.m; ++i)
        for (int64_t j = 0; j < g.n; ++j) {
          double sum = 0;
          for (int64_t p = 0; p < g.k; ++p) {
            const double x = g.transpose_a ? a.at(o.a + s * g.stride_a + p * g.lda + i)
                                           : a.at(o.a + s * g.stride_a + i * g.lda + p);
            const double y = g.transpose_b ? b.at(o.b + s * g.stride_b + j * g.ldb + p)
                                           : b.at(o.b + s * g.stride_b + p * g.ldb + j);
            sum += x * y;
          }
          c.at(o.c + s * g.stride_c + i * g.ldc + j) = sum;
        }
  return c;
}

// What cublas<S|D>gemmStridedBatched computes from the call's fields, column-major, once per
// call at its offsets: out[j * ld_out + i] = sum_p op(first)(i, p) * op(second)(p, j), first =
// B's buffer, second = A's.
std::vector<double> run_cublas(const CublasGemm& g, const std::vector<GemmOffsets>& calls, const std::vector<double>& a,
                               const std::vector<double>& b, int64_t outputs) {
  std::vector<double> c(static_cast<size_t>(outputs));
  for (const GemmOffsets& o : calls)
    for (int64_t s = 0; s < g.batch; ++s)
      for (int64_t i = 0; i < g.m; ++i)
        for (int64_t j = 0; j < g.n; ++j) {
          double sum = 0;
          for (int64_t p = 0; p < g.k; ++p) {
            const double x = g.transpose_first ? b.at(o.b + s * g.stride_first + i * g.ld_first + p)
                                               : b.at(o.b + s * g.stride_first + p * g.ld_first + i);
            const double y = g.transpose_second ? a.at(o.a + s * g.stride_second + p * g.ld_second + j)
                                                : a.at(o.a + s * g.stride_second + j * g.ld_second + p);
            sum += x * y;
          }
          c.at(o.c + s * g.stride_out + j * g.ld_out + i) = sum;
        }
  return c;
}

// What cublas<S|D>gemvStridedBatched computes from cublas_gemv's fields, once per call at its
// offsets: y[i] = sum_p op(matrix)(i, p) * x[p * incx], matrix = B's buffer (column-major,
// rows x cols as stored), x = A's, y = C's.
std::vector<double> run_cublas_gemv(const CublasGemv& v, const std::vector<GemmOffsets>& calls,
                                    const std::vector<double>& a, const std::vector<double>& b, int64_t outputs) {
  std::vector<double> y(static_cast<size_t>(outputs));
  const int64_t length = v.transpose ? v.cols : v.rows, inner = v.transpose ? v.rows : v.cols;
  for (const GemmOffsets& o : calls)
    for (int64_t s = 0; s < v.batch; ++s)
      for (int64_t i = 0; i < length; ++i) {
        double sum = 0;
        for (int64_t p = 0; p < inner; ++p) {
          const int64_t at = v.transpose ? i * v.ld + p : p * v.ld + i;  // op(matrix)(i, p)
          sum += b.at(o.b + s * v.stride_matrix + at) * a.at(o.a + s * v.stride_x + p * v.incx);
        }
        y.at(o.c + s * v.stride_y + i) = sum;
      }
  return y;
}

TEST(CudaPlan, GemmCallsComputeTheDot) {
  struct Case {
    const char* lhs;
    const char* rhs;
    const char* out;
    const char* numbers;
  };
  const Case cases[] = {
      {"f32[5,7]", "f32[7,3]", "f32[5,3]", "lhs_contracting_dims={1}, rhs_contracting_dims={0}"},  // A B
      {"f32[7,5]", "f32[7,3]", "f32[5,3]", "lhs_contracting_dims={0}, rhs_contracting_dims={0}"},  // A^T B
      {"f32[5,7]", "f32[3,7]", "f32[5,3]", "lhs_contracting_dims={1}, rhs_contracting_dims={1}"},  // A B^T
      {"f32[7,5]", "f32[3,7]", "f32[5,3]", "lhs_contracting_dims={0}, rhs_contracting_dims={1}"},  // A^T B^T
      {"f32[7]", "f32[7,3]", "f32[3]", "lhs_contracting_dims={0}, rhs_contracting_dims={0}"},      // vector x matrix
      {"f32[5,7]", "f32[7]", "f32[5]", "lhs_contracting_dims={1}, rhs_contracting_dims={0}"},      // matrix x vector
      {"f32[7,1]", "f32[3,7]", "f32[1,3]", "lhs_contracting_dims={0}, rhs_contracting_dims={1}"},  // one row
      // one row per batch, read down a column of A (its batch dimension last): A^T with lda 3
      {"f32[7,3]", "f32[3,7,4]", "f32[3,4]",
       "lhs_batch_dims={1}, lhs_contracting_dims={0}, rhs_batch_dims={0}, rhs_contracting_dims={1}"},
      // attention: scores (q . k per head) and values (p . v per head)
      {"f32[4,6]", "f32[4,9,6]", "f32[4,9]",
       "lhs_batch_dims={0}, lhs_contracting_dims={1}, rhs_batch_dims={0}, rhs_contracting_dims={2}"},
      {"f32[4,9]", "f32[4,9,6]", "f32[4,6]",
       "lhs_batch_dims={0}, lhs_contracting_dims={1}, rhs_batch_dims={0}, rhs_contracting_dims={1}"},
      {"f64[2,3,5,7]", "f64[2,3,7,4]", "f64[2,3,5,4]",
       "lhs_batch_dims={0,1}, lhs_contracting_dims={3}, rhs_batch_dims={0,1}, rhs_contracting_dims={2}"},
      // batch dimensions that do not lead ([B, T, H, D] attention): one call per B, batched over
      // H; scores, values, and the gradients' shapes
      {"f32[2,5,3,4]", "f32[2,6,3,4]", "f32[2,3,5,6]",
       "lhs_batch_dims={0,2}, lhs_contracting_dims={3}, rhs_batch_dims={0,2}, rhs_contracting_dims={3}"},
      {"f32[2,3,5,6]", "f32[2,6,3,4]", "f32[2,3,5,4]",
       "lhs_batch_dims={0,1}, lhs_contracting_dims={3}, rhs_batch_dims={0,2}, rhs_contracting_dims={1}"},
      {"f32[2,3,5,6]", "f32[2,5,3,4]", "f32[2,3,6,4]",
       "lhs_batch_dims={0,1}, lhs_contracting_dims={2}, rhs_batch_dims={0,2}, rhs_contracting_dims={1}"},
      // a batch dimension between an operand's contracting and free ones; batch dimensions
      // listed out of order in one operand, one of extent 1
      {"f32[3,5,7]", "f32[7,3,4]", "f32[3,5,4]",
       "lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={1}, rhs_contracting_dims={0}"},
      {"f32[3,1,5,7]", "f32[1,3,7,4]", "f32[3,1,5,4]",
       "lhs_batch_dims={0,1}, lhs_contracting_dims={3}, rhs_batch_dims={1,0}, rhs_contracting_dims={2}"},
      // contracting dimensions side by side are one: a weight gradient over [B, T, D] and
      // [B, T, F], and the same block last in both operands
      {"f32[2,3,4]", "f32[2,3,5]", "f32[4,5]", "lhs_contracting_dims={0,1}, rhs_contracting_dims={0,1}"},
      {"f32[4,2,3]", "f32[5,2,3]", "f32[4,5]", "lhs_contracting_dims={1,2}, rhs_contracting_dims={1,2}"},
  };
  std::mt19937 rng(9);
  std::uniform_real_distribution<double> uniform(-2, 2);
  int gemvs = 0;
  for (const Case& c : cases) {
    const std::string text = str_cat("HloModule d\nENTRY e {\n  a = ", c.lhs, " parameter(0)\n  b = ", c.rhs,
                                     " parameter(1)\n  ROOT d = ", c.out, " dot(a, b), ", c.numbers, "\n}\n");
    StatusOr<std::unique_ptr<Module>> module = parse_module(text);
    ASSERT_TRUE(module.ok()) << module.status().to_string();
    const Instruction& dot = *(*module)->entry()->root();
    StatusOr<GemmCall> call = plan_gemm(dot);
    ASSERT_TRUE(call.ok()) << text << call.status().to_string();
    std::vector<Literal> inputs;
    std::vector<std::vector<double>> values;
    for (int i = 0; i < 2; ++i) {
      inputs.emplace_back(dot.operand(i)->shape());
      values.emplace_back();
      for (int64_t e = 0; e < inputs.back().element_count(); ++e) {
        const double v = uniform(rng);
        values.back().push_back(dot.shape().element_type() == PrimitiveType::kF32 ? static_cast<float>(v) : v);
        if (dot.shape().element_type() == PrimitiveType::kF32) inputs.back().data<float>()[e] = static_cast<float>(v);
        else inputs.back().data<double>()[e] = v;
      }
    }
    const Literal* pointers[] = {&inputs[0], &inputs[1]};
    StatusOr<Literal> expected = evaluate_computation(*(*module)->entry(), pointers);
    ASSERT_TRUE(expected.ok()) << expected.status().to_string();
    const std::vector<double> actual = run_gemm(*call, values[0], values[1], expected->element_count());
    ASSERT_EQ(static_cast<int64_t>(actual.size()), expected->element_count()) << text;
    for (int64_t e = 0; e < expected->element_count(); ++e)
      EXPECT_NEAR(actual[e], expected->get_double(e), 1e-4) << text << " element " << e;
    // The same call as cuBLAS is asked it (column-major, operands swapped).
    const std::vector<double> library =
        run_cublas(cublas_gemm(*call), gemm_offsets(*call), values[0], values[1], expected->element_count());
    ASSERT_EQ(static_cast<int64_t>(library.size()), expected->element_count()) << text;
    for (int64_t e = 0; e < expected->element_count(); ++e)
      EXPECT_NEAR(library[e], expected->get_double(e), 1e-4) << text << " element " << e << " (cuBLAS form)";
    // One row in A (a decode step's attention): also as cuBLAS's GEMV.
    const std::optional<CublasGemv> gemv = cublas_gemv(*call);
    EXPECT_EQ(gemv.has_value(), call->m == 1) << text;
    if (!gemv) continue;
    ++gemvs;
    const std::vector<double> product =
        run_cublas_gemv(*gemv, gemm_offsets(*call), values[0], values[1], expected->element_count());
    for (int64_t e = 0; e < expected->element_count(); ++e)
      EXPECT_NEAR(product[e], expected->get_double(e), 1e-4) << text << " element " << e << " (cuBLAS GEMV form)";
  }
  EXPECT_GE(gemvs, 3);
}

TEST(CudaPlan, ContractingDimensionsPairedInAnotherOrderHaveNoGemmForm) {
  StatusOr<std::unique_ptr<Module>> module = parse_module(R"(HloModule d
ENTRY e {
  a = f32[2,3,4] parameter(0)
  b = f32[3,2,5] parameter(1)
  ROOT d = f32[4,5] dot(a, b), lhs_contracting_dims={0,1}, rhs_contracting_dims={1,0}
}
)");
  ASSERT_TRUE(module.ok());
  StatusOr<GemmCall> call = plan_gemm(*(*module)->entry()->root());
  ASSERT_FALSE(call.ok());
  EXPECT_NE(call.status().message().find("not side by side, in the same order in both operands"), std::string::npos)
      << call.status().to_string();
}

TEST(CudaPlan, WhatHasNoGemmFormIsALocatedError) {
  StatusOr<std::unique_ptr<Module>> module = parse_module(R"(HloModule d
ENTRY e {
  a = f32[3,5,4] parameter(0)
  b = f32[5,2] parameter(1)
  ROOT d = f32[3,4,2] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}
)");
  ASSERT_TRUE(module.ok());
  StatusOr<GemmCall> call = plan_gemm(*(*module)->entry()->root());
  ASSERT_FALSE(call.ok());
  EXPECT_NE(call.status().message().find(
                "no CUDA kernel for %d (dot): an operand whose free dimensions a batch or contracting dimension splits"),
            std::string::npos)
      << call.status().to_string();
  EXPECT_TRUE(call.status().location().valid());
}

// A dense layer on 3-D activations: free dimensions side by side are one GEMM dimension of their
// product, before the contracting dimension (no transpose) or after it (transposed).
TEST(CudaPlan, SideBySideFreeDimensionsAreOneGemmDimension) {
  StatusOr<std::unique_ptr<Module>> module = parse_module(R"(HloModule d
ENTRY e {
  a = f32[3,4,5] parameter(0)
  b = f32[5,2,6] parameter(1)
  at = f32[5,3,4] parameter(2)
  d = f32[3,4,2,6] dot(a, b), lhs_contracting_dims={2}, rhs_contracting_dims={0}
  ROOT t = f32[3,4,2,6] dot(at, b), lhs_contracting_dims={0}, rhs_contracting_dims={0}
}
)");
  ASSERT_TRUE(module.ok());
  int gemms = 0;
  for (const Instruction* dot : (*module)->entry()->instructions()) {
    if (dot->opcode() != Opcode::kDot) continue;
    StatusOr<GemmCall> call = plan_gemm(*dot);
    ASSERT_TRUE(call.ok()) << call.status().to_string();
    EXPECT_EQ(call->m, 12) << dot->name();
    EXPECT_EQ(call->n, 12) << dot->name();
    EXPECT_EQ(call->k, 5) << dot->name();
    EXPECT_EQ(call->transpose_a, dot->name() == "t") << dot->name();
    EXPECT_FALSE(call->transpose_b) << dot->name();
    ++gemms;
  }
  EXPECT_EQ(gemms, 2);
}

// Every corpus module, optimized by insitu: planned in full (its kernels compile for sm_90), or
// stopped at a located error naming the first op without a CUDA form. A planned module's memory
// is the buffer assignment explain --device cuda reports: the same allocations, the same peak.
TEST(CudaPlan, JaxCorpusPlansOrSaysWhatIsMissing) {
  int planned = 0, stopped = 0;
  std::map<std::string, int> missing;  // op -> modules stopped there
  for (const auto& entry : fs::directory_iterator(fs::path(INSITU_SOURCE_DIR) / "tests" / "data" / "jax")) {
    std::ifstream in(entry.path() / "before_optimizations.hlo");
    std::stringstream text;
    text << in.rdbuf();
    StatusOr<std::unique_ptr<Module>> parsed = parse_module(text.str());
    ASSERT_TRUE(parsed.ok()) << entry.path();
    StatusOr<OptimizedModule> optimized = optimize_module(std::move(parsed).value());
    if (!optimized.ok()) continue;
    ASSERT_TRUE(retarget_for_cuda(*optimized).ok()) << entry.path();  // as Executable::create_on_cuda does
    StatusOr<DevicePlan> plan = plan_for_cuda(*optimized->module, *optimized->buffers);
    if (!plan.ok()) {
      ++stopped;
      const std::string& message = plan.status().message();
      EXPECT_EQ(message.find("no CUDA kernel for %"), 0u) << entry.path() << ": " << message;
      // Located in the text, a fused op's refusal too (a fusion's parameter was not).
      EXPECT_TRUE(plan.status().location().valid()) << entry.path() << ": " << message;
      const size_t open = message.find(" ("), close = message.find(')');
      ++missing[message.substr(open + 2, close - open - 2)];
      continue;
    }
    ++planned;
    const Explanation explained = explain_module(*optimized);
    ASSERT_TRUE(explained.peak_memory_bytes.has_value()) << entry.path();
    EXPECT_EQ(plan->planned_peak_bytes, *explained.peak_memory_bytes) << entry.path();
    ASSERT_EQ(plan->allocations.size(), optimized->buffers->allocations().size()) << entry.path();
    for (size_t a = 0; a < plan->allocations.size(); ++a)
      EXPECT_EQ(plan->allocations[a].size, optimized->buffers->allocations()[a].size) << entry.path() << " allocation " << a;
    // A plan made on its own assignment (as CudaExecutable::create makes it) is the same plan.
    StatusOr<DevicePlan> again = plan_for_cuda(*optimized->module);
    ASSERT_TRUE(again.ok()) << entry.path() << ": " << again.status().to_string();
    EXPECT_EQ(again->planned_peak_bytes, plan->planned_peak_bytes) << entry.path();
    EXPECT_EQ(describe(*again), describe(*plan)) << entry.path();
    if (!cuda_available()) continue;
    StatusOr<std::string> ptx = compile_to_ptx(plan->source, entry.path().filename().string() + ".cu");
    EXPECT_TRUE(ptx.ok()) << entry.path() << ": " << ptx.status().to_string();
  }
  std::string summary;
  for (const auto& [op, count] : missing) summary += str_cat(" ", op, " ", count, ";");
  std::printf("CUDA plan of the JAX corpus: %d modules planned in full, %d stopped at an op without a CUDA form:%s\n",
              planned, stopped, summary.c_str());
  EXPECT_GE(planned, 59);
}

}  // namespace
}  // namespace insitu::cuda
