// sort of the reference evaluator (stub: being written).
#include "insitu/evaluator/ops.h"

namespace insitu::eval {

StatusOr<Literal> evaluate_sort(const Instruction& instruction, Operands, ComputationRunner&) {
  return unimplemented("sort not written yet", instruction.location());
}

}  // namespace insitu::eval
