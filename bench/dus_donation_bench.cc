// One-row dynamic-update-slice into a 1 GiB f32 buffer (f32[262144,1024]), aliased to the
// output with input_output_alias: executed with the buffer donated (the result is the same
// memory and is fed back as the next call's argument; one 4 KiB row is touched per call) and
// with it not donated (the runtime's copy protection copies the whole 1 GiB into a fresh buffer
// first). Baseline in the same binary: memcpy of 1 GiB into memory already touched, on 1 and 2
// threads.
//
// Counters (rates over wall time): bytes_touched (per second: the GB/s of bytes the call has to touch: one row read
// and written when donated, 1 GiB read + 1 GiB written when not), bytes_copied_per_call (the
// runtime's own count), and in BM_DusDonationRatio the per-call times of both modes measured
// alternately in one run and their ratio not_donated/donated.
#include "bench_util.h"

namespace insitu::bench {
namespace {

constexpr int64_t kRows = 262144;
constexpr int64_t kColumns = 1024;
constexpr int64_t kCacheBytes = kRows * kColumns * 4;  // 1 GiB
constexpr int64_t kRowBytes = kColumns * 4;

constexpr std::string_view kDusModule = R"(
HloModule dus_1gib, input_output_alias={ {}: (0, {}, may-alias) }

ENTRY main {
  cache = f32[262144,1024] parameter(0)
  row = f32[1,1024] parameter(1)
  i = s32[] parameter(2)
  zero = s32[] constant(0)
  ROOT updated = f32[262144,1024] dynamic-update-slice(cache, row, i, zero)
}
)";

Executable& dus_executable() {
  static Compiled compiled = compile(kDusModule);
  INSITU_CHECK(compiled.executable != nullptr) << compiled.error;
  return *compiled.executable;
}

struct DusInputs {
  BufferHandle cache{std::make_shared<Buffer>(Shape::array(PrimitiveType::kF32, {kRows, kColumns}))};  // zeroed
  BufferHandle row{std::make_shared<Buffer>(Shape::array(PrimitiveType::kF32, {1, kColumns}))};
  BufferHandle index{std::make_shared<Buffer>(Shape::array(PrimitiveType::kS32, {}))};
  int32_t next_row = 0;
  void advance() {  // a different row each call
    next_row = (next_row + 4099) % kRows;
    std::memcpy(index.data(), &next_row, sizeof(next_row));
  }
};

// Runs one donated call and feeds its result back as the cache. False (and skips) on error or
// when the result is not the donated memory.
bool run_donated(benchmark::State& state, DusInputs& inputs, ExecutionStats& stats, int threads = 0) {
  const uint8_t* before = inputs.cache.data();
  inputs.advance();
  StatusOr<std::vector<BufferHandle>> results = dus_executable().execute(
      {inputs.cache, inputs.row, inputs.index}, {.donate = {true}, .threads = threads, .stats = &stats});
  if (!results.ok()) {
    state.SkipWithError(results.status().to_string().c_str());
    return false;
  }
  inputs.cache = (*results)[0];
  if (inputs.cache.data() != before) {
    state.SkipWithError("the donated call's result is not the donated memory");
    return false;
  }
  return true;
}

bool run_not_donated(benchmark::State& state, DusInputs& inputs, ExecutionStats& stats) {
  inputs.advance();
  StatusOr<std::vector<BufferHandle>> results =
      dus_executable().execute({inputs.cache, inputs.row, inputs.index}, {.stats = &stats});
  if (!results.ok()) {
    state.SkipWithError(results.status().to_string().c_str());
    return false;
  }
  if (!inputs.cache.is_usable() || (*results)[0].data() == inputs.cache.data()) {
    state.SkipWithError("the undonated argument was consumed or written");
    return false;
  }
  return true;  // the 1 GiB result is freed here
}

// state.range(0): ExecuteOptions::threads (0, the default: all cores; 1: inline).
void BM_DusDonated(benchmark::State& state) {
  DusInputs inputs;
  ExecutionStats stats;
  for (auto _ : state)
    if (!run_donated(state, inputs, stats, static_cast<int>(state.range(0)))) break;
  state.counters["bytes_touched"] = benchmark::Counter(2.0 * kRowBytes, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["bytes_copied_per_call"] = static_cast<double>(stats.bytes_copied);
}
BENCHMARK(BM_DusDonated)->Arg(0)->Arg(1)->Unit(benchmark::kMicrosecond)->UseRealTime();

void BM_DusNotDonated(benchmark::State& state) {
  DusInputs inputs;
  ExecutionStats stats;
  for (auto _ : state)
    if (!run_not_donated(state, inputs, stats)) break;
  state.counters["bytes_touched"] =
      benchmark::Counter(2.0 * kCacheBytes, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["bytes_copied_per_call"] = static_cast<double>(stats.bytes_copied);
}
BENCHMARK(BM_DusNotDonated)->Unit(benchmark::kMillisecond)->Iterations(3)->UseRealTime();

// memcpy of 1 GiB between two buffers already touched; state.range(0) threads.
void BM_Memcpy1GiB(benchmark::State& state) {
  ThreadPool pool(static_cast<int>(state.range(0)));
  Buffer from(Shape::array(PrimitiveType::kU8, {kCacheBytes}));
  Buffer to(Shape::array(PrimitiveType::kU8, {kCacheBytes}));
  touch(from.data(), kCacheBytes);
  for (auto _ : state) {
    memcpy_parallel(pool, to.data(), from.data(), kCacheBytes);
    benchmark::DoNotOptimize(to.data());
    benchmark::ClobberMemory();
  }
  state.counters["bytes_touched"] =
      benchmark::Counter(2.0 * kCacheBytes, benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_Memcpy1GiB)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->Iterations(3)->UseRealTime();

// Both modes and the memcpy baseline alternately in each iteration: 200 donated calls, one
// undonated call, one 2-thread memcpy of 1 GiB into touched memory.
void BM_DusDonationRatio(benchmark::State& state) {
  constexpr int kDonatedCalls = 200;
  DusInputs inputs;
  ExecutionStats stats;
  ThreadPool pool(2);
  Buffer to(Shape::array(PrimitiveType::kU8, {kCacheBytes}));
  touch(to.data(), kCacheBytes);
  double donated = 0, not_donated = 0, copy = 0;
  bool ok = true;
  for (auto _ : state) {
    donated += time_once([&] {
      for (int k = 0; k < kDonatedCalls && ok; ++k) ok = run_donated(state, inputs, stats);
    }) / kDonatedCalls;
    if (ok) not_donated += time_once([&] { ok = run_not_donated(state, inputs, stats); });
    copy += time_once([&] { memcpy_parallel(pool, to.data(), inputs.cache.data(), kCacheBytes); });
    if (!ok) break;
  }
  const double n = static_cast<double>(state.iterations());
  state.counters["donated_us"] = donated / n * 1e6;
  state.counters["not_donated_ms"] = not_donated / n * 1e3;
  state.counters["memcpy_2t_ms"] = copy / n * 1e3;
  state.counters["ratio_not_donated_over_donated"] = not_donated / donated;
  state.counters["not_donated_over_memcpy"] = not_donated / copy;
  state.counters["donated_GBps_touched"] = 2.0 * kRowBytes / (donated / n) / 1e9;
  state.counters["not_donated_GBps_touched"] = 2.0 * kCacheBytes / (not_donated / n) / 1e9;
  state.counters["memcpy_2t_GBps_touched"] = 2.0 * kCacheBytes / (copy / n) / 1e9;
}
BENCHMARK(BM_DusDonationRatio)->Unit(benchmark::kMillisecond)->Iterations(3);

}  // namespace
}  // namespace insitu::bench

BENCHMARK_MAIN();
