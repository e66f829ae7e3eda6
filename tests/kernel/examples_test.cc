// The example kernels through HLO custom-calls: the evaluator (oracle) and the runtime agree
// with 1 and 2 threads; aliasing and donation decide whether anything is copied.
#include <gtest/gtest.h>

#include <cmath>

#include "examples/kernels/example_kernels.h"
#include "insitu/cuda/kernel_grid.h"
#include "insitu/kernel/registry.h"
#include "insitu/runtime/native_custom_call.h"
#include "tests/kernel/kernel_test_util.h"

namespace insitu {
namespace {

using kernel_testing::evaluate_text;
using kernel_testing::leaves_of;
using kernel_testing::run_text;

template <typename T>
Literal ramp(std::vector<int64_t> dimensions, T scale, T offset) {
  Literal literal(Shape::array(kTypeOf<T>, dimensions));
  std::span<T> data = literal.data<T>();
  for (size_t k = 0; k < data.size(); ++k) data[k] = static_cast<T>((k % 97) * scale + offset);
  return literal;
}

// Runs `text` in the evaluator and in the runtime with 1 and 2 threads; every result leaf must
// be bit-identical. Returns the evaluator's leaves.
std::vector<Literal> expect_runtime_matches_evaluator(const std::string& text, const std::vector<Literal>& arguments,
                                                      std::vector<bool> donate = {}) {
  StatusOr<Literal> expected = evaluate_text(text, arguments);
  EXPECT_TRUE(expected.ok()) << expected.status().to_string();
  if (!expected.ok()) return {};
  std::vector<Literal> expected_leaves = leaves_of(*expected);
  for (int threads : {1, 2}) {
    kernel_testing::RuntimeRun run = run_text(text, arguments, threads, donate);
    EXPECT_TRUE(run.status.ok()) << run.status.to_string();
    EXPECT_EQ(run.results.size(), expected_leaves.size());
    for (size_t i = 0; i < std::min(run.results.size(), expected_leaves.size()); ++i)
      EXPECT_TRUE(run.results[i] == expected_leaves[i])
          << threads << " threads, leaf " << i << ": " << run.results[i].to_string() << " vs "
          << expected_leaves[i].to_string();
    EXPECT_EQ(run.stats.fallback_ops_executed, 0);
  }
  return expected_leaves;
}

TEST(KernelExamples, ExamplesAreRegistered) {
  // One entry per target, with every part: signature, evaluator binding, native binding, origin.
  const CustomCallTable& table = CustomCallTable::global();
  for (const char* name : {"plus_one", "adam_step", "tiled_axpy"}) {
    const CustomCallTarget* target = table.find(name);
    ASSERT_NE(target, nullptr) << name;
    EXPECT_TRUE(target->signature.has_value()) << name;
    EXPECT_TRUE(target->evaluate != nullptr) << name;
    EXPECT_NE(target->parts.get<NativeCustomCallPart>(), nullptr) << name;
    EXPECT_NE(target->parts.get<KernelGridPart>(), nullptr) << name;
    EXPECT_EQ(target->origin, "builtin") << name;
  }
  EXPECT_EQ(table.find("plus_one")->signature->input_output_aliases, (std::vector<std::pair<int64_t, int64_t>>{{0, 0}}));
  EXPECT_EQ(table.find("adam_step")->signature->input_output_aliases.size(), 3u);
}

const char* kPlusOneAliased = R"(HloModule plus, input_output_alias={ {}: (0, {}, must-alias) }
ENTRY main {
  p = s32[300000]{0} parameter(0)
  ROOT r = s32[300000]{0} custom-call(p), custom_call_target="plus_one", output_to_operand_aliasing={{}: (0, {})}
})";

TEST(KernelExamples, PlusOneAliasedAndDonatedCopiesNothing) {
  std::vector<Literal> arguments = {ramp<int32_t>({300000}, 3, -5)};
  std::vector<Literal> expected = expect_runtime_matches_evaluator(kPlusOneAliased, arguments, {true});
  ASSERT_EQ(expected.size(), 1u);
  for (int64_t k : {0, 1, 96, 299999}) EXPECT_EQ(expected[0].data<int32_t>()[k], (k % 97) * 3 - 5 + 1);
  kernel_testing::RuntimeRun run = run_text(kPlusOneAliased, arguments, 2, {true});
  ASSERT_TRUE(run.status.ok()) << run.status.to_string();
  EXPECT_EQ(run.stats.bytes_copied, 0);
  EXPECT_EQ(run.stats.copies_executed, 0);
  EXPECT_TRUE(run.arguments[0].is_donated());
}

TEST(KernelExamples, PlusOneWithoutAliasingCopiesTheOperandOnceAndLeavesItAlone) {
  const std::string text = R"(HloModule plus
ENTRY main {
  p = f32[37,5]{1,0} parameter(0)
  ROOT r = f32[37,5]{1,0} custom-call(p), custom_call_target="plus_one"
})";
  std::vector<Literal> arguments = {ramp<float>({37, 5}, 0.5f, 1.0f)};
  std::vector<Literal> expected = expect_runtime_matches_evaluator(text, arguments);
  ASSERT_EQ(expected.size(), 1u);
  EXPECT_EQ(expected[0].get<float>({36, 4}), ((36 * 5 + 4) % 97) * 0.5f + 2.0f);
  kernel_testing::RuntimeRun run = run_text(text, arguments, 1);
  ASSERT_TRUE(run.status.ok()) << run.status.to_string();
  EXPECT_EQ(run.stats.bytes_copied, 37 * 5 * 4);  // the output initialized from the operand
  EXPECT_TRUE(run.arguments[0].to_literal().value() == arguments[0]);  // the caller's buffer is untouched
}

