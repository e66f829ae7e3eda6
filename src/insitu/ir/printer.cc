// HLO text printer (stub: being written).
#include "insitu/ir/printer.h"

namespace insitu {

std::string print_module(const Module& module, const PrintOptions&) { return "HloModule " + module.name() + "\n"; }
std::string print_computation(const Computation& computation, const PrintOptions&) { return computation.name(); }
std::string print_instruction(const Instruction& instruction, const PrintOptions&) { return instruction.name(); }
std::string Instruction::to_string() const { return print_instruction(*this); }

}  // namespace insitu
