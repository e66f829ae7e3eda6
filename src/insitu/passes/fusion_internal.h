// Internal to the fusion pass (fusion.cc groups and outlines; fusion_copies.cc gives readers
// their own copies of values before grouping): what both need.
#pragma once

#include "insitu/ir/computation.h"
#include "insitu/passes/name_table.h"

namespace insitu::fusion_internal {

// An elementwise op with a native kernel (unary, binary, select, convert, is-finite) of an array result,
// without a side effect: what a loop fusion computes.
bool is_fusible_elementwise(const Instruction& instruction);

// A reduce its input's elementwise producers may join (a kInput fusion): see fusion.cc.
bool is_fusible_reduce(const Instruction& reduce);

// The pre-steps of grouping, each true when it changed the computation (fusion.h says why):
// far readers of a big elementwise value compute it again; a scalar broadcast gets one copy per
// elementwise reader; a cheap value every close reader fuses gets one copy per reader (a reduce
// counts as fusing its input only with `reduces`).
bool recompute_far_values(Computation& computation, NameTable& names);
bool split_shared_scalar_broadcasts(Computation& computation, NameTable& names);
bool duplicate_cheap_values(Computation& computation, NameTable& names, bool reduces);

}  // namespace insitu::fusion_internal