TEST(KernelExamples, PlusOneAliasedButNotDonatedKeepsTheCallersBuffer) {
  std::string may_alias = kPlusOneAliased;
  may_alias.replace(may_alias.find("must-alias"), 10, "may-alias");
  std::vector<Literal> arguments = {ramp<int32_t>({300000}, 1, 0)};
  expect_runtime_matches_evaluator(may_alias, arguments, {false});
  kernel_testing::RuntimeRun run = run_text(may_alias, arguments, 2, {false});
  ASSERT_TRUE(run.status.ok()) << run.status.to_string();
  EXPECT_TRUE(run.arguments[0].to_literal().value() == arguments[0]);
  EXPECT_EQ(run.stats.bytes_copied, 300000 * 4);  // protecting the undonated argument, once
}

TEST(KernelExamples, TiledAxpyWithRaggedTiles) {
  const std::string text = R"(HloModule axpy
ENTRY main {
  x = f32[70,45]{1,0} parameter(0)
  y = f32[70,45]{1,0} parameter(1)
  ROOT r = f32[70,45]{1,0} custom-call(x, y), custom_call_target="tiled_axpy"
})";
  std::vector<Literal> arguments = {ramp<float>({70, 45}, 0.25f, 0.0f), ramp<float>({70, 45}, -1.0f, 3.0f)};
  std::vector<Literal> expected = expect_runtime_matches_evaluator(text, arguments);
  ASSERT_EQ(expected.size(), 1u);
  for (int64_t i : {0, 31, 32, 69})
    for (int64_t j : {0, 31, 32, 44})
      EXPECT_EQ(expected[0].get<float>({i, j}),
                2.0f * arguments[0].get<float>({i, j}) + arguments[1].get<float>({i, j}));
}

TEST(KernelExamples, AdamStepUpdatesThreeBuffersInPlace) {
  const std::string text = R"(HloModule adam, input_output_alias={ {0}: (0, {}, may-alias), {1}: (2, {}, may-alias), {2}: (3, {}, may-alias) }
ENTRY main {
  params = f32[40000]{0} parameter(0)
  grads = f32[40000]{0} parameter(1)
  m = f32[40000]{0} parameter(2)
  v = f32[40000]{0} parameter(3)
  ROOT r = (f32[40000]{0}, f32[40000]{0}, f32[40000]{0}) custom-call(params, grads, m, v), custom_call_target="adam_step", output_to_operand_aliasing={{0}: (0, {}), {1}: (2, {}), {2}: (3, {})}
})";
  std::vector<Literal> arguments = {ramp<float>({40000}, 0.01f, -0.5f), ramp<float>({40000}, -0.02f, 1.0f),
                                    ramp<float>({40000}, 0.001f, 0.0f), ramp<float>({40000}, 0.0001f, 0.01f)};
  const std::vector<bool> donate = {true, false, true, true};
  std::vector<Literal> expected = expect_runtime_matches_evaluator(text, arguments, donate);
  ASSERT_EQ(expected.size(), 3u);
  const int64_t k = 1234;
  const float g = arguments[1].data<float>()[k];
  const float m = examples::kAdamBeta1 * arguments[2].data<float>()[k] + (1 - examples::kAdamBeta1) * g;
  const float v = examples::kAdamBeta2 * arguments[3].data<float>()[k] + (1 - examples::kAdamBeta2) * g * g;
  EXPECT_FLOAT_EQ(expected[1].data<float>()[k], m);
  EXPECT_FLOAT_EQ(expected[2].data<float>()[k], v);
  const float update = examples::kAdamLearningRate * (m / (1 - examples::kAdamBeta1)) /
                       (std::sqrt(v / (1 - examples::kAdamBeta2)) + examples::kAdamEpsilon);
  EXPECT_FLOAT_EQ(expected[0].data<float>()[k], arguments[0].data<float>()[k] - update);
  kernel_testing::RuntimeRun run = run_text(text, arguments, 2, donate);
  ASSERT_TRUE(run.status.ok()) << run.status.to_string();
  EXPECT_EQ(run.stats.bytes_copied, 0);
}

}  // namespace
}  // namespace insitu

