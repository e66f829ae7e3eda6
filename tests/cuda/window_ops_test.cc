// Window ops on the emulated device against the reference evaluator. Convolutions in every form
// the evaluator takes: strides, negative and asymmetric padding, base (lhs) and window (rhs)
// dilation, window reversal, feature groups, batch groups, another dim_labels layout, and s8
// operands into an s32 result (converted first, summed in 64 bits). Select-and-scatter with
// overlapping windows, padding, ties and NaN.
#include <cmath>
#include <limits>

#include "emulated_device.h"

namespace insitu::cuda {
namespace {

using namespace testing;

TEST(CudaConvolution, EveryWindowFormMatchesTheEvaluator) {
  EmulatedDevice device;
  StatusOr<OnDevice> on = compile_on(device, R"(
HloModule convs
ENTRY main {
  x = f32[2,7,6,3] parameter(0)
  k = f32[3,2,3,4] parameter(1)
  g = f32[1,5,5,4] parameter(2)
  gk = f32[3,3,2,6] parameter(3)
  bx = f32[4,5,5,2] parameter(4)
  bk = f32[3,3,2,4] parameter(5)
  nx = f32[2,3,6,5] parameter(6)
  nk = f32[4,3,3,2] parameter(7)
  ix = s8[1,6,6,2] parameter(8)
  ik = s8[2,2,2,3] parameter(9)
  c1 = f32[2,6,2,4] convolution(x, k), window={size=3x2 stride=2x3 pad=1_0x-1_2 lhs_dilate=2x1 rhs_dilate=1x2 rhs_reversal=0x1}, dim_labels=b01f_01io->b01f
  c2 = f32[1,3,3,6] convolution(g, gk), window={size=3x3}, dim_labels=b01f_01io->b01f, feature_group_count=2
  c3 = f32[2,3,3,4] convolution(bx, bk), window={size=3x3}, dim_labels=b01f_01io->b01f, batch_group_count=2
  c4 = f32[2,4,6,4] convolution(nx, nk), window={size=3x2 pad=1_1x0_0}, dim_labels=bf01_oi01->bf01
  c5 = s32[1,5,5,3] convolution(ix, ik), window={size=2x2}, dim_labels=b01f_01io->b01f
  ROOT out = (f32[2,6,2,4], f32[1,3,3,6], f32[2,3,3,4], f32[2,4,6,4], s32[1,5,5,3]) tuple(c1, c2, c3, c4, c5)
}
)");
  ASSERT_TRUE(on.ok()) << on.status().to_string();
  StatusOr<BothResults> run = run_both(*on, random_arguments(*on->written, 21));
  ASSERT_TRUE(run.ok()) << run.status().to_string();
  for (int64_t k = 0; k < run->expected.shape().tuple_size(); ++k)
    EXPECT_EQ(differs(run->actual.element(k), run->expected.element(k)), "") << "c" << k + 1;
  EXPECT_TRUE(run->actual.element(4) == run->expected.element(4)) << "the integer convolution, exactly";
}

// Convolutions with a GEMM form run as one: the input's patches and the kernel packed into
// scratch, then a GEMM; where padding is, the outputs whose window touches it are computed again
// by the direct kernel, which skips it as the evaluator does (an infinite weight there would
// otherwise make 0 * inf = NaN). SAME padding, a strided patchify window with window dilation
// and reversal, negative padding on one side, a 1x1, and other operand layouts.
TEST(CudaConvolution, ConvolutionsWithAGemmFormMatchTheEvaluator) {
  EmulatedDevice device;
  StatusOr<OnDevice> on = compile_on(device, R"(
HloModule gemm_convs
ENTRY main {
  x = f32[2,10,10,3] parameter(0)
  k = f32[3,3,3,4] parameter(1)
  p = f32[1,8,8,2] parameter(2)
  pk = f32[2,2,2,5] parameter(3)
  n = f32[2,3,7,7] parameter(4)
  nk = f32[4,3,2,2] parameter(5)
  k1 = f32[1,1,3,4] parameter(6)
  same = f32[2,10,10,4] convolution(x, k), window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f
  patchify = f32[1,3,4,5] convolution(p, pk), window={size=2x2 stride=2x2 rhs_dilate=2x1 rhs_reversal=1x0}, dim_labels=b01f_01io->b01f
  cropped = f32[2,6,6,4] convolution(n, nk), window={size=2x2 pad=-1_1x0_0}, dim_labels=bf01_oi01->b01f
  one = f32[2,10,10,4] convolution(x, k1), window={size=1x1}, dim_labels=b01f_01io->b01f
  ROOT out = (f32[2,10,10,4], f32[1,3,4,5], f32[2,6,6,4], f32[2,10,10,4]) tuple(same, patchify, cropped, one)
}
)");
  ASSERT_TRUE(on.ok()) << on.status().to_string();
  const std::string plan = describe(on->executable->plan());
  EXPECT_NE(plan.find("%same: gemm f32 batch 1 m 200 n 4 k 27, after"), std::string::npos) << plan;
  EXPECT_NE(plan.find("then k0_border (800 threads)"), std::string::npos) << plan;
  EXPECT_NE(plan.find("%patchify: gemm f32 batch 1 m 12 n 5 k 8, after k3_patches (96 threads, 384 bytes) and "
                      "k3_weights (40 threads, 160 bytes)\n"),  // no padding: no border
            std::string::npos)
      << plan;
  EXPECT_NE(plan.find("%cropped: gemm f32 batch 1 m 72 n 4 k 12, after"), std::string::npos) << plan;
  EXPECT_NE(plan.find("%one: gemm f32 batch 1 m 200 n 4 k 3, after"), std::string::npos) << plan;
  std::vector<Literal> arguments = random_arguments(*on->written, 22);
  for (Literal& argument : arguments)  // finite values, then one infinite weight on the padding
    for (float& v : argument.data<float>()) v = std::isfinite(v) ? v : 1.5f;
  arguments[1].data<float>()[0] = std::numeric_limits<float>::infinity();  // k[0, 0, 0, 0]
  StatusOr<BothResults> run = run_both(*on, arguments);
  ASSERT_TRUE(run.ok()) << run.status().to_string();
  for (int64_t c = 0; c < run->expected.shape().tuple_size(); ++c)
    EXPECT_EQ(differs(run->actual.element(c), run->expected.element(c)), "") << "output " << c;
  EXPECT_TRUE(std::isfinite(run->expected.element(0).data<float>()[0]));  // the window's corner is padding there
}

TEST(CudaConvolution, AWindowThatDoesNotFitTheKernelIsALocatedError) {
  EmulatedDevice device;
  StatusOr<OnDevice> on = compile_on(device, R"(
HloModule bad
ENTRY main {
  x = f32[2,3,6,5] parameter(0)
  k = f32[4,3,2,2] parameter(1)
  ROOT c = f32[2,4,6,4] convolution(x, k), window={size=3x2 pad=1_1x0_0}, dim_labels=bf01_oi01->bf01
}
)");
  ASSERT_FALSE(on.ok());
  EXPECT_NE(on.status().to_string().find("kernel's size"), std::string::npos) << on.status().to_string();
}

// Max pooling's gradient with windows that overlap (stride 1 and 2 under size 3), padding on
// both sides, ties (GE keeps the first of equal values) and a NaN (GE is false against it, so a
// window that reaches a NaN picks it); scatter adds into a non-zero init, in window order.
TEST(CudaSelectAndScatter, OverlappingPaddedWindowsPickAndCombineAsTheEvaluatorDoes) {
  EmulatedDevice device;
  StatusOr<OnDevice> on = compile_on(device, R"(
HloModule pool_grad
ge {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = pred[] compare(a, b), direction=GE
}
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY main {
  x = f32[5,7] parameter(0)
  g = f32[5,4] parameter(1)
  init = f32[] constant(0.5)
  ROOT y = f32[5,7] select-and-scatter(x, g, init), window={size=3x3 stride=1x2 pad=1_1x1_1}, select=ge, scatter=add
}
)");
  ASSERT_TRUE(on.ok()) << on.status().to_string();
  std::vector<Literal> arguments = random_arguments(*on->written, 5);
  std::span<float> x = arguments[0].data<float>();
  for (int64_t k = 0; k < 35; ++k) x[k] = static_cast<float>((k * 7) % 5);  // many ties
  x[17] = std::numeric_limits<float>::quiet_NaN();
  for (float& value : arguments[1].data<float>()) value = std::isfinite(value) ? value : 1.0f;
  StatusOr<BothResults> run = run_both(*on, arguments);
  ASSERT_TRUE(run.ok()) << run.status().to_string();
  EXPECT_EQ(not_identical(run->actual, run->expected), "");
}

}  // namespace
}  // namespace insitu::cuda
