// reduce and reduce-window of the reference evaluator: fold order, variadic reductions, init
// values, XLA's double-precision sum, windows with stride, padding and dilations.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <memory>

#include "insitu/evaluator/ops.h"
#include "lambda_runner.h"

namespace insitu {
namespace {

using P = PrimitiveType;
using testing::binary_runner;
using testing::LambdaRunner;
using testing::values;

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

StatusOr<Literal> run_reduce(const Instruction& reduce, std::initializer_list<const Literal*> operands,
                             eval::ComputationRunner& runner) {
  return eval::evaluate_reduce(reduce, std::span<const Literal* const>(operands.begin(), operands.size()), runner);
}

StatusOr<Literal> run_window(const Instruction& reduce, std::initializer_list<const Literal*> operands,
                             eval::ComputationRunner& runner) {
  return eval::evaluate_reduce_window(reduce, std::span<const Literal* const>(operands.begin(), operands.size()),
                                      runner);
}

class ReduceTest : public ::testing::Test {
 protected:
  Instruction& make_reduce(Shape shape, std::vector<int64_t> dimensions) {
    instruction_ = std::make_unique<Instruction>(Opcode::kReduce, "reduce", std::move(shape));
    instruction_->dimensions = std::move(dimensions);
    instruction_->set_called_computations({&to_apply_});
    return *instruction_;
  }
  Instruction& make_window(Shape shape, std::vector<WindowDimension> window) {
    instruction_ = std::make_unique<Instruction>(Opcode::kReduceWindow, "reduce-window", std::move(shape));
    instruction_->window = std::move(window);
    instruction_->set_called_computations({&to_apply_});
    return *instruction_;
  }

