// gather and scatter of the reference evaluator: embedding lookups, clamped gather starts,
// implicit index vectors, batching dimensions, scatter combining in index order, dropped
// out-of-bounds windows and variadic scatter.
#include <gtest/gtest.h>

#include <memory>

#include "insitu/evaluator/ops.h"
#include "lambda_runner.h"

namespace insitu {
namespace {

using P = PrimitiveType;
using testing::binary_runner;
using testing::LambdaRunner;
using testing::values;

StatusOr<Literal> run_gather(const Instruction& gather, const Literal& operand, const Literal& indices) {
  const Literal* operands[] = {&operand, &indices};
  return eval::evaluate_gather(gather, operands);
}

std::unique_ptr<Instruction> make_gather(Shape shape, std::vector<int64_t> offset_dims, std::vector<int64_t> collapsed,
                        std::vector<int64_t> start_index_map, int64_t index_vector_dim,
                        std::vector<int64_t> slice_sizes) {
  auto gather = std::make_unique<Instruction>(Opcode::kGather, "gather", std::move(shape));
  gather->gather_dimension_numbers.offset_dims = std::move(offset_dims);
  gather->gather_dimension_numbers.collapsed_slice_dims = std::move(collapsed);
  gather->gather_dimension_numbers.start_index_map = std::move(start_index_map);
  gather->gather_dimension_numbers.index_vector_dim = index_vector_dim;
  gather->dynamic_slice_sizes = std::move(slice_sizes);
  return gather;
}

// Row r of the table holds r*10 + column.
Literal table_4x3() { return Literal::from_values<float>({4, 3}, {0, 1, 2, 10, 11, 12, 20, 21, 22, 30, 31, 32}); }

TEST(GatherTest, EmbeddingLookupOfRows) {
  auto gather = make_gather(Shape::array(P::kF32, {3, 3}), {1}, {0}, {0}, 1, {1, 3});
  Literal indices = Literal::from_values<int32_t>({3, 1}, {2, 0, 2});
  StatusOr<Literal> result = run_gather(*gather, table_4x3(), indices);
  ASSERT_TRUE(result.ok()) << result.status().to_string();
  EXPECT_EQ(values<float>(*result), (std::vector<float>{20, 21, 22, 0, 1, 2, 20, 21, 22}));
}

TEST(GatherTest, IndexVectorDimEqualToRankMeansScalarIndices) {
  // s32[2,2] indices with index_vector_dim=2: every element is one row index.
  auto gather = make_gather(Shape::array(P::kF32, {2, 2, 3}), {2}, {0}, {0}, 2, {1, 3});
  Literal indices = Literal::from_values<int64_t>({2, 2}, {3, 1, 0, 2});
  StatusOr<Literal> result = run_gather(*gather, table_4x3(), indices);
  ASSERT_TRUE(result.ok()) << result.status().to_string();
  EXPECT_EQ(values<float>(*result), (std::vector<float>{30, 31, 32, 10, 11, 12, 0, 1, 2, 20, 21, 22}));
}

TEST(GatherTest, OutOfRangeStartsAreClampedSoTheSliceFits) {
  // Rows 7 and -3 clamp to 3 and 0; a 2-row slice starting at 3 clamps to start 2.
  auto rows = make_gather(Shape::array(P::kF32, {2, 3}), {1}, {0}, {0}, 1, {1, 3});
  Literal indices = Literal::vector<int32_t>({7, -3});
  EXPECT_EQ(values<float>(*run_gather(*rows, table_4x3(), indices)), (std::vector<float>{30, 31, 32, 0, 1, 2}));

  auto pairs = make_gather(Shape::array(P::kF32, {1, 2, 2}), {1, 2}, {}, {0, 1}, 1, {2, 2});
  Literal start = Literal::from_values<int32_t>({1, 2}, {3, 2});
  StatusOr<Literal> result = run_gather(*pairs, table_4x3(), start);
  ASSERT_TRUE(result.ok()) << result.status().to_string();
  EXPECT_EQ(values<float>(*result), (std::vector<float>{21, 22, 31, 32}));
}

TEST(GatherTest, OffsetDimsNotTrailing) {
  // Columns of the table: offset dim 0 holds the row, the batch dim is last.
  auto gather = make_gather(Shape::array(P::kF32, {4, 2}), {0}, {1}, {1}, 1, {4, 1});
  Literal indices = Literal::vector<int32_t>({2, 0});
  StatusOr<Literal> result = run_gather(*gather, table_4x3(), indices);
  ASSERT_TRUE(result.ok()) << result.status().to_string();
  EXPECT_EQ(values<float>(*result), (std::vector<float>{2, 0, 12, 10, 22, 20, 32, 30}));
}

TEST(GatherTest, BatchingDimensions) {
  // out[b] = operand[b, indices[b]].
  auto gather = make_gather(Shape::array(P::kF32, {2}), {}, {1}, {1}, 1, {1, 1});
  gather->gather_dimension_numbers.operand_batching_dims = {0};
  gather->gather_dimension_numbers.start_indices_batching_dims = {0};
  Literal operand = Literal::from_values<float>({2, 3}, {0, 1, 2, 10, 11, 12});
  Literal indices = Literal::vector<int32_t>({2, 1});
  StatusOr<Literal> result = run_gather(*gather, operand, indices);
  ASSERT_TRUE(result.ok()) << result.status().to_string();
  EXPECT_EQ(values<float>(*result), (std::vector<float>{2, 11}));
}

TEST(GatherTest, MalformedGathersAreErrors) {
  Literal indices = Literal::vector<int32_t>({1});
  EXPECT_FALSE(run_gather(*make_gather(Shape::array(P::kF32, {1, 3}), {1}, {0}, {0}, 1, {1, 5}), table_4x3(), indices)
                   .ok())
      << "slice larger than the operand";
  EXPECT_FALSE(run_gather(*make_gather(Shape::array(P::kF32, {1, 3}), {1}, {0}, {2}, 1, {1, 3}), table_4x3(), indices)
                   .ok())
      << "start_index_map out of range";
  EXPECT_FALSE(run_gather(*make_gather(Shape::array(P::kF32, {1, 3}), {1}, {0}, {0}, 3, {1, 3}), table_4x3(), indices)
                   .ok())
      << "index_vector_dim beyond the indices' rank";
  EXPECT_FALSE(run_gather(*make_gather(Shape::array(P::kF32, {1, 2}), {1}, {0}, {0}, 1, {1, 3}), table_4x3(), indices)
                   .ok())
      << "result shape does not match the slice";
  Literal float_indices = Literal::vector<float>({1});
  EXPECT_FALSE(run_gather(*make_gather(Shape::array(P::kF32, {1, 3}), {1}, {0}, {0}, 1, {1, 3}), table_4x3(),
                          float_indices)
                   .ok());
}

class ScatterTest : public ::testing::Test {
 protected:
  Instruction& make_scatter(Shape shape, std::vector<int64_t> update_window_dims, std::vector<int64_t> inserted,
                            std::vector<int64_t> to_operand_dims, int64_t index_vector_dim) {
    instruction_ = std::make_unique<Instruction>(Opcode::kScatter, "scatter", std::move(shape));
    ScatterDimensionNumbers& numbers = instruction_->scatter_dimension_numbers;
    numbers.update_window_dims = std::move(update_window_dims);
    numbers.inserted_window_dims = std::move(inserted);
    numbers.scatter_dims_to_operand_dims = std::move(to_operand_dims);
    numbers.index_vector_dim = index_vector_dim;
    instruction_->set_called_computations({&to_apply_});
    return *instruction_;
  }
  StatusOr<Literal> run(std::initializer_list<const Literal*> operands, eval::ComputationRunner& runner) {
    return eval::evaluate_scatter(*instruction_, std::span<const Literal* const>(operands.begin(), operands.size()),
                                  runner);
  }

