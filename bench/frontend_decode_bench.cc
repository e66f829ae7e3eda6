// A KV-cache decode step through the frontend (issue 4): a jit-compiled function writes one token
// row into a 1 GiB f32 cache (f32[262144,1024]) with dynamic_update_slice and returns the new
// cache; the cache argument is donated (donate_argnums={0}) and the returned Array is fed back as
// the next step's cache, so each step should touch one 4 KiB row in the same memory.
//
// Baselines in the same binary, and interleaved in BM_FrontendDecodeRatio:
//   - memcpy of the touched bytes (one 4 KiB row, between buffers already touched);
//   - the same jitted program called without donation (JitFunction::call with no donors: its own
//     cache entry), which must produce a fresh 1 GiB result per step.
// Every step checks that the donated result is the donated memory and that the undonated
// argument stays usable; the ratio benchmark checks the written rows' values at the end.
#include "bench_util.h"
#include "insitu/frontend/jit.h"
#include "insitu/frontend/ops.h"

namespace insitu::bench {
namespace {

constexpr int64_t kRows = 262144;
constexpr int64_t kColumns = 1024;
constexpr int64_t kCacheBytes = kRows * kColumns * 4;  // 1 GiB
constexpr int64_t kRowBytes = kColumns * 4;
constexpr int kPositions = 256;

JitFunction make_decode_step(int threads) {
  return jit(
      [](std::vector<Tensor>& a) {
        Tensor cache = a[0], token = a[1], position = a[2];
        return std::vector<Tensor>{dynamic_update_slice(cache, token, {position, scalar(0, PrimitiveType::kS32)})};
      },
      {.donate_argnums = {0},
       .name = "decode_step",
       .threads = threads,
       .dump_to = std::nullopt,
       .strict_donation = false});
}

struct DecodeState {
  Array cache = Array::zeros(Shape::array(PrimitiveType::kF32, {kRows, kColumns}), "cache");
  Array token;
  std::vector<Array> positions;  // s32[] row indices, spread over the cache
  int next = 0;
  float value = 1.0f;  // the token's value (changed only by set_token)

