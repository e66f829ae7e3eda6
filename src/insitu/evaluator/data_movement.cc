// Data-movement ops of the reference evaluator (stub: being written).
#include "insitu/evaluator/ops.h"

namespace insitu::eval {

StatusOr<Literal> evaluate_data_movement(const Instruction& instruction, Operands) {
  return unimplemented(std::string("not written yet: ") + std::string(opcode_name(instruction.opcode())),
                       instruction.location());
}

}  // namespace insitu::eval