  Computation to_apply_{"combine"};
  std::unique_ptr<Instruction> instruction_;
};

TEST_F(ScatterTest, AddWithDuplicateIndicesAccumulates) {
  make_scatter(Shape::array(P::kF32, {4}), {}, {0}, {0}, 1);
  Literal operand = Literal::vector<float>({1, 1, 1, 1});
  Literal indices = Literal::vector<int32_t>({1, 1, 3});
  Literal updates = Literal::vector<float>({1, 2, 5});
  LambdaRunner runner = binary_runner<float>([](float a, float b) { return a + b; });
  StatusOr<Literal> result = run({&operand, &indices, &updates}, runner);
  ASSERT_TRUE(result.ok()) << result.status().to_string();
  EXPECT_EQ(values<float>(*result), (std::vector<float>{1, 4, 1, 6}));
  EXPECT_EQ(values<float>(operand), (std::vector<float>{1, 1, 1, 1})) << "the operand value is not modified";
}

TEST_F(ScatterTest, OverwriteAppliesUpdatesInIndexOrderSoTheLaterWins) {
  make_scatter(Shape::array(P::kS32, {3}), {}, {0}, {0}, 1);
  Literal operand = Literal::vector<int32_t>({0, 0, 0});
  Literal indices = Literal::vector<int32_t>({2, 0, 2});
  Literal updates = Literal::vector<int32_t>({7, 8, 9});
  std::vector<std::pair<int32_t, int32_t>> seen;  // (current, update) per call
  LambdaRunner runner([&](eval::Operands args) -> StatusOr<Literal> {
    seen.emplace_back(args[0]->data<int32_t>()[0], args[1]->data<int32_t>()[0]);
    return Literal::scalar<int32_t>(args[1]->data<int32_t>()[0]);
  });
  StatusOr<Literal> result = run({&operand, &indices, &updates}, runner);
  ASSERT_TRUE(result.ok()) << result.status().to_string();
  EXPECT_EQ(values<int32_t>(*result), (std::vector<int32_t>{8, 0, 9}));
  EXPECT_EQ(seen, (std::vector<std::pair<int32_t, int32_t>>{{0, 7}, {0, 8}, {7, 9}}))
      << "the third update sees the first one's result";
}

TEST_F(ScatterTest, OutOfBoundsWindowIsDroppedNotClamped) {
  // Windows of 3 at 3 (would cover 3..5 of 0..4) and at -1 are dropped whole; the one at 1 lands.
  make_scatter(Shape::array(P::kS32, {5}), {1}, {}, {0}, 1);
  Literal operand = Literal::vector<int32_t>({0, 0, 0, 0, 0});
  Literal indices = Literal::from_values<int32_t>({3, 1}, {3, -1, 1});
  Literal updates = Literal::from_values<int32_t>({3, 3}, {1, 1, 1, 2, 2, 2, 10, 20, 30});
  LambdaRunner runner = binary_runner<int32_t>([](int32_t a, int32_t b) { return a + b; });
  StatusOr<Literal> result = run({&operand, &indices, &updates}, runner);
  ASSERT_TRUE(result.ok()) << result.status().to_string();
  EXPECT_EQ(values<int32_t>(*result), (std::vector<int32_t>{0, 10, 20, 30, 0}));
  EXPECT_EQ(runner.calls, 3);
}

TEST_F(ScatterTest, RowUpdatesIntoAMatrix) {
  make_scatter(Shape::array(P::kF32, {3, 2}), {1}, {0}, {0}, 1);
  Literal operand = Literal::from_values<float>({3, 2}, {1, 2, 3, 4, 5, 6});
  Literal indices = Literal::vector<int32_t>({2, 0});
  Literal updates = Literal::from_values<float>({2, 2}, {10, 20, 30, 40});
  LambdaRunner runner = binary_runner<float>([](float a, float b) { return a + b; });
  StatusOr<Literal> result = run({&operand, &indices, &updates}, runner);
  ASSERT_TRUE(result.ok()) << result.status().to_string();
  EXPECT_EQ(values<float>(*result), (std::vector<float>{31, 42, 3, 4, 15, 26}));
}

TEST_F(ScatterTest, VariadicScatterCombinesBothOperands) {
  // Running (sum, count) per bucket.
  make_scatter(Shape::tuple({Shape::array(P::kF32, {2}), Shape::array(P::kS32, {2})}), {}, {0}, {0}, 1);
  Literal sums = Literal::vector<float>({0, 0});
  Literal counts = Literal::vector<int32_t>({0, 0});
  Literal indices = Literal::vector<int32_t>({1, 0, 1});
  Literal value_updates = Literal::vector<float>({1.5f, 2, 3});
  Literal count_updates = Literal::vector<int32_t>({1, 1, 1});
  LambdaRunner runner([](eval::Operands args) -> StatusOr<Literal> {
    EXPECT_EQ(args.size(), 4u);
    return Literal::tuple({Literal::scalar<float>(args[0]->data<float>()[0] + args[2]->data<float>()[0]),
                           Literal::scalar<int32_t>(args[1]->data<int32_t>()[0] + args[3]->data<int32_t>()[0])});
  });
  StatusOr<Literal> result = run({&sums, &counts, &indices, &value_updates, &count_updates}, runner);
  ASSERT_TRUE(result.ok()) << result.status().to_string();
  ASSERT_TRUE(result->shape().is_tuple());
  EXPECT_EQ(values<float>(result->element(0)), (std::vector<float>{2, 4.5f}));
  EXPECT_EQ(values<int32_t>(result->element(1)), (std::vector<int32_t>{1, 2}));
}

TEST_F(ScatterTest, BatchingDimensions) {
  // operand[b, indices[b]] = updates[b].
  Instruction& scatter = make_scatter(Shape::array(P::kF32, {2, 3}), {}, {1}, {1}, 1);
  scatter.scatter_dimension_numbers.input_batching_dims = {0};
  scatter.scatter_dimension_numbers.scatter_indices_batching_dims = {0};
  Literal operand = Literal::from_values<float>({2, 3}, {0, 0, 0, 0, 0, 0});
  Literal indices = Literal::vector<int32_t>({2, 0});
  Literal updates = Literal::vector<float>({5, 6});
  LambdaRunner runner = binary_runner<float>([](float, float b) { return b; });
  StatusOr<Literal> result = run({&operand, &indices, &updates}, runner);
  ASSERT_TRUE(result.ok()) << result.status().to_string();
  EXPECT_EQ(values<float>(*result), (std::vector<float>{0, 0, 5, 6, 0, 0}));
}

TEST_F(ScatterTest, MalformedScattersAreErrors) {
  Literal operand = Literal::vector<float>({0, 0});
  Literal indices = Literal::vector<int32_t>({1});
  Literal updates = Literal::vector<float>({1});
  Literal wrong_type_updates = Literal::vector<int32_t>({1});
  LambdaRunner runner = binary_runner<float>([](float a, float b) { return a + b; });
  make_scatter(Shape::array(P::kF32, {2}), {}, {0}, {0}, 1);
  EXPECT_FALSE(run({&operand, &indices}, runner).ok()) << "no updates";
  EXPECT_FALSE(run({&operand, &indices, &wrong_type_updates}, runner).ok()) << "update type differs";
  make_scatter(Shape::array(P::kF32, {2}), {}, {}, {0}, 1);
  EXPECT_FALSE(run({&operand, &indices, &updates}, runner).ok()) << "window dims do not add up";
  make_scatter(Shape::array(P::kF32, {2}), {}, {0}, {1}, 1);
  EXPECT_FALSE(run({&operand, &indices, &updates}, runner).ok()) << "scatter_dims_to_operand_dims out of range";
  make_scatter(Shape::array(P::kF32, {2}), {}, {0}, {0}, 1);
  LambdaRunner failing([](eval::Operands) -> StatusOr<Literal> { return internal_error("combiner failed"); });
  StatusOr<Literal> result = run({&operand, &indices, &updates}, failing);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().message(), "combiner failed");
}

}  // namespace
}  // namespace insitu
