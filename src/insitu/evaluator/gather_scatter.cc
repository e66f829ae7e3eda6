// gather and scatter of the reference evaluator (stub: being written).
#include "insitu/evaluator/ops.h"

namespace insitu::eval {

StatusOr<Literal> evaluate_gather(const Instruction& instruction, Operands) {
  return unimplemented("gather not written yet", instruction.location());
}
StatusOr<Literal> evaluate_scatter(const Instruction& instruction, Operands, ComputationRunner&) {
  return unimplemented("scatter not written yet", instruction.location());
}

}  // namespace insitu::eval
