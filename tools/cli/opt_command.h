// `insitu opt MODULE.hlo [--dump-to DIR] [--plugin LIB.so]... [--strict-donation]
// [--passes=a,b,...] [--time-passes]`: runs the optimization pipeline and buffer assignment, prints the
// optimized module, and with --dump-to writes XLA-style stage files (passes/optimize.h).
// --passes runs only the named passes, in that order (per-pass tests), without buffer
// assignment. --device cuda prints the optimized module's plan for the GPU instead (each
// kernel, GEMM and copy, and the PTX size when NVRTC is built in), or the located error naming
// the first op without a CUDA form (cuda/device_plan.h). --time-passes writes a table of each
// pass's seconds, its verification's and whether it changed the module to stderr.
//
// `insitu explain MODULE.hlo [--json | --dot] [--plugin LIB.so]...`: optimizes the module and
// says, for every copy in the result, why it exists (reason code + detail), which outputs alias
// which parameters, which donors could not be used and why, and the peak memory. --json gives
// the DESIGN.md schema; --dot a Graphviz graph with copies in red.
#pragma once

#include <string>
#include <vector>

#include "cli/cli.h"

namespace insitu::cli {

struct OptOptions {
  std::string module_path;
  std::string dump_to;
  std::vector<std::string> plugins;
  bool strict_donation = false;
  std::vector<std::string> passes;  // --passes=a,b: only these, no buffer assignment
  std::string device = "cpu";       // --device cuda: print the module's CUDA plan instead
  bool time_passes = false;         // --time-passes: each pass's seconds on stderr
};

int opt_command(const OptOptions& options, CliContext& context);

struct ExplainOptions {
  std::string module_path;
  std::vector<std::string> plugins;
  std::string device = "cpu";  // cuda: the module and buffers as the CUDA device runs them
  bool json = false;
  bool dot = false;
};

int explain_command(const ExplainOptions& options, CliContext& context);

}  // namespace insitu::cli
