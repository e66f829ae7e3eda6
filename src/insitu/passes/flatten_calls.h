// flatten-calls: inline every `call` and every `fusion` the input brought (XLA:CPU's optimized
// modules: a fusion means its computation; insitu's fusion pass fuses again, for its kernels),
// and give every control-flow computation one caller.
//
// Why: the analyses after it (dataflow, copy insertion, buffer assignment) reason about one
// call site per while body/condition and conditional branch, the way XLA's CallInliner and
// FlattenCallGraph prepare a module for copy insertion. A body shared by two while loops would
// otherwise need one buffer layout for two unrelated loop states.
//
//   %r = f32[4] call(%a, %b), to_apply=%f        %t.1 = f32[4] multiply(%a, %b)   (f's body,
//                                          ==>   ...                              cloned,
//   %s = f32[4] negate(%r)                       %s = f32[4] negate(%t.1)         renamed)
//
//   while(%x), body=%b ; while(%y), body=%b  ==>  while(%x), body=%b ; while(%y), body=%b.clone
//
// An async chain (`op-start`, `op-update`s, `op-done`: XLA's async-start/-update/-done around a
// computation) is a call of that computation at the start, inlined the same way (insitu overlaps
// nothing, so no value changes); a partially bound chain stays as it is.
//
// Post: no `call` or `fusion` instructions; each while condition/body and conditional branch is called
// from exactly one site. Computations that lost their last caller are removed (never the
// entry; computations still referenced by fusion/reduce/map/sort/scatter/custom-call/... stay).
#pragma once

#include <unordered_set>

#include "insitu/ir/module.h"

namespace insitu {

StatusOr<bool> flatten_calls(Module& module);

// A new instruction like `original` (every attribute, called computations and location), with
// no operands yet.
std::unique_ptr<Instruction> clone_without_operands(const Instruction& original, std::string name);

// Replaces `call` (a call or a fusion) by a copy of its callee's body placed right before it,
// named by `names`; returns the copy of the callee's root.
class NameTable;
Instruction* inline_call(Instruction* call, NameTable& names);

// flatten-calls' postcondition, as the precondition of a later pass: no `call`, and each while
// condition/body and conditional branch called from one site. An error names the pass, the
// offending instruction and says to run flatten-calls first.
Status check_calls_flattened(const Module& module, std::string_view pass);

// Computations reachable from the entry through any called computation.
std::unordered_set<const Computation*> reachable_computations(const Module& module);
// Removes computations in `previously_reachable` that are no longer reachable from the entry;
// returns how many it removed.
int remove_unreachable_computations(Module& module,
                                    const std::unordered_set<const Computation*>& previously_reachable);

}  // namespace insitu
