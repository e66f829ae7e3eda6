// The runtime's native all-reduce (Executor::run_all_reduce): reduced in place in the operand's
// buffer, so an all-reduce of a donated parameter aliased to the output writes the caller's
// memory and copies nothing; an operand still read afterwards is protected by a copy that
// explain names. Devices are threads over an InProcessCommunicator here (the MPI path is
// tests/cli/mpi_cli_test.cc).
#include <gtest/gtest.h>

#include <thread>

#include "insitu/evaluator/collectives.h"
#include "insitu/ir/copy_reason.h"
#include "insitu/ir/parser.h"
#include "insitu/passes/explain.h"
#include "insitu/passes/optimize.h"
#include "insitu/runtime/executable.h"

namespace insitu {
namespace {

constexpr const char* kSum = R"(HloModule sum, replica_count=2, input_output_alias={ {}: (0, {}, may-alias) }

add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT r = f32[] add(a, b)
}

ENTRY e {
  x = f32[1024] parameter(0)
  ROOT s = f32[1024] all-reduce(x), to_apply=add
}
)";

std::unique_ptr<Executable> build(const std::string& text) {
  StatusOr<std::unique_ptr<Module>> module = parse_module(text);
  EXPECT_TRUE(module.ok()) << module.status().to_string();
  StatusOr<OptimizedModule> optimized = optimize_module(std::move(module).value());
  EXPECT_TRUE(optimized.ok()) << optimized.status().to_string();
  StatusOr<std::unique_ptr<Executable>> executable = Executable::create(std::move(optimized).value());
  EXPECT_TRUE(executable.ok()) << executable.status().to_string();
  return std::move(executable).value();
}

struct DeviceRun {
  BufferHandle input;
  const uint8_t* input_data = nullptr;
  StatusOr<std::vector<BufferHandle>> results = std::vector<BufferHandle>{};
  ExecutionStats stats;
};

// Runs `executable` on two devices, device d's input filled with d + 1 + i / 1024.
std::vector<DeviceRun> run_two(Executable& executable, bool donate) {
  InProcessCommunicator communicator(30);
  std::vector<DeviceRun> runs(2);
  std::vector<std::thread> threads;
  for (int64_t d = 0; d < 2; ++d) {
    Literal value(Shape::array(PrimitiveType::kF32, {1024}));
    for (int64_t i = 0; i < 1024; ++i) value.data<float>()[i] = static_cast<float>(d + 1) + static_cast<float>(i) / 1024;
    runs[d].input = *BufferHandle::from_literal(value);
    runs[d].input_data = runs[d].input.data();
    threads.emplace_back([&, d] {
      DeviceContext context{&communicator, {2, 1}, d};
      ExecuteOptions options{.donate = {donate}, .threads = 1, .stats = &runs[d].stats, .device = &context};
      runs[d].results = executable.execute({runs[d].input}, options);
      if (!runs[d].results.ok()) communicator.abort(d, runs[d].results.status());
    });
  }
  for (std::thread& thread : threads) thread.join();
  return runs;
}

TEST(RuntimeAllReduce, ADonatedBufferIsReducedInPlaceWithNoCopy) {
  std::unique_ptr<Executable> executable = build(kSum);
  EXPECT_TRUE(executable->fallback_instructions().empty());  // native, not the evaluator
  std::vector<DeviceRun> runs = run_two(*executable, /*donate=*/true);
  for (int64_t d = 0; d < 2; ++d) {
    ASSERT_TRUE(runs[d].results.ok()) << runs[d].results.status().to_string();
    const BufferHandle& result = runs[d].results->front();
    EXPECT_EQ(result.data(), runs[d].input_data) << "device " << d << ": not in place";
    EXPECT_EQ(runs[d].stats.bytes_copied, 0);
    EXPECT_EQ(runs[d].stats.copies_executed, 0);
    EXPECT_EQ(runs[d].stats.fallback_ops_executed, 0);
    StatusOr<Literal> value = result.to_literal();
    for (int64_t i = 0; i < 1024; ++i) ASSERT_EQ(value->data<float>()[i], 3.0f + 2.0f * static_cast<float>(i) / 1024);
  }
}

