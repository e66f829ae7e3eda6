// Native gather against the reference evaluator, element for element: embedding rows (one
// memcpy per row), columns and single elements (element by element), 2-D start vectors with
// index_vector_dim in the middle, out-of-range and negative starts (clamped), batching
// dimensions, s64 and u8 indices, on 1 and 2 threads.
#include "insitu/evaluator/evaluator.h"
#include "insitu/ir/parser.h"
#include "kernel_test_util.h"

namespace insitu {
namespace {

using testing_runtime::random_literal;
using testing_runtime::view_of;

struct GatherCase {
  const char* text;
  std::vector<int64_t> operand, indices;
  PrimitiveType index_type = PrimitiveType::kS32;
  int64_t index_low = -3, index_high = 40;  // starts drawn from [low, high]: some clamp
};

void expect_gather_matches(const GatherCase& c, uint32_t seed) {
  StatusOr<std::unique_ptr<Module>> module = parse_module(c.text);
  ASSERT_TRUE(module.ok()) << module.status().to_string();
  const Instruction* gather = (*module)->entry()->root();
  std::mt19937 rng(seed);
  Literal operand = random_literal(PrimitiveType::kF32, c.operand, rng);
  Literal indices(Shape::array(c.index_type, c.indices));
  dispatch_element_type(c.index_type, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>)
      for (T& index : indices.data<T>())
        index = static_cast<T>(c.index_low + static_cast<int64_t>(rng() % (c.index_high - c.index_low + 1)));
  });
  std::vector<const Literal*> pointers = {&operand, &indices};
  StatusOr<Literal> expected = evaluate_computation(*(*module)->entry(), pointers);
  ASSERT_TRUE(expected.ok()) << expected.status().to_string();
  for (int threads : {1, 2}) {
    ThreadPool pool(threads);
    Literal out(gather->shape());
    const ArrayView views[] = {view_of(operand), view_of(indices)};
    ASSERT_TRUE(run_native_kernel(*gather, views, view_of(out), pool)) << c.text;
    EXPECT_TRUE(out == *expected) << c.text << " threads=" << threads;
  }
}

TEST(RuntimeGatherKernel, MatchesEvaluator) {
  const GatherCase cases[] = {
      // embedding lookup: rows of a [50,64] table for s32[3,7] ids (jnp.take)
      {R"(HloModule g
ENTRY main {
  table = f32[50,64] parameter(0)
  ids = s32[3,7,1] parameter(1)
  ROOT rows = f32[3,7,64] gather(table, ids), offset_dims={2}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=2, slice_sizes={1,64}
})",
       {50, 64}, {3, 7, 1}, PrimitiveType::kS32, -3, 60},
      // the same with s64 ids and an implicit index vector dimension, big enough for threads
      {R"(HloModule g
ENTRY main {
  table = f32[300,128] parameter(0)
  ids = s64[600] parameter(1)
  ROOT rows = f32[600,128] gather(table, ids), offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, slice_sizes={1,128}
})",
       {300, 128}, {600}, PrimitiveType::kS64, -5, 310},
      // columns: the innermost output dimension walks the operand's rows (element by element)
      {R"(HloModule g
ENTRY main {
  m = f32[9,12] parameter(0)
  cols = u8[5] parameter(1)
  ROOT picked = f32[9,5] gather(m, cols), offset_dims={0}, collapsed_slice_dims={1}, start_index_map={1}, index_vector_dim=1, slice_sizes={9,1}
})",
       {9, 12}, {5}, PrimitiveType::kU8, 0, 20},
      // 2-D windows at 2-D starts, index_vector_dim in the middle of the indices
      {R"(HloModule g
ENTRY main {
  m = f32[10,11] parameter(0)
  starts = s32[4,2,3] parameter(1)
  ROOT windows = f32[4,3,3,2] gather(m, starts), offset_dims={2,3}, collapsed_slice_dims={}, start_index_map={0,1}, index_vector_dim=1, slice_sizes={3,2}
})",
       {10, 11}, {4, 2, 3}, PrimitiveType::kS32, -4, 14},
      // batching dimensions: each batch row gathers from its own operand row
      {R"(HloModule g
ENTRY main {
  m = f32[6,20] parameter(0)
  ids = s32[6,4,1] parameter(1)
  ROOT picked = f32[6,4] gather(m, ids), offset_dims={}, collapsed_slice_dims={1}, start_index_map={1}, operand_batching_dims={0}, start_indices_batching_dims={0}, index_vector_dim=2, slice_sizes={1,1}
})",
       {6, 20}, {6, 4, 1}, PrimitiveType::kS32, -2, 25},
  };
  uint32_t seed = 1;
  for (const GatherCase& c : cases) expect_gather_matches(c, seed++);
}

}  // namespace
}  // namespace insitu
