// dot of the reference evaluator: general dimension numbers, mixed element types and the
// accumulation XLA's HloEvaluator does per type.
#include <gtest/gtest.h>

#include <complex>
#include <memory>

#include "insitu/evaluator/ops.h"

namespace insitu {
namespace {

using P = PrimitiveType;

StatusOr<Literal> run_dot(const std::unique_ptr<Instruction>& dot, const Literal& lhs, const Literal& rhs) {
  const Literal* operands[] = {&lhs, &rhs};
  return eval::evaluate_dot(*dot, operands);
}

// Instructions are not copyable: tests hold them by pointer.
std::unique_ptr<Instruction> make_dot(Shape shape, std::vector<int64_t> lhs_contracting,
                                      std::vector<int64_t> rhs_contracting, std::vector<int64_t> lhs_batch = {},
                                      std::vector<int64_t> rhs_batch = {}) {
  auto dot = std::make_unique<Instruction>(Opcode::kDot, "dot", std::move(shape));
  dot->dot_dimension_numbers.lhs_contracting_dimensions = std::move(lhs_contracting);
  dot->dot_dimension_numbers.rhs_contracting_dimensions = std::move(rhs_contracting);
  dot->dot_dimension_numbers.lhs_batch_dimensions = std::move(lhs_batch);
  dot->dot_dimension_numbers.rhs_batch_dimensions = std::move(rhs_batch);
  return dot;
}

template <typename T>
std::vector<T> values(const Literal& literal) {
  auto data = literal.data<T>();
  return std::vector<T>(data.begin(), data.end());
}

TEST(DotTest, Matmul) {
  Literal lhs = Literal::from_values<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  Literal rhs = Literal::from_values<float>({3, 2}, {7, 8, 9, 10, 11, 12});
  auto dot = make_dot(Shape::array(P::kF32, {2, 2}), {1}, {0});
  StatusOr<Literal> result = run_dot(dot, lhs, rhs);
  ASSERT_TRUE(result.ok()) << result.status().to_string();
  EXPECT_EQ(values<float>(*result), (std::vector<float>{58, 64, 139, 154}));
}

TEST(DotTest, BatchedDot) {
  // Batch 0: [[1,2],[3,4]] x identity; batch 1: [[1,0],[0,1]] x [[5,6],[7,8]].
  Literal lhs = Literal::from_values<int32_t>({2, 2, 2}, {1, 2, 3, 4, 1, 0, 0, 1});
  Literal rhs = Literal::from_values<int32_t>({2, 2, 2}, {1, 0, 0, 1, 5, 6, 7, 8});
  auto dot = make_dot(Shape::array(P::kS32, {2, 2, 2}), {2}, {1}, {0}, {0});
  EXPECT_EQ(values<int32_t>(*run_dot(dot, lhs, rhs)), (std::vector<int32_t>{1, 2, 3, 4, 5, 6, 7, 8}));
}

TEST(DotTest, BatchDimensionNotLeading) {
  // lhs [k=2, b=2], rhs [b=2, k=2]: result [b] = sum_k lhs[k,b] * rhs[b,k].
  Literal lhs = Literal::from_values<int32_t>({2, 2}, {1, 2, 3, 4});
  Literal rhs = Literal::from_values<int32_t>({2, 2}, {10, 20, 30, 40});
  auto dot = make_dot(Shape::array(P::kS32, {2}), {0}, {1}, {1}, {0});
  EXPECT_EQ(values<int32_t>(*run_dot(dot, lhs, rhs)), (std::vector<int32_t>{1 * 10 + 3 * 20, 2 * 30 + 4 * 40}));
}

TEST(DotTest, ContractingDimensionZero) {
  // lhs^T * rhs with lhs [3,2], rhs [3,2].
  Literal lhs = Literal::from_values<double>({3, 2}, {1, 2, 3, 4, 5, 6});
  Literal rhs = Literal::from_values<double>({3, 2}, {1, 0, 0, 1, 1, 1});
  auto dot = make_dot(Shape::array(P::kF64, {2, 2}), {0}, {0});
  EXPECT_EQ(values<double>(*run_dot(dot, lhs, rhs)), (std::vector<double>{6, 8, 8, 10}));
}

TEST(DotTest, VectorDotAndOuterProduct) {
  Literal a = Literal::vector<int64_t>({1, 2, 3});
  Literal b = Literal::vector<int64_t>({4, 5, 6});
  auto inner = make_dot(Shape::scalar(P::kS64), {0}, {0});
  EXPECT_EQ(run_dot(inner, a, b)->data<int64_t>()[0], 32);
  auto outer = make_dot(Shape::array(P::kS64, {3, 3}), {}, {});
  EXPECT_EQ(values<int64_t>(*run_dot(outer, a, b)), (std::vector<int64_t>{4, 5, 6, 8, 10, 12, 12, 15, 18}));
}

TEST(DotTest, TwoContractingDimensions) {
  // Full contraction of two [2,2] matrices, rhs transposed via the dimension order.
  Literal lhs = Literal::from_values<int32_t>({2, 2}, {1, 2, 3, 4});
  Literal rhs = Literal::from_values<int32_t>({2, 2}, {1, 10, 100, 1000});
  auto dot = make_dot(Shape::scalar(P::kS32), {0, 1}, {1, 0});
  // lhs[i,j] * rhs[j,i]: 1*1 + 2*100 + 3*10 + 4*1000
  EXPECT_EQ(run_dot(dot, lhs, rhs)->data<int32_t>()[0], 4231);
}

TEST(DotTest, S8TimesS8ToS32) {
  Literal lhs = Literal::vector<int8_t>({127, -128, 100});
  Literal rhs = Literal::vector<int8_t>({127, -128, -100});
  auto dot = make_dot(Shape::scalar(P::kS32), {0}, {0});
  EXPECT_EQ(run_dot(dot, lhs, rhs)->data<int32_t>()[0], 16129 + 16384 - 10000);
}

TEST(DotTest, U8OperandsToS32AreZeroExtended) {
  Literal lhs = Literal::vector<uint8_t>({255, 2});
  Literal rhs = Literal::vector<uint8_t>({2, 3});
  auto dot = make_dot(Shape::scalar(P::kS32), {0}, {0});
  EXPECT_EQ(run_dot(dot, lhs, rhs)->data<int32_t>()[0], 516);
}

TEST(DotTest, IntegerAccumulationWraps) {
  Literal lhs = Literal::vector<int32_t>({0x7fffffff, 1});
  Literal rhs = Literal::vector<int32_t>({2, 3});
  auto dot = make_dot(Shape::scalar(P::kS32), {0}, {0});
  EXPECT_EQ(run_dot(dot, lhs, rhs)->data<int32_t>()[0], 1) << "2*(2^31-1) wraps to -2, plus 3";
  Literal small_lhs = Literal::vector<int8_t>({100, 100});
  Literal small_rhs = Literal::vector<int8_t>({2, 1});
  auto s8 = make_dot(Shape::scalar(P::kS8), {0}, {0});
  EXPECT_EQ(run_dot(s8, small_lhs, small_rhs)->data<int8_t>()[0], 44) << "300 mod 256";
}

TEST(DotTest, Bf16AccumulatesInF32AndRoundsOnce) {
  // 256 + 1 + 1: rounded per step to bf16 it would stay 256; XLA accumulates in f32 (258).
  auto bf16 = [](float f) { return BFloat16::from_float(f); };
  Literal lhs = Literal::vector<BFloat16>({bf16(256), bf16(1), bf16(1)});
  Literal rhs = Literal::vector<BFloat16>({bf16(1), bf16(1), bf16(1)});
  auto dot = make_dot(Shape::scalar(P::kBF16), {0}, {0});
  EXPECT_EQ(run_dot(dot, lhs, rhs)->data<BFloat16>()[0].to_float(), 258.0f);
  // The final rounding is to nearest even: 256 + 1 rounds to 256, 256 + 3 to 260.
  Literal two_terms = Literal::vector<BFloat16>({bf16(256), bf16(1)});
  Literal ones = Literal::vector<BFloat16>({bf16(1), bf16(1)});
  EXPECT_EQ(run_dot(dot, two_terms, ones)->data<BFloat16>()[0].to_float(), 256.0f);
  Literal three = Literal::vector<BFloat16>({bf16(256), bf16(3)});
  EXPECT_EQ(run_dot(dot, three, ones)->data<BFloat16>()[0].to_float(), 260.0f);
}

TEST(DotTest, F16AccumulatesInF32) {
  auto f16 = [](float f) { return Half::from_float(f); };
  Literal lhs = Literal::vector<Half>({f16(2048), f16(1), f16(1)});
  Literal rhs = Literal::vector<Half>({f16(1), f16(1), f16(1)});
  auto dot = make_dot(Shape::scalar(P::kF16), {0}, {0});
  EXPECT_EQ(run_dot(dot, lhs, rhs)->data<Half>()[0].to_float(), 2050.0f);
}

TEST(DotTest, Bf16OperandsToF32ResultAreExact) {
  auto bf16 = [](float f) { return BFloat16::from_float(f); };
  Literal lhs = Literal::vector<BFloat16>({bf16(256), bf16(1)});
  Literal rhs = Literal::vector<BFloat16>({bf16(1), bf16(1)});
  auto dot = make_dot(Shape::scalar(P::kF32), {0}, {0});
  EXPECT_EQ(run_dot(dot, lhs, rhs)->data<float>()[0], 257.0f);
}

TEST(DotTest, ComplexAndPred) {
  using C = std::complex<float>;
  Literal lhs = Literal::vector<C>({C(1, 2), C(0, 1)});
  Literal rhs = Literal::vector<C>({C(3, 4), C(0, 1)});
  auto dot = make_dot(Shape::scalar(P::kC64), {0}, {0});
  EXPECT_EQ(run_dot(dot, lhs, rhs)->data<C>()[0], C(-6, 10));

  Literal a = Literal::from_values<bool>({2, 2}, {true, false, false, false});
  Literal b = Literal::from_values<bool>({2, 2}, {true, true, true, false});
  auto logical = make_dot(Shape::array(P::kPred, {2, 2}), {1}, {0});
  EXPECT_EQ(values<bool>(*run_dot(logical, a, b)), (std::vector<bool>{true, true, false, false}));
}

TEST(DotTest, ErrorsAreLocatedStatuses) {
  Literal lhs = Literal::from_values<float>({2, 3}, std::vector<float>(6, 1));
  Literal rhs = Literal::from_values<float>({2, 2}, std::vector<float>(4, 1));
  auto mismatch = make_dot(Shape::array(P::kF32, {2, 2}), {1}, {0});
  mismatch->set_location({4, 9});
  StatusOr<Literal> result = run_dot(mismatch, lhs, rhs);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().location().line, 4);
  EXPECT_NE(result.status().message().find("differ in size"), std::string::npos) << result.status().message();

  auto out_of_range = make_dot(Shape::array(P::kF32, {2, 2}), {2}, {0});
  EXPECT_FALSE(run_dot(out_of_range, lhs, rhs).ok());

  auto wrong_shape = make_dot(Shape::array(P::kF32, {2, 3}), {0}, {0});
  EXPECT_FALSE(run_dot(wrong_shape, lhs, rhs).ok()) << "contracting dims 0,0 give [3,2], not [2,3]";
  wrong_shape->set_shape(Shape::array(P::kF32, {3, 2}));
  EXPECT_TRUE(run_dot(wrong_shape, lhs, rhs).ok());

  auto unbalanced = make_dot(Shape::array(P::kF32, {2, 2}), {1}, {});
  EXPECT_FALSE(run_dot(unbalanced, lhs, rhs).ok());
}

}  // namespace
}  // namespace insitu
