// Grid execution: order, zero-copy views, ragged edges, staging, aliasing, races.
#include <gtest/gtest.h>

#include <mutex>
#include <numeric>

#include "insitu/kernel/grid_executor.h"
#include "insitu/kernel/race_check.h"
#include "insitu/kernel/registry.h"

namespace insitu {
namespace {

BlockSpec blocks(std::vector<int64_t> shape, std::function<std::vector<int64_t>(std::span<const int64_t>)> map) {
  return BlockSpec{std::move(shape), std::move(map), 0};
}

std::vector<int64_t> identity_2d(std::span<const int64_t> g) { return {g[0], g[1]}; }

TEST(KernelGrid, VisitsGridInRowMajorOrderSingleThreaded) {
  std::vector<std::vector<int64_t>> visited;
  KernelSpec spec;
  spec.name = "order";
  spec.grid = {2, 3};
  spec.dimension_semantics = {DimensionSemantics::kSequential, DimensionSemantics::kParallel};
  spec.out_specs = {blocks({1, 1}, identity_2d)};
  spec.body = [&](const KernelContext& context, KernelRefs& refs) {
    visited.push_back({context.program_id(0), context.program_id(1)});
    EXPECT_EQ(context.num_programs(0), 2);
    EXPECT_EQ(context.num_programs(1), 3);
    refs.output<int32_t>(0)(0, 0) = static_cast<int32_t>(10 * context.program_id(0) + context.program_id(1));
  };
  std::vector<int32_t> out(6, -1);
  GridOperand output{reinterpret_cast<uint8_t*>(out.data()), PrimitiveType::kS32, {2, 3}};
  GridStats stats;
  ASSERT_TRUE(run_grid(spec, {}, {&output, 1}, {}, stats).ok());
  EXPECT_EQ(visited, (std::vector<std::vector<int64_t>>{{0, 0}, {0, 1}, {0, 2}, {1, 0}, {1, 1}, {1, 2}}));
  EXPECT_EQ(out, (std::vector<int32_t>{0, 1, 2, 10, 11, 12}));
  EXPECT_EQ(stats.steps, 6);
  EXPECT_EQ(stats.staged_bytes, 0);
}

TEST(KernelGrid, ParallelGridOnTwoThreadsRunsEveryStepOnce) {
  std::mutex mutex;
  std::vector<int> counts(64, 0);
  KernelSpec spec;
  spec.name = "parallel";
  spec.grid = {4, 16};
  spec.dimension_semantics = {DimensionSemantics::kSequential, DimensionSemantics::kParallel};
  spec.out_specs = {blocks({1, 1}, identity_2d)};
  spec.body = [&](const KernelContext& context, KernelRefs& refs) {
    std::lock_guard<std::mutex> lock(mutex);
    ++counts[context.program_id(0) * 16 + context.program_id(1)];
    refs.output<float>(0)(0, 0) += 1.0f;
  };
  std::vector<float> out(64, 0.0f);
  GridOperand output{reinterpret_cast<uint8_t*>(out.data()), PrimitiveType::kF32, {4, 16}};
  ThreadPool pool(2);
  GridOptions options{.pool = &pool};
  GridStats stats;
  ASSERT_TRUE(run_grid(spec, {}, {&output, 1}, options, stats).ok());
  EXPECT_EQ(counts, std::vector<int>(64, 1));
  EXPECT_EQ(out, std::vector<float>(64, 1.0f));
}

TEST(KernelGrid, BlocksAreZeroCopyViewsIntoTheArguments) {
  std::vector<float> in(8 * 6), out(8 * 6, 0.0f);
  std::iota(in.begin(), in.end(), 0.0f);
  KernelSpec spec;
  spec.name = "views";
  spec.grid = {4, 2};
  spec.in_specs = {blocks({2, 3}, identity_2d)};
  spec.out_specs = {blocks({2, 3}, identity_2d)};
  spec.body = [&](const KernelContext& context, KernelRefs& refs) {
    BlockRef<float> x = refs.input<float>(0), y = refs.output<float>(0);
    // The block's data pointer lies inside the argument buffer, at the block's first element.
    EXPECT_EQ(x.data(), in.data() + context.program_id(0) * 2 * 6 + context.program_id(1) * 3);
    EXPECT_EQ(y.data(), out.data() + context.program_id(0) * 2 * 6 + context.program_id(1) * 3);
    EXPECT_EQ(x.strides(), (std::vector<int64_t>{6, 1}));
    EXPECT_FALSE(x.is_contiguous());
    for (int64_t i = 0; i < 2; ++i)
      for (int64_t j = 0; j < 3; ++j) y(i, j) = x(i, j) * 2.0f;
  };
  GridOperand input{reinterpret_cast<uint8_t*>(in.data()), PrimitiveType::kF32, {8, 6}};
  GridOperand output{reinterpret_cast<uint8_t*>(out.data()), PrimitiveType::kF32, {8, 6}};
  GridStats stats;
  ASSERT_TRUE(run_grid(spec, {&input, 1}, {&output, 1}, {}, stats).ok());
  for (size_t k = 0; k < out.size(); ++k) EXPECT_EQ(out[k], 2.0f * k);
  EXPECT_EQ(stats.staged_bytes, 0);
}

TEST(KernelGrid, RaggedEdgeBlocksAreClippedToTheValidRegion) {
  // f32[5, 7] in 2x3 blocks: a 3x3 grid whose last row/column of blocks is clipped.
  std::vector<float> out(5 * 7, 0.0f);
  std::vector<std::vector<int64_t>> shapes;
  KernelSpec spec;
  spec.name = "ragged";
  spec.grid = {3, 3};
  spec.out_specs = {blocks({2, 3}, identity_2d)};
  spec.body = [&](const KernelContext& context, KernelRefs& refs) {
    BlockRef<float> y = refs.output<float>(0);
    shapes.push_back(y.shape());
    for (int64_t i = 0; i < y.dim(0); ++i)
      for (int64_t j = 0; j < y.dim(1); ++j) y(i, j) += 1.0f;
  };
  GridOperand output{reinterpret_cast<uint8_t*>(out.data()), PrimitiveType::kF32, {5, 7}};
  GridStats stats;
  ASSERT_TRUE(run_grid(spec, {}, {&output, 1}, {}, stats).ok());
  EXPECT_EQ(shapes, (std::vector<std::vector<int64_t>>{{2, 3}, {2, 3}, {2, 1}, {2, 3}, {2, 3}, {2, 1},
                                                        {1, 3}, {1, 3}, {1, 1}}));
  EXPECT_EQ(out, std::vector<float>(35, 1.0f));  // every element exactly once, nothing outside
}

TEST(KernelGrid, BlockStartingOutsideTheArrayIsAnError) {
  KernelSpec spec;
  spec.name = "outside";
  spec.grid = {3};
  spec.out_specs = {blocks({4}, [](std::span<const int64_t> g) { return std::vector<int64_t>{g[0]}; })};
  spec.body = [](const KernelContext&, KernelRefs&) {};
  std::vector<float> out(8);
  GridOperand output{reinterpret_cast<uint8_t*>(out.data()), PrimitiveType::kF32, {8}};
  GridStats stats;
  Status status = run_grid(spec, {}, {&output, 1}, {}, stats);
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.message().find("block (2) starts outside the array in dim 0"), std::string::npos)
      << status.message();
}

TEST(KernelGrid, OtherMemorySpaceIsStagedAndCounted) {
  std::vector<int32_t> data = {1, 2, 3, 4, 5, 6};
  const int32_t* seen = nullptr;
  KernelSpec spec;
  spec.name = "staged";
  spec.grid = {2};
  auto map = [](std::span<const int64_t> g) { return std::vector<int64_t>{g[0]}; };
  spec.in_specs = {BlockSpec{{3}, map, 1}};
  spec.out_specs = {BlockSpec{{3}, map, 1}};
  spec.input_output_aliases = {{0, 0}};
  spec.body = [&](const KernelContext&, KernelRefs& refs) {
    BlockRef<int32_t> x = refs.input<int32_t>(0), y = refs.output<int32_t>(0);
    EXPECT_EQ(x.data(), y.data());  // the aliased pair shares one staged block
    seen = y.data();
    for (int64_t i = 0; i < 3; ++i) y(i) = x(i) * 10;
  };
  GridOperand operand{reinterpret_cast<uint8_t*>(data.data()), PrimitiveType::kS32, {6}};
  GridStats stats;
  ASSERT_TRUE(run_grid(spec, {&operand, 1}, {&operand, 1}, {}, stats).ok());
  EXPECT_EQ(data, (std::vector<int32_t>{10, 20, 30, 40, 50, 60}));
  EXPECT_TRUE(seen < data.data() || seen >= data.data() + 6);  // not a view: a scratch copy
  EXPECT_EQ(stats.staged_bytes, 2 * (12 + 12));                 // in and back, per block
}

TEST(KernelGrid, AliasedInputAndOutputAreOneBuffer) {
  std::vector<float> data = {1, 2, 3, 4};
  KernelSpec spec;
  spec.name = "one_buffer";
  spec.in_specs.resize(1);
  spec.out_specs.resize(1);
  spec.input_output_aliases = {{0, 0}};
  spec.body = [](const KernelContext&, KernelRefs& refs) {
    BlockRef<float> x = refs.input<float>(0), y = refs.output<float>(0);
    EXPECT_EQ(x.data(), y.data());
    y(0) = 100.0f;
    EXPECT_EQ(x(0), 100.0f);  // the write is visible through the input
  };
  GridOperand operand{reinterpret_cast<uint8_t*>(data.data()), PrimitiveType::kF32, {4}};
  GridStats stats;
  ASSERT_TRUE(run_grid(spec, {&operand, 1}, {&operand, 1}, {}, stats).ok());
  EXPECT_EQ(data[0], 100.0f);
}

// Output block i overwrites input block i + 1 of the same (aliased) buffer: a shift.
KernelSpec shift_kernel(DimensionSemantics semantics, bool with_map = true) {
  KernelSpec spec;
  spec.name = semantics == DimensionSemantics::kParallel ? "shift_parallel" : "shift_sequential";
  spec.grid = {3};
  spec.dimension_semantics = {semantics};
  spec.in_specs = {blocks({2}, [](std::span<const int64_t> g) { return std::vector<int64_t>{g[0]}; })};
  spec.out_specs = {blocks({2}, [](std::span<const int64_t> g) { return std::vector<int64_t>{g[0] + 1}; })};
  spec.input_output_aliases = {{0, 0}};
  spec.body = [](const KernelContext&, KernelRefs& refs) {
    BlockRef<int32_t> x = refs.input<int32_t>(0), y = refs.output<int32_t>(0);
    for (int64_t i = 0; i < 2; ++i) y(i) = x(i) + 1;
  };
  return spec;
}

TEST(KernelRaces, ShiftIsRejectedUnderParallelSemantics) {
  KernelSpec spec = shift_kernel(DimensionSemantics::kParallel);
  std::vector<std::vector<int64_t>> dims = {{8}};
  Status status = check_races_statically(spec, dims, dims);
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.message(),
            "kernel \"shift_parallel\": grid steps (0) and (1) race under parallel dimension semantics: step (0) "
            "writes output 0 block (1) and step (1) reads input 0 block (1) (aliased to output 0: one buffer); mark "
            "the axis sequential or make each step write only blocks no other step touches");
}

