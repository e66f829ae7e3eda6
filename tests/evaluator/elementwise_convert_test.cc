// compare, convert, bitcast-convert, reduce-precision, select, clamp and map in the reference
// evaluator, against XLA's rules (total order, saturating float->int, RNE to f16/bf16, ...).
#include <cmath>
#include <complex>
#include <limits>

#include "elementwise_test_util.h"
#include "insitu/ir/computation.h"

namespace insitu {
namespace {

using namespace testing_elementwise;
using PT = PrimitiveType;
constexpr int32_t kMin32 = std::numeric_limits<int32_t>::min();
constexpr int32_t kMax32 = std::numeric_limits<int32_t>::max();
const float kNaN = std::numeric_limits<float>::quiet_NaN();
const float kInf = std::numeric_limits<float>::infinity();

auto compare_with(ComparisonDirection direction, ComparisonType type = ComparisonType::kDefault) {
  return [=](Instruction& instruction) {
    instruction.comparison_direction = direction;
    instruction.comparison_type = type;
  };
}

TEST(ElementwiseCompare, TotalOrderSeparatesZerosAndOrdersNaNs) {
  auto lhs = Literal::vector<float>({-0.0f, kNaN, -kNaN, -kInf, kNaN});
  auto rhs = Literal::vector<float>({0.0f, kInf, -kInf, -kNaN, kNaN});
  EXPECT_EQ(values<bool>(run(Opcode::kCompare, array(PT::kPred, {5}), {lhs, rhs},
                             compare_with(ComparisonDirection::kLt, ComparisonType::kTotalOrder))),
            (std::vector<bool>{true, false, true, false, false}));
  EXPECT_EQ(values<bool>(run(Opcode::kCompare, array(PT::kPred, {5}), {lhs, rhs},
                             compare_with(ComparisonDirection::kEq, ComparisonType::kTotalOrder))),
            (std::vector<bool>{false, false, false, false, true}));
  // FLOAT: -0 == +0 and NaN is unordered (even with itself).
  EXPECT_EQ(values<bool>(run(Opcode::kCompare, array(PT::kPred, {5}), {lhs, rhs},
                             compare_with(ComparisonDirection::kEq))),
            (std::vector<bool>{true, false, false, false, false}));
  EXPECT_EQ(values<bool>(run(Opcode::kCompare, array(PT::kPred, {5}), {lhs, rhs},
                             compare_with(ComparisonDirection::kNe, ComparisonType::kFloat))),
            (std::vector<bool>{false, true, true, true, true}));
}

TEST(ElementwiseCompare, Bf16TotalOrderAndIntegerTypes) {
  auto bf16 = [](float f) { return BFloat16::from_float(f); };
  EXPECT_EQ(values<bool>(run(Opcode::kCompare, array(PT::kPred, {2}),
                             {Literal::vector<BFloat16>({bf16(-0.0f), bf16(1.0f)}),
                              Literal::vector<BFloat16>({bf16(0.0f), bf16(1.0f)})},
                             compare_with(ComparisonDirection::kGe, ComparisonType::kTotalOrder))),
            (std::vector<bool>{false, true}));
  EXPECT_EQ(values<bool>(run(Opcode::kCompare, array(PT::kPred, {2}),
                             {Literal::vector<uint32_t>({0xFFFFFFFFu, 1}), Literal::vector<uint32_t>({1, 1})},
                             compare_with(ComparisonDirection::kGt, ComparisonType::kUnsigned))),
            (std::vector<bool>{true, false}));
  EXPECT_EQ(values<bool>(run(Opcode::kCompare, array(PT::kPred, {2}),
                             {Literal::vector<int32_t>({-1, 2}), Literal::vector<int32_t>({1, 2})},
                             compare_with(ComparisonDirection::kLe))),
            (std::vector<bool>{true, true}));
  Status mismatch = run_error(Opcode::kCompare, array(PT::kPred, {1}),
                              {Literal::vector<int32_t>({1}), Literal::vector<int32_t>({1})},
                              compare_with(ComparisonDirection::kLt, ComparisonType::kUnsigned));
  EXPECT_EQ(mismatch.location().line, 3);
}

TEST(ElementwiseCompare, ComplexOnlyEqualityDirections) {
  using C = std::complex<float>;
  auto a = Literal::vector<C>({C(1, 2), C(1, 2)});
  auto b = Literal::vector<C>({C(1, 2), C(1, -2)});
  EXPECT_EQ(values<bool>(run(Opcode::kCompare, array(PT::kPred, {2}), {a, b}, compare_with(ComparisonDirection::kEq))),
            (std::vector<bool>{true, false}));
  EXPECT_EQ(values<bool>(run(Opcode::kCompare, array(PT::kPred, {2}), {a, b}, compare_with(ComparisonDirection::kNe))),
            (std::vector<bool>{false, true}));
  expect_error(Opcode::kCompare, array(PT::kPred, {2}), {a, b}, compare_with(ComparisonDirection::kLt));
}

TEST(ElementwiseConvert, FloatToIntegerSaturatesAndMapsNaNToZero) {
  EXPECT_EQ(values<int32_t>(run(Opcode::kConvert, array(PT::kS32, {7}),
                                {Literal::vector<float>({kNaN, 3e9f, -3e9f, -1.7f, 1.7f, kInf, -kInf})})),
            (std::vector<int32_t>{0, kMax32, kMin32, -1, 1, kMax32, kMin32}));
  EXPECT_EQ(values<uint8_t>(run(Opcode::kConvert, array(PT::kU8, {4}),
                                {Literal::vector<float>({-5.0f, 300.0f, 2.9f, -0.5f})})),
            (std::vector<uint8_t>{0, 255, 2, 0}));
  EXPECT_EQ(values<int64_t>(run(Opcode::kConvert, array(PT::kS64, {1}), {Literal::vector<double>({1e19})})),
            (std::vector<int64_t>{std::numeric_limits<int64_t>::max()}));
  EXPECT_EQ(values<int8_t>(run(Opcode::kConvert, array(PT::kS8, {2}),
                               {Literal::vector<Half>({Half::from_float(-200.0f), Half::from_float(-2.5f)})})),
            (std::vector<int8_t>{-128, -2}));
}

TEST(ElementwiseConvert, PredIntegerAndComplexConversions) {
  EXPECT_EQ(values<bool>(run(Opcode::kConvert, array(PT::kPred, {3}), {Literal::vector<int32_t>({0, 5, -1})})),
            (std::vector<bool>{false, true, true}));
  EXPECT_EQ(values<bool>(run(Opcode::kConvert, array(PT::kPred, {3}), {Literal::vector<float>({0.0f, -0.0f, kNaN})})),
            (std::vector<bool>{false, false, true}));
  EXPECT_EQ(values<int8_t>(run(Opcode::kConvert, array(PT::kS8, {2}), {Literal::vector<int32_t>({300, -129})})),
            (std::vector<int8_t>{44, 127}));  // integer narrowing keeps the low bits
  EXPECT_EQ(values<uint32_t>(run(Opcode::kConvert, array(PT::kU32, {1}), {Literal::vector<int32_t>({-1})})),
            (std::vector<uint32_t>{0xFFFFFFFFu}));
  EXPECT_EQ(values<std::complex<double>>(run(Opcode::kConvert, array(PT::kC128, {1}), {Literal::vector<int32_t>({3})})),
            (std::vector<std::complex<double>>{{3.0, 0.0}}));
  Status complex_to_real = run_error(Opcode::kConvert, array(PT::kF32, {1}),
                                     {Literal::vector<std::complex<float>>({{1.0f, 2.0f}})});
  EXPECT_NE(complex_to_real.message().find("real()"), std::string::npos) << complex_to_real.message();
}

TEST(ElementwiseConvert, RoundsToNearestEvenIntoF16AndBf16) {
  // 1 + 2^-8 ties to 1.0 in bf16; 1 + 3*2^-8 ties to 1 + 2^-6; 1 + 2^-8 + 2^-20 rounds up.
  EXPECT_EQ(bits16<BFloat16>(run(Opcode::kConvert, array(PT::kBF16, {3}),
                                 {Literal::vector<float>({1.00390625f, 1.01171875f, 1.00390625f + 0x1p-20f})})),
            (std::vector<uint16_t>{0x3F80, 0x3F82, 0x3F81}));
  EXPECT_EQ(bits16<Half>(run(Opcode::kConvert, array(PT::kF16, {3}), {Literal::vector<int32_t>({70000, 2049, -1})})),
            (std::vector<uint16_t>{0x7C00, 0x6800, 0xBC00}));  // inf; 2049 ties to 2048; -1
  EXPECT_EQ(values<float>(run(Opcode::kConvert, array(PT::kF32, {1}),
                              {Literal::vector<BFloat16>({BFloat16::from_bits(0x3F81)})})),
            (std::vector<float>{1.0078125f}));
}

TEST(ElementwiseConvert, BitcastConvertSameAndDifferentWidths) {
  EXPECT_EQ(values<int32_t>(run(Opcode::kBitcastConvert, array(PT::kS32, {2}), {Literal::vector<float>({1.0f, -2.0f})})),
            (std::vector<int32_t>{0x3F800000, static_cast<int32_t>(0xC0000000u)}));
  // f32[1] -> u16[1,2]: the little-endian halves become a new minor dimension.
  EXPECT_EQ(values<uint16_t>(run(Opcode::kBitcastConvert, array(PT::kU16, {1, 2}), {Literal::vector<float>({1.0f})})),
            (std::vector<uint16_t>{0x0000, 0x3F80}));
  EXPECT_EQ(values<float>(run(Opcode::kBitcastConvert, array(PT::kF32, {}),
                              {Literal::vector<uint16_t>({0x0000, 0x3F80})})),
            (std::vector<float>{1.0f}));
  expect_error(Opcode::kBitcastConvert, array(PT::kF32, {}), {Literal::vector<uint16_t>({0, 0, 0})});
  expect_error(Opcode::kBitcastConvert, array(PT::kS64, {1}), {Literal::vector<std::complex<float>>({{1, 1}})});
}

TEST(ElementwiseConvert, ReducePrecision) {
  auto bits = [](int64_t exponent, int64_t mantissa) {
    return [=](Instruction& instruction) {
      instruction.exponent_bits = exponent;
      instruction.mantissa_bits = mantissa;
    };
  };
  // bf16's format (8, 7): mantissa ties to even; agrees with rounding to bf16 (3e38 rounds up
  // to 1.765625 * 2^127).
  EXPECT_EQ(values<float>(run(Opcode::kReducePrecision, array(PT::kF32, {3}),
                              {Literal::vector<float>({1.00390625f, 1.01171875f, 3e38f})}, bits(8, 7))),
            (std::vector<float>{1.0f, 1.015625f, BFloat16::from_float(3e38f).to_float()}));
  EXPECT_EQ(BFloat16::from_float(3e38f).to_float(), std::ldexp(1.765625f, 127));
  // f16's format (5, 10): out-of-range exponents become inf or 0 (denormals flush to 0).
  std::vector<float> f16 = values<float>(run(Opcode::kReducePrecision, array(PT::kF32, {4}),
                                             {Literal::vector<float>({70000.0f, -1e-6f, 0.5f, kNaN})}, bits(5, 10)));
  ASSERT_EQ(f16.size(), 4u);
  EXPECT_EQ(f16[0], kInf);
  EXPECT_TRUE(f16[1] == 0.0f && std::signbit(f16[1]));
  EXPECT_EQ(f16[2], 0.5f);
  EXPECT_TRUE(std::isnan(f16[3]));
  // NaN with no mantissa bits left becomes +inf.
  EXPECT_EQ(values<float>(run(Opcode::kReducePrecision, array(PT::kF32, {1}), {Literal::vector<float>({kNaN})},
                              bits(8, 0))),
            (std::vector<float>{kInf}));
  expect_error(Opcode::kReducePrecision, array(PT::kS32, {1}), {Literal::vector<int32_t>({1})}, bits(8, 7));
}

TEST(ElementwiseSelectClamp, SelectWithArrayAndScalarPredicate) {
  auto on_true = Literal::vector<int32_t>({1, 2, 3});
  auto on_false = Literal::vector<int32_t>({-1, -2, -3});
  EXPECT_EQ(values<int32_t>(run(Opcode::kSelect, array(PT::kS32, {3}),
                                {Literal::vector<bool>({true, false, true}), on_true, on_false})),
            (std::vector<int32_t>{1, -2, 3}));
  EXPECT_EQ(values<int32_t>(run(Opcode::kSelect, array(PT::kS32, {3}), {Literal::scalar<bool>(false), on_true, on_false})),
            (std::vector<int32_t>{-1, -2, -3}));
  expect_error(Opcode::kSelect, array(PT::kS32, {3}), {Literal::vector<bool>({true, false}), on_true, on_false});
}

TEST(ElementwiseSelectClamp, ClampWithScalarBoundsAndNaN) {
  EXPECT_EQ(values<int32_t>(run(Opcode::kClamp, array(PT::kS32, {3}),
                                {Literal::scalar<int32_t>(0), Literal::vector<int32_t>({-5, 3, 12}),
                                 Literal::scalar<int32_t>(10)})),
            (std::vector<int32_t>{0, 3, 10}));
  std::vector<float> clamped = values<float>(run(Opcode::kClamp, array(PT::kF32, {2}),
                                                 {Literal::vector<float>({0.0f, kNaN}), Literal::vector<float>({kNaN, 5.0f}),
                                                  Literal::scalar<float>(1.0f)}));
  ASSERT_EQ(clamped.size(), 2u);
  EXPECT_TRUE(std::isnan(clamped[0]) && std::isnan(clamped[1]));
}

// Evaluates to_apply as 2 * x + y on s32 scalars, counting calls.
class DoublePlusRunner final : public eval::ComputationRunner {
 public:
  StatusOr<Literal> run(const Computation&, eval::Operands arguments) override {
    ++calls;
    return Literal::scalar<int32_t>(2 * arguments[0]->data<int32_t>()[0] + arguments[1]->data<int32_t>()[0]);
  }
  int calls = 0;
};

// stochastic-convert (XLA's decomposer): |x| rounds up when the random bits are below its fraction
// times 2^bits, down otherwise; the sign is put back; NaN -> 0; the range saturates.
TEST(ElementwiseConvert, StochasticConvertRoundsUpWhenTheRandomBitsAreBelowTheFraction) {
  const float x[] = {2.25f, 2.25f, -2.25f, -2.75f, -2.75f, 0.5f, 5.0f, kNaN, kInf, -kInf, 3e9f, -3e9f, -0.0f, -0.5f};
  const uint32_t bits[] = {0x3FFFFFFFu, 0x40000000u, 0u, 0xBFFFFFFFu, 0xC0000000u, 0x7FFFFFFFu, 0u,
                           0u, 0u, 0u, 0u, 0u, 0u, 0x80000000u};
  const Literal result = run(Opcode::kStochasticConvert, array(PT::kS32, {14}),
                             {Literal::vector<float>(std::vector<float>(std::begin(x), std::end(x))),
                              Literal::vector<uint32_t>(std::vector<uint32_t>(std::begin(bits), std::end(bits)))});
  EXPECT_EQ(values<int32_t>(result),
            (std::vector<int32_t>{3, 2, -3, -3, -2, 1, 5, 0, kMax32, kMin32, kMax32, kMin32, 0, 0}));
  // bf16 with 16 random bits, to s8: 1.5 rounds up below 0x8000; 127.5 and -128.5 saturate; the
  // sum that passes s8's max wraps before the clamp (-127.5 rounded up is -128).
  auto bf16 = [](float f) { return BFloat16::from_float(f); };
  const Literal narrow = run(Opcode::kStochasticConvert, array(PT::kS8, {5}),
                             {Literal::vector<BFloat16>({bf16(1.5f), bf16(1.5f), bf16(127.5f), bf16(-128.5f), bf16(-127.5f)}),
                              Literal::vector<uint16_t>({0x7FFF, 0x8000, 0, 0, 0})});
  EXPECT_EQ(values<int8_t>(narrow), (std::vector<int8_t>{2, 1, 127, -128, -128}));
  // Only signed integer results (XLA's decomposer), located.
  Status unsigned_result = run_error(Opcode::kStochasticConvert, array(PT::kU32, {1}),
                                     {Literal::vector<float>({1.5f}), Literal::vector<uint32_t>({0})});
  EXPECT_NE(unsigned_result.message().find("from f32 to u32: insitu rounds f16, bf16, f32 and f64 to s8"),
            std::string::npos)
      << unsigned_result.to_string();
  EXPECT_NE(unsigned_result.to_string().find("3:7"), std::string::npos) << unsigned_result.to_string();
  Status wide_random = run_error(Opcode::kStochasticConvert, array(PT::kS32, {1}),
                                 {Literal::vector<float>({1.5f}), Literal::vector<uint64_t>({0})});
  EXPECT_NE(wide_random.message().find("must be unsigned of the operand's width"), std::string::npos)
      << wide_random.to_string();
}

TEST(ElementwiseMap, AppliesToApplyPerElement) {
  Computation to_apply("double_plus");
  Instruction map(Opcode::kMap, "map", array(PT::kS32, {2, 2}));
  map.set_called_computations({&to_apply});
  Literal x = Literal::from_values<int32_t>({2, 2}, {1, 2, 3, 4});
  Literal y = Literal::from_values<int32_t>({2, 2}, {10, 20, 30, 40});
  const Literal* operands[] = {&x, &y};
  DoublePlusRunner runner;
  StatusOr<Literal> result = eval::evaluate_map(map, operands, runner);
  ASSERT_TRUE(result.ok()) << result.status().to_string();
  EXPECT_EQ(values<int32_t>(*result), (std::vector<int32_t>{12, 24, 36, 48}));
  EXPECT_EQ(runner.calls, 4);
  Instruction no_computation(Opcode::kMap, "map", array(PT::kS32, {2, 2}));
  EXPECT_FALSE(eval::evaluate_map(no_computation, operands, runner).ok());
}

}  // namespace
}  // namespace insitu
