// Internal to simplify (simplify.cc runs every rewrite; simplify_movement.cc holds the slice and
// layout-copy rewrites): each function rewrites one computation and returns true if it changed
// it.
#pragma once

#include "insitu/ir/computation.h"
#include "insitu/passes/name_table.h"

namespace insitu::simplify_internal {

// slice(dynamic-update-slice(x, u, constant starts)) reads x where the slice misses the update's
// window and u where it lies inside it: see simplify.h.
bool fold_slices_of_updates(Computation& computation);

// An elementwise tree over dynamic-update-slices of broadcast scalars at disjoint constant
// windows is the tree over the broadcasts with each window's value written in: see simplify.h.
bool elementwise_windows(Computation& computation, NameTable& names);

// copy(transpose(x)) that only changes the transpose's layout is one transpose of x computed in
// the copy's layout: see simplify.h.
bool fold_layout_copies_into_transposes(Computation& computation, NameTable& names);

}  // namespace insitu::simplify_internal