  Computation to_apply_{"add"};
  std::unique_ptr<Instruction> instruction_;
};

LambdaRunner add_f32() { return binary_runner<float>([](float a, float b) { return a + b; }); }
LambdaRunner max_f32() { return binary_runner<float>([](float a, float b) { return std::max(a, b); }); }

TEST_F(ReduceTest, SumOverDimensionZero) {
  Literal input = Literal::from_values<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  Literal zero = Literal::scalar<float>(0);
  LambdaRunner runner = add_f32();
  StatusOr<Literal> result = run_reduce(make_reduce(Shape::array(P::kF32, {3}), {0}), {&input, &zero}, runner);
  ASSERT_TRUE(result.ok()) << result.status().to_string();
  EXPECT_EQ(values<float>(*result), (std::vector<float>{5, 7, 9}));
  EXPECT_EQ(runner.calls, 6);
}

TEST_F(ReduceTest, SumOverBothDimensionsToScalar) {
  Literal input = Literal::from_values<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  Literal zero = Literal::scalar<float>(0);
  LambdaRunner runner = add_f32();
  StatusOr<Literal> result = run_reduce(make_reduce(Shape::scalar(P::kF32), {0, 1}), {&input, &zero}, runner);
  ASSERT_TRUE(result.ok()) << result.status().to_string();
  EXPECT_EQ(result->shape().rank(), 0);
  EXPECT_EQ(values<float>(*result), (std::vector<float>{21}));
}

TEST_F(ReduceTest, InitValueThatIsNotTheIdentityCountsOncePerOutput) {
  Literal input = Literal::from_values<int32_t>({2, 3}, {1, 2, 3, 4, 5, 6});
  Literal ten = Literal::scalar<int32_t>(10);
  LambdaRunner runner = binary_runner<int32_t>([](int32_t a, int32_t b) { return a + b; });
  StatusOr<Literal> result = run_reduce(make_reduce(Shape::array(P::kS32, {2}), {1}), {&input, &ten}, runner);
  ASSERT_TRUE(result.ok()) << result.status().to_string();
  EXPECT_EQ(values<int32_t>(*result), (std::vector<int32_t>{16, 25}));
}

TEST_F(ReduceTest, FoldsReducedDimensionsInRowMajorOrderFromInit) {
  // acc * 10 + x records the order in which elements were folded.
  Literal input = Literal::from_values<int32_t>({2, 2}, {1, 2, 3, 4});
  Literal zero = Literal::scalar<int32_t>(0);
  LambdaRunner runner = binary_runner<int32_t>([](int32_t acc, int32_t x) { return acc * 10 + x; });
  EXPECT_EQ(values<int32_t>(*run_reduce(make_reduce(Shape::scalar(P::kS32), {0, 1}), {&input, &zero}, runner)),
            (std::vector<int32_t>{1234}));
  EXPECT_EQ(values<int32_t>(*run_reduce(make_reduce(Shape::array(P::kS32, {2}), {0}), {&input, &zero}, runner)),
            (std::vector<int32_t>{13, 24}));
  Literal seven = Literal::scalar<int32_t>(7);
  EXPECT_EQ(values<int32_t>(*run_reduce(make_reduce(Shape::array(P::kS32, {2}), {1}), {&input, &seven}, runner)),
            (std::vector<int32_t>{712, 734}));
}

TEST_F(ReduceTest, FoldOrderFollowsTheInputLayoutAsXlaDoes) {
  // Column-major input {0,1}: XLA's evaluator walks dimension 0 fastest.
  Literal input(Shape::array(P::kS32, {2, 2}, Layout{{0, 1}}));
  std::vector<int32_t> data = {1, 2, 3, 4};  // logical row-major values
  std::copy(data.begin(), data.end(), input.data<int32_t>().begin());
  Literal zero = Literal::scalar<int32_t>(0);
  LambdaRunner runner = binary_runner<int32_t>([](int32_t acc, int32_t x) { return acc * 10 + x; });
  EXPECT_EQ(values<int32_t>(*run_reduce(make_reduce(Shape::scalar(P::kS32), {0, 1}), {&input, &zero}, runner)),
            (std::vector<int32_t>{1324}));
}

TEST_F(ReduceTest, VariadicArgmaxReturnsValueAndIndex) {
  Literal input = Literal::from_values<float>({2, 3}, {1, 5, 3, 7, 2, 7});
  Literal index = Literal::from_values<int32_t>({2, 3}, {0, 1, 2, 0, 1, 2});
  Literal value_init = Literal::scalar<float>(kNegInf);
  Literal index_init = Literal::scalar<int32_t>(0);
  // (acc_value, acc_index, x_value, x_index): the larger value wins, ties go to the lower index.
  LambdaRunner runner([](eval::Operands args) -> StatusOr<Literal> {
    EXPECT_EQ(args.size(), 4u);
    const float acc = args[0]->data<float>()[0], x = args[2]->data<float>()[0];
    const int32_t acc_index = args[1]->data<int32_t>()[0], x_index = args[3]->data<int32_t>()[0];
    const bool take = x > acc || (x == acc && x_index < acc_index);
    return Literal::tuple(
        {Literal::scalar<float>(take ? x : acc), Literal::scalar<int32_t>(take ? x_index : acc_index)});
  });
  Instruction& reduce =
      make_reduce(Shape::tuple({Shape::array(P::kF32, {2}), Shape::array(P::kS32, {2})}), {1});
  StatusOr<Literal> result = run_reduce(reduce, {&input, &index, &value_init, &index_init}, runner);
  ASSERT_TRUE(result.ok()) << result.status().to_string();
  ASSERT_TRUE(result->shape().is_tuple());
  EXPECT_EQ(values<float>(result->element(0)), (std::vector<float>{5, 7}));
  EXPECT_EQ(values<int32_t>(result->element(1)), (std::vector<int32_t>{1, 0}));
}

TEST_F(ReduceTest, FloatingScalarAddSumsInDoubleLikeXla) {
  // A real add computation: XLA's evaluator sums in double and rounds once, so
  // 2^24 + 1 + 1 is 2^24 + 2 (an f32 fold would stay at 2^24).
  Computation add("add");
  auto p0 = std::make_unique<Instruction>(Opcode::kParameter, "p0", Shape::scalar(P::kF32));
  p0->parameter_number = 0;
  auto p1 = std::make_unique<Instruction>(Opcode::kParameter, "p1", Shape::scalar(P::kF32));
  p1->parameter_number = 1;
  Instruction* lhs = add.add_instruction(std::move(p0));
  Instruction* rhs = add.add_instruction(std::move(p1));
  auto sum = std::make_unique<Instruction>(Opcode::kAdd, "sum", Shape::scalar(P::kF32));
  sum->append_operand(lhs);
  sum->append_operand(rhs);
  add.set_root(add.add_instruction(std::move(sum)));
  Instruction reduce(Opcode::kReduce, "reduce", Shape::scalar(P::kF32));
  reduce.dimensions = {0};
  reduce.set_called_computations({&add});

  Literal input = Literal::vector<float>({16777216.0f, 1.0f, 1.0f});
  Literal zero = Literal::scalar<float>(0);
  LambdaRunner runner = add_f32();
  StatusOr<Literal> result = run_reduce(reduce, {&input, &zero}, runner);
  ASSERT_TRUE(result.ok()) << result.status().to_string();
  EXPECT_EQ(values<float>(*result), (std::vector<float>{16777218.0f}));
  EXPECT_EQ(runner.calls, 0) << "the double-precision sum does not call to_apply";

  // The same input through a non-add computation folds in f32, one call per element.
  EXPECT_EQ(values<float>(*run_reduce(make_reduce(Shape::scalar(P::kF32), {0}), {&input, &zero}, runner)),
            (std::vector<float>{16777216.0f}));
  EXPECT_EQ(runner.calls, 3);
}

TEST_F(ReduceTest, BadInputsAreLocatedErrors) {
  Literal input = Literal::from_values<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  Literal zero = Literal::scalar<float>(0);
  LambdaRunner runner = add_f32();
  Instruction& out_of_range = make_reduce(Shape::array(P::kF32, {3}), {2});
  out_of_range.set_location({4, 7});
  StatusOr<Literal> result = run_reduce(out_of_range, {&input, &zero}, runner);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().location(), (SourceLocation{4, 7}));

