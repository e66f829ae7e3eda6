// The insitu command-line tool as a library: main.cc is a thin wrapper around run_insitu, and
// the golden-test runner (tests/golden) calls the same commands in-process.
//
// Every command writes results to `out` and errors to `err` and returns the process exit
// status: 0 on success, 1 on any user error (a located "FILE:LINE:COL: error: ..." where the
// error has a location, "insitu: error: ..." otherwise). Nothing here crashes on bad input.
#pragma once

#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include "insitu/support/status.h"

namespace insitu::cli {

// Reads a whole file as text ("cannot read 'PATH': REASON" when it cannot).
StatusOr<std::string> read_text_file(const std::string& path);

struct CliContext {
  std::ostream& out;
  std::ostream& err;
  // How a command reads MODULE.hlo; the golden runner substitutes in-memory text.
  std::function<StatusOr<std::string>(const std::string& path)> read_module_text = read_text_file;
};

// Parses `args` (args[0] is the program name) and runs the chosen subcommand.
int run_insitu(const std::vector<std::string>& args, CliContext& context);

// Prints `status` as the CLI reports errors: located errors as "FILE:LINE:COL: error: ...",
// others as "insitu: error: ...". Returns 1, the exit status of a failed command.
int report_error(CliContext& context, const Status& status, const std::string& file = {});

}  // namespace insitu::cli
