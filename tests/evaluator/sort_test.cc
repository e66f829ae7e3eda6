// sort of the reference evaluator: comparator-defined order (NaNs included), variadic
// key/value sorts, stability, and sorting along an inner dimension.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <memory>

#include "insitu/evaluator/ops.h"
#include "lambda_runner.h"

namespace insitu {
namespace {

using P = PrimitiveType;
using testing::LambdaRunner;
using testing::values;

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

// A comparator on operand 0 only: less(a_0, b_0).
template <typename T, typename Less>
LambdaRunner key_comparator(Less less) {
  return LambdaRunner([less](eval::Operands args) -> StatusOr<Literal> {
    return Literal::scalar<bool>(less(args[0]->data<T>()[0], args[1]->data<T>()[0]));
  });
}

class SortTest : public ::testing::Test {
 protected:
  Instruction& make_sort(Shape shape, int64_t dimension, bool is_stable = false) {
    instruction_ = std::make_unique<Instruction>(Opcode::kSort, "sort", std::move(shape));
    instruction_->dimensions = {dimension};
    instruction_->is_stable = is_stable;
    instruction_->set_called_computations({&comparator_});
    return *instruction_;
  }
  StatusOr<Literal> run(std::initializer_list<const Literal*> operands, eval::ComputationRunner& runner) {
    return eval::evaluate_sort(*instruction_, std::span<const Literal* const>(operands.begin(), operands.size()),
                               runner);
  }

