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
// The inner update may also be a scatter of one window (JAX's keys.at[:, pos].set(row), and
// dynamic_update_slice under vmap): it folds into one scatter of that window into the whole
// array, indexed in every dimension (the block's clamped start, or the scatter's own index
// where it has one). A scatter drops a window that does not fit, so this needs every dimension
// it indexes to be all of the array's in the block: then it drops exactly what it dropped
// before, and the array is left as the write-back of the unchanged block left it.
//
//   %y = f32[2,T,D] scatter(%x, s32[1] %at, f32[2,D] %row), update_window_dims={0,1},
//        inserted_window_dims={1}, scatter_dims_to_operand_dims={1}, index_vector_dim=0
// ==>
//   %z' = scatter(%cache, {clamp(%i), 0, %at, 0}, reshape(%row)), one window, every dimension
//
// The block's read and the write-back may name the array through two get-tuple-elements of one
// tuple element (scan-in-place leaves that in a scan's body); the fold writes into the one the
// read names, which is defined before the update.
//
// The block may also be read by a unit-stride slice and written back at constant starts equal
// to the slice's: torch's update through a view (cache[l, 0].index_copy_(0, pos, k)), which
// functionalization writes as select, the update, then select_scatter back into the cache.
//
// The same for per-layer caches that are separate arrays, updated and then stacked
// (jnp.stack of the updated caches of an unrolled decode step):
//
//   %y_l = f32[T,D] dynamic-update-slice(%c_l, %kv_l, %pos, 0)     (each layer l)
//   %z = f32[L,T,D] concatenate(reshape(%y_0), ..., reshape(%y_n)), dimensions={0}
// ==>
//   %s = concatenate(reshape(%c_0), ..., reshape(%c_n))      (the caller's caches only read)
//   %z' = the updates written into %s in place, layer by layer (as above, at offset l)
//   %y_l's other readers read layer l out of the result (a view)
//
// Before: each undonated %c_l was copied so its update could be in place, and the stack copied
// the pieces again. Needs every %c_l defined before the first update (parameters and constants
// move to the front) and the updates in program order.
//
// Form 3: a block read out, handed to a conditional and written back where it was read (a
// Pallas output block under pl.when: the finishing step computes it, the others hand it on):
//
//   %x = f32[4,8] reshape(dynamic-slice(%o, %i, %j, 0))
//   %r = f32[4,8] conditional(%p, %x, (%acc, %sum)), branch_computations={%keep, %finish}
//   %z = f32[2,16,8] dynamic-update-slice(%o, reshape(%r), %i, %j, 0)
// ==>
//   %z' = f32[2,16,8] conditional(%p, (%o, %i, %j, 0), (%acc, %sum, %o, %i, %j, 0))
//   %keep: the array as it came in; %finish: dynamic-update-slice(array, reshape(out), starts)
//
// Each branch's operand gets the array (where %x was, or appended) and the starts; a branch that
// reads the block reads it out of the array itself. The block then moves only where a branch
// computes it, into the array in place (conditional operands that die there), instead of out
// and back on every step. Needs %x read by the conditional alone (as a branch operand, or in
// operand tuples only it reads), the result leaf read by the write-back alone, every branch
// parameter that is a tuple read element by element, and the same starts (by value).
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
