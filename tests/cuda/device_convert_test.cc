// stochastic-convert on the emulated device (emulated_device.h; the plan's source also goes
// through NVRTC where installed): the generated expression against the reference evaluator, for
// every operand width, with the values where its steps could go wrong written in.
#include <cmath>
#include <limits>

#include "emulated_device.h"

namespace insitu::cuda {
namespace {

using namespace testing;

TEST(CudaExecutor, StochasticConvertRoundsAsTheEvaluatorDoes) {
  EmulatedDevice device;
  StatusOr<OnDevice> on = compile_on(device, R"(
HloModule stochastic

ENTRY main {
  x = f32[64] parameter(0)
  r = u32[64] parameter(1)
  h = bf16[64] parameter(2)
  hr = u16[64] parameter(3)
  d = f64[64] parameter(4)
  dr = u64[64] parameter(5)
  a = s32[64] stochastic-convert(x, r)
  b = s8[64] stochastic-convert(h, hr)
  c = s64[64] stochastic-convert(d, dr)
  e = s16[64] stochastic-convert(x, r)
  ROOT t = (s32[64], s8[64], s64[64], s16[64]) tuple(a, b, c, e)
}
)");
  ASSERT_TRUE(on.ok()) << on.status().to_string();
  std::vector<Literal> arguments = random_arguments(*on->written, 13);
  const float specials[] = {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
                            -std::numeric_limits<float>::infinity(), 3e9f, -3e9f, -0.0f, 2.25f, -2.75f,
                            127.5f, -128.5f, -127.5f, 32767.5f, -32768.5f, 0.5f};
  auto x = arguments[0].data<float>();
  auto h = arguments[2].data<BFloat16>();
  auto d = arguments[4].data<double>();
  for (size_t i = 0; i < x.size(); ++i) {
    const float value = i < std::size(specials) ? specials[i] : x[i] * 1000.0f;
    x[i] = value;
    h[i] = BFloat16::from_float(value);
    d[i] = i < std::size(specials) ? static_cast<double>(value) * 4e9 : d[i] * 1e6;
  }
  auto r = arguments[1].data<uint32_t>();
  auto hr = arguments[3].data<uint16_t>();
  auto dr = arguments[5].data<uint64_t>();
  std::mt19937_64 bits(17);
  for (size_t i = 0; i < r.size(); ++i) {
    r[i] = static_cast<uint32_t>(bits());
    hr[i] = static_cast<uint16_t>(bits());
    dr[i] = bits();
  }
  StatusOr<BothResults> run = run_both(*on, arguments);
  ASSERT_TRUE(run.ok()) << run.status().to_string();
  EXPECT_EQ(differs(run->actual, run->expected), "");
  EXPECT_EQ(run->expected.element(0).data<int32_t>()[1], std::numeric_limits<int32_t>::max());
}

}  // namespace
}  // namespace insitu::cuda
