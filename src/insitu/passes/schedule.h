// schedule: orders each analyzed computation so that readers of a buffer's old value run
// before the instruction that overwrites it, and otherwise keeps the program order while
// preferring instructions that free a buffer (low peak memory).
//
// Why: copy insertion runs on this order. XLA inserts copies before scheduling, for every legal
// order, so `y = x[0,0]; x = x.at[0,0].add(1)` on a donated x copies x even though the read can
// simply run first (openxla/xla#20440); here the read is scheduled first and needs no copy.
//
// Write events X and the old values they overwrite:
//   an in-place op (dataflow in_place_pairs)          its in-place operand
//   a while updating state leaf i                     its init leaf i
//   a conditional whose branch updates parameter k    its operand leaf k
//   the definition of body root leaf i (new state)    body parameter leaf i
//   the definition of an entry output aliased to p    parameter p
// For every other reader Y of an old value with no path X ~> Y, a soft edge Y -> X is added
// (never one that would close a cycle). An update written into a fresh stack (a
// dynamic-update-slice chain that starts at a fill: an instruction without operands, or a
// broadcast of one) gets a soft edge from the stack to the update's producer, so that the fill
// runs first and buffer assignment computes the update straight into its window (a cycle check
// within a budget of nodes). Then a list schedule: among ready instructions, one
// that frees a buffer first, else the original order; parameters first (they are defined at
// entry: a copy of one may be needed before any instruction), the root last.
//
// Pre: a verified module, calls flattened (checked: check_calls_flattened names flatten-calls).
// Post: Computation::instructions() is the schedule.
#pragma once

#include "insitu/ir/module.h"

namespace insitu {

StatusOr<bool> schedule_module(Module& module);

}  // namespace insitu
