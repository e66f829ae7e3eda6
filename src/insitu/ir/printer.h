// Printer for XLA's HLO text format. The output parses back (parse_module) to an equal module,
// and printing is stable: print(parse(print(m))) == print(m).
#pragma once

#include <string>

#include "insitu/ir/module.h"

namespace insitu {

struct PrintOptions {
  // Long form: `%name`, operand shapes inline (as XLA's dumps) except for tuple operands of
  // more than 64 leaves (printed as the name alone, so text stays in proportion to the module).
  // Short form: bare names, no operand shapes.
  bool long_form = true;
  bool print_metadata = true;
  bool print_backend_config = true;
};

std::string print_module(const Module& module, const PrintOptions& options = {});
std::string print_computation(const Computation& computation, const PrintOptions& options = {});
std::string print_instruction(const Instruction& instruction, const PrintOptions& options = {});

}  // namespace insitu
