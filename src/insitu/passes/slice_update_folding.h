// slice-update-folding: a block of an array that is read out, updated and written back at the
// same place becomes one small update of the array, in place; readers of the updated block read
// it out of the updated array (a view, buffer_assignment.h), so the block is never copied.
//
// JAX writes a layer's KV cache update inside lax.scan this way (dynamic_index_in_dim, then
// dynamic_update_slice of the new position, then dynamic_update_index_in_dim):
//
//   %d = f32[1,2,T,D] dynamic-slice(%cache, %i, 0, 0, 0), dynamic_slice_sizes={1,2,T,D}
//   %x = f32[2,T,D] reshape(%d)                      (optional: adds or drops size-1 dimensions)
//   %y = f32[2,T,D] dynamic-update-slice(%x, %kv, 0, %pos, 0)
//   %r = f32[1,2,T,D] reshape(%y)                    (optional, the same kind)
//   %z = f32[L,2,T,D] dynamic-update-slice(%cache, %r, %i', 0, 0, 0)     (%i' computes %i's value)
// ==>
//   %z' = dynamic-update-slice(%cache, reshape(%kv), clamp(%i), 0, clamp(%pos), 0)
//   %y' = reshape(dynamic-slice(%z', clamp(%i), 0, 0, 0))   for %y's other readers
//
// The clamps make the new start exactly where XLA's clamping puts the two old ones
// (clamp(%i) + clamp(%pos) never needs another clamp), so the result is the same for every
// index, in range or not. Before: the block was copied out, updated, and copied back (two
// copies of T x D per layer per step); after: only %kv is written.
//
// Index expressions are compared by value (same opcode, attributes and operands, recursively;
// no side effects), since JAX computes the read's and the write's index separately. Runs after
// simplify and before fusion (index expressions are still plain instructions). Instructions
// with control edges are left alone.
#pragma once

#include "insitu/ir/module.h"

namespace insitu {

StatusOr<bool> fold_slice_updates(Module& module);

}  // namespace insitu