// The communicator's own fold (the native all-reduce in process) computes bf16 as the
// evaluator's reduction computation does: in f32, rounded to bf16 after every step.
TEST(RuntimeAllReduce, TheInProcessFoldRoundsBf16AfterEveryStep) {
  ASSERT_TRUE(Communicator::supports_all_reduce(PrimitiveType::kBF16, Opcode::kAdd));
  ASSERT_FALSE(Communicator::supports_all_reduce(PrimitiveType::kBF16, Opcode::kAnd));
  InProcessCommunicator communicator(30);
  const int64_t group[] = {0, 1, 2};
  const float inputs[3] = {1.0f, 0.00390625f, 0.00390625f};  // 1 + 2^-8 rounds back to 1 each step
  std::vector<BFloat16> data[3];
  std::vector<std::thread> threads;
  for (int64_t d = 0; d < 3; ++d) {
    data[d].assign(4, BFloat16::from_float(inputs[d]));
    threads.emplace_back([&, d] {
      Status status = communicator.all_reduce_in_place(d, group, PrimitiveType::kBF16, Opcode::kAdd,
                                                       reinterpret_cast<uint8_t*>(data[d].data()), 4, "test");
      EXPECT_TRUE(status.ok()) << status.to_string();
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (int64_t d = 0; d < 3; ++d)
    for (const BFloat16& value : data[d]) EXPECT_EQ(value.to_float(), 1.0f) << "device " << d;  // not 1.0078125
}

TEST(RuntimeAllReduce, AnUndonatedBufferIsProtectedAndKept) {
  std::unique_ptr<Executable> executable = build(kSum);
  std::vector<DeviceRun> runs = run_two(*executable, /*donate=*/false);
  for (int64_t d = 0; d < 2; ++d) {
    ASSERT_TRUE(runs[d].results.ok()) << runs[d].results.status().to_string();
    EXPECT_EQ(runs[d].stats.bytes_copied, 4096);  // the runtime's copy protection of an undonated input
    EXPECT_EQ(runs[d].input.to_literal()->data<float>()[0], static_cast<float>(d + 1));
    EXPECT_EQ(runs[d].results->front().to_literal()->data<float>()[0], 3.0f);
  }
}

TEST(RuntimeAllReduce, AnOperandReadAfterwardsGetsACopyThatExplainNames) {
  std::string text = kSum;
  text.replace(text.find("  ROOT s = f32[1024] all-reduce(x), to_apply=add"), 48,
               "  s = f32[1024] all-reduce(x), to_apply=add\n  ROOT t = (f32[1024], f32[1024]) tuple(s, x)");
  text.replace(text.find(", input_output_alias={ {}: (0, {}, may-alias) }"), 47, "");
  std::unique_ptr<Executable> executable = build(text);
  const Explanation explanation = explain_module(executable->module());
  // One copy protects x from the in-place reduction; the other returns the caller's x itself.
  ASSERT_EQ(explanation.copies.size(), 2u) << explanation_text(explanation);
  EXPECT_EQ(copy_reason_name(explanation.copies[0].reason), "live-after-in-place-write") << explanation_text(explanation);
  EXPECT_NE(explanation.copies[0].detail.find("%s overwrites %x in place"), std::string::npos) << explanation_text(explanation);
  EXPECT_EQ(copy_reason_name(explanation.copies[1].reason), "read-only-live-out") << explanation_text(explanation);
  std::vector<std::thread> threads;
  InProcessCommunicator communicator(30);
  std::vector<StatusOr<std::vector<BufferHandle>>> results(2, std::vector<BufferHandle>{});
  for (int64_t d = 0; d < 2; ++d)
    threads.emplace_back([&, d] {
      DeviceContext context{&communicator, {2, 1}, d};
      Literal value(Shape::array(PrimitiveType::kF32, {1024}));
      for (float& v : value.data<float>()) v = static_cast<float>(d + 1);
      results[d] = executable->execute({*BufferHandle::from_literal(value)}, {.threads = 1, .device = &context});
      if (!results[d].ok()) communicator.abort(d, results[d].status());
    });
  for (std::thread& thread : threads) thread.join();
  for (int64_t d = 0; d < 2; ++d) {
    ASSERT_TRUE(results[d].ok()) << results[d].status().to_string();
    EXPECT_EQ((*results[d])[0].to_literal()->data<float>()[5], 3.0f);
    EXPECT_EQ((*results[d])[1].to_literal()->data<float>()[5], static_cast<float>(d + 1));  // x kept
  }
}

}  // namespace
}  // namespace insitu
