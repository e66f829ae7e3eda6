// conditional-in-place: a conditional result that one branch passes through unchanged and the
// others compute anew is written into the operand's buffer, so the pass-through branch copies
// nothing.
//
// Pallas's `pl.when(k == 0)` around a scratch reset, or around the step itself, lowers to a
// conditional whose false branch returns the scratch as it came in:
//
//   %r = (f32[64,1], f32[64,32]) conditional(%p, (%m, %acc), (%m, %acc, %q, ...)),
//        branch_computations={%keep, %step}
//   %keep:  ROOT tuple(gte(param, 0), gte(param, 1))                  (its parameter, unchanged)
//   %step:  ROOT tuple(%m_new, %acc_new)                              (computed from %m, %acc)
//
// The result needs one buffer in both branches, so copy insertion had %keep copy its parameter
// into a fresh one on every step it ran (a Pallas flash attention's accumulator block, every key
// block). When the pass-through value %acc is read by nothing but the conditional, %step writes
// %acc_new over %acc instead:
//
//   %step:  ROOT tuple(dynamic-update-slice(gte(param, 0), %m_new, 0, 0), ...)
//
// a whole-array update in place, which buffer assignment computes straight into %acc's buffer
// where nothing reads %acc after %acc_new's producer (place_updates), and which otherwise writes
// the bytes the pass-through branch copied before. The result then reuses the operand's buffer
// in every branch: %keep copies nothing. Applies to a result leaf (the whole result, or an
// element of a flat tuple result) when the branches that do not pass it through take the same
// value as a parameter leaf (once), return an array value of its shape computed in the branch and
// read there only by the root, and the value is no entry parameter or constant (its buffer is
// not the program's to write). Runs after row-fusion (the computed values are fusions by then),
// before copies are decided.
#pragma once

#include "insitu/ir/module.h"

namespace insitu {

StatusOr<bool> write_conditionals_in_place(Module& module);

}  // namespace insitu
