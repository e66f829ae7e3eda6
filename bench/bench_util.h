// Helpers shared by the benchmarks: compile HLO text the way the runtime tests do (parse,
// optimize_module, Executable::create), time a callable, and a memcpy baseline on N threads.
//
// Every speed the benchmarks report is a ratio against a baseline measured in the same run and
// interleaved with it (these 2-core machines are shared and noisy): the paired benchmarks time
// the measured thing and its baseline alternately in each iteration and report both.
#pragma once

#include <benchmark/benchmark.h>

#include <chrono>
#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>

#include "insitu/ir/parser.h"
#include "insitu/passes/optimize.h"
#include "insitu/runtime/executable.h"
#include "insitu/runtime/thread_pool.h"

namespace insitu::bench {

// A compiled module: the parsed original (what the evaluator runs), and its executable.
struct Compiled {
  std::shared_ptr<const Module> original;
  const Module* optimized = nullptr;  // the executable's module
  std::unique_ptr<Executable> executable;
  std::string error;  // non-empty when a stage failed
};

inline Compiled compile(std::string_view text) {
  Compiled compiled;
  StatusOr<std::unique_ptr<Module>> parsed = parse_module(text);
  if (!parsed.ok()) {
    compiled.error = "parse: " + parsed.status().to_string();
    return compiled;
  }
  std::shared_ptr<Module> original = std::move(parsed).value();
  compiled.original = original;
  StatusOr<OptimizedModule> optimized = optimize_module(original->clone());
  if (!optimized.ok()) {
    compiled.error = "optimize: " + optimized.status().to_string();
    return compiled;
  }
  StatusOr<std::unique_ptr<Executable>> executable = Executable::create(std::move(*optimized));
  if (!executable.ok()) {
    compiled.error = "create: " + executable.status().to_string();
    return compiled;
  }
  compiled.executable = std::move(executable).value();
  compiled.optimized = &compiled.executable->module();
  return compiled;
}

inline std::string read_file_text(const std::string& path) {
  std::ifstream file(path);
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

inline double now_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Wall seconds of one fn() call.
template <typename Fn>
double time_once(Fn&& fn) {
  const double start = now_seconds();
  fn();
  return now_seconds() - start;
}

// memcpy of `bytes` split into one contiguous chunk per pool worker (the calling thread runs
// one chunk), the same static partition the runtime's kernels use.
inline void memcpy_parallel(ThreadPool& pool, uint8_t* to, const uint8_t* from, int64_t bytes) {
  if (pool.thread_count() == 1) {
    std::memcpy(to, from, static_cast<size_t>(bytes));
    return;
  }
  pool.parallel_for(pool.thread_count(), [&](int64_t begin, int64_t end) {
    for (int64_t chunk = begin; chunk < end; ++chunk) {
      auto [lo, hi] = ThreadPool::chunk_range(bytes, pool.thread_count(), chunk);
      std::memcpy(to + lo, from + lo, static_cast<size_t>(hi - lo));
    }
  });
}

// Fills every page so that no later measurement pays the first-touch page faults.
inline void touch(uint8_t* data, int64_t bytes, uint8_t value = 1) { std::memset(data, value, static_cast<size_t>(bytes)); }

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
constexpr double kMiB = 1024.0 * 1024.0;

}  // namespace insitu::bench
