// Buffers, donation and aliasing at run time: a donated KV cache updated in place by a while
// loop (the result is the donated input's memory), copy protection of an undonated may-alias
// parameter, must-alias errors, used-up handles, and calls that fail before running leave
// their donated inputs intact.
#include <cstring>

#include "executable_test_util.h"

namespace insitu {
namespace {

using testing_runtime::compile;
using testing_runtime::Compiled;

constexpr std::string_view kKvCache = R"(
HloModule kv_cache, input_output_alias={ {0}: (0, {}, may-alias) }

body {
  state = (s32[], f32[16,64], f32[1,64]) parameter(0)
  i = s32[] get-tuple-element(state), index=0
  cache = f32[16,64] get-tuple-element(state), index=1
  row = f32[1,64] get-tuple-element(state), index=2
  zero = s32[] constant(0)
  updated = f32[16,64] dynamic-update-slice(cache, row, i, zero)
  one = s32[] constant(1)
  next = s32[] add(i, one)
  two = f32[] constant(2)
  twos = f32[1,64] broadcast(two), dimensions={}
  next_row = f32[1,64] multiply(row, twos)
  ROOT out = (s32[], f32[16,64], f32[1,64]) tuple(next, updated, next_row)
}

cond {
  state = (s32[], f32[16,64], f32[1,64]) parameter(0)
  i = s32[] get-tuple-element(state), index=0
  limit = s32[] constant(16)
  ROOT more = pred[] compare(i, limit), direction=LT
}

ENTRY main {
  cache = f32[16,64] parameter(0)
  row = f32[1,64] parameter(1)
  zero = s32[] constant(0)
  init = (s32[], f32[16,64], f32[1,64]) tuple(zero, cache, row)
  loop = (s32[], f32[16,64], f32[1,64]) while(init), condition=cond, body=body
  result = f32[16,64] get-tuple-element(loop), index=1
  ROOT tuple = (f32[16,64]) tuple(result)
}
)";

// The copy instructions of the optimized entry computation (count, bytes). Checks that the
// loop body has none and that none copies the cache.
std::pair<int64_t, int64_t> entry_copies(const Module& module) {
  int64_t count = 0, bytes = 0;
  for (const Instruction* instruction : module.entry()->instructions()) {
    if (instruction->opcode() == Opcode::kCopy) {
      ++count;
      bytes += instruction->shape().byte_size();
      EXPECT_NE(instruction->shape().dimensions(), (std::vector<int64_t>{16, 64})) << instruction->to_string();
    }
    if (instruction->opcode() != Opcode::kWhile) continue;
    for (const Instruction* in_body : instruction->while_body()->instructions())
      EXPECT_NE(in_body->opcode(), Opcode::kCopy) << in_body->to_string();
  }
  return {count, bytes};
}

Literal ramp(const Shape& shape, float start) {
  Literal literal(shape);
  float value = start;
  for (float& element : literal.data<float>()) element = value++;
  return literal;
}

struct KvInputs {
  Literal cache = ramp(Shape::array(PrimitiveType::kF32, {16, 64}), 0);
  Literal row = ramp(Shape::array(PrimitiveType::kF32, {1, 64}), 1000);
  std::vector<BufferHandle> handles() const {
    return {*BufferHandle::from_literal(cache), *BufferHandle::from_literal(row)};
  }
  Literal expected(const Module& module) const {
    StatusOr<Literal> result = evaluate_module(module, std::vector<Literal>{cache, row});
    EXPECT_TRUE(result.ok()) << result.status().to_string();
    return result->element(0);
  }
};

TEST(RuntimeDonation, DonatedCacheIsUpdatedInPlaceAndReturnedAsTheSameMemory) {
  Compiled compiled = compile(kKvCache);
  ASSERT_TRUE(compiled.executable != nullptr);
  KvInputs inputs;
  std::vector<BufferHandle> arguments = inputs.handles();
  BufferHandle cache = arguments[0];
  const uint8_t* cache_memory = cache.data();
  ExecutionStats stats;
  StatusOr<std::vector<BufferHandle>> results =
      compiled.executable->execute(arguments, {.donate = {true, false}, .threads = 2, .stats = &stats});
  ASSERT_TRUE(results.ok()) << results.status().to_string();
  ASSERT_EQ(results->size(), 1u);
  EXPECT_EQ((*results)[0].data(), cache_memory);  // the donated input's memory, not a copy
  EXPECT_TRUE(*(*results)[0].to_literal() == inputs.expected(*compiled.original));
  EXPECT_TRUE(cache.is_donated());
  // Whatever copies the compiler kept (e.g. the undonated row entering the loop state, which
  // the body overwrites) run once, outside the loop; the cache is never copied.
  const auto [static_copies, static_bytes] = entry_copies(*compiled.optimized);
  EXPECT_EQ(stats.copies_executed, static_copies);
  EXPECT_EQ(stats.bytes_copied, static_bytes);
  EXPECT_GT(stats.peak_memory_bytes, 0);
  EXPECT_EQ(stats.peak_memory_bytes, compiled.executable->assignment().peak_memory_bytes());
  EXPECT_TRUE(arguments[1].is_usable());  // not donated: still the caller's

  // Using the donated handle again is an error naming the argument, never garbage.
  StatusOr<std::vector<BufferHandle>> again = compiled.executable->execute({cache, arguments[1]});
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.status().message().rfind(
                "argument 0 (parameter 0 {}) was donated to a previous call and is no longer usable", 0),
            0u)
      << again.status().message();
  EXPECT_FALSE(cache.to_literal().ok());

