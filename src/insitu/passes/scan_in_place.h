// scan-in-place: a loop that reads row i of an array (a scan's xs) and writes row i of an
// output stack (its ys) writes the stack into the array's buffer, so a donated xs is updated in
// place instead of the stack being a second array of its size.
//
// JAX writes `lax.scan(layer, x, caches)` returning the updated caches as ys like this (after
// flatten-calls and simplify):
//
//   state = (i, ..., ys0, xs, ...)        ys0: anything (every row is written), xs: the caches
//   body:  row = dynamic-slice(xs, i, 0, ..), new = f(row, ...)
//          ys' = dynamic-update-slice(ys, new, i, 0, ..)        xs passed through unchanged
//   cond:  i < N                          i from 0 by 1, N = the rows of xs and ys
// ==>
//   state = (i, ..., xs, ...)             the stack starts as xs; xs leaves the state
//   body:  row = dynamic-slice(ys, i, 0, ..), ys' = dynamic-update-slice(ys, new, i, 0, ..)
//
// Step i reads row i before writing it (copy insertion orders a reader before the in-place
// writer of the value it reads, or copies), rows before i hold ys's values and rows after i
// still hold xs's, so every step reads what it read before. Before: the whole xs was copied
// each step (it was still read by the loop while the donated buffer took the stack's value:
// 75 MB a GPT-2-small decode step). Needs: the counter's start, step and bound constant with N
// rows in both arrays, every read of xs in the body a dynamic-slice one row high at i (anywhere
// along the other dimensions), the stack written a whole row at i and read only by that update,
// xs's loop result unused after the loop, the condition reading the counter only, and the
// loop's initial state a tuple. "The counter" may be read through copies and through clamps
// that hold 0..N-1 (XLA's optimized loops do both); a start above 0 needs the rows before it
// written by one-row updates at constant rows over the stack's initial value (what
// loop-peeling leaves), which then write into xs too. Runs after simplify.
#pragma once

#include "insitu/ir/module.h"

namespace insitu {

StatusOr<bool> update_scans_in_place(Module& module);

}  // namespace insitu
