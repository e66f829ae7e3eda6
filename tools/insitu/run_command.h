// `insitu run MODULE.hlo [--arg FILE.npy]... [--save DIR] [--stats FILE.json]
//                        [--plugin LIB.so]... [--threads N] [--reference] [--check-races]
//                        [--strict-donation]`
//
// Loads plugins, parses and verifies the module, binds arguments (arguments.h), executes the
// entry computation, prints the result as XLA literal text (literal_format.h), and optionally
// saves the flattened result leaves as .npy files and writes run statistics as JSON.
//
// Until the optimizing pipeline and runtime exist, both modes run the reference evaluator;
// --threads, --check-races and --strict-donation are validated and recorded but do not change
// the evaluation yet.
#pragma once

#include <string>
#include <vector>

#include "insitu/cli.h"

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
};

int run_command(const RunOptions& options, CliContext& context);

}  // namespace insitu::cli
