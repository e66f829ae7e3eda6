// bf16, f16 and the 8- and 16-bit integers on the emulated device, against the reference
// evaluator: narrow floats are stored in 16 bits and computed in float, rounded to nearest even
// at every op (ties, subnormals, overflow to infinity, NaN); narrow integers wrap at their width,
// shift by their own width, divide by XLA's rules, and saturate when converted from floats; an
// s8 x s8 -> s32 dot and a bf16 x bf16 -> f32 dot convert their operands first.
#include <bit>
#include <cmath>
#include <limits>

#include "emulated_device.h"
#include "insitu/support/float16.h"

namespace insitu::cuda {
namespace {

using namespace testing;

TEST(CudaNarrowTypes, NarrowFloatsRoundAsTheEvaluatorDoes) {
  EmulatedDevice device;
  StatusOr<OnDevice> on = compile_on(device, R"(
HloModule narrow_floats
ENTRY main {
  x = f32[12] parameter(0)
  y = f32[12] parameter(1)
  bx = bf16[12] convert(x)
  by = bf16[12] convert(y)
  bsum = bf16[12] add(bx, by)
  bprod = bf16[12] multiply(bx, by)
  bmax = bf16[12] maximum(bx, by)
  bint = s32[12] convert(bx)
  hx = f16[12] convert(x)
  hy = f16[12] convert(y)
  hsum = f16[12] add(hx, hy)
  hquot = f16[12] divide(hx, hy)
  hback = f32[12] convert(hquot)
  hint = s8[12] convert(hx)
  bw = bf16[3,4] reshape(bx)
  cv = f32[4,2] constant({{1.5, -2}, {0.25, 3}, {1e30, 7}, {-0.125, 1}})
  bv = bf16[4,2] convert(cv)
  bdot = f32[3,2] dot(bw, bv), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  bsign = bf16[12] sign(bx)
  habs = f16[12] abs(hy)
  less = pred[12] compare(bx, by), direction=LT
  bpick = bf16[12] select(less, bx, by)
  hclamp = f16[12] clamp(hy, hx, hsum)
  bits = s16[12] bitcast-convert(bx)
  hexp = f16[12] exponential(hy)
  ROOT out = (bf16[12], bf16[12], bf16[12], bf16[12], s32[12], f16[12], f16[12], f16[12], f32[12], s8[12], f32[3,2], bf16[12], f16[12], bf16[12], f16[12], s16[12], f16[12]) tuple(bx, bsum, bprod, bmax, bint, hx, hsum, hquot, hback, hint, bdot, bsign, habs, bpick, hclamp, bits, hexp)
}
)");
  ASSERT_TRUE(on.ok()) << on.status().to_string();
  std::vector<Literal> arguments = random_arguments(*on->written, 2);
  const float inf = std::numeric_limits<float>::infinity();
  // bf16 ties (1 + 2^-8 is halfway: to even 1; 1 + 3 * 2^-8 to 1 + 2^-6), f16's largest finite
  // and the first value that overflows, f16 subnormals and their ties, a NaN whose payload would
  // round over into the sign bit, infinities, -0.
  const float x[] = {1.0f + 0x1p-8f, 1.0f + 3 * 0x1p-8f, 65504.0f, 65520.0f, 0x1p-24f, 0x1.8p-24f,
                     0x1p-25f,       std::bit_cast<float>(0x7fffffffu), -inf, -0.0f, 3e9f,     -200.5f};
  const float y[] = {0x1p-9f, 1.0f, 1.0f, -1.0f, 0x1p-24f, 2.0f, 3.0f, 1.0f, 1.0f, 0.0f, 1.0f, 0.5f};
  std::copy(std::begin(x), std::end(x), arguments[0].data<float>().data());
  std::copy(std::begin(y), std::end(y), arguments[1].data<float>().data());
  StatusOr<BothResults> run = run_both(*on, arguments);
  ASSERT_TRUE(run.ok()) << run.status().to_string();
  const int64_t outputs = run->expected.shape().tuple_size();
  EXPECT_EQ(not_identical(run->actual, run->expected, outputs - 1), "");  // every bit, NaN's included
  // exp: the device's expf and the host's may differ by an ulp of float before rounding to f16.
  EXPECT_EQ(differs(run->actual.element(outputs - 1), run->expected.element(outputs - 1)), "");
}

TEST(CudaNarrowTypes, NarrowIntegersWrapShiftAndSaturateAsTheEvaluatorDoes) {
  EmulatedDevice device;
  StatusOr<OnDevice> on = compile_on(device, R"(
HloModule narrow_integers
ENTRY main {
  a = s8[10] parameter(0)
  b = s8[10] parameter(1)
  u = u16[10] parameter(2)
  f = f32[10] parameter(3)
  sum = s8[10] add(a, b)
  product = s8[10] multiply(a, b)
  quotient = s8[10] divide(a, b)
  rest = s8[10] remainder(a, b)
  left = s8[10] shift-left(a, b)
  logical = s8[10] shift-right-logical(a, b)
  arithmetic = s8[10] shift-right-arithmetic(a, b)
  square = u16[10] multiply(u, u)
  down = u16[10] shift-right-logical(u, u)
  saturated = s8[10] convert(f)
  unsigned_saturated = u16[10] convert(f)
  widened = s32[10] convert(a)
  m = s8[2,5] reshape(a)
  n = s8[5,2] reshape(b)
  dot = s32[2,2] dot(m, n), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT out = (s8[10], s8[10], s8[10], s8[10], s8[10], s8[10], s8[10], u16[10], u16[10], s8[10], u16[10], s32[10], s32[2,2]) tuple(sum, product, quotient, rest, left, logical, arithmetic, square, down, saturated, unsigned_saturated, widened, dot)
}
)");
  ASSERT_TRUE(on.ok()) << on.status().to_string();
  std::vector<Literal> arguments = random_arguments(*on->written, 3);
  const int8_t a[] = {127, -128, -128, 7, -7, -1, 100, -100, 5, 0};
  const int8_t b[] = {1, -1, 0, 0, 2, 7, 8, 3, 9, -3};  // overflow, MIN / -1, x / 0, shifts of 7, 8, 9
  const uint16_t u[] = {65535, 300, 1, 16, 17, 0, 256, 40000, 15, 2};
  const float f[] = {300.0f, -300.0f, std::nanf(""), 127.9f, -128.9f, 70000.0f, -1.0f, 0.5f, -0.5f, 65535.5f};
  std::copy(std::begin(a), std::end(a), arguments[0].data<int8_t>().data());
  std::copy(std::begin(b), std::end(b), arguments[1].data<int8_t>().data());
  std::copy(std::begin(u), std::end(u), arguments[2].data<uint16_t>().data());
  std::copy(std::begin(f), std::end(f), arguments[3].data<float>().data());
  StatusOr<BothResults> run = run_both(*on, arguments);
  ASSERT_TRUE(run.ok()) << run.status().to_string();
  EXPECT_EQ(not_identical(run->actual, run->expected), "");
}

TEST(CudaNarrowTypes, ADotWithAnAlgorithmIsRefusedNotComputedInAnotherPrecision) {
  // algorithm=dot_bf16_bf16_f32 rounds the f32 operands to bf16 first (the evaluator does):
  // the plain f32 GEMM would be a silent difference.
  EmulatedDevice device;
  StatusOr<OnDevice> on = compile_on(device, R"(
HloModule algorithm
ENTRY main {
  a = f32[4,8] parameter(0)
  b = f32[8,3] parameter(1)
  ROOT c = f32[4,3] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}, algorithm=dot_bf16_bf16_f32
}
)");
  ASSERT_FALSE(on.ok());
  EXPECT_NE(on.status().message().find("algorithm="), std::string::npos) << on.status().to_string();
}

}  // namespace
}  // namespace insitu::cuda