  Computation comparator_{"compare"};
  std::unique_ptr<Instruction> instruction_;
};

// The values of a float vector, NaNs spelled as the string "nan" so that they compare.
std::vector<std::string> spelled(const Literal& literal) {
  std::vector<std::string> out;
  for (float value : literal.data<float>()) out.push_back(std::isnan(value) ? "nan" : std::to_string(int(value)));
  return out;
}

TEST_F(SortTest, AscendingWithNaNsLastPerTheComparator) {
  make_sort(Shape::array(P::kF32, {5}), 0);
  Literal keys = Literal::vector<float>({3, kNaN, 1, -2, 2});
  LambdaRunner runner = key_comparator<float>(
      [](float a, float b) { return std::isnan(b) ? !std::isnan(a) : a < b; });
  StatusOr<Literal> result = run({&keys}, runner);
  ASSERT_TRUE(result.ok()) << result.status().to_string();
  EXPECT_EQ(spelled(*result), (std::vector<std::string>{"-2", "1", "2", "3", "nan"}));
}

TEST_F(SortTest, DescendingWithNaNsFirstPerTheComparator) {
  make_sort(Shape::array(P::kF32, {5}), 0);
  Literal keys = Literal::vector<float>({3, kNaN, 1, -2, 2});
  LambdaRunner runner = key_comparator<float>(
      [](float a, float b) { return std::isnan(a) ? !std::isnan(b) : a > b; });
  StatusOr<Literal> result = run({&keys}, runner);
  ASSERT_TRUE(result.ok()) << result.status().to_string();
  EXPECT_EQ(spelled(*result), (std::vector<std::string>{"nan", "3", "2", "1", "-2"}));
}

TEST_F(SortTest, VariadicKeyValueSortPassesPairsInterleaved) {
  make_sort(Shape::tuple({Shape::array(P::kS32, {4}), Shape::array(P::kF32, {4})}), 0);
  Literal keys = Literal::vector<int32_t>({3, 1, 4, 2});
  Literal payload = Literal::vector<float>({30, 10, 40, 20});
  LambdaRunner runner([](eval::Operands args) -> StatusOr<Literal> {
    EXPECT_EQ(args.size(), 4u);  // (a_0, b_0, a_1, b_1)
    EXPECT_EQ(args[2]->data<float>()[0], args[0]->data<int32_t>()[0] * 10.0f) << "a_1 belongs to a_0";
    EXPECT_EQ(args[3]->data<float>()[0], args[1]->data<int32_t>()[0] * 10.0f) << "b_1 belongs to b_0";
    return Literal::scalar<bool>(args[0]->data<int32_t>()[0] < args[1]->data<int32_t>()[0]);
  });
  StatusOr<Literal> result = run({&keys, &payload}, runner);
  ASSERT_TRUE(result.ok()) << result.status().to_string();
  ASSERT_TRUE(result->shape().is_tuple());
  EXPECT_EQ(values<int32_t>(result->element(0)), (std::vector<int32_t>{1, 2, 3, 4}));
  EXPECT_EQ(values<float>(result->element(1)), (std::vector<float>{10, 20, 30, 40}));
}

TEST_F(SortTest, StableSortKeepsEqualKeysInOrderAlongDimensionOne) {
  make_sort(Shape::tuple({Shape::array(P::kS32, {2, 4}), Shape::array(P::kS32, {2, 4})}), 1, /*is_stable=*/true);
  Literal keys = Literal::from_values<int32_t>({2, 4}, {2, 1, 2, 1, 0, 0, 0, 0});
  Literal positions = Literal::from_values<int32_t>({2, 4}, {0, 1, 2, 3, 4, 5, 6, 7});
  LambdaRunner runner = key_comparator<int32_t>([](int32_t a, int32_t b) { return a < b; });
  StatusOr<Literal> result = run({&keys, &positions}, runner);
  ASSERT_TRUE(result.ok()) << result.status().to_string();
  EXPECT_EQ(values<int32_t>(result->element(0)), (std::vector<int32_t>{1, 1, 2, 2, 0, 0, 0, 0}));
  EXPECT_EQ(values<int32_t>(result->element(1)), (std::vector<int32_t>{1, 3, 0, 2, 4, 5, 6, 7}));
}

TEST_F(SortTest, UnstableSortIsAlsoStableAndDeterministic) {
  make_sort(Shape::tuple({Shape::array(P::kS32, {6}), Shape::array(P::kS32, {6})}), 0, /*is_stable=*/false);
  Literal keys = Literal::vector<int32_t>({1, 0, 1, 0, 1, 0});
  Literal positions = Literal::vector<int32_t>({0, 1, 2, 3, 4, 5});
  LambdaRunner runner = key_comparator<int32_t>([](int32_t a, int32_t b) { return a < b; });
  StatusOr<Literal> result = run({&keys, &positions}, runner);
  ASSERT_TRUE(result.ok()) << result.status().to_string();
  EXPECT_EQ(values<int32_t>(result->element(1)), (std::vector<int32_t>{1, 3, 5, 0, 2, 4}));
}

TEST_F(SortTest, SortAlongDimensionZeroOfAMatrix) {
  make_sort(Shape::array(P::kS32, {3, 2}), 0);
  Literal keys = Literal::from_values<int32_t>({3, 2}, {3, 1, 1, 2, 2, 0});
  LambdaRunner runner = key_comparator<int32_t>([](int32_t a, int32_t b) { return a < b; });
  StatusOr<Literal> result = run({&keys}, runner);
  ASSERT_TRUE(result.ok()) << result.status().to_string();
  EXPECT_EQ(values<int32_t>(*result), (std::vector<int32_t>{1, 0, 2, 1, 3, 2}));
}

TEST_F(SortTest, MalformedSortsAreErrors) {
  Literal keys = Literal::vector<int32_t>({2, 1});
  Literal short_values = Literal::vector<int32_t>({1});
  LambdaRunner runner = key_comparator<int32_t>([](int32_t a, int32_t b) { return a < b; });
  make_sort(Shape::array(P::kS32, {2}), 1).set_location({3, 5});
  StatusOr<Literal> result = run({&keys}, runner);
  ASSERT_FALSE(result.ok()) << "sort dimension out of range";
  EXPECT_EQ(result.status().location(), (SourceLocation{3, 5}));
  make_sort(Shape::tuple({Shape::array(P::kS32, {2}), Shape::array(P::kS32, {1})}), 0);
  EXPECT_FALSE(run({&keys, &short_values}, runner).ok()) << "operands of different dimensions";
  make_sort(Shape::array(P::kS32, {2}), 0);
  LambdaRunner not_pred([](eval::Operands) -> StatusOr<Literal> { return Literal::scalar<int32_t>(1); });
  EXPECT_FALSE(run({&keys}, not_pred).ok()) << "comparator must return pred";
  LambdaRunner failing([](eval::Operands) -> StatusOr<Literal> { return internal_error("comparator failed"); });
  result = run({&keys}, failing);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().message(), "comparator failed");
}

}  // namespace
}  // namespace insitu
