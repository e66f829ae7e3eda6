// Unary and binary elementwise ops of the reference evaluator, checked against the values
// XLA's HloEvaluator defines (integer wraparound and division rules, shifts past the width,
// NaN propagation, rounding modes, f16/bf16 rounding per op, complex ops).
#include <cmath>
#include <complex>
#include <limits>

#include "elementwise_test_util.h"

namespace insitu {
namespace {

using namespace testing_elementwise;
using PT = PrimitiveType;
constexpr int32_t kMin32 = std::numeric_limits<int32_t>::min();
constexpr int32_t kMax32 = std::numeric_limits<int32_t>::max();
const float kNaN = std::numeric_limits<float>::quiet_NaN();
const float kInf = std::numeric_limits<float>::infinity();

TEST(ElementwiseInteger, AddSubtractMultiplyWrap) {
  EXPECT_EQ(values<int32_t>(run(Opcode::kAdd, array(PT::kS32, {2}),
                                {Literal::vector<int32_t>({kMax32, kMin32}), Literal::vector<int32_t>({1, -1})})),
            (std::vector<int32_t>{kMin32, kMax32}));
  EXPECT_EQ(values<int32_t>(run(Opcode::kSubtract, array(PT::kS32, {1}),
                                {Literal::vector<int32_t>({kMin32}), Literal::vector<int32_t>({1})})),
            (std::vector<int32_t>{kMax32}));
  // 100 * 3 = 300 wraps to 44 in s8; 65535^2 wraps to 1 in u16 (no int overflow on the way).
  EXPECT_EQ(values<int8_t>(run(Opcode::kMultiply, array(PT::kS8, {1}),
                               {Literal::vector<int8_t>({100}), Literal::vector<int8_t>({3})})),
            (std::vector<int8_t>{44}));
  EXPECT_EQ(values<uint16_t>(run(Opcode::kMultiply, array(PT::kU16, {1}),
                                 {Literal::vector<uint16_t>({65535}), Literal::vector<uint16_t>({65535})})),
            (std::vector<uint16_t>{1}));
  EXPECT_EQ(values<int64_t>(run(Opcode::kMultiply, array(PT::kS64, {1}),
                                {Literal::vector<int64_t>({std::numeric_limits<int64_t>::min()}),
                                 Literal::vector<int64_t>({-1})})),
            (std::vector<int64_t>{std::numeric_limits<int64_t>::min()}));
}

TEST(ElementwiseInteger, NegateAndAbsOfMinimumWrap) {
  EXPECT_EQ(values<int32_t>(run(Opcode::kNegate, array(PT::kS32, {2}), {Literal::vector<int32_t>({kMin32, 5})})),
            (std::vector<int32_t>{kMin32, -5}));
  EXPECT_EQ(values<int8_t>(run(Opcode::kAbs, array(PT::kS8, {3}), {Literal::vector<int8_t>({-128, -3, 4})})),
            (std::vector<int8_t>{-128, 3, 4}));
  EXPECT_EQ(values<uint8_t>(run(Opcode::kNegate, array(PT::kU8, {1}), {Literal::vector<uint8_t>({1})})),
            (std::vector<uint8_t>{255}));
}

TEST(ElementwiseInteger, DivideByZeroAndOverflow) {
  EXPECT_EQ(values<int32_t>(run(Opcode::kDivide, array(PT::kS32, {4}),
                                {Literal::vector<int32_t>({7, kMin32, -7, -7}),
                                 Literal::vector<int32_t>({0, -1, 2, 0})})),
            (std::vector<int32_t>{-1, kMin32, -3, -1}));
  EXPECT_EQ(values<uint32_t>(run(Opcode::kDivide, array(PT::kU32, {2}),
                                 {Literal::vector<uint32_t>({7, 9}), Literal::vector<uint32_t>({0, 2})})),
            (std::vector<uint32_t>{0xFFFFFFFFu, 4}));
  EXPECT_EQ(values<uint8_t>(run(Opcode::kDivide, array(PT::kU8, {1}),
                                {Literal::vector<uint8_t>({7}), Literal::vector<uint8_t>({0})})),
            (std::vector<uint8_t>{255}));
}

TEST(ElementwiseInteger, RemainderByZeroAndOverflow) {
  EXPECT_EQ(values<int32_t>(run(Opcode::kRemainder, array(PT::kS32, {4}),
                                {Literal::vector<int32_t>({7, kMin32, -7, 7}),
                                 Literal::vector<int32_t>({0, -1, 2, -2})})),
            (std::vector<int32_t>{7, 0, -1, 1}));
  EXPECT_EQ(values<uint16_t>(run(Opcode::kRemainder, array(PT::kU16, {1}),
                                 {Literal::vector<uint16_t>({9}), Literal::vector<uint16_t>({0})})),
            (std::vector<uint16_t>{9}));
}

TEST(ElementwiseInteger, ShiftsPastTheBitWidth) {
  auto s32 = [](std::vector<int32_t> v) { return Literal::vector<int32_t>(std::move(v)); };
  EXPECT_EQ(values<int32_t>(run(Opcode::kShiftLeft, array(PT::kS32, {4}), {s32({1, 1, 1, 3}), s32({31, 32, -1, 1})})),
            (std::vector<int32_t>{kMin32, 0, 0, 6}));
  EXPECT_EQ(values<int32_t>(run(Opcode::kShiftRightArithmetic, array(PT::kS32, {4}),
                                {s32({-8, 8, -8, kMin32}), s32({40, 40, 1, 31})})),
            (std::vector<int32_t>{-1, 0, -4, -1}));
  EXPECT_EQ(values<int32_t>(run(Opcode::kShiftRightLogical, array(PT::kS32, {3}), {s32({-8, -8, 5}), s32({1, 32, -3})})),
            (std::vector<int32_t>{0x7FFFFFFC, 0, 0}));
  // Unsigned operands shift arithmetically as their signed reinterpretation.
  EXPECT_EQ(values<uint8_t>(run(Opcode::kShiftRightArithmetic, array(PT::kU8, {2}),
                                {Literal::vector<uint8_t>({0x80, 0x80}), Literal::vector<uint8_t>({1, 8})})),
            (std::vector<uint8_t>{0xC0, 0xFF}));
}

TEST(ElementwiseInteger, PowerFollowsXla) {
  auto s32 = [](std::vector<int32_t> v) { return Literal::vector<int32_t>(std::move(v)); };
  EXPECT_EQ(values<int32_t>(run(Opcode::kPower, array(PT::kS32, {7}),
                                {s32({2, 2, 1, 0, -1, 2, 2}), s32({10, -1, -5, 0, -1, 31, 32})})),
            (std::vector<int32_t>{1024, 0, 1, 1, 0, kMin32, 0}));
  EXPECT_EQ(values<bool>(run(Opcode::kPower, array(PT::kPred, {4}),
                             {Literal::vector<bool>({false, false, true, true}),
                              Literal::vector<bool>({false, true, false, true})})),
            (std::vector<bool>{true, false, true, true}));
}

TEST(ElementwiseInteger, ClzPopcntNot) {
  auto x = Literal::vector<int32_t>({0, 1, -1, 0xF0});
  EXPECT_EQ(values<int32_t>(run(Opcode::kClz, array(PT::kS32, {4}), {x})), (std::vector<int32_t>{32, 31, 0, 24}));
  EXPECT_EQ(values<int32_t>(run(Opcode::kPopulationCount, array(PT::kS32, {4}), {x})),
            (std::vector<int32_t>{0, 1, 32, 4}));
  EXPECT_EQ(values<uint8_t>(run(Opcode::kClz, array(PT::kU8, {2}), {Literal::vector<uint8_t>({1, 0x80})})),
            (std::vector<uint8_t>{7, 0}));
  EXPECT_EQ(values<int8_t>(run(Opcode::kNot, array(PT::kS8, {2}), {Literal::vector<int8_t>({5, -1})})),
            (std::vector<int8_t>{-6, 0}));
  EXPECT_EQ(values<bool>(run(Opcode::kNot, array(PT::kPred, {2}), {Literal::vector<bool>({true, false})})),
            (std::vector<bool>{false, true}));
}

TEST(ElementwiseInteger, MulhiAndPredArithmetic) {
  EXPECT_EQ(values<uint32_t>(run(Opcode::kMulhi, array(PT::kU32, {1}),
                                 {Literal::vector<uint32_t>({0xFFFFFFFFu}), Literal::vector<uint32_t>({0xFFFFFFFFu})})),
            (std::vector<uint32_t>{0xFFFFFFFEu}));
  EXPECT_EQ(values<int32_t>(run(Opcode::kMulhi, array(PT::kS32, {2}),
                                {Literal::vector<int32_t>({0x40000000, -1}), Literal::vector<int32_t>({4, 1})})),
            (std::vector<int32_t>{1, -1}));
  // pred arithmetic is C++ bool arithmetic, as in XLA's evaluator: add is or, subtract is xor.
  auto lhs = Literal::vector<bool>({true, true, false});
  auto rhs = Literal::vector<bool>({true, false, false});
  EXPECT_EQ(values<bool>(run(Opcode::kAdd, array(PT::kPred, {3}), {lhs, rhs})), (std::vector<bool>{true, true, false}));
  EXPECT_EQ(values<bool>(run(Opcode::kSubtract, array(PT::kPred, {3}), {lhs, rhs})),
            (std::vector<bool>{false, true, false}));
}

TEST(ElementwiseFloat, MaximumMinimumPropagateNaN) {
  auto lhs = Literal::vector<float>({kNaN, 1.0f, 2.0f});
  auto rhs = Literal::vector<float>({1.0f, kNaN, -3.0f});
  std::vector<float> max = values<float>(run(Opcode::kMaximum, array(PT::kF32, {3}), {lhs, rhs}));
  std::vector<float> min = values<float>(run(Opcode::kMinimum, array(PT::kF32, {3}), {lhs, rhs}));
  ASSERT_EQ(max.size(), 3u);
  ASSERT_EQ(min.size(), 3u);
  EXPECT_TRUE(std::isnan(max[0]) && std::isnan(max[1]));
  EXPECT_TRUE(std::isnan(min[0]) && std::isnan(min[1]));
  EXPECT_EQ(max[2], 2.0f);
  EXPECT_EQ(min[2], -3.0f);
}

TEST(ElementwiseFloat, RoundAwayFromZeroVersusToEven) {
  auto x = Literal::vector<float>({0.5f, 1.5f, 2.5f, -0.5f, -2.5f, 2.4f});
  EXPECT_EQ(values<float>(run(Opcode::kRoundNearestAfz, array(PT::kF32, {6}), {x})),
            (std::vector<float>{1, 2, 3, -1, -3, 2}));
  std::vector<float> even = values<float>(run(Opcode::kRoundNearestEven, array(PT::kF32, {6}), {x}));
  EXPECT_EQ(even, (std::vector<float>{0, 2, 2, -0.0f, -2, 2}));
  ASSERT_EQ(even.size(), 6u);
  EXPECT_TRUE(std::signbit(even[3]));  // -0.5 rounds to -0
}

TEST(ElementwiseFloat, SignKeepsZeroSignAndNaN) {
  std::vector<float> sign = values<float>(
      run(Opcode::kSign, array(PT::kF32, {4}), {Literal::vector<float>({-0.0f, 0.0f, -3.0f, kNaN})}));
  ASSERT_EQ(sign.size(), 4u);
  EXPECT_TRUE(sign[0] == 0.0f && std::signbit(sign[0]));
  EXPECT_TRUE(sign[1] == 0.0f && !std::signbit(sign[1]));
  EXPECT_EQ(sign[2], -1.0f);
  EXPECT_TRUE(std::isnan(sign[3]));
  EXPECT_EQ(values<int32_t>(run(Opcode::kSign, array(PT::kS32, {3}), {Literal::vector<int32_t>({-5, 0, 7})})),
            (std::vector<int32_t>{-1, 0, 1}));
}

TEST(ElementwiseFloat, PowerDivideAtan2IsFinite) {
  std::vector<float> power = values<float>(run(Opcode::kPower, array(PT::kF32, {3}),
                                               {Literal::vector<float>({0.0f, kNaN, 1.0f}),
                                                Literal::vector<float>({0.0f, 0.0f, kNaN})}));
  EXPECT_EQ(power, (std::vector<float>{1, 1, 1}));
  EXPECT_EQ(values<float>(run(Opcode::kDivide, array(PT::kF32, {2}),
                              {Literal::vector<float>({1.0f, -1.0f}), Literal::vector<float>({0.0f, 0.0f})})),
            (std::vector<float>{kInf, -kInf}));
  EXPECT_FLOAT_EQ(values<float>(run(Opcode::kAtan2, array(PT::kF32, {1}),
                                    {Literal::vector<float>({1.0f}), Literal::vector<float>({-1.0f})}))[0],
                  3.0f * static_cast<float>(M_PI) / 4.0f);
  EXPECT_EQ(values<bool>(run(Opcode::kIsFinite, array(PT::kPred, {3}), {Literal::vector<float>({kInf, kNaN, 1.0f})})),
            (std::vector<bool>{false, false, true}));
  EXPECT_FLOAT_EQ(values<float>(run(Opcode::kRemainder, array(PT::kF32, {1}),
                                    {Literal::vector<float>({-7.5f}), Literal::vector<float>({2.0f})}))[0],
                  -1.5f);
}

TEST(ElementwiseHalf, Bf16RoundsAfterEveryOp) {
  auto bf16 = [](std::vector<float> v) {
    std::vector<BFloat16> out;
    for (float f : v) out.push_back(BFloat16::from_float(f));
    return Literal::vector<BFloat16>(out);
  };
  // 1 + 2^-8 is a tie between 1 and 1 + 2^-7: even wins (1.0). 1 + 3*2^-8 ties to 1 + 2^-6.
  EXPECT_EQ(bits16<BFloat16>(run(Opcode::kAdd, array(PT::kBF16, {2}),
                                 {bf16({1.0f, 1.0f}), bf16({0.00390625f, 0.01171875f})})),
            (std::vector<uint16_t>{0x3F80, 0x3F82}));
  // Two adds round twice: (1 + 2^-8) + 2^-8 stays 1 in bf16 (it would be 1 + 2^-7 in f32).
  Literal once = run(Opcode::kAdd, array(PT::kBF16, {1}), {bf16({1.0f}), bf16({0.00390625f})});
  EXPECT_EQ(bits16<BFloat16>(run(Opcode::kAdd, array(PT::kBF16, {1}), {once, bf16({0.00390625f})})),
            (std::vector<uint16_t>{0x3F80}));
}

TEST(ElementwiseHalf, F16RoundsAndOverflows) {
  auto f16 = [](std::vector<float> v) {
    std::vector<Half> out;
    for (float f : v) out.push_back(Half::from_float(f));
    return Literal::vector<Half>(out);
  };
  EXPECT_EQ(bits16<Half>(run(Opcode::kMultiply, array(PT::kF16, {2}), {f16({300.0f, -2.0f}), f16({300.0f, 3.0f})})),
            (std::vector<uint16_t>{0x7C00, 0xC600}));  // 90000 -> inf, -6
  EXPECT_EQ(bits16<Half>(run(Opcode::kSqrt, array(PT::kF16, {1}), {f16({2.0f})})),
            (std::vector<uint16_t>{0x3DA8}));  // 1.4140625, the nearest f16 to sqrt(2)
  EXPECT_EQ(values<bool>(run(Opcode::kIsFinite, array(PT::kPred, {1}), {f16({70000.0f})})), (std::vector<bool>{false}));
}

TEST(ElementwiseComplex, ArithmeticAbsRealImag) {
  using C = std::complex<float>;
  auto a = Literal::vector<C>({C(1, 2), C(3, 4)});
  auto b = Literal::vector<C>({C(3, 4), C(0, 1)});
  EXPECT_EQ(values<C>(run(Opcode::kMultiply, array(PT::kC64, {2}), {a, b})), (std::vector<C>{C(-5, 10), C(-4, 3)}));
  EXPECT_EQ(values<C>(run(Opcode::kSubtract, array(PT::kC64, {2}), {a, b})), (std::vector<C>{C(-2, -2), C(3, 3)}));
  EXPECT_EQ(values<float>(run(Opcode::kAbs, array(PT::kF32, {2}), {b})), (std::vector<float>{5.0f, 1.0f}));
  EXPECT_EQ(values<float>(run(Opcode::kReal, array(PT::kF32, {2}), {a})), (std::vector<float>{1.0f, 3.0f}));
  EXPECT_EQ(values<float>(run(Opcode::kImag, array(PT::kF32, {2}), {a})), (std::vector<float>{2.0f, 4.0f}));
  EXPECT_EQ(values<float>(run(Opcode::kImag, array(PT::kF32, {1}), {Literal::vector<float>({7.0f})})),
            (std::vector<float>{0.0f}));
  EXPECT_EQ(values<C>(run(Opcode::kComplex, array(PT::kC64, {1}),
                          {Literal::vector<float>({1.5f}), Literal::vector<float>({-2.0f})})),
            (std::vector<C>{C(1.5f, -2.0f)}));
  C sign = values<C>(run(Opcode::kSign, array(PT::kC64, {1}), {Literal::vector<C>({C(3, 4)})}))[0];
  EXPECT_FLOAT_EQ(sign.real(), 0.6f);
  EXPECT_FLOAT_EQ(sign.imag(), 0.8f);
}

TEST(ElementwiseErrors, RejectedTypesAreLocated) {
  Status floor = run_error(Opcode::kFloor, array(PT::kS32, {1}), {Literal::vector<int32_t>({1})});
  EXPECT_EQ(floor.location().line, 3);
  EXPECT_EQ(floor.location().column, 7);
  EXPECT_NE(floor.message().find("floor"), std::string::npos) << floor.message();
  EXPECT_NE(floor.message().find("s32"), std::string::npos) << floor.message();
  expect_error(Opcode::kShiftLeft, array(PT::kF32, {1}), {Literal::vector<float>({1}), Literal::vector<float>({1})});
  expect_error(Opcode::kMaximum, array(PT::kC64, {1}),
            {Literal::vector<std::complex<float>>({{1, 1}}), Literal::vector<std::complex<float>>({{1, 1}})});
  expect_error(Opcode::kExpm1, array(PT::kC64, {1}), {Literal::vector<std::complex<float>>({{1, 1}})});
  expect_error(Opcode::kAnd, array(PT::kF32, {1}), {Literal::vector<float>({1}), Literal::vector<float>({1})});
  // Mismatched operand types or a wrong result shape are errors too, never garbage.
  expect_error(Opcode::kAdd, array(PT::kS32, {1}), {Literal::vector<int32_t>({1}), Literal::vector<int64_t>({1})});
  expect_error(Opcode::kAdd, array(PT::kS32, {2}), {Literal::vector<int32_t>({1}), Literal::vector<int32_t>({1})});
}

}  // namespace
}  // namespace insitu
