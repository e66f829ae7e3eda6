// The simple combiner (reduce_combiner.h): recognising a to_apply that is one binary op of its two
// parameters, which the reduce, reduce-window and select-and-scatter kernels and the collectives
// (executor.cc, executable_build.cc) run natively instead of as a scalar program.
#include "insitu/runtime/reduce_combiner.h"

namespace insitu::kernels {

std::optional<Combiner> simple_combiner(const Computation& computation) {
  const Instruction* root = computation.root();
  if (root == nullptr || computation.parameter_count() != 2 || root->operand_count() != 2) return std::nullopt;
  switch (root->opcode()) {
    case Opcode::kAdd:
    case Opcode::kMultiply:
    case Opcode::kMaximum:
    case Opcode::kMinimum:
    case Opcode::kAnd:
    case Opcode::kOr: break;
    default: return std::nullopt;
  }
  const Instruction* a = root->operand(0);
  const Instruction* b = root->operand(1);
  if (a == b || a->opcode() != Opcode::kParameter || b->opcode() != Opcode::kParameter) return std::nullopt;
  if (!(a->shape() == root->shape()) || !(b->shape() == root->shape())) return std::nullopt;
  return Combiner{root->opcode(), a->parameter_number == 0};
}

}  // namespace insitu::kernels