TEST(KernelRaces, ShiftIsAcceptedUnderSequentialSemanticsAndRunsInOrder) {
  KernelSpec spec = shift_kernel(DimensionSemantics::kSequential);
  std::vector<std::vector<int64_t>> dims = {{8}};
  EXPECT_TRUE(check_races_statically(spec, dims, dims).ok());
  std::vector<int32_t> data = {0, 0, 0, 0, 0, 0, 0, 0};
  GridOperand operand{reinterpret_cast<uint8_t*>(data.data()), PrimitiveType::kS32, {8}};
  GridStats stats;
  ASSERT_TRUE(run_grid(spec, {&operand, 1}, {&operand, 1}, {}, stats).ok());
  // Step k reads block k after step k-1 wrote it: a running increment.
  EXPECT_EQ(data, (std::vector<int32_t>{0, 0, 1, 1, 2, 2, 3, 3}));
}

TEST(KernelRaces, ParallelWritesOfOneOutputBlockAreRejected) {
  KernelSpec spec;
  spec.name = "collide";
  spec.grid = {4};
  spec.dimension_semantics = {DimensionSemantics::kParallel};
  spec.out_specs = {blocks({2}, [](std::span<const int64_t> g) { return std::vector<int64_t>{g[0] / 2}; })};
  spec.body = [](const KernelContext&, KernelRefs&) {};
  std::vector<std::vector<int64_t>> dims = {{8}};
  Status status = check_races_statically(spec, {}, dims);
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.message().find("grid steps (0) and (1) race"), std::string::npos) << status.message();
  EXPECT_NE(status.message().find("writes output 0 block (0)"), std::string::npos) << status.message();
  // Revisiting the block along a sequential axis (an accumulator) is fine.
  spec.dimension_semantics = {DimensionSemantics::kSequential};
  EXPECT_TRUE(check_races_statically(spec, {}, dims).ok());
}

TEST(KernelRaces, RecordedRunReportsARaceTheStaticCheckSkipped) {
  // An index map with state (not a function of the grid index) cannot be trusted statically;
  // --check-races records what each step actually touched.
  KernelSpec spec = shift_kernel(DimensionSemantics::kParallel);
  std::vector<int32_t> data(8, 0);
  GridOperand operand{reinterpret_cast<uint8_t*>(data.data()), PrimitiveType::kS32, {8}};
  GridOptions options;
  options.record_races = true;
  GridStats stats;
  Status status = run_grid(spec, {&operand, 1}, {&operand, 1}, options, stats);
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.message().find("step (0) writes output 0 block (1) and step (1) reads input 0 block (1)"),
            std::string::npos)
      << status.message();
}

}  // namespace
}  // namespace insitu