namespace insitu {
namespace {

// The CUDA layout of tiled_axpy over f32[70, 45] (kernel/bindings.h: the spec's
// KernelGridPart): 3 x 2 steps in row-major grid order, each with its x, y and
// out tile, clipped at the ragged edges (70 = 2 * 32 + 6, 45 = 32 + 13); the body's source.
TEST(KernelExamples, TiledAxpyGridLayoutForADevice) {
  const CustomCallTarget* target = CustomCallTable::global().find("tiled_axpy");
  ASSERT_NE(target, nullptr);
  const KernelGridPart* grid = target->parts.get<KernelGridPart>();
  ASSERT_NE(grid, nullptr);
  const Shape shape = Shape::array(PrimitiveType::kF32, {70, 45});
  Instruction call(Opcode::kCustomCall, "axpy", shape);
  const Shape* operands[] = {&shape, &shape};
  const Shape* outputs[] = {&shape};
  StatusOr<KernelGridLayout> layout = grid->plan(call, operands, outputs);
  ASSERT_TRUE(layout.ok()) << layout.status().to_string();
  EXPECT_EQ(layout->steps, 6);
  ASSERT_EQ(layout->blocks.size(), 18u);  // 6 steps x (2 inputs + 1 output)
  const std::vector<std::vector<int64_t>> starts = {{0, 0}, {0, 32}, {32, 0}, {32, 32}, {64, 0}, {64, 32}};
  const std::vector<std::vector<int64_t>> extents = {{32, 32}, {32, 13}, {32, 32}, {32, 13}, {6, 32}, {6, 13}};
  for (size_t step = 0; step < 6; ++step)
    for (size_t ref = 0; ref < 3; ++ref) {
      EXPECT_EQ(layout->blocks[step * 3 + ref].start, starts[step]) << step;
      EXPECT_EQ(layout->blocks[step * 3 + ref].extent, extents[step]) << step;
    }
  EXPECT_EQ(layout->cuda_function, "tiled_axpy_cuda");
  EXPECT_NE(layout->cuda_source.find("__device__ void tiled_axpy_cuda("), std::string::npos);
  EXPECT_TRUE(layout->input_output_aliases.empty());
}

// adam_step has no CUDA body: its layout is a located refusal naming it.
TEST(KernelExamples, AKernelWithoutACudaBodyHasNoDeviceLayout) {
  const CustomCallTarget* target = CustomCallTable::global().find("adam_step");
  ASSERT_NE(target, nullptr);
  const Shape shape = Shape::array(PrimitiveType::kF32, {8});
  Instruction call(Opcode::kCustomCall, "adam", Shape::tuple({shape, shape, shape}));
  const Shape* operands[] = {&shape, &shape, &shape, &shape};
  const Shape* outputs[] = {&shape, &shape, &shape};
  StatusOr<KernelGridLayout> layout = target->parts.get<KernelGridPart>()->plan(call, operands, outputs);
  ASSERT_FALSE(layout.ok());
  EXPECT_NE(layout.status().message().find("kernel \"adam_step\" has no CUDA body"), std::string::npos)
      << layout.status().to_string();
}

}  // namespace
}  // namespace insitu