  DecodeState() {
    set_token(1.0f);
    for (int k = 0; k < kPositions; ++k)
      positions.push_back(Array::from_vector<int32_t>({}, {static_cast<int32_t>((k * 4099) % kRows)}, "position"));
  }
  void set_token(float v) {
    value = v;
    token = Array::from_vector<float>({1, kColumns}, std::vector<float>(kColumns, v), "token");
  }
  const Array& advance() {
    next = (next + 1) % kPositions;
    return positions[next];
  }
};

// One donated step; the result becomes the cache. False (and skips) on error or when the result
// is not the donated memory.
bool step_donated(benchmark::State& state, JitFunction& step, DecodeState& s) {
  const void* before = s.cache.data();
  StatusOr<std::vector<Array>> out = step({s.cache, s.token, s.advance()});
  if (!out.ok()) {
    state.SkipWithError(out.status().to_string().c_str());
    return false;
  }
  if (!s.cache.deleted() || (*out)[0].data() != before) {
    state.SkipWithError("the donated step did not run in the donated memory");
    return false;
  }
  s.cache = (*out)[0];
  return true;
}

// One step without donation; the fresh result becomes the cache (the old one is freed).
bool step_not_donated(benchmark::State& state, JitFunction& step, DecodeState& s) {
  StatusOr<std::vector<Array>> out = step.call({s.cache, s.token, s.advance()}, {});
  if (!out.ok()) {
    state.SkipWithError(out.status().to_string().c_str());
    return false;
  }
  if (s.cache.deleted() || (*out)[0].data() == s.cache.data()) {
    state.SkipWithError("the undonated cache was consumed or written");
    return false;
  }
  s.cache = (*out)[0];
  return true;
}

// state.range(0): jit threads.
void BM_FrontendDecodeDonated(benchmark::State& state) {
  JitFunction step = make_decode_step(static_cast<int>(state.range(0)));
  DecodeState s;
  if (!step_donated(state, step, s)) return;  // compile outside the timing
  for (auto _ : state)
    if (!step_donated(state, step, s)) break;
  state.counters["bytes_touched"] = benchmark::Counter(2.0 * kRowBytes, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["bytes_copied_per_step"] = static_cast<double>(step.last_stats().bytes_copied);
  state.counters["compiles"] = static_cast<double>(step.cache_misses());
}
BENCHMARK(BM_FrontendDecodeDonated)->Arg(1)->Arg(2)->Unit(benchmark::kMicrosecond)->UseRealTime();

void BM_FrontendDecodeNotDonated(benchmark::State& state) {
  JitFunction step = make_decode_step(static_cast<int>(state.range(0)));
  DecodeState s;
  if (!step_not_donated(state, step, s)) return;
  for (auto _ : state)
    if (!step_not_donated(state, step, s)) break;
  state.counters["bytes_touched"] =
      benchmark::Counter(2.0 * kCacheBytes, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["bytes_copied_per_step"] = static_cast<double>(step.last_stats().bytes_copied);
}
BENCHMARK(BM_FrontendDecodeNotDonated)->Arg(2)->Unit(benchmark::kMillisecond)->Iterations(3)->UseRealTime();

// memcpy of one 4 KiB row between rows of two touched 1 GiB-spread buffers (a different row each
// time, as the decode step writes a different row each step).
void BM_MemcpyRow(benchmark::State& state) {
  Buffer from(Shape::array(PrimitiveType::kU8, {kCacheBytes}));
  Buffer to(Shape::array(PrimitiveType::kU8, {kCacheBytes}));
  int64_t row = 0;
  for (auto _ : state) {
    row = (row + 4099) % kRows;
    std::memcpy(to.data() + row * kRowBytes, from.data() + row * kRowBytes, kRowBytes);
    benchmark::DoNotOptimize(to.data());
    benchmark::ClobberMemory();
  }
  state.counters["bytes_touched"] = benchmark::Counter(2.0 * kRowBytes, benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_MemcpyRow)->UseRealTime();

// All three alternately in each iteration: 1000 donated steps, 1000 row memcpys (into a 1 GiB
// buffer, a different row each), one undonated step. state.range(0): jit threads.
void BM_FrontendDecodeRatio(benchmark::State& state) {
  constexpr int kSteps = 1000;
  JitFunction step = make_decode_step(static_cast<int>(state.range(0)));
  DecodeState s;
  Buffer to(Shape::array(PrimitiveType::kU8, {kCacheBytes}));
  bool ok = step_donated(state, step, s) && step_not_donated(state, step, s);  // both compiles
  double donated = 0, not_donated = 0, copy = 0;
  int64_t donated_copied = 0, not_donated_copied = 0;
  float value = 1.0f;
  for (auto _ : state) {
    if (!ok) break;
    s.set_token(value += 1.0f);
    donated += time_once([&] {
      for (int k = 0; k < kSteps && ok; ++k) ok = step_donated(state, step, s);
    }) / kSteps;
    donated_copied = step.last_stats().bytes_copied;
    copy += time_once([&] {
      const uint8_t* from = static_cast<const uint8_t*>(s.token.data());
      int64_t row = s.next;
      for (int k = 0; k < kSteps; ++k) {
        row = (row + 4099) % kRows;
        std::memcpy(to.data() + row * kRowBytes, from, kRowBytes);
        benchmark::ClobberMemory();
      }
    }) / kSteps;
    if (ok) not_donated += time_once([&] { ok = step_not_donated(state, step, s); });
    not_donated_copied = step.last_stats().bytes_copied;
  }
  if (!ok) return;
  // The last positions written hold the last token's value; row 1 (never a position) holds 0.
  const float* cache = static_cast<const float*>(s.cache.data());
  const int64_t last_row = (s.next * 4099LL) % kRows;
  const float* last = cache + last_row * kColumns;
  if (last[0] != value || last[kColumns - 1] != value || cache[kColumns] != 0) {
    state.SkipWithError("the cache does not hold the written rows");
    return;
  }
  const double n = static_cast<double>(state.iterations());
  state.counters["donated_us"] = donated / n * 1e6;
  state.counters["memcpy_row_us"] = copy / n * 1e6;
  state.counters["not_donated_ms"] = not_donated / n * 1e3;
  state.counters["donated_over_memcpy_row"] = donated / copy;
  state.counters["not_donated_over_donated"] = not_donated / donated;
  state.counters["donated_bytes_copied"] = static_cast<double>(donated_copied);
  state.counters["not_donated_bytes_copied"] = static_cast<double>(not_donated_copied);
}
BENCHMARK(BM_FrontendDecodeRatio)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->Iterations(10);

}  // namespace
}  // namespace insitu::bench

BENCHMARK_MAIN();
