// insitu: the command-line tool. All logic lives in the insitu_cli library (cli.h).
#include <iostream>
#include <string>
#include <vector>

#include "cli/cli.h"

int main(int argc, char** argv) {
  std::vector<std::string> args(argv, argv + argc);
  insitu::cli::CliContext context{std::cout, std::cerr};
  return insitu::cli::run_insitu(args, context);
}