  // The returned buffer can be donated to the next call (a decode loop).
  StatusOr<std::vector<BufferHandle>> next =
      compiled.executable->execute({(*results)[0], arguments[1]}, {.donate = {true, false}});
  ASSERT_TRUE(next.ok()) << next.status().to_string();
  EXPECT_EQ((*next)[0].data(), cache_memory);
}

TEST(RuntimeDonation, UndonatedMayAliasParameterGetsOneCountedRuntimeCopy) {
  Compiled compiled = compile(kKvCache);
  ASSERT_TRUE(compiled.executable != nullptr);
  KvInputs inputs;
  std::vector<BufferHandle> arguments = inputs.handles();
  ExecutionStats stats;
  StatusOr<std::vector<BufferHandle>> results = compiled.executable->execute(arguments, {.threads = 1, .stats = &stats});
  ASSERT_TRUE(results.ok()) << results.status().to_string();
  EXPECT_TRUE(*(*results)[0].to_literal() == inputs.expected(*compiled.original));
  EXPECT_NE((*results)[0].data(), arguments[0].data());
  // The protected cache, plus the compiler's copies outside the loop.
  const auto [static_copies, static_bytes] = entry_copies(*compiled.optimized);
  EXPECT_EQ(stats.bytes_copied, 16 * 64 * 4 + static_bytes);
  EXPECT_EQ(stats.copies_executed, static_copies);
  // The caller's cache is untouched and still usable.
  EXPECT_TRUE(arguments[0].is_usable());
  EXPECT_TRUE(*arguments[0].to_literal() == inputs.cache);
}

TEST(RuntimeDonation, MustAliasParameterThatIsNotDonatedIsAnError) {
  std::string text(kKvCache);
  text.replace(text.find("may-alias"), 9, "must-alias");
  Compiled compiled = compile(text);
  ASSERT_TRUE(compiled.executable != nullptr);
  KvInputs inputs;
  std::vector<BufferHandle> arguments = inputs.handles();
  StatusOr<std::vector<BufferHandle>> results = compiled.executable->execute(arguments);
  ASSERT_FALSE(results.ok());
  EXPECT_NE(results.status().message().find("parameter 0 {} is must-alias but was not donated"), std::string::npos)
      << results.status().message();
  EXPECT_TRUE(arguments[0].is_usable());
  StatusOr<std::vector<BufferHandle>> donated = compiled.executable->execute(arguments, {.donate = {true}});
  ASSERT_TRUE(donated.ok()) << donated.status().to_string();
  EXPECT_TRUE(*(*donated)[0].to_literal() == inputs.expected(*compiled.original));
}

