// Internal to simplify (simplify.cc runs every rewrite; simplify_slices.cc holds the slice
// rewrites): each function rewrites one computation and returns true if it changed it.
#pragma once

#include "insitu/ir/computation.h"

namespace insitu::simplify_internal {

// slice(dynamic-update-slice(x, u, constant starts)) reads x where the slice misses the update's
// window and u where it lies inside it: see simplify.h.
bool fold_slices_of_updates(Computation& computation);

}  // namespace insitu::simplify_internal
