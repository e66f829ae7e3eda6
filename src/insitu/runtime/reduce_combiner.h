// Internal to the runtime's reduce kernels: the simple combiner a reduce, reduce-window or
// select-and-scatter's scatter may have (one binary op of its two scalar parameters), which
// they run natively instead of as a scalar program.
#pragma once

#include <optional>

#include "insitu/ir/computation.h"

namespace insitu::kernels {

// to_apply = op(p0, p1) or op(p1, p0) of two distinct scalar parameters.
struct Combiner {
  Opcode opcode = Opcode::kAdd;
  bool accumulator_first = true;  // op(acc, x) rather than op(x, acc)
};

// The combiner of `computation` when it is one add, multiply, maximum, minimum, and or or of its
// two distinct parameters (in either order); nullopt otherwise.
std::optional<Combiner> simple_combiner(const Computation& computation);

}  // namespace insitu::kernels