TEST(RuntimeDonation, CallsThatFailBeforeRunningLeaveDonatedInputsIntact) {
  Compiled compiled = compile(kKvCache);
  ASSERT_TRUE(compiled.executable != nullptr);
  KvInputs inputs;
  std::vector<BufferHandle> arguments = inputs.handles();

  // Wrong argument count.
  StatusOr<std::vector<BufferHandle>> missing = compiled.executable->execute({arguments[0]}, {.donate = {true}});
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("takes 2 arguments"), std::string::npos) << missing.status().message();
  EXPECT_TRUE(arguments[0].is_usable());

  // Wrong shape of a later argument: the donated first one is not consumed.
  BufferHandle wrong = *BufferHandle::from_literal(Literal(Shape::array(PrimitiveType::kF32, {1, 63})));
  StatusOr<std::vector<BufferHandle>> bad_shape =
      compiled.executable->execute({arguments[0], wrong}, {.donate = {true, true}});
  ASSERT_FALSE(bad_shape.ok());
  EXPECT_NE(bad_shape.status().message().find("argument 1 (parameter 1 {}) has shape f32[1,63]"), std::string::npos)
      << bad_shape.status().message();
  EXPECT_TRUE(arguments[0].is_usable());
  EXPECT_TRUE(wrong.is_usable());

  // A used-up handle in a later argument: the earlier donated one stays intact.
  BufferHandle used = arguments[1];
  used.donate();
  StatusOr<std::vector<BufferHandle>> used_up =
      compiled.executable->execute({arguments[0], used}, {.donate = {true, false}});
  ASSERT_FALSE(used_up.ok());
  EXPECT_NE(used_up.status().message().find("argument 1 (parameter 1 {}) was donated"), std::string::npos);
  EXPECT_TRUE(arguments[0].is_usable());
  EXPECT_TRUE(*arguments[0].to_literal() == inputs.cache);

  // One buffer passed twice and donated.
  BufferHandle twice = *BufferHandle::from_literal(inputs.cache);
  Compiled pair = compile(R"(
HloModule pair, input_output_alias={ {}: (0, {}, may-alias) }
ENTRY main {
  a = f32[4] parameter(0)
  b = f32[4] parameter(1)
  ROOT sum = f32[4] add(a, b)
})");
  ASSERT_TRUE(pair.executable != nullptr);
  BufferHandle four = *BufferHandle::from_literal(Literal::vector<float>({1, 2, 3, 4}));
  StatusOr<std::vector<BufferHandle>> aliased = pair.executable->execute({four, four}, {.donate = {true, false}});
  ASSERT_FALSE(aliased.ok());
  EXPECT_NE(aliased.status().message().find("is the same buffer as argument 0"), std::string::npos);
  EXPECT_TRUE(four.is_usable());
  // Undonated, the same buffer twice is fine: the may-alias parameter is protected by a copy.
  ExecutionStats stats;
  StatusOr<std::vector<BufferHandle>> shared = pair.executable->execute({four, four}, {.stats = &stats});
  ASSERT_TRUE(shared.ok()) << shared.status().to_string();
  EXPECT_TRUE(*(*shared)[0].to_literal() == Literal::vector<float>({2, 4, 6, 8}));
  EXPECT_EQ(stats.bytes_copied, 16);
  EXPECT_TRUE(*four.to_literal() == Literal::vector<float>({1, 2, 3, 4}));
}

