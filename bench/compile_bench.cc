// Compile time: parse + optimize_module (the whole pass pipeline and buffer assignment) +
// Executable::create, of the three seed modules (examples/seed/*.hlo) and of a generated
// 1000-instruction module (a chain/DAG of elementwise ops with a few dynamic-update-slices and
// while loops); and parse-only time of each, with parse's share of the compile as a counter
// (BM_CompileVsParse times both alternately in one run).
#include <random>

#include "bench_util.h"
#include "insitu/support/str.h"

namespace insitu::bench {
namespace {

const std::vector<std::string> kSeedFiles = {
    "sync_tensors_graph.before_optimizations.hlo",
    "sync_tensors_graph.after_optimizations.hlo",
    "ir_to_hlo.hlo",
};

// A deterministic module of about `count` instructions over f32[64,64] values: each new value is
// an elementwise op of the previous value and an earlier one (so every value is used), with a
// one-row dynamic-update-slice every 100 values and a small while loop every 250.
std::string generated_module(int count) {
  std::mt19937 rng(1234);
  std::string loops, entry;
  int instructions = 0;
  auto emit = [&](const std::string& line) {
    entry += "  " + line + "\n";
    ++instructions;
  };
  emit("p0 = f32[64,64] parameter(0)");
  emit("p1 = f32[64,64] parameter(1)");
  emit("zero = s32[] constant(0)");
  std::vector<std::string> values = {"p0", "p1"};
  const char* ops[] = {"add", "multiply", "subtract", "maximum", "minimum"};
  int loop_count = 0;
  for (int k = 0; instructions < count - 2; ++k) {
    const std::string name = str_cat("v", k);
    const std::string& prev = values.back();
    if (k % 100 == 99) {
      const std::string& source = values[rng() % values.size()];
      emit(str_cat(name, "_row = f32[1,64] slice(", source, "), slice={[0:1], [0:64]}"));
      emit(str_cat(name, "_i = s32[] constant(", rng() % 64, ")"));
      emit(str_cat(name, " = f32[64,64] dynamic-update-slice(", prev, ", ", name, "_row, ", name, "_i, zero)"));
    } else if (k % 250 == 249) {
      const int id = loop_count++;
      loops += str_cat("body", id, " {\n  s = (s32[], f32[64,64]) parameter(0)\n",
                       "  i = s32[] get-tuple-element(s), index=0\n  x = f32[64,64] get-tuple-element(s), index=1\n",
                       "  one = s32[] constant(1)\n  n = s32[] add(i, one)\n  y = f32[64,64] add(x, x)\n",
                       "  ROOT t = (s32[], f32[64,64]) tuple(n, y)\n}\n\n");
      loops += str_cat("cond", id, " {\n  s = (s32[], f32[64,64]) parameter(0)\n",
                       "  i = s32[] get-tuple-element(s), index=0\n  limit = s32[] constant(4)\n",
                       "  ROOT more = pred[] compare(i, limit), direction=LT\n}\n\n");
      instructions += 11;  // the loop's body (7) and condition (4)
      emit(str_cat(name, "_init = (s32[], f32[64,64]) tuple(zero, ", prev, ")"));
      emit(str_cat(name, "_loop = (s32[], f32[64,64]) while(", name, "_init), condition=cond", id, ", body=body", id));
      emit(str_cat(name, " = f32[64,64] get-tuple-element(", name, "_loop), index=1"));
    } else {
      const std::string& other = values[values.size() - 1 - rng() % std::min<size_t>(values.size(), 20)];
      emit(str_cat(name, " = f32[64,64] ", ops[rng() % 5], "(", prev, ", ", other, ")"));
    }
    values.push_back(name);
  }
  emit(str_cat("ROOT result = (f32[64,64]) tuple(", values.back(), ")"));
  return str_cat("HloModule generated_", count, "\n\n", loops, "ENTRY main {\n", entry, "}\n");
}

int64_t instruction_count(const Module& module) {
  int64_t count = 0;
  for (const Computation* computation : module.computations()) count += computation->instructions().size();
  return count;
}

std::string module_text(int64_t which) {
  if (which < static_cast<int64_t>(kSeedFiles.size()))
    return read_file_text(std::string(INSITU_SEED_DIR) + "/" + kSeedFiles[which]);
  return generated_module(1000);
}

std::string module_label(int64_t which) {
  return which < static_cast<int64_t>(kSeedFiles.size()) ? kSeedFiles[which] : "generated_1000";
}

// Parse + optimize + create; the error (empty on success) of the first stage that failed.
std::string compile_once(const std::string& text, int64_t* instructions = nullptr) {
  Compiled compiled = compile(text);
  if (instructions && compiled.original) *instructions = instruction_count(*compiled.original);
  benchmark::DoNotOptimize(compiled.executable.get());
  return compiled.error;
}

void BM_Compile(benchmark::State& state) {
  const std::string text = module_text(state.range(0));
  state.SetLabel(module_label(state.range(0)));
  if (text.empty()) {
    state.SkipWithError("cannot read the seed module (INSITU_SEED_DIR)");
    return;
  }
  int64_t instructions = 0;
  if (std::string error = compile_once(text, &instructions); !error.empty()) {
    state.SkipWithError(error.c_str());
    return;
  }
  for (auto _ : state) compile_once(text);
  state.counters["instructions"] = static_cast<double>(instructions);
}
BENCHMARK(BM_Compile)->DenseRange(0, 3)->Unit(benchmark::kMicrosecond);

void BM_Parse(benchmark::State& state) {
  const std::string text = module_text(state.range(0));
  state.SetLabel(module_label(state.range(0)));
  for (auto _ : state) {
    StatusOr<std::unique_ptr<Module>> parsed = parse_module(text);
    if (!parsed.ok()) {
      state.SkipWithError(parsed.status().to_string().c_str());
      break;
    }
    benchmark::DoNotOptimize(parsed->get());
  }
}
BENCHMARK(BM_Parse)->DenseRange(0, 3)->Unit(benchmark::kMicrosecond);

// One compile and one parse alternately per iteration: compile_us, parse_us, parse_share.
void BM_CompileVsParse(benchmark::State& state) {
  const std::string text = module_text(state.range(0));
  state.SetLabel(module_label(state.range(0)));
  if (std::string error = compile_once(text); !error.empty()) {
    state.SkipWithError(error.c_str());
    return;
  }
  double compile_seconds = 0, parse_seconds = 0;
  for (auto _ : state) {
    compile_seconds += time_once([&] { compile_once(text); });
    parse_seconds += time_once([&] { benchmark::DoNotOptimize(parse_module(text).ok()); });
  }
  const double n = static_cast<double>(state.iterations());
  state.counters["compile_us"] = compile_seconds / n * 1e6;
  state.counters["parse_us"] = parse_seconds / n * 1e6;
  state.counters["parse_share"] = parse_seconds / compile_seconds;
}
BENCHMARK(BM_CompileVsParse)->DenseRange(0, 3)->Unit(benchmark::kMicrosecond);

// Compile-time growth (issue 14): parse + optimize + create of three module families at sizes
// from 1,000 to 200,000 instructions. Per-instruction time (us_per_instruction) stays flat when
// the pipeline is linear. range(0): 0 a chain of adds over f32[4], 1 a tuple parameter of n
// leaves returned element by element (n copies: the caller owns the parameter), 2 n/12 nested
// while loops (each body runs the next loop), 3 a tuple parameter of n scalars returned whole
// (issue 36: 1,000 took 4.3 s, 2,000 61.6 s in Executable::create; resolving a tuple's leaves
// scanned them per leaf, once per get-tuple-element); range(1): n.
std::string scaling_module(int64_t kind, int64_t n) {
  std::string text;
  if (kind == 0) {
    text = str_cat("HloModule chain_", n, "\n\nENTRY main {\n  x0 = f32[4] parameter(0)\n");
    for (int64_t k = 1; k < n; ++k) text += str_cat("  x", k, " = f32[4] add(x", k - 1, ", x", std::max<int64_t>(0, k - 2), ")\n");
    return text + str_cat("  ROOT r = (f32[4]) tuple(x", n - 1, ")\n}\n");
  }
  if (kind == 1) {
    std::string tuple = "(";
    for (int64_t i = 0; i < n; ++i) tuple += i == 0 ? "f32[2]" : ", f32[2]";
    tuple += ")";
    text = str_cat("HloModule wide_", n, "\n\nENTRY main {\n  p = ", tuple, " parameter(0)\n");
    std::string root = "  ROOT r = " + tuple + " tuple(";
    for (int64_t i = 0; i < n; ++i) {
      text += str_cat("  g", i, " = f32[2] get-tuple-element(p), index=", i, "\n");
      root += str_cat(i == 0 ? "" : ", ", "g", i);
    }
    return text + root + ")\n}\n";
  }
  if (kind == 3) {
    std::string tuple = "(";
    for (int64_t i = 0; i < n; ++i) tuple += i == 0 ? "f32[]" : ", f32[]";
    return str_cat("HloModule wide_scalars_", n, "\n\nENTRY main {\n  ROOT p = ", tuple, ") parameter(0)\n}\n");
  }
  const int64_t depth = std::max<int64_t>(1, n / 12);
  const std::string state = "(s32[], f32[4])";
  text = str_cat("HloModule nest_", depth, "\n\n");
  for (int64_t k = 0; k < depth; ++k) {
    const bool innermost = k == depth - 1;
    text += str_cat("c", k, " {\n  s = ", state, " parameter(0)\n  i = s32[] get-tuple-element(s), index=0\n",
                    "  l = s32[] constant(2)\n  ROOT m = pred[] compare(i, l), direction=LT\n}\n\n");
    text += str_cat("b", k, " {\n  s = ", state, " parameter(0)\n",
                    innermost ? std::string() : str_cat("  w = ", state, " while(s), condition=c", k + 1, ", body=b", k + 1, "\n"),
                    "  i = s32[] get-tuple-element(", innermost ? "s" : "w", "), index=0\n",
                    "  x = f32[4] get-tuple-element(", innermost ? "s" : "w", "), index=1\n",
                    "  o = s32[] constant(1)\n  n = s32[] add(i, o)\n  y = f32[4] add(x, x)\n",
                    "  ROOT t = ", state, " tuple(n, y)\n}\n\n");
  }
  return text + str_cat("ENTRY main {\n  x = f32[4] parameter(0)\n  z = s32[] constant(0)\n  s = ", state,
                        " tuple(z, x)\n  w = ", state, " while(s), condition=c0, body=b0\n",
                        "  ROOT r = f32[4] get-tuple-element(w), index=1\n}\n");
}

void BM_CompileScaling(benchmark::State& state) {
  const char* kinds[] = {"chain", "wide_tuple", "loop_nest", "wide_scalars"};
  const std::string text = scaling_module(state.range(0), state.range(1));
  int64_t instructions = 0;
  if (std::string error = compile_once(text, &instructions); !error.empty()) {
    state.SkipWithError(error.c_str());
    return;
  }
  state.SetLabel(str_cat(kinds[state.range(0)], " ", instructions));
  for (auto _ : state) compile_once(text);
  state.counters["instructions"] = static_cast<double>(instructions);
  state.counters["us_per_instruction"] =
      benchmark::Counter(static_cast<double>(instructions) * 1e-6, benchmark::Counter::kIsIterationInvariantRate |
                                                                        benchmark::Counter::kInvert);
}
BENCHMARK(BM_CompileScaling)
    ->ArgsProduct({{0, 1}, {1000, 10000, 100000, 200000}})
    ->ArgsProduct({{2}, {1200, 12000}})
    ->ArgsProduct({{3}, {1000, 2000, 5000, 20000}})
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1);

}  // namespace
}  // namespace insitu::bench

BENCHMARK_MAIN();
