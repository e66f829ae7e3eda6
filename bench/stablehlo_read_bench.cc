// Reading a big StableHLO artifact (issue 37's "a 500 MB artifact with its weights costs under 2x
// the time to read the file"): BM_ReadFile reads the file into memory (what any reader must do),
// BM_ReadVhlo reads it and then stablehlo::read_vhlo's module, weights included; both alternate
// in one run on the file named by INSITU_READ_BENCH_FILE (bench/python/big_artifact.py writes
// one). Without it both are skipped, saying so.
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include "insitu/stablehlo/import.h"

namespace {

const char* file_name() { return std::getenv("INSITU_READ_BENCH_FILE"); }

// The file's bytes in one sized read (the fastest plain read; a stringstream's growth took 3x).
std::string read_file(const char* name) {
  std::ifstream in(name, std::ios::binary | std::ios::ate);
  std::string bytes(static_cast<size_t>(in.tellg()), '\0');
  in.seekg(0);
  in.read(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  return bytes;
}

void BM_ReadFile(benchmark::State& state) {
  if (file_name() == nullptr) return state.SkipWithError("set INSITU_READ_BENCH_FILE to an artifact");
  for (auto _ : state) {
    std::string bytes = read_file(file_name());
    benchmark::DoNotOptimize(bytes.data());
    state.counters["MB"] = static_cast<double>(bytes.size()) / 1e6;
  }
}

void BM_ReadVhlo(benchmark::State& state) {
  if (file_name() == nullptr) return state.SkipWithError("set INSITU_READ_BENCH_FILE to an artifact");
  for (auto _ : state) {
    const std::string bytes = read_file(file_name());
    auto module = insitu::stablehlo::read_vhlo(
        std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()));
    if (!module.ok()) return state.SkipWithError(module.status().message().c_str());
    benchmark::DoNotOptimize(module->get());
  }
}

BENCHMARK(BM_ReadFile)->Unit(benchmark::kMillisecond)->UseRealTime()->Repetitions(5);
BENCHMARK(BM_ReadVhlo)->Unit(benchmark::kMillisecond)->UseRealTime()->Repetitions(5);

}  // namespace

BENCHMARK_MAIN();
