// Concurrent calls on one Executable (executable.h, "Thread safety"): 4 threads x 1,000 calls,
// donating and not, sharing one pool, each call with its own arena and stats. Run under
// ThreadSanitizer by scripts/sanitize; here it checks every result against the evaluator.
#include <atomic>
#include <thread>

#include "executable_test_util.h"

namespace insitu {
namespace {

using testing_runtime::compile;
using testing_runtime::Compiled;

// A while loop over a donated cache (temporaries in the arena: the loop state), plus an
// elementwise chain big enough to split across the pool's workers.
constexpr std::string_view kModule = R"(
HloModule concurrent, input_output_alias={ {0}: (0, {}, may-alias) }

body {
  state = (s32[], f32[8,64], f32[1,64]) parameter(0)
  i = s32[] get-tuple-element(state), index=0
  cache = f32[8,64] get-tuple-element(state), index=1
  row = f32[1,64] get-tuple-element(state), index=2
  zero = s32[] constant(0)
  updated = f32[8,64] dynamic-update-slice(cache, row, i, zero)
  one = s32[] constant(1)
  next = s32[] add(i, one)
  half = f32[] constant(0.5)
  halves = f32[1,64] broadcast(half), dimensions={}
  next_row = f32[1,64] add(row, halves)
  ROOT out = (s32[], f32[8,64], f32[1,64]) tuple(next, updated, next_row)
}

cond {
  state = (s32[], f32[8,64], f32[1,64]) parameter(0)
  i = s32[] get-tuple-element(state), index=0
  limit = s32[] constant(8)
  ROOT more = pred[] compare(i, limit), direction=LT
}

ENTRY main {
  cache = f32[8,64] parameter(0)
  row = f32[1,64] parameter(1)
  big = f32[131072] parameter(2)
  zero = s32[] constant(0)
  init = (s32[], f32[8,64], f32[1,64]) tuple(zero, cache, row)
  loop = (s32[], f32[8,64], f32[1,64]) while(init), condition=cond, body=body
  result = f32[8,64] get-tuple-element(loop), index=1
  squared = f32[131072] multiply(big, big)
  shifted = f32[131072] add(squared, big)
  ROOT tuple = (f32[8,64], f32[131072]) tuple(result, shifted)
}
)";

Literal ramp(const Shape& shape, float start, float step) {
  Literal literal(shape);
  float value = start;
  for (float& element : literal.data<float>()) {
    element = value;
    value += step;
  }
  return literal;
}

TEST(RuntimeConcurrency, FourThreadsShareOneExecutableDonatingAndNot) {
  Compiled compiled = compile(kModule);
  ASSERT_TRUE(compiled.executable != nullptr);
  Executable& executable = *compiled.executable;
  constexpr int kThreads = 4;
  constexpr int kCalls = 1000;

  // Per thread: its own row and big input (so results differ between threads) and its expected
  // result from the evaluator (the loop overwrites the whole cache, so it does not depend on the
  // cache passed in).
  struct PerThread {
    Literal row, big;
    std::vector<Literal> expected;
  };
  std::vector<PerThread> inputs(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    PerThread& input = inputs[t];
    input.row = ramp(Shape::array(PrimitiveType::kF32, {1, 64}), 100.0f * t, 1);
    input.big = ramp(Shape::array(PrimitiveType::kF32, {131072}), static_cast<float>(t), 0.25f);
    const Literal cache = ramp(Shape::array(PrimitiveType::kF32, {8, 64}), 0, 1);
    StatusOr<Literal> expected = evaluate_module(*compiled.original, std::vector<Literal>{cache, input.row, input.big});
    ASSERT_TRUE(expected.ok()) << expected.status().to_string();
    input.expected = {expected->element(0), expected->element(1)};
  }

  // What one call copies, donating and not (measured alone; concurrent calls must match it).
  int64_t bytes_per_call[2] = {0, 0};
  for (bool donate : {false, true}) {
    ExecutionStats stats;
    StatusOr<std::vector<BufferHandle>> alone = executable.execute(
        {*BufferHandle::from_literal(ramp(Shape::array(PrimitiveType::kF32, {8, 64}), 0, 1)),
         *BufferHandle::from_literal(inputs[0].row), *BufferHandle::from_literal(inputs[0].big)},
        {.donate = {donate, false, false}, .stats = &stats});
    ASSERT_TRUE(alone.ok()) << alone.status().to_string();
    bytes_per_call[donate] = stats.bytes_copied;
  }
  // The undonated cache costs exactly its private copy more.
  EXPECT_EQ(bytes_per_call[0] - bytes_per_call[1], 8 * 64 * 4);

  std::atomic<int> failures{0};
  std::atomic<int64_t> copied_bytes{0};
  auto worker = [&](int t) {
    const PerThread& input = inputs[t];
    BufferHandle cache = *BufferHandle::from_literal(ramp(Shape::array(PrimitiveType::kF32, {8, 64}), 0, 1));
    const BufferHandle row = *BufferHandle::from_literal(input.row);
    const BufferHandle big = *BufferHandle::from_literal(input.big);
    for (int call = 0; call < kCalls; ++call) {
      // Odd threads donate the cache and carry the result on (a decode loop); even threads do
      // not donate, so each call pays the counted private copy of the may-alias cache.
      const bool donate = t % 2 == 1;
      ExecutionStats stats;
      StatusOr<std::vector<BufferHandle>> results =
          executable.execute({cache, row, big}, {.donate = {donate, false, false}, .threads = 2, .stats = &stats});
      if (!results.ok() || results->size() != 2) {
        ++failures;
        ADD_FAILURE() << "thread " << t << " call " << call << ": " << results.status().to_string();
        return;
      }
      copied_bytes += stats.bytes_copied;
      if (donate) {
        if ((*results)[0].data() == nullptr || !cache.is_donated()) ++failures;
        cache = (*results)[0];
      }
      // Checking every call would dominate under TSan; every 50th call and the last suffice.
      if (call % 50 == 0 || call == kCalls - 1) {
        const bool right = *(*results)[0].to_literal() == input.expected[0] &&
                           *(*results)[1].to_literal() == input.expected[1];
        if (!right) {
          ++failures;
          ADD_FAILURE() << "thread " << t << " call " << call << " gave a wrong result";
          return;
        }
      }
    }
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) threads.emplace_back(worker, t);
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(failures.load(), 0);
  // Each call's stats are its own: the sum is exactly what the calls would copy one by one.
  EXPECT_EQ(copied_bytes.load(), int64_t{kThreads / 2} * kCalls * (bytes_per_call[0] + bytes_per_call[1]));
  EXPECT_EQ(executable.last_stats().peak_memory_bytes, executable.assignment().peak_memory_bytes());
}

TEST(RuntimeConcurrency, OneDonatedHandleGivenToTwoCallsAtOnceHasOneWinner) {
  Compiled compiled = compile(kModule);
  ASSERT_TRUE(compiled.executable != nullptr);
  const BufferHandle row = *BufferHandle::from_literal(ramp(Shape::array(PrimitiveType::kF32, {1, 64}), 0, 1));
  const BufferHandle big = *BufferHandle::from_literal(ramp(Shape::array(PrimitiveType::kF32, {131072}), 0, 1));
  // 400 rounds: validation used to read the cache's buffer after the other call could have
  // consumed its handle (an abort in 1 of about 150 rounds).
  for (int round = 0; round < 400; ++round) {
    const BufferHandle cache = *BufferHandle::from_literal(ramp(Shape::array(PrimitiveType::kF32, {8, 64}), 0, 1));
    std::atomic<int> succeeded{0}, refused{0};
    auto call = [&] {
      StatusOr<std::vector<BufferHandle>> results =
          compiled.executable->execute({cache, row, big}, {.donate = {true, false, false}, .threads = 1});
      if (results.ok()) {
        ++succeeded;
      } else {
        const std::string message = results.status().message();
        // The loser either finds the handle reserved by the other call or already consumed.
        if (message.find("donated to another call running now") != std::string::npos ||
            message.find("was donated to a previous call") != std::string::npos)
          ++refused;
        else
          ADD_FAILURE() << message;
      }
    };
    std::thread first(call), second(call);
    first.join();
    second.join();
    EXPECT_EQ(succeeded.load(), 1);
    EXPECT_EQ(refused.load(), 1);
    EXPECT_TRUE(cache.is_donated());
  }
}

// last_stats() is the call that finished last, whichever thread made it: calls made one after
// another from different threads (each publishing into its own slot) alternate between a
// donated call and an undonated one, which pays the cache's private copy on top.
TEST(RuntimeConcurrency, LastStatsIsTheCallThatFinishedLastOnAnyThread) {
  Compiled compiled = compile(kModule);
  ASSERT_TRUE(compiled.executable != nullptr);
  Executable& executable = *compiled.executable;
  const BufferHandle row = *BufferHandle::from_literal(ramp(Shape::array(PrimitiveType::kF32, {1, 64}), 0, 1));
  const BufferHandle big = *BufferHandle::from_literal(ramp(Shape::array(PrimitiveType::kF32, {131072}), 0, 1));
  int64_t copied_by[2] = {-1, -1};  // [donate]: what the call reported in its own stats
  auto call = [&](bool donate) {
    const BufferHandle cache = *BufferHandle::from_literal(ramp(Shape::array(PrimitiveType::kF32, {8, 64}), 0, 1));
    ExecutionStats stats;
    ASSERT_TRUE(
        executable.execute({cache, row, big}, {.donate = {donate, false, false}, .threads = 1, .stats = &stats}).ok());
    copied_by[donate] = stats.bytes_copied;
  };
  call(false);
  call(true);
  ASSERT_EQ(copied_by[0] - copied_by[1], 8 * 64 * 4);
  for (int round = 0; round < 20; ++round) {
    const bool donate = round % 2 == 0;
    // Two rounds on new threads, two on this one: every switch between slots is exercised.
    if (round % 4 < 2) {
      std::thread(call, donate).join();
    } else {
      call(donate);
    }
    EXPECT_EQ(executable.last_stats().bytes_copied, copied_by[donate]) << "round " << round;
  }
}

}  // namespace
}  // namespace insitu
