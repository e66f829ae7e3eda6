// Per-call overhead: a tiny module (f32[4] add of two parameters) through Executable::execute
// (aim: under 2 us per call) with threads=1 and threads=0 (all cores, the default), through
// execute_borrowed, and the reference evaluator on the same module for contrast.
// BM_CallOverheadRatio times both alternately in one run and reports evaluator/runtime.
#include "bench_util.h"
#include "insitu/evaluator/evaluator.h"

namespace insitu::bench {
namespace {

constexpr std::string_view kTinyModule = R"(
HloModule tiny_add

ENTRY main {
  a = f32[4] parameter(0)
  b = f32[4] parameter(1)
  ROOT sum = f32[4] add(a, b)
}
)";

const Compiled& tiny() {
  static Compiled compiled = compile(kTinyModule);
  INSITU_CHECK(compiled.executable != nullptr) << compiled.error;
  return compiled;
}

Literal tiny_argument(float start) {
  Literal literal(Shape::array(PrimitiveType::kF32, {4}));
  for (float& value : literal.data<float>()) value = start++;
  return literal;
}

struct TinyInputs {
  std::vector<Literal> literals = {tiny_argument(1), tiny_argument(10)};
  std::vector<BufferHandle> handles = {*BufferHandle::from_literal(literals[0]),
                                       *BufferHandle::from_literal(literals[1])};
};

bool run_runtime(benchmark::State& state, const TinyInputs& inputs, int threads) {
  StatusOr<std::vector<BufferHandle>> results = tiny().executable->execute(inputs.handles, {.threads = threads});
  if (!results.ok()) {
    state.SkipWithError(results.status().to_string().c_str());
    return false;
  }
  benchmark::DoNotOptimize((*results)[0].data());
  return true;
}

bool run_evaluator(benchmark::State& state, const TinyInputs& inputs) {
  StatusOr<Literal> result = evaluate_module(*tiny().original, inputs.literals);
  if (!result.ok()) {
    state.SkipWithError(result.status().to_string().c_str());
    return false;
  }
  benchmark::DoNotOptimize(result->untyped_data());
  return true;
}

// state.range(0): ExecuteOptions::threads (1: inline; 0: the pool of all cores).
void BM_ExecuteTiny(benchmark::State& state) {
  TinyInputs inputs;
  const int threads = static_cast<int>(state.range(0));
  // The result is right (one check, outside the timed loop).
  StatusOr<std::vector<BufferHandle>> check = tiny().executable->execute(inputs.handles, {.threads = threads});
  if (!check.ok() || (*check)[0].to_literal()->data<float>()[3] != 4.0f + 13.0f) {
    state.SkipWithError("tiny add gave a wrong result");
    return;
  }
  for (auto _ : state)
    if (!run_runtime(state, inputs, threads)) break;
}
BENCHMARK(BM_ExecuteTiny)->Arg(1)->Arg(0);

// The same call through execute_borrowed (the XLA FFI path of insitu.jax.jit): the caller's
// memory in and out, no handles, no result buffers; threads=1.
void BM_ExecuteBorrowedTiny(benchmark::State& state) {
  TinyInputs inputs;
  alignas(64) float result[4] = {};
  uint8_t* arguments[] = {inputs.literals[0].untyped_data(), inputs.literals[1].untyped_data()};
  uint8_t* results[] = {reinterpret_cast<uint8_t*>(result)};
  for (auto _ : state) {
    Status status = tiny().executable->execute_borrowed(arguments, results, {.threads = 1});
    if (!status.ok()) {
      state.SkipWithError(status.to_string().c_str());
      break;
    }
    benchmark::DoNotOptimize(result[0]);
  }
  if (result[3] != 4.0f + 13.0f) state.SkipWithError("tiny add gave a wrong result");
}
BENCHMARK(BM_ExecuteBorrowedTiny);

// Concurrent callers on one Executable (executable.h, "Thread safety"): each benchmark thread
// calls the tiny module with threads=1. Wall-clock calls per second (items_per_second, summed
// over the threads) for 1 and 2 callers: on 2 cores, 2 callers should get about twice as many.
void BM_ExecuteTinyConcurrent(benchmark::State& state) {
  TinyInputs inputs;
  for (auto _ : state)
    if (!run_runtime(state, inputs, 1)) break;
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_ExecuteTinyConcurrent)->Threads(1)->Threads(2)->UseRealTime();

// What threads=0 adds per call: Executable::pool_for asks ThreadPool::hardware_threads() on
// every call, and std::thread::hardware_concurrency() reads /sys (glibc's get_nprocs) each time.
void BM_HardwareThreads(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(ThreadPool::hardware_threads());
}
BENCHMARK(BM_HardwareThreads);

void BM_EvaluateTiny(benchmark::State& state) {
  TinyInputs inputs;
  for (auto _ : state)
    if (!run_evaluator(state, inputs)) break;
}
BENCHMARK(BM_EvaluateTiny);

// 1000 runtime calls then 1000 evaluator calls per iteration, each block timed.
void BM_CallOverheadRatio(benchmark::State& state) {
  constexpr int kCalls = 1000;
  TinyInputs inputs;
  double runtime = 0, evaluator = 0;
  bool ok = true;
  for (auto _ : state) {
    runtime += time_once([&] {
      for (int k = 0; k < kCalls && ok; ++k) ok = run_runtime(state, inputs, 1);
    });
    evaluator += time_once([&] {
      for (int k = 0; k < kCalls && ok; ++k) ok = run_evaluator(state, inputs);
    });
    if (!ok) break;
  }
  const double calls = static_cast<double>(state.iterations()) * kCalls;
  state.counters["execute_us"] = runtime / calls * 1e6;
  state.counters["evaluator_us"] = evaluator / calls * 1e6;
  state.counters["evaluator_over_execute"] = evaluator / runtime;
}
BENCHMARK(BM_CallOverheadRatio)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace insitu::bench

BENCHMARK_MAIN();
