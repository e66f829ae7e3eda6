// dot of the reference evaluator (stub: being written).
#include "insitu/evaluator/ops.h"

namespace insitu::eval {

StatusOr<Literal> evaluate_dot(const Instruction& instruction, Operands) {
  return unimplemented("dot not written yet", instruction.location());
}

}  // namespace insitu::eval
