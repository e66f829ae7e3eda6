// float_functions.h: the f32 exp, expm1, log, tanh, logistic and erf that the evaluator and the
// runtime share, measured against the C library in double precision (correct to far below
// an f32 ulp) over a sweep of the whole float line, and at the special values.
#include "insitu/evaluator/float_functions.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

namespace insitu {
namespace {

// |got - exact| in units of the last place of the f32 nearest to `exact` (subnormal spacing
// below the normal range); infinities must match exactly.
double ulp_error(float got, double exact) {
  if (std::isnan(exact)) return std::isnan(got) ? 0 : 1e9;
  const double max_float = std::numeric_limits<float>::max();
  if (std::fabs(exact) > max_float * (1 + std::ldexp(1.0, -25))) return std::isinf(got) && (got > 0) == (exact > 0) ? 0 : 1e9;
  if (std::isinf(got)) return 1e9;
  int exponent = 0;
  std::frexp(exact, &exponent);  // exact = m 2^exponent, m in [0.5, 1)
  const double ulp = std::ldexp(1.0, std::max(exponent - 24, -149));
  return std::fabs(static_cast<double>(got) - exact) / ulp;
}

struct Measured {
  double worst = 0;
  float at = 0;
};

// Every 251st bit pattern over both signs (about 17 million values), and all the specials.
template <typename Ours, typename Exact>
Measured sweep(Ours ours, Exact exact) {
  Measured measured;
  auto check = [&](float x) {
    const double error = ulp_error(ours(x), exact(static_cast<double>(x)));
    if (error > measured.worst) measured = {error, x};
  };
  for (uint64_t bits = 0; bits < (uint64_t{1} << 32); bits += 251) check(std::bit_cast<float>(static_cast<uint32_t>(bits)));
  for (float x : {0.0f, -0.0f, 1.0f, -1.0f, std::numeric_limits<float>::min(), std::numeric_limits<float>::denorm_min(),
                  std::numeric_limits<float>::max(), -std::numeric_limits<float>::max(), 88.72f, 88.73f, -87.33f,
                  -103.97f, -104.0f, 1e-30f, -1e-30f, 0.3465f, 0.3467f, -0.3466f, 9.0f, -9.0f, 8.99f})
    check(x);
  return measured;
}

TEST(FloatFunctions, ExpIsWithinOneUlp) {
  const Measured m = sweep([](float x) { return float_functions::exp(x); }, [](double x) { return std::exp(x); });
  EXPECT_LE(m.worst, 1.0) << "at " << m.at;
}

TEST(FloatFunctions, Expm1IsWithinTwoUlps) {
  const Measured m = sweep([](float x) { return float_functions::expm1(x); }, [](double x) { return std::expm1(x); });
  EXPECT_LE(m.worst, 2.0) << "at " << m.at;
}

TEST(FloatFunctions, LogIsWithinOneUlp) {
  const Measured m = sweep([](float x) { return float_functions::log(x); }, [](double x) { return std::log(x); });
  EXPECT_LE(m.worst, 1.0) << "at " << m.at;
}

TEST(FloatFunctions, TanhIsWithinThreeUlps) {
  const Measured m = sweep([](float x) { return float_functions::tanh(x); }, [](double x) { return std::tanh(x); });
  EXPECT_LE(m.worst, 3.0) << "at " << m.at;
}

TEST(FloatFunctions, LogisticIsWithinThreeUlps) {
  const Measured m = sweep([](float x) { return float_functions::logistic(x); },
                           [](double x) { return 1.0 / (1.0 + std::exp(-x)); });
  EXPECT_LE(m.worst, 3.0) << "at " << m.at;
}

TEST(FloatFunctions, ErfIsWithinTwoUlps) {
  const Measured m = sweep([](float x) { return float_functions::erf(x); }, [](double x) { return std::erf(x); });
  EXPECT_LE(m.worst, 2.0) << "at " << m.at;
  // every float of [0.5, 4), where both of erf's pieces and their joint at 1 lie
  Measured dense;
  for (uint32_t bits = std::bit_cast<uint32_t>(0.5f); bits < std::bit_cast<uint32_t>(4.0f); ++bits) {
    const float x = std::bit_cast<float>(bits);
    const double error = ulp_error(float_functions::erf(x), std::erf(static_cast<double>(x)));
    if (error > dense.worst) dense = {error, x};
  }
  EXPECT_LE(dense.worst, 2.0) << "at " << dense.at;
}

TEST(FloatFunctions, SpecialValuesFollowC) {
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  EXPECT_EQ(float_functions::exp(-inf), 0.0f);
  EXPECT_EQ(float_functions::exp(inf), inf);
  EXPECT_EQ(float_functions::exp(0.0f), 1.0f);
  EXPECT_EQ(float_functions::exp(-0.0f), 1.0f);
  EXPECT_EQ(float_functions::exp(89.0f), inf);
  EXPECT_EQ(float_functions::exp(-200.0f), 0.0f);
  // around the underflow: at or below -104 the result is chosen (0), just above it computed
  EXPECT_EQ(float_functions::exp(-104.0f), 0.0f);
  EXPECT_EQ(float_functions::exp(-1e30f), 0.0f);
  EXPECT_EQ(float_functions::exp(-103.9f), std::ldexp(1.0f, -149));  // e^-103.9 > 2^-150: rounds up
  EXPECT_EQ(float_functions::exp(-87.5f), static_cast<float>(std::exp(-87.5)));  // subnormal, exact here
  EXPECT_TRUE(std::isnan(float_functions::exp(nan)));
  EXPECT_EQ(float_functions::expm1(-inf), -1.0f);
  EXPECT_EQ(float_functions::expm1(inf), inf);
  EXPECT_TRUE(std::signbit(float_functions::expm1(-0.0f)));
  EXPECT_TRUE(std::isnan(float_functions::expm1(nan)));
  EXPECT_EQ(float_functions::log(0.0f), -inf);
  EXPECT_EQ(float_functions::log(-0.0f), -inf);
  EXPECT_EQ(float_functions::log(inf), inf);
  EXPECT_EQ(float_functions::log(1.0f), 0.0f);
  EXPECT_TRUE(std::isnan(float_functions::log(-1.0f)));
  EXPECT_TRUE(std::isnan(float_functions::log(-inf)));
  EXPECT_TRUE(std::isnan(float_functions::log(nan)));
  EXPECT_EQ(float_functions::tanh(inf), 1.0f);
  EXPECT_EQ(float_functions::tanh(-inf), -1.0f);
  EXPECT_TRUE(std::signbit(float_functions::tanh(-0.0f)));
  EXPECT_EQ(float_functions::tanh(0.0f), 0.0f);
  EXPECT_TRUE(std::isnan(float_functions::tanh(nan)));
  EXPECT_EQ(float_functions::erf(inf), 1.0f);
  EXPECT_EQ(float_functions::erf(-inf), -1.0f);
  EXPECT_TRUE(std::signbit(float_functions::erf(-0.0f)));
  EXPECT_EQ(float_functions::erf(0.0f), 0.0f);
  EXPECT_TRUE(std::isnan(float_functions::erf(nan)));
  EXPECT_EQ(float_functions::erf(float_functions::kErfOne), 1.0f);
  EXPECT_LT(float_functions::erf(std::nextafter(float_functions::kErfOne, 0.0f)), 1.0f);
  EXPECT_TRUE(float_functions::erf(-1e-30f) < 0.0f && float_functions::erf(1e-45f) > 0.0f);
  EXPECT_EQ(float_functions::logistic(-inf), 0.0f);
  EXPECT_EQ(float_functions::logistic(inf), 1.0f);
  EXPECT_EQ(float_functions::logistic(0.0f), 0.5f);
}

}  // namespace
}  // namespace insitu
