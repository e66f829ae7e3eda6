// `insitu run MODULE.hlo [--arg FILE.npy]... [--save DIR] [--stats FILE.json] [--plugin LIB.so]...
//                        [--max-memory BYTES] [--timeout SECONDS] [--collective-timeout SECONDS]
//                        [--threads N] [--reference] [--check-races] [--strict-donation]
//                        [--device cpu|cuda]`      (`insitu run --help` lists them with their meaning)
//
// Loads plugins, parses and verifies the module, binds arguments (arguments.h), executes the
// entry computation, prints the result as XLA literal text (literal_format.h), and optionally
// saves the flattened result leaves as .npy files and writes run statistics as JSON.
//
// A module whose header says replica_count x num_partitions > 1 runs on that many devices,
// one thread each in this process (evaluator/collectives.h): an --arg path may say
// {device}, {replica} or {partition} to give each device its own file (a path without them is
// every device's); each device's result prints under its own heading.
//
// By default the module is optimized (passes/optimize.h) and executed by the CPU runtime
// (runtime/executable.h); every argument belongs to the run, so parameters the module aliases
// to outputs are donated. --reference runs the reference evaluator instead. --check-races makes
// kernel grids record their block accesses and report steps that race on a buffer.
#pragma once

#include <nlohmann/json.hpp>  // JSON output: Debian's nlohmann-json3-dev
#include <string>
#include <vector>

#include "cli/cli.h"
#include "insitu/runtime/executable.h"

namespace insitu::cli {

struct RunOptions {
  std::string module_path;
  std::vector<std::string> arg_paths;
  std::string save_dir;     // empty: do not save
  std::string stats_path;   // empty: no statistics file
  std::vector<std::string> plugins;
  int threads = 0;          // 0: all cores
  bool reference = false;
  bool check_races = false;
  bool strict_donation = false;
  int64_t max_memory_bytes = 0;  // --max-memory; 0: what the machine can give
  double timeout_seconds = 0;    // --timeout; 0: none
  // --collective-timeout: how long a device waits at a collective for the rest of its group.
  double collective_timeout_seconds = 60;
  std::string device = "cpu";  // --device cuda: the CUDA executor on GPU 0 (cuda/executor.h)
};

int run_command(const RunOptions& options, CliContext& context);

}  // namespace insitu::cli
