// Literal text: XLA's literal spelling (xla/literal.cc) for arrays, tuples and every element type.
#include <cmath>
#include <complex>
#include <limits>

#include <gtest/gtest.h>

#include "insitu/ir/literal.h"

namespace insitu {
namespace {

TEST(LiteralTextTest, VectorOfS32) {
  Literal literal = Literal::vector<int32_t>({1, 2, 3, 4});
  EXPECT_EQ(literal.to_string(), "s32[4] {1, 2, 3, 4}");
  EXPECT_EQ(literal.values_to_string(), "{1, 2, 3, 4}");
}

TEST(LiteralTextTest, Scalars) {
  EXPECT_EQ(Literal::scalar<int32_t>(-7).to_string(), "s32[] -7");
  EXPECT_EQ(Literal::scalar<int64_t>(int64_t{1} << 40).values_to_string(), "1099511627776");
  EXPECT_EQ(Literal::scalar<uint8_t>(255).values_to_string(), "255");
  EXPECT_EQ(Literal::scalar<int8_t>(-128).values_to_string(), "-128");
  EXPECT_EQ(Literal::scalar<uint64_t>(18446744073709551615ull).values_to_string(), "18446744073709551615");
  EXPECT_EQ(Literal::scalar<bool>(true).to_string(), "pred[] true");
  EXPECT_EQ(Literal::scalar<bool>(false).values_to_string(), "false");
}

TEST(LiteralTextTest, PredArraysPrintAsDigits) {
  Literal literal = Literal::vector<bool>({true, false, true});
  EXPECT_EQ(literal.to_string(), "pred[3] {1, 0, 1}");
}

TEST(LiteralTextTest, Rank2OnelineAndMultiline) {
  Literal literal = Literal::from_values<int32_t>({2, 3}, {1, 2, 3, 4, 5, 6});
  EXPECT_EQ(literal.values_to_string(), "{ { 1, 2, 3 }, { 4, 5, 6 } }");
  EXPECT_EQ(literal.to_string(), "s32[2,3] {\n  { 1, 2, 3 },\n  { 4, 5, 6 }\n}");
}

TEST(LiteralTextTest, Rank2WithSingleElementRows) {
  Literal literal = Literal::from_values<int32_t>({2, 1}, {7, 8});
  EXPECT_EQ(literal.values_to_string(), "{ {7}, {8} }");
}

TEST(LiteralTextTest, Rank3Oneline) {
  Literal literal = Literal::from_values<float>({2, 1, 2}, {1, 2, 3, 4});
  EXPECT_EQ(literal.values_to_string(), "{ { { 1, 2 } }, { { 3, 4 } } }");
}

TEST(LiteralTextTest, Rank4CarriesIndexComments) {
  Literal literal = Literal::from_values<int32_t>({1, 1, 1, 2}, {5, 6});
  EXPECT_EQ(literal.values_to_string(), "{ { /*i0=0*/ { /*i1=0*/ { 5, 6 } } } }");
}

TEST(LiteralTextTest, EmptyArrays) {
  EXPECT_EQ(Literal(Shape::array(PrimitiveType::kF32, {0})).values_to_string(), "{}");
  EXPECT_EQ(Literal(Shape::array(PrimitiveType::kF32, {2, 0})).values_to_string(), "{ {}, {} }");
}

TEST(LiteralTextTest, FloatsRoundTripBitExactly) {
  EXPECT_EQ(Literal::scalar<float>(1.0f).values_to_string(), "1");
  EXPECT_EQ(Literal::scalar<float>(0.5f).values_to_string(), "0.5");
  EXPECT_EQ(Literal::scalar<float>(0.1f).values_to_string(), "0.1");
  EXPECT_EQ(Literal::scalar<float>(1e-5f).values_to_string(), "1e-05");
  // Needs more than 6 significant digits to read back exactly.
  EXPECT_EQ(Literal::scalar<float>(16777215.0f).values_to_string(), "16777215");
  EXPECT_EQ(Literal::scalar<float>(3.14159274f).values_to_string(), "3.14159274");
  EXPECT_EQ(Literal::scalar<double>(0.1).values_to_string(), "0.1");
  EXPECT_EQ(Literal::scalar<double>(1.0 / 3.0).values_to_string(), "0.33333333333333331");
}

TEST(LiteralTextTest, InfinityAndNan) {
  EXPECT_EQ(Literal::scalar<float>(std::numeric_limits<float>::infinity()).values_to_string(), "inf");
  EXPECT_EQ(Literal::scalar<float>(-std::numeric_limits<float>::infinity()).values_to_string(), "-inf");
  EXPECT_EQ(Literal::scalar<float>(std::numeric_limits<float>::quiet_NaN()).values_to_string(), "nan");
  EXPECT_EQ(Literal::scalar<float>(std::bit_cast<float>(0x7fc00001u)).values_to_string(), "nan(0x400001)");
  EXPECT_EQ(Literal::scalar<double>(-std::numeric_limits<double>::infinity()).values_to_string(), "-inf");
}

TEST(LiteralTextTest, HalfAndBfloat16) {
  EXPECT_EQ(Literal::vector<Half>({Half::from_float(1.5f), Half::from_float(-2.0f)}).to_string(), "f16[2] {1.5, -2}");
  EXPECT_EQ(Literal::scalar<Half>(Half::from_float(0.1f)).values_to_string(), "0.099976");
  EXPECT_EQ(Literal::scalar<BFloat16>(BFloat16::from_float(0.1f)).values_to_string(), "0.1001");
  EXPECT_EQ(Literal::scalar<BFloat16>(BFloat16::from_float(3.0f)).to_string(), "bf16[] 3");
  EXPECT_EQ(Literal::scalar<BFloat16>(BFloat16::from_bits(0xff80)).values_to_string(), "-inf");
}

TEST(LiteralTextTest, ComplexAsPairs) {
  Literal literal = Literal::vector<std::complex<float>>({{1.0f, -2.5f}, {0.0f, 3.0f}});
  EXPECT_EQ(literal.to_string(), "c64[2] {(1, -2.5), (0, 3)}");
  EXPECT_EQ(Literal::scalar<std::complex<double>>({0.25, 1.0}).values_to_string(), "(0.25, 1)");
}

TEST(LiteralTextTest, Tuples) {
  Literal literal = Literal::tuple({Literal::scalar<int32_t>(1), Literal::vector<float>({2.0f, 3.0f})});
  EXPECT_EQ(literal.to_string(), "(s32[], f32[2]) (1, {2, 3})");
  EXPECT_EQ(literal.values_to_string(), "(1, {2, 3})");
  Literal nested = Literal::tuple({literal, Literal::scalar<bool>(true)});
  EXPECT_EQ(nested.values_to_string(), "((1, {2, 3}), true)");
}

}  // namespace
}  // namespace insitu
