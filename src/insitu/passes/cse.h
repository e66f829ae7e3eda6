// cse: common subexpression elimination. Two pure instructions of one computation with the same
// opcode, shape, attributes and operands (after the operands themselves were merged) compute the
// same value: the later one's users read the first, and the later one goes. Constants merge
// when their shapes (layouts included) and bytes are equal (up to 64 bytes, as every value).
//
// Why: JAX's StableHLO text and HLO write a constant per use and recompute a loop's index for
// each reader (a fori_loop's `i` wrapped by `i < 0 ? i + n : i` once for the read of row i and
// once for its write-back). Passes that match a value by identity (buffer assignment's update
// placed in the window a dynamic-slice at the same starts reads, slice-update-folding's read and
// write-back of one block) then see one index, not two equal ones.
//
// Merged: constants and computed values up to 64 bytes (indices, counters, the scalars JAX
// writes once per use; a weight is never hashed here). A larger value stays one per reader:
// fusion computes each inside its reader, where one shared value would be materialized.
// Pure: elementwise, data-movement and computation ops (dot, reduce, sort, ...), constants and
// iota; never a parameter, an instruction with a side effect or control edges, control flow
// (while, conditional, call, custom-call, fusion), a collective or rng; nor a value a user
// writes in place or carries as state (a tuple, while, conditional or call operand: merged,
// two loop counters' initial 0 would need a copy each).
//
//   %c.1 = s32[] constant(0)                   %c.1 = s32[] constant(0)
//   %c.2 = s32[] constant(0)           ==>     %a = s32[] add(%i, %c.1)
//   %a = s32[] add(%i, %c.1)                   %d = f32[4] dynamic-slice(%x, %a), ...
//   %b = s32[] add(%i, %c.2)                   %u = f32[8] dynamic-update-slice(%y, %d, %a)
//   %d = f32[4] dynamic-slice(%x, %a), ...
//   %u = f32[8] dynamic-update-slice(%y, %d, %b)
#pragma once

#include "insitu/ir/module.h"

namespace insitu {

StatusOr<bool> eliminate_common_subexpressions(Module& module);

// The same within one fused computation, for values of any size: there every value lives in the
// loop's block, so one of two equal values is only less work (fusion merges the copies that
// siblings grown together each brought). True if it changed the computation.
bool merge_equal_values(Computation& fused);

}  // namespace insitu