// A call that fails while running (a custom-call kernel returns an error) gives its donated
// handles back: usable, with their value, and a later call may donate them again.
TEST(RuntimeDonation, CallsThatFailWhileRunningGiveTheirDonationsBack) {
  CustomCallTable registry;
  ASSERT_TRUE(registry
                  .add({.name = "fails_at_run",
                        .evaluate = [](const Instruction&, std::span<const Literal* const>, Literal&) -> Status {
                          return invalid_argument("the kernel failed on purpose");
                        }})
                  .ok());
  Compiled compiled = compile(R"(
HloModule fails_mid_run, input_output_alias={ {}: (0, {}, may-alias) }
ENTRY main {
  cache = f32[8] parameter(0)
  q = f32[2] parameter(1)
  bad = f32[2] custom-call(q), custom_call_target="fails_at_run"
  i = s32[] constant(3)
  ROOT dus = f32[8] dynamic-update-slice(cache, bad, i)
})",
                              {.custom_calls = &registry});
  ASSERT_TRUE(compiled.executable != nullptr);
  const Literal cache_value = Literal::vector<float>({1, 2, 3, 4, 5, 6, 7, 8});
  BufferHandle cache = *BufferHandle::from_literal(cache_value);
  BufferHandle q = *BufferHandle::from_literal(Literal::vector<float>({9, 9}));
  for (int attempt = 0; attempt < 2; ++attempt) {
    StatusOr<std::vector<BufferHandle>> failed = compiled.executable->execute({cache, q}, {.donate = {true, false}});
    ASSERT_FALSE(failed.ok());
    EXPECT_NE(failed.status().message().find("the kernel failed on purpose"), std::string::npos)
        << failed.status().to_string();
    EXPECT_TRUE(cache.is_usable());
    EXPECT_TRUE(*cache.to_literal() == cache_value);
  }
  // More threads than the system starts: an error before anything runs, the donation intact.
  StatusOr<std::vector<BufferHandle>> threads =
      compiled.executable->execute({cache, q}, {.donate = {true, false}, .threads = ThreadPool::kMaxThreads + 1});
  ASSERT_FALSE(threads.ok());
  EXPECT_NE(threads.status().message().find("cannot run 1025 threads"), std::string::npos)
      << threads.status().to_string();
  EXPECT_TRUE(cache.is_usable());
}

// A call past its deadline ends with an error at the loop and gives its donation back.
TEST(RuntimeDonation, ACallPastItsDeadlineEndsAndGivesItsDonationBack) {
  Compiled compiled = compile(R"(
HloModule forever, input_output_alias={ {}: (0, {}, may-alias) }
body {
  s = f32[4] parameter(0)
  ROOT n = f32[4] negate(s)
}
cond {
  s = f32[4] parameter(0)
  ROOT t = pred[] constant(true)
}
ENTRY main {
  a = f32[4] parameter(0)
  ROOT w = f32[4] while(a), condition=cond, body=body
})");
  ASSERT_TRUE(compiled.executable != nullptr);
  BufferHandle state = *BufferHandle::from_literal(Literal::vector<float>({1, 2, 3, 4}));
  StatusOr<std::vector<BufferHandle>> timed_out =
      compiled.executable->execute({state}, {.donate = {true}, .timeout_seconds = 0.05});
  ASSERT_FALSE(timed_out.ok());
  EXPECT_EQ(timed_out.status().code(), StatusCode::kResourceExhausted);
  // at the loop's back-edge or at a step of its body, whichever check comes first
  EXPECT_NE(timed_out.status().message().find("ran past its 0.05 s deadline (at %"), std::string::npos)
      << timed_out.status().to_string();
  EXPECT_TRUE(state.is_usable());  // updated in place by the loop, but the caller's again
}

// One handle donated to two calls at once: one reserves it, the other is refused.
TEST(RuntimeDonation, AHandleReservedByOneCallIsRefusedToAnother) {
  Compiled compiled = compile(R"(
HloModule negate_in_place, input_output_alias={ {}: (0, {}, may-alias) }
ENTRY main {
  p = f32[4] parameter(0)
  ROOT n = f32[4] negate(p)
})");
  ASSERT_TRUE(compiled.executable != nullptr);
  BufferHandle handle = *BufferHandle::from_literal(Literal::vector<float>({1, 2, 3, 4}));
  BufferHandle other_call = handle;  // the other caller's copy of the handle
  ASSERT_NE(other_call.reserve(), nullptr);
  EXPECT_EQ(handle.reserve(), nullptr);  // one winner
  StatusOr<std::vector<BufferHandle>> refused = compiled.executable->execute({handle}, {.donate = {true}});
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("is donated to another call running now"), std::string::npos)
      << refused.status().to_string();
  other_call.release();
  StatusOr<std::vector<BufferHandle>> ran = compiled.executable->execute({handle}, {.donate = {true}});
  ASSERT_TRUE(ran.ok()) << ran.status().to_string();
  EXPECT_TRUE(handle.is_donated());
  EXPECT_TRUE((*ran)[0].to_literal().value() == Literal::vector<float>({-1, -2, -3, -4}));
}

