// `insitu fmt MODULE.hlo [--short] [--no-verify]`: parse, verify and print a module in canonical
// HLO text. --no-verify parses without verifying, as XLA's parser does (its tests hold modules
// written to fail a verifier): the shapes, operand counts and aliases are printed as written.
#pragma once

#include <string>

#include "cli/cli.h"

namespace insitu::cli {

struct FmtOptions {
  std::string module_path;
  bool short_form = false;  // bare names, no operand shapes
  bool no_verify = false;   // parse and print only: a module a verifier would refuse prints too
  std::string to = "hlo";   // the form printed: HLO text (StableHLO and bytecode input included)
};

int fmt_command(const FmtOptions& options, CliContext& context);

}  // namespace insitu::cli
