// Loading a module for a command: read the file, parse it, verify it.
#pragma once

#include <memory>
#include <string>

#include "cli/cli.h"
#include "insitu/ir/module.h"

namespace insitu::cli {

// Parse and verify errors keep their line:column; a missing file is an error without one.
// `verify` false: parse only (as XLA's ParseAndReturnUnverifiedModule), for `fmt --no-verify`.
StatusOr<std::unique_ptr<Module>> load_module(CliContext& context, const std::string& path, bool verify = true);

}  // namespace insitu::cli
