// An elementwise op over 256 MiB f32 arrays on 1 and 2 threads, as a fraction of memcpy
// bandwidth measured in the same run (aim: 0.8 or more on 2 threads).
//
// Variants (state.range(0)):
//   0 add_fresh:     sum = add(a, b) into a fresh 256 MiB output buffer each call;
//   1 add_donated:   a += b: a aliased to the output and donated, the result fed back;
//   2 scale_donated: a *= broadcast(1.0): a scalar broadcast (never materialized), donated;
//   3 chain_donated: a = max(a * 0.5 + b, 0): three ops the fusion pass makes one kLoop
//                    fusion, so it reads a and b and writes a once (unfused: three passes).
// state.range(1): ExecuteOptions::threads, and the memcpy baseline's thread count.
//
// BM_MaskedExpVsFinite: y += exp(x) over 4M f32 (y donated, in place) where x is finite, and
// where every row of 1,024 has its second half -inf (a causal softmax's masked scores),
// alternately in each iteration on `threads`. masked_over_finite stays near 1 (0.99 on
// 2026-12-08): exp of a value that rounds to 0 is chosen, not computed (float_functions.h).
// When it was computed, every such lane's scaling underflowed into an x86 microcode assist.
//
// Each iteration runs the op once, a memcpy of 256 MiB into memory already touched, and a
// memcpy of 256 MiB into a fresh allocation (pays first-touch page faults like a fresh output
// buffer does), each timed. Bandwidth counts bytes touched: 3 x 256 MiB for add (two reads, one
// write), 2 x 256 MiB for scale and for memcpy. fraction_of_memcpy = op GB/s / memcpy GB/s.
#include <limits>

#include "bench_util.h"

namespace insitu::bench {
namespace {

constexpr int64_t kElements = 64 * 1024 * 1024;  // f32: 256 MiB
constexpr int64_t kBytes = kElements * 4;

constexpr std::string_view kAddFresh = R"(
HloModule add_fresh
ENTRY main {
  a = f32[67108864] parameter(0)
  b = f32[67108864] parameter(1)
  ROOT sum = f32[67108864] add(a, b)
}
)";

constexpr std::string_view kAddDonated = R"(
HloModule add_donated, input_output_alias={ {}: (0, {}, may-alias) }
ENTRY main {
  a = f32[67108864] parameter(0)
  b = f32[67108864] parameter(1)
  ROOT sum = f32[67108864] add(a, b)
}
)";

constexpr std::string_view kScaleDonated = R"(
HloModule scale_donated, input_output_alias={ {}: (0, {}, may-alias) }
ENTRY main {
  a = f32[67108864] parameter(0)
  b = f32[67108864] parameter(1)
  one = f32[] constant(1)
  ones = f32[67108864] broadcast(one), dimensions={}
  ROOT scaled = f32[67108864] multiply(a, ones)
}
)";

constexpr std::string_view kChainDonated = R"(
HloModule chain_donated, input_output_alias={ {}: (0, {}, may-alias) }
ENTRY main {
  a = f32[67108864] parameter(0)
  b = f32[67108864] parameter(1)
  half = f32[] constant(0.5)
  halves = f32[67108864] broadcast(half), dimensions={}
  scaled = f32[67108864] multiply(a, halves)
  shifted = f32[67108864] add(scaled, b)
  zero = f32[] constant(0)
  zeros = f32[67108864] broadcast(zero), dimensions={}
  ROOT relu = f32[67108864] maximum(shifted, zeros)
}
)";

struct Variant {
  const char* name;
  std::string_view text;
  bool donated;
  int operands_read;  // arrays read per element (plus one written)
};
const Variant kVariants[] = {
    {"add_fresh", kAddFresh, false, 2},
    {"add_donated", kAddDonated, true, 2},
    {"scale_donated", kScaleDonated, true, 1},
    {"chain_donated", kChainDonated, true, 2},
};

Executable& executable_for(int64_t variant) {
  static Compiled compiled[4];
  if (!compiled[variant].executable) compiled[variant] = compile(kVariants[variant].text);
  INSITU_CHECK(compiled[variant].executable != nullptr) << compiled[variant].error;
  return *compiled[variant].executable;
}