// Small buffers are aligned by hand inside a malloc block, big ones come from the huge-page
// cache: every size, zeroed or not, is kBufferAlignment-aligned and holds its bytes.
TEST(RuntimeBuffer, EverySizeIsAlignedAndWritable) {
  for (int64_t elements : {0, 1, 3, 16, 17, 1000, (2 << 20) / 4 - 1, (2 << 20) / 4, (2 << 20) / 4 + 5}) {
    for (bool zero : {false, true}) {
      StatusOr<std::shared_ptr<Buffer>> buffer =
          Buffer::allocate(Shape::array(PrimitiveType::kF32, {elements}), zero, "a test buffer");
      ASSERT_TRUE(buffer.ok()) << buffer.status().to_string();
      EXPECT_EQ(reinterpret_cast<uintptr_t>((*buffer)->data()) % kBufferAlignment, 0u) << elements;
      EXPECT_EQ((*buffer)->size_bytes(), elements * 4);
      if (zero) {
        for (int64_t i = 0; i < (*buffer)->size_bytes(); ++i) ASSERT_EQ((*buffer)->data()[i], 0) << elements;
      }
      if (elements > 0) std::memset((*buffer)->data(), 0x5a, static_cast<size_t>(elements * 4));  // ASan: in bounds
    }
  }
}

TEST(RuntimeBuffer, LiteralRoundTripAlignmentAndDonatedState) {
  Literal value = Literal::from_values<int32_t>({2, 3}, {1, 2, 3, 4, 5, 6});
  BufferHandle handle = *BufferHandle::from_literal(value);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(handle.data()) % kBufferAlignment, 0u);
  EXPECT_EQ(handle.buffer().size_bytes(), 24);
  EXPECT_TRUE(*handle.to_literal() == value);
  BufferHandle copy = handle;  // copies share the donated state
  std::shared_ptr<Buffer> memory = handle.donate();
  EXPECT_TRUE(copy.is_donated());
  EXPECT_FALSE(copy.is_usable());
  EXPECT_EQ(memory->to_literal(), value);
  EXPECT_NE(copy.to_literal().status().message().find("was donated to a previous call"), std::string::npos);
  EXPECT_FALSE(BufferHandle::from_literal(Literal::tuple({value})).ok());
  EXPECT_TRUE(BufferHandle().is_null());
}

// execute_borrowed: arguments read in place from the caller's memory, each result computed
// straight into the caller's memory for it; a donated aliased parameter is written in place
// (and, given the same memory as its result, nothing is copied); a returned parameter is
// copied by the module's own copy; one not donated is read from a private copy.
TEST(RuntimeDonation, BorrowedCallComputesIntoCallerMemory) {
  Compiled compiled = compile(R"(
HloModule results, input_output_alias={ {1}: (1, {}, may-alias) }

ENTRY main {
  a = f32[4] parameter(0)
  b = f32[4] parameter(1)
  sum = f32[4] add(a, b)
  twice = f32[4] add(b, b)
  ROOT result = (f32[4], f32[4], f32[4]) tuple(sum, twice, a)
})");
  ASSERT_TRUE(compiled.executable != nullptr);
  float a[4] = {1, 2, 3, 4}, b[4] = {10, 20, 30, 40}, sum[4] = {}, same_a[4] = {};
  auto bytes = [](float* p) { return reinterpret_cast<uint8_t*>(p); };
  uint8_t* arguments[] = {bytes(a), bytes(b)};
  uint8_t* results[] = {bytes(sum), bytes(b), bytes(same_a)};
  ExecutionStats stats;
  Status status = compiled.executable->execute_borrowed(arguments, results,
                                                        {.donate = {false, true}, .threads = 1, .stats = &stats});
  ASSERT_TRUE(status.ok()) << status.to_string();
  EXPECT_EQ(std::vector<float>(sum, sum + 4), (std::vector<float>{11, 22, 33, 44}));
  EXPECT_EQ(std::vector<float>(b, b + 4), (std::vector<float>{20, 40, 60, 80})) << "written in place";
  EXPECT_EQ(std::vector<float>(same_a, same_a + 4), (std::vector<float>{1, 2, 3, 4}));
  EXPECT_EQ(stats.result_bytes_copied, 0) << "every result was computed where the caller wanted it";
  EXPECT_EQ(stats.bytes_copied, 16) << "the returned parameter's copy (copy insertion), nothing else";

  // b not donated: it is read from a private copy and stays as it was; the result is copied
  // into the memory given for it.
  float b2[4] = {1, 1, 1, 1}, twice[4] = {};
  uint8_t* arguments2[] = {bytes(a), bytes(b2)};
  uint8_t* results2[] = {bytes(sum), bytes(twice), bytes(same_a)};
  status = compiled.executable->execute_borrowed(arguments2, results2, {.threads = 1, .stats = &stats});
  ASSERT_TRUE(status.ok()) << status.to_string();
  EXPECT_EQ(std::vector<float>(b2, b2 + 4), (std::vector<float>{1, 1, 1, 1}));
  EXPECT_EQ(std::vector<float>(twice, twice + 4), (std::vector<float>{2, 2, 2, 2}));
  EXPECT_EQ(stats.result_bytes_copied, 16);

  // A wrong count is an error, before anything runs.
  uint8_t* too_few[] = {bytes(sum)};
  EXPECT_FALSE(compiled.executable->execute_borrowed(arguments, too_few).ok());
}

}  // namespace
}  // namespace insitu

