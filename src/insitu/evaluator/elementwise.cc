// Elementwise ops of the reference evaluator (stub: being written).
#include "insitu/evaluator/ops.h"

namespace insitu::eval {

StatusOr<Literal> evaluate_elementwise(const Instruction& instruction, Operands) {
  return unimplemented(std::string("elementwise evaluation not written yet: ") + std::string(opcode_name(instruction.opcode())),
                       instruction.location());
}
StatusOr<Literal> evaluate_map(const Instruction& instruction, Operands, ComputationRunner&) {
  return unimplemented("map not written yet", instruction.location());
}

}  // namespace insitu::eval
