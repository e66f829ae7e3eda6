// reduce, reduce-window, scatter and sort through the real interpreter (evaluate_computation),
// with to_apply computations built from HLO instructions rather than test lambdas.
#include <gtest/gtest.h>

#include <functional>
#include <memory>

#include "insitu/evaluator/evaluator.h"
#include "insitu/support/str.h"
#include "lambda_runner.h"

namespace insitu {
namespace {

using P = PrimitiveType;
using testing::values;

Instruction* add_parameter(Computation& computation, int64_t number, Shape shape) {
  auto parameter = std::make_unique<Instruction>(Opcode::kParameter, str_cat("p", number), std::move(shape));
  parameter->parameter_number = number;
  return computation.add_instruction(std::move(parameter));
}

Instruction* add_op(Computation& computation, Opcode opcode, Shape shape, std::vector<Instruction*> operands) {
  std::string name = str_cat(opcode_name(opcode), computation.instruction_count());
  auto instruction = std::make_unique<Instruction>(opcode, std::move(name), std::move(shape));
  for (Instruction* operand : operands) instruction->append_operand(operand);
  return computation.add_instruction(std::move(instruction));
}

// (a, b) -> a + b on scalars of `type`.
std::unique_ptr<Computation> make_add(P type) {
  auto add = std::make_unique<Computation>("add");
  Instruction* a = add_parameter(*add, 0, Shape::scalar(type));
  Instruction* b = add_parameter(*add, 1, Shape::scalar(type));
  add->set_root(add_op(*add, Opcode::kAdd, Shape::scalar(type), {a, b}));
  return add;
}

// An entry computation: one parameter per argument and a root of `opcode` over them, set up by
// `configure`; runs it through the interpreter.
StatusOr<Literal> run_single(Opcode opcode, Shape shape, std::vector<const Literal*> arguments,
                             const std::function<void(Instruction&)>& configure) {
  Computation entry("entry");
  std::vector<Instruction*> parameters;
  for (size_t i = 0; i < arguments.size(); ++i)
    parameters.push_back(add_parameter(entry, static_cast<int64_t>(i), arguments[i]->shape()));
  Instruction* root = add_op(entry, opcode, std::move(shape), parameters);
  configure(*root);
  entry.set_root(root);
  return evaluate_computation(entry, arguments);
}

TEST(ToApplyInterpreterTest, IntegerReduceRunsTheAddComputation) {
  std::unique_ptr<Computation> add = make_add(P::kS32);
  Literal input = Literal::from_values<int32_t>({2, 3}, {1, 2, 3, 4, 5, 6});
  Literal init = Literal::scalar<int32_t>(100);
  StatusOr<Literal> result = run_single(Opcode::kReduce, Shape::array(P::kS32, {2}), {&input, &init},
                                        [&](Instruction& reduce) {
                                          reduce.dimensions = {1};
                                          reduce.set_called_computations({add.get()});
                                        });
  ASSERT_TRUE(result.ok()) << result.status().to_string();
  EXPECT_EQ(values<int32_t>(*result), (std::vector<int32_t>{106, 115}));
}

TEST(ToApplyInterpreterTest, FloatSumThroughAnAddComputationAccumulatesInDouble) {
  std::unique_ptr<Computation> add = make_add(P::kF32);
  Literal input = Literal::vector<float>({16777216.0f, 1.0f, 1.0f, 1.0f});
  Literal init = Literal::scalar<float>(0);
  StatusOr<Literal> result = run_single(Opcode::kReduce, Shape::scalar(P::kF32), {&input, &init},
                                        [&](Instruction& reduce) {
                                          reduce.dimensions = {0};
                                          reduce.set_called_computations({add.get()});
                                        });
  ASSERT_TRUE(result.ok()) << result.status().to_string();
  EXPECT_EQ(values<float>(*result), (std::vector<float>{16777220.0f}));  // 2^24 + 3 rounds to even
}

TEST(ToApplyInterpreterTest, ReduceWindowSum) {
  std::unique_ptr<Computation> add = make_add(P::kS32);
  Literal input = Literal::vector<int32_t>({1, 2, 3, 4, 5});
  Literal init = Literal::scalar<int32_t>(0);
  StatusOr<Literal> result = run_single(Opcode::kReduceWindow, Shape::array(P::kS32, {2}), {&input, &init},
                                        [&](Instruction& window) {
                                          WindowDimension w;
                                          w.size = 3;
                                          w.stride = 2;
                                          window.window = {w};
                                          window.set_called_computations({add.get()});
                                        });
  ASSERT_TRUE(result.ok()) << result.status().to_string();
  EXPECT_EQ(values<int32_t>(*result), (std::vector<int32_t>{6, 12}));
}

TEST(ToApplyInterpreterTest, ScatterAddComputation) {
  std::unique_ptr<Computation> add = make_add(P::kS32);
  Literal operand = Literal::vector<int32_t>({0, 0, 0});
  Literal indices = Literal::vector<int32_t>({2, 2, 0, 9});
  Literal updates = Literal::vector<int32_t>({1, 2, 3, 4});
  StatusOr<Literal> result = run_single(Opcode::kScatter, Shape::array(P::kS32, {3}), {&operand, &indices, &updates},
                                        [&](Instruction& scatter) {
                                          scatter.scatter_dimension_numbers.inserted_window_dims = {0};
                                          scatter.scatter_dimension_numbers.scatter_dims_to_operand_dims = {0};
                                          scatter.scatter_dimension_numbers.index_vector_dim = 1;
                                          scatter.set_called_computations({add.get()});
                                        });
  ASSERT_TRUE(result.ok()) << result.status().to_string();
  EXPECT_EQ(values<int32_t>(*result), (std::vector<int32_t>{3, 0, 3}));
}

TEST(ToApplyInterpreterTest, SortWithCompareGreaterThan) {
  Computation compare("compare");
  Instruction* a = add_parameter(compare, 0, Shape::scalar(P::kF32));
  Instruction* b = add_parameter(compare, 1, Shape::scalar(P::kF32));
  Instruction* greater = add_op(compare, Opcode::kCompare, Shape::scalar(P::kPred), {a, b});
  greater->comparison_direction = ComparisonDirection::kGt;
  compare.set_root(greater);
  Literal keys = Literal::vector<float>({2, 5, -1, 3});
  StatusOr<Literal> result = run_single(Opcode::kSort, Shape::array(P::kF32, {4}), {&keys},
                                        [&](Instruction& sort) {
                                          sort.dimensions = {0};
                                          sort.set_called_computations({&compare});
                                        });
  ASSERT_TRUE(result.ok()) << result.status().to_string();
  EXPECT_EQ(values<float>(*result), (std::vector<float>{5, 3, 2, -1}));
}

}  // namespace
}  // namespace insitu
