// layout-assignment: layouts and memory spaces, with a copy only where a consumer's required
// layout really differs from what its operand has.
//
// On CPU the layouts written in the module are kept. Three things are settled here:
// - The entry interface (entry_computation_layout) decides the entry parameters' and result's
//   layouts: a parameter instruction printed with another layout takes the interface's; a
//   result leaf in another layout is computed in the interface's layout when its producer is
//   an op read by nothing but the root tuple (JAX prints a transposed weight gradient as
//   transpose{0,1} of a dot; the interface wants {1,0}: no copy, as XLA gets by folding the
//   transpose into the dot), and copied into it otherwise (or for another memory space).
// - A custom call's operand_layout_constraints cost a copy only on a real mismatch: a different
//   minor_to_major, or a memory space the constraint names (S(n), n != 0; a constraint in the
//   default space names a layout, not where the operand lives). Tiles do not matter: CPU
//   buffers are dense. XLA's
//   LayoutAssignment instead copies every aliased operand of a layout-constrained custom call
//   pre-emptively, leaving later passes to remove what they can.
// - A copy already in the input gets its provenance: layout-change or memory-space-change when
//   it changes one ("S(0)->S(3)"), otherwise user-copy.
// Every copy inserted here carries a reason and a detail sentence (ir/copy_reason.h).
#pragma once

#include "insitu/ir/module.h"

namespace insitu {

StatusOr<bool> assign_layouts(Module& module);

}  // namespace insitu
