// simplify: tuple forwarding and dead-code elimination, so later analyses see values rather
// than packing and unpacking, and no buffer is spent on a result nobody reads.
//
//   %t = (f32[4], s32[]) tuple(%a, %b)
//   %g = f32[4] get-tuple-element(%t), index=0      ==>   users of %g read %a; %t and %g die
//
// Identities: a broadcast/transpose with dimensions={0,1,...}, a reshape or convert to the
// same shape, a full unit-stride slice (same dimensions, type and layout) are read through:
// their users read the operand (JAX puts such broadcasts around every reduction).
//
// A reshape of a reshape reads the inner one's operand (reshapes compose), and so becomes an
// identity when it gives back that operand's shape (StableHLO's `b[None, None, :]` broadcast then
// stretched back to [N]).
//
// A transpose read by a dot is folded into the dot's dimension numbers when the result keeps
// its dimension order (the dot reads the transpose's operand in place; the transpose dies). A
// reshape that only adds leading unit dimensions to a transpose is moved below it first (the
// transpose of the reshaped operand), so that such a transpose reaches the dot.
// A transpose of a 2-D dot's result is the dot with its operands swapped.
//
// A slice that alone reads a dynamic-update-slice whose start indices are constants reads the
// update-slice's operand when it misses the update's window (in some dimension it reads no index inside it),
// and the update when it lies inside the window (simplify_slices.cc): XLA's optimized modules
// slice the next layer out of the cache after writing this one (slice(dus(cache, row, 0..)),
// [1:2]), which kept the old cache alive past its in-place update and cost a copy of it.
//
// Elementwise ops over updates of broadcast scalars at disjoint constant windows are computed
// per window (simplify_movement.cc elementwise_windows): a tree of elementwise binary ops of
// one shape whose leaves are dynamic-update-slices of a broadcast scalar (each read only by
// the tree) or broadcast scalars is the tree over the broadcasts, with each window's value --
// the tree over that window's update and the other leaves' scalars -- written into it by a
// dynamic-update-slice. The same ops on the same values at every element, so the same bits.
// Torch's backward of `q, k, v = qkv` (three selects) sums three zero arrays with one gradient
// written into each: 3 full-size fills, 3 updates and a 3-way add over [3, 4, 8, 128, 64]
// became one fill and three windows written in place.
//
// A copy of a transpose that only changes its layout (XLA's modules write a transpose as a
// layout, [64,32,32,16]{0,2,1,3}, and the data movement as a copy to {3,2,1,0}) is one transpose
// of the same operand computed in the copy's layout: the program's transpose, not a copy, and
// one pass over the data instead of two.
//
// A two-way conditional whose branches only move or fill values (parameter, tuple,
// get-tuple-element, constant, broadcast, iota; at most 16 instructions) is a select of the two
// branch results (the predicate broadcast to each leaf's shape): pl.when's zero-init of an
// accumulator block, which as a conditional needed a buffer of its own and so a copy of the
// block whenever the keeping branch ran.
//
// Dead code: an instruction with no users that is not its computation's root, not a parameter
// (parameters are the signature) and has no side effect (custom_call_has_side_effect=true,
// send/recv/infeed/outfeed/rng, control flow whose callees have side effects) is removed,
// repeatedly. Control edges through a removed instruction are kept as edges between its
// predecessors and successors. Computations left without callers are removed.
#pragma once

#include "insitu/ir/module.h"

namespace insitu {

StatusOr<bool> simplify(Module& module);

// Whether removing `instruction` (when unused) could change what the program does.
bool has_side_effect(const Instruction& instruction);

}  // namespace insitu