namespace insitu {
namespace {

// A body that swaps two state leaves needs copies every iteration; the runtime counts each
// execution (static count in the body x iterations, plus the entry's).
TEST(RuntimeStats, CopiesInALoopCountOncePerIteration) {
  testing_runtime::Compiled compiled = testing_runtime::compile(R"(
HloModule swap

body {
  state = (s32[], f32[8], f32[8]) parameter(0)
  i = s32[] get-tuple-element(state), index=0
  a = f32[8] get-tuple-element(state), index=1
  b = f32[8] get-tuple-element(state), index=2
  one = s32[] constant(1)
  next = s32[] add(i, one)
  ROOT out = (s32[], f32[8], f32[8]) tuple(next, b, a)
}

cond {
  state = (s32[], f32[8], f32[8]) parameter(0)
  i = s32[] get-tuple-element(state), index=0
  limit = s32[] constant(5)
  ROOT more = pred[] compare(i, limit), direction=LT
}

ENTRY main {
  a = f32[8] parameter(0)
  b = f32[8] parameter(1)
  zero = s32[] constant(0)
  init = (s32[], f32[8], f32[8]) tuple(zero, a, b)
  loop = (s32[], f32[8], f32[8]) while(init), condition=cond, body=body
  x = f32[8] get-tuple-element(loop), index=1
  y = f32[8] get-tuple-element(loop), index=2
  ROOT result = (f32[8], f32[8]) tuple(x, y)
})");
  ASSERT_TRUE(compiled.executable != nullptr);
  int64_t entry_copies = 0, entry_bytes = 0, body_copies = 0, body_bytes = 0;
  for (const Instruction* instruction : compiled.optimized->entry()->instructions()) {
    if (instruction->opcode() == Opcode::kCopy) ++entry_copies, entry_bytes += instruction->shape().byte_size();
    if (instruction->opcode() != Opcode::kWhile) continue;
    for (const Instruction* in_body : instruction->while_body()->instructions())
      if (in_body->opcode() == Opcode::kCopy) ++body_copies, body_bytes += in_body->shape().byte_size();
  }
  ASSERT_GT(body_copies, 0) << "the swap needs a copy in the body";
  const Literal a = Literal::vector<float>({1, 2, 3, 4, 5, 6, 7, 8});
  const Literal b = Literal::vector<float>({-1, -2, -3, -4, -5, -6, -7, -8});
  ExecutionStats stats;
  StatusOr<std::vector<BufferHandle>> results = compiled.executable->execute(
      {*BufferHandle::from_literal(a), *BufferHandle::from_literal(b)}, {.threads = 1, .stats = &stats});
  ASSERT_TRUE(results.ok()) << results.status().to_string();
  EXPECT_TRUE(*(*results)[0].to_literal() == b);  // five swaps
  EXPECT_TRUE(*(*results)[1].to_literal() == a);
  EXPECT_EQ(stats.copies_executed, entry_copies + 5 * body_copies);
  EXPECT_EQ(stats.bytes_copied, entry_bytes + 5 * body_bytes);
}

}  // namespace
}  // namespace insitu
