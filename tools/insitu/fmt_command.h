// `insitu fmt MODULE.hlo [--short]`: parse, verify and print a module in canonical HLO text.
#pragma once

#include <string>

#include "insitu/cli.h"

namespace insitu::cli {

struct FmtOptions {
  std::string module_path;
  bool short_form = false;  // bare names, no operand shapes
};

int fmt_command(const FmtOptions& options, CliContext& context);

}  // namespace insitu::cli
