// custom-call on the runtime: an in-place kernel (output_to_operand_aliasing) on a donated
// parameter writes the caller's buffer once, with no copy; the same kernel on an undonated
// parameter gets copy protection and leaves the input alone.
#include "executable_test_util.h"
#include "insitu/evaluator/evaluator.h"
#include "insitu/runtime/kernels.h"
#include "insitu/runtime/native_custom_call.h"

namespace insitu {
namespace {

using testing_runtime::compile;
using testing_runtime::Compiled;
using testing_runtime::read_text;
using testing_runtime::to_handles;

// result[i] += 1 over the (aliased, pre-filled) result: a mutating kernel.
Status plus_one(const Instruction&, std::span<const Literal* const>, Literal& result) {
  for (int32_t& value : result.data<int32_t>()) value += 1;
  return ok_status();
}

TEST(RuntimeCustomCall, InPlaceKernelOnDonatedParameterWritesTheCallersBuffer) {
  CustomCallTable registry;
  ASSERT_TRUE(registry.add({.name = "plus_one_inplace", .evaluate = plus_one}).ok());
  Compiled compiled = compile(read_text(std::string(INSITU_SOURCE_DIR) + "/tests/corpus/custom_call_inplace.hlo"),
                              ExecutableOptions{.custom_calls = &registry});
  ASSERT_TRUE(compiled.executable != nullptr);
  Literal input(Shape::array(PrimitiveType::kS32, {8, 128}));
  int32_t next = -500;
  for (int32_t& value : input.data<int32_t>()) value = next++;
  EvaluatorOptions evaluator;
  evaluator.custom_calls = &registry;
  StatusOr<Literal> expected = evaluate_module(*compiled.original, std::vector<Literal>{input}, evaluator);
  ASSERT_TRUE(expected.ok()) << expected.status().to_string();

  BufferHandle donated = *BufferHandle::from_literal(input);
  const uint8_t* memory = donated.data();
  ExecutionStats stats;
  StatusOr<std::vector<BufferHandle>> results =
      compiled.executable->execute({donated}, {.donate = {true}, .stats = &stats});
  ASSERT_TRUE(results.ok()) << results.status().to_string();
  EXPECT_TRUE(*(*results)[0].to_literal() == *expected);
  EXPECT_EQ((*results)[0].data(), memory);
  EXPECT_EQ(stats.copies_executed, 0);
  EXPECT_EQ(stats.bytes_copied, 0);

  BufferHandle kept = *BufferHandle::from_literal(input);
  StatusOr<std::vector<BufferHandle>> protected_run = compiled.executable->execute({kept}, {.stats = &stats});
  ASSERT_TRUE(protected_run.ok()) << protected_run.status().to_string();
  EXPECT_TRUE(*(*protected_run)[0].to_literal() == *expected);
  EXPECT_TRUE(*kept.to_literal() == input);
  EXPECT_EQ(stats.bytes_copied, 8 * 128 * 4);  // one runtime copy protecting the input
}

// Known at create, not at the first call (a donated input would be consumed by then).
TEST(RuntimeCustomCall, UnregisteredTargetFailsCreateLocated) {
  CustomCallTable empty;
  Compiled compiled = compile(read_text(std::string(INSITU_SOURCE_DIR) + "/tests/corpus/custom_call_inplace.hlo"),
                              ExecutableOptions{.custom_calls = &empty}, /*expect_created=*/false);
  EXPECT_TRUE(compiled.executable == nullptr);
  ASSERT_FALSE(compiled.create_status.ok());
  EXPECT_NE(compiled.create_status.message().find("no kernel is registered for target \"plus_one_inplace\""),
            std::string::npos)
      << compiled.create_status.to_string();
  EXPECT_TRUE(compiled.create_status.location().valid());
}

// insitu_unread_memory (ir/instruction.h): memory every element of which is written before it is
// read, made without writing anything; the evaluator gives zeros, so only a module that writes
// it all agrees with it.
TEST(RuntimeCustomCall, UnreadMemoryIsWrittenOnlyByWhatFillsIt) {
  Compiled compiled = compile(R"(
HloModule unread
ENTRY main {
  x = f32[4,8] parameter(0)
  i = s32[] parameter(1)
  fresh = f32[8,8] custom-call(), custom_call_target="insitu_unread_memory", api_version=API_VERSION_TYPED_FFI
  zero = s32[] constant(0)
  four = s32[] constant(4)
  top = f32[8,8] dynamic-update-slice(fresh, x, zero, zero)
  negated = f32[4,8] negate(x)
  ROOT both = f32[8,8] dynamic-update-slice(top, negated, four, zero)
})");
  ASSERT_NE(compiled.executable, nullptr);
  std::vector<Literal> arguments;
  Literal x(Shape::array(PrimitiveType::kF32, {4, 8}));
  for (int64_t k = 0; k < 32; ++k) x.data<float>()[k] = static_cast<float>(k) - 3.5f;
  Literal i(Shape::array(PrimitiveType::kS32, {}));
  arguments.push_back(std::move(x));
  arguments.push_back(std::move(i));
  StatusOr<Literal> expected = evaluate_module(*compiled.original, arguments);
  ASSERT_TRUE(expected.ok()) << expected.status().to_string();
  ExecutionStats stats;
  for (int round = 0; round < 3; ++round) {  // a reused arena holds the last call's values
    StatusOr<std::vector<BufferHandle>> results = compiled.executable->execute(to_handles(arguments), {.stats = &stats});
    ASSERT_TRUE(results.ok()) << results.status().to_string();
    EXPECT_TRUE(*(*results)[0].to_literal() == *expected);
  }
  EXPECT_EQ(stats.bytes_written, 2 * 4 * 8 * 4) << "the two halves, no fill";
  // given an operand, it is a located error
  Compiled bad = compile(R"(
HloModule bad
ENTRY main {
  x = f32[4] parameter(0)
  ROOT y = f32[4] custom-call(x), custom_call_target="insitu_unread_memory"
})", {}, /*expect_created=*/false);
  if (bad.executable != nullptr) {
    std::vector<Literal> one;
    one.emplace_back(Shape::array(PrimitiveType::kF32, {4}));
    StatusOr<std::vector<BufferHandle>> run = bad.executable->execute(to_handles(one), {});
    ASSERT_FALSE(run.ok());
    EXPECT_NE(run.status().message().find("takes no operands"), std::string::npos) << run.status().to_string();
    EXPECT_TRUE(run.status().location().valid());
  } else {
    EXPECT_NE(bad.create_status.message().find("takes no operands"), std::string::npos) << bad.create_status.to_string();
  }
}

// The table passed in is the only one consulted: an entry with a native binding there runs
// natively, though the process-wide table knows nothing of the target.
TEST(RuntimeCustomCall, InjectedTableBindsNativeKernels) {
  CustomCallTable table;
  int prepared = 0;
  CustomCallTarget target{.name = "plus_one_inplace", .evaluate = plus_one, .origin = "this test"};
  target.parts.set(NativeCustomCallPart{[&](const Instruction&, std::span<const Shape* const>,
                                            std::span<const Shape* const>) -> StatusOr<PreparedCustomCall> {
    ++prepared;
    return PreparedCustomCall([](const Instruction&, std::span<const ArrayView>, std::span<const ArrayView> outputs,
                                 ThreadPool&, ExecutionStats&) {
      auto* data = reinterpret_cast<int32_t*>(outputs[0].data);
      for (int64_t i = 0; i < outputs[0].element_count(); ++i) data[i] += 1;
      return ok_status();
    });
  }});
  ASSERT_TRUE(table.add(std::move(target)).ok());
  ASSERT_EQ(CustomCallTable::global().find("plus_one_inplace"), nullptr);
  Compiled compiled = compile(read_text(std::string(INSITU_SOURCE_DIR) + "/tests/corpus/custom_call_inplace.hlo"),
                              ExecutableOptions{.custom_calls = &table});
  ASSERT_TRUE(compiled.executable != nullptr) << compiled.create_status.to_string();
  EXPECT_EQ(prepared, 1);  // once, at create
  Literal input(Shape::array(PrimitiveType::kS32, {8, 128}));
  for (int32_t& value : input.data<int32_t>()) value = 7;
  ExecutionStats stats;
  for (int call = 0; call < 2; ++call) {
    StatusOr<std::vector<BufferHandle>> results =
        compiled.executable->execute({*BufferHandle::from_literal(input)}, {.donate = {true}, .stats = &stats});
    ASSERT_TRUE(results.ok()) << results.status().to_string();
    const Literal result = *(*results)[0].to_literal();
    for (int32_t value : result.data<int32_t>()) ASSERT_EQ(value, 8);
    EXPECT_EQ(stats.fallback_ops_executed, 0);
  }
  EXPECT_EQ(prepared, 1);
}

}  // namespace
}  // namespace insitu