  EXPECT_FALSE(run_reduce(make_reduce(Shape::array(P::kF32, {2}), {0}), {&input, &zero}, runner).ok())
      << "result shape does not match";
  EXPECT_FALSE(run_reduce(make_reduce(Shape::array(P::kF32, {3}), {0}), {&input}, runner).ok()) << "no init value";
  Instruction no_computation(Opcode::kReduce, "reduce", Shape::array(P::kF32, {3}));
  no_computation.dimensions = {0};
  EXPECT_FALSE(run_reduce(no_computation, {&input, &zero}, runner).ok());
  LambdaRunner wrong_type([](eval::Operands) -> StatusOr<Literal> { return Literal::scalar<int32_t>(1); });
  EXPECT_FALSE(run_reduce(make_reduce(Shape::array(P::kF32, {3}), {0}), {&input, &zero}, wrong_type).ok());
}

WindowDimension window_dimension(int64_t size, int64_t stride, int64_t low = 0, int64_t high = 0,
                                 int64_t base_dilation = 1, int64_t window_dilation = 1) {
  WindowDimension w;
  w.size = size;
  w.stride = stride;
  w.padding_low = low;
  w.padding_high = high;
  w.base_dilation = base_dilation;
  w.window_dilation = window_dilation;
  return w;
}

TEST_F(ReduceTest, WindowSumWithStrideAndPadding) {
  // [pad, 1, 2, 3, 4, pad], windows of 2 every 2: {1}, {2, 3}, {4}.
  Literal input = Literal::vector<float>({1, 2, 3, 4});
  Literal zero = Literal::scalar<float>(0);
  LambdaRunner runner = add_f32();
  StatusOr<Literal> result =
      run_window(make_window(Shape::array(P::kF32, {3}), {window_dimension(2, 2, 1, 1)}), {&input, &zero}, runner);
  ASSERT_TRUE(result.ok()) << result.status().to_string();
  EXPECT_EQ(values<float>(*result), (std::vector<float>{1, 5, 4}));
  EXPECT_EQ(runner.calls, 4) << "padding is skipped, not folded";
}

TEST_F(ReduceTest, WindowSum2x2) {
  Literal input = Literal::from_values<float>({3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  Literal zero = Literal::scalar<float>(0);
  LambdaRunner runner = add_f32();
  StatusOr<Literal> result = run_window(
      make_window(Shape::array(P::kF32, {2, 2}), {window_dimension(2, 1), window_dimension(2, 1)}), {&input, &zero},
      runner);
  ASSERT_TRUE(result.ok()) << result.status().to_string();
  EXPECT_EQ(values<float>(*result), (std::vector<float>{12, 16, 24, 28}));
}

TEST_F(ReduceTest, MaxPoolWithBaseDilation) {
  // Base dilation 2: [1, _, 2, _, 3]; holes are skipped, so a window of only holes is the init.
  Literal input = Literal::vector<float>({1, 2, 3});
  Literal init = Literal::scalar<float>(kNegInf);
  LambdaRunner runner = max_f32();
  StatusOr<Literal> pairs = run_window(make_window(Shape::array(P::kF32, {4}), {window_dimension(2, 1, 0, 0, 2)}),
                                       {&input, &init}, runner);
  ASSERT_TRUE(pairs.ok()) << pairs.status().to_string();
  EXPECT_EQ(values<float>(*pairs), (std::vector<float>{1, 2, 2, 3}));
  StatusOr<Literal> singles = run_window(make_window(Shape::array(P::kF32, {5}), {window_dimension(1, 1, 0, 0, 2)}),
                                         {&input, &init}, runner);
  ASSERT_TRUE(singles.ok()) << singles.status().to_string();
  EXPECT_EQ(values<float>(*singles), (std::vector<float>{1, kNegInf, 2, kNegInf, 3}));
}

TEST_F(ReduceTest, WindowDilation) {
  // Window of 2 with dilation 2 covers x[i] and x[i + 2].
  Literal input = Literal::vector<int32_t>({1, 2, 3, 4, 5});
  Literal zero = Literal::scalar<int32_t>(0);
  LambdaRunner runner = binary_runner<int32_t>([](int32_t a, int32_t b) { return a + b; });
  StatusOr<Literal> result = run_window(make_window(Shape::array(P::kS32, {3}), {window_dimension(2, 1, 0, 0, 1, 2)}),
                                        {&input, &zero}, runner);
  ASSERT_TRUE(result.ok()) << result.status().to_string();
  EXPECT_EQ(values<int32_t>(*result), (std::vector<int32_t>{4, 6, 8}));
}

TEST_F(ReduceTest, VariadicReduceWindowAndWindowOrder) {
  // Two inputs: a sum and an ordered fold (acc * 10 + x) over the same windows.
  Literal sums = Literal::vector<int32_t>({1, 2, 3, 4});
  Literal digits = Literal::vector<int32_t>({1, 2, 3, 4});
  Literal zero = Literal::scalar<int32_t>(0);
  LambdaRunner runner([](eval::Operands args) -> StatusOr<Literal> {
    const int32_t sum = args[0]->data<int32_t>()[0] + args[2]->data<int32_t>()[0];
    const int32_t digits = args[1]->data<int32_t>()[0] * 10 + args[3]->data<int32_t>()[0];
    return Literal::tuple({Literal::scalar<int32_t>(sum), Literal::scalar<int32_t>(digits)});
  });
  Instruction& window = make_window(Shape::tuple({Shape::array(P::kS32, {2}), Shape::array(P::kS32, {2})}),
                                    {window_dimension(3, 1)});
  StatusOr<Literal> result = run_window(window, {&sums, &digits, &zero, &zero}, runner);
  ASSERT_TRUE(result.ok()) << result.status().to_string();
  EXPECT_EQ(values<int32_t>(result->element(0)), (std::vector<int32_t>{6, 9}));
  EXPECT_EQ(values<int32_t>(result->element(1)), (std::vector<int32_t>{123, 234}));
}

TEST_F(ReduceTest, WindowErrors) {
  Literal input = Literal::vector<float>({1, 2, 3});
  Literal zero = Literal::scalar<float>(0);
  LambdaRunner runner = add_f32();
  EXPECT_FALSE(run_window(make_window(Shape::array(P::kF32, {3}), {}), {&input, &zero}, runner).ok())
      << "window rank does not match";
  EXPECT_FALSE(run_window(make_window(Shape::array(P::kF32, {3}), {window_dimension(1, 0)}), {&input, &zero}, runner)
                   .ok())
      << "zero stride";
  EXPECT_FALSE(run_window(make_window(Shape::array(P::kF32, {4}), {window_dimension(1, 1)}), {&input, &zero}, runner)
                   .ok())
      << "output shape does not match the window";
}

}  // namespace
}  // namespace insitu