void BM_ElementwiseVsMemcpy(benchmark::State& state) {
  const Variant& variant = kVariants[state.range(0)];
  const int threads = static_cast<int>(state.range(1));
  state.SetLabel(variant.name);
  Executable& executable = executable_for(state.range(0));
  const Shape shape = Shape::array(PrimitiveType::kF32, {kElements});
  BufferHandle a{std::make_shared<Buffer>(shape)};
  BufferHandle b{std::make_shared<Buffer>(shape)};
  {
    float* x = reinterpret_cast<float*>(a.data());
    float* y = reinterpret_cast<float*>(b.data());
    for (int64_t i = 0; i < kElements; ++i) {
      x[i] = static_cast<float>(i % 1000);
      y[i] = 0.25f;
    }
  }
  ThreadPool pool(threads);
  Buffer to(Shape::array(PrimitiveType::kU8, {kBytes}));
  touch(to.data(), kBytes);
  ExecutionStats stats;
  double op = 0, copy = 0, copy_fresh = 0;
  for (auto _ : state) {
    const uint8_t* before = a.data();
    StatusOr<std::vector<BufferHandle>> results = [&] {
      StatusOr<std::vector<BufferHandle>> r = std::vector<BufferHandle>{};
      op += time_once([&] {
        r = executable.execute({a, b}, {.donate = {variant.donated}, .threads = threads, .stats = &stats});
      });
      return r;
    }();
    if (!results.ok()) {
      state.SkipWithError(results.status().to_string().c_str());
      break;
    }
    if (variant.donated) {
      a = (*results)[0];
      if (a.data() != before || stats.bytes_copied != 0) {
        state.SkipWithError("the donated call did not run in place");
        break;
      }
    }
    results = std::vector<BufferHandle>{};  // free a fresh output before the baselines
    copy += time_once([&] { memcpy_parallel(pool, to.data(), b.data(), kBytes); });
    copy_fresh += time_once([&] {
      std::shared_ptr<Buffer> fresh = Buffer::uninitialized(Shape::array(PrimitiveType::kU8, {kBytes}));
      memcpy_parallel(pool, fresh->data(), b.data(), kBytes);
      benchmark::DoNotOptimize(fresh->data());
    });
  }
  const double n = static_cast<double>(state.iterations());
  const double op_bytes = (variant.operands_read + 1.0) * kBytes;
  const double op_rate = op_bytes / (op / n), copy_rate = 2.0 * kBytes / (copy / n);
  const double copy_fresh_rate = 2.0 * kBytes / (copy_fresh / n);
  state.counters["op_ms"] = op / n * 1e3;
  state.counters["memcpy_ms"] = copy / n * 1e3;
  state.counters["memcpy_fresh_ms"] = copy_fresh / n * 1e3;
  state.counters["op_GBps"] = op_rate / 1e9;
  state.counters["memcpy_GBps"] = copy_rate / 1e9;
  state.counters["fraction_of_memcpy"] = op_rate / copy_rate;
  state.counters["fraction_of_memcpy_fresh"] = op_rate / copy_fresh_rate;
  state.counters["bytes_copied_per_call"] = static_cast<double>(stats.bytes_copied);
}
BENCHMARK(BM_ElementwiseVsMemcpy)
    ->ArgsProduct({{0, 1, 2, 3}, {1, 2}})
    ->ArgNames({"variant", "threads"})
    ->Unit(benchmark::kMillisecond)
    ->Iterations(5);

constexpr int64_t kExpElements = 4 * 1024 * 1024;

constexpr std::string_view kExpAccumulate = R"(
HloModule exp_accumulate, input_output_alias={ {}: (1, {}, may-alias) }
ENTRY main {
  x = f32[4194304] parameter(0)
  y = f32[4194304] parameter(1)
  e = f32[4194304] exponential(x)
  ROOT sum = f32[4194304] add(y, e)
}
)";

void BM_MaskedExpVsFinite(benchmark::State& state) {
  const int threads = static_cast<int>(state.range(0));
  static Compiled compiled = compile(kExpAccumulate);
  INSITU_CHECK(compiled.executable != nullptr) << compiled.error;
  const Shape shape = Shape::array(PrimitiveType::kF32, {kExpElements});
  BufferHandle finite{std::make_shared<Buffer>(shape)}, masked{std::make_shared<Buffer>(shape)};
  BufferHandle y{std::make_shared<Buffer>(shape)};
  {
    float* f = reinterpret_cast<float*>(finite.data());
    float* m = reinterpret_cast<float*>(masked.data());
    float* z = reinterpret_cast<float*>(y.data());
    for (int64_t i = 0; i < kExpElements; ++i) {
      f[i] = -static_cast<float>(i % 1024) / 128.0f;  // scores minus their row's max: 0 to -8
      m[i] = i % 1024 < 512 ? f[i] : -std::numeric_limits<float>::infinity();
      z[i] = 0.0f;
    }
  }
  double on_finite = 0, on_masked = 0;
  for (auto _ : state) {
    for (const bool mask : {false, true}) {
      const uint8_t* before = y.data();
      StatusOr<std::vector<BufferHandle>> results = std::vector<BufferHandle>{};
      (mask ? on_masked : on_finite) += time_once([&] {
        const ExecuteOptions options{.donate = {false, true}, .threads = threads};
        results = compiled.executable->execute({mask ? masked : finite, y}, options);
      });
      if (!results.ok() || (*results)[0].data() != before) {
        const std::string why = results.ok() ? "the donated call did not run in place" : results.status().to_string();
        state.SkipWithError(why.c_str());
        return;
      }
      y = (*results)[0];
    }
  }
  const double n = static_cast<double>(state.iterations());
  state.counters["finite_ms"] = on_finite / n * 1e3;
  state.counters["masked_ms"] = on_masked / n * 1e3;
  state.counters["masked_over_finite"] = on_masked / on_finite;
}
BENCHMARK(BM_MaskedExpVsFinite)->Arg(1)->Arg(2)->ArgNames({"threads"})->Unit(benchmark::kMillisecond)->Iterations(20);

}  // namespace
}  // namespace insitu::bench

BENCHMARK_MAIN();