namespace insitu {
namespace {

// The seed modules (the Pallas in-place question): the kernel is declared without an alias,
// so the runtime must give the evaluator's answer whatever copies the compiler kept.
class RuntimeSeed : public ::testing::TestWithParam<const char*> {};

TEST_P(RuntimeSeed, MatchesEvaluatorDonatedOrNot) {
  CustomCallTable registry;
  ASSERT_TRUE(registry.add({.name = "tpu_custom_call", .evaluate = plus_one}).ok());
  Compiled compiled = compile(read_text(std::string(INSITU_SEED_DIR) + "/" + GetParam() + ".hlo"),
                              ExecutableOptions{.custom_calls = &registry});
  ASSERT_TRUE(compiled.executable != nullptr);
  const Literal input = Literal::vector<int32_t>({10, 20, 30, 40});
  EvaluatorOptions evaluator;
  evaluator.custom_calls = &registry;
  StatusOr<Literal> expected = evaluate_module(*compiled.original, std::vector<Literal>{input}, evaluator);
  ASSERT_TRUE(expected.ok()) << expected.status().to_string();
  std::vector<Literal> expected_leaves;
  testing_runtime::flatten(*expected, expected_leaves);
  for (bool donate : {false, true}) {
    const bool must = compiled.executable->arguments()[0].must_alias;
    StatusOr<std::vector<BufferHandle>> results =
        compiled.executable->execute({*BufferHandle::from_literal(input)}, {.donate = {donate || must}});
    ASSERT_TRUE(results.ok()) << results.status().to_string();
    ASSERT_EQ(results->size(), expected_leaves.size());
    for (size_t i = 0; i < expected_leaves.size(); ++i)
      EXPECT_TRUE(*(*results)[i].to_literal() == expected_leaves[i]) << GetParam() << " result " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(Seed, RuntimeSeed,
                         ::testing::Values("sync_tensors_graph.before_optimizations",
                                           "sync_tensors_graph.after_optimizations", "ir_to_hlo"),
                         [](const ::testing::TestParamInfo<const char*>& info) {
                           std::string name = info.param;
                           for (char& c : name)
                             if (c == '.') c = '_';
                           return name;
                         });

}  // namespace
}  // namespace insitu
