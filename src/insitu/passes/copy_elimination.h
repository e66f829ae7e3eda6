// copy-elimination: removes every copy the program does not need, on the schedule.
//
// A copy that changes neither layout nor memory space is tentatively removed (its readers read
// its operand) and the copy-insertion rules are re-checked on the result; the copy goes only if
// no rule would put it back. So a copy a user wrote, or one an earlier pass inserted "to be
// safe", disappears when liveness on this schedule shows it is not needed, and a needed copy
// without a reason gets the reason of the rule that keeps it. When no copy goes alone, a copy
// and the copy its operand updates in place (copy A; an in-place write into A; copy B of the
// result) are tried together: each such copy in XLA's module of a layer-by-layer cache update
// is kept by the other. Repeats until nothing changes.
// A copy that still only hands the caller a copy of a constant or of an unaliased parameter is
// kept without a trial (removing it always breaks R4), so wide tuples returned as is stay linear.
//
// Pre: as copy insertion, and copy insertion already ran (no rule violated).
#pragma once

#include "insitu/ir/module.h"

namespace insitu {

StatusOr<bool> eliminate_copies(Module& module);

// A copy copy elimination may remove: it changes neither layout nor memory space (the same
// shape as its operand) and has no control edges. The schedule orders such a copy's readers as
// readers of its source, so that removing it needs no reordering.
bool is_plain_copy(const Instruction& instruction);

}  // namespace insitu
