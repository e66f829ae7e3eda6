// reduce and reduce-window of the reference evaluator (stub: being written).
#include "insitu/evaluator/ops.h"

namespace insitu::eval {

StatusOr<Literal> evaluate_reduce(const Instruction& instruction, Operands, ComputationRunner&) {
  return unimplemented("reduce not written yet", instruction.location());
}
StatusOr<Literal> evaluate_reduce_window(const Instruction& instruction, Operands, ComputationRunner&) {
  return unimplemented("reduce-window not written yet", instruction.location());
}

}  // namespace insitu::eval
