// loop-peeling: runs a while loop's first iteration before the loop where that saves the copy
// of a value the caller owns.
//
// A while's state lives in one buffer across iterations, so a state element whose initial
// value is an entry parameter the caller keeps (neither input_output_alias nor buffer_donor)
// and which the body replaces by a value it computes must first be copied into the loop's buffer (copy-insertion's
// "loop-carried" copy: the token vector of a decode step written as lax.scan, every step).
// When the loop surely runs once, its first iteration runs as a call of the body on the initial
// state, before the loop: that iteration reads the caller's value in place and writes fresh
// ones, which the loop then owns and updates in place. No value changes; the body runs as
// often as before.
//
//   %w = while(%init), condition=%c, body=%b    ==>   %first = call(%init), to_apply=%b
//                                                      %w = while(%first), condition=%c, body=%b
//
// "Surely runs once": %init is a tuple whose counter element is an integer constant and %c's
// root compares that element (get-tuple-element of its parameter) with an integer constant,
// true for the constant (lax.scan and fori_loop lower so). Only loops of the entry computation,
// with bodies of at most kMaxPeeledBody instructions (the body is duplicated). Not a Pallas
// kernel's grid loop (ir/grid_loop.h): its body updates blocks of its arrays in place, so a
// peeled first step would copy the caller's array all the same, and the kernel's grid steps
// would no longer all run in the loop the stats count them in.
//
// Pre: runs before flatten-calls, which inlines the call and gives the body's own loops and
// conditionals one caller each.
#pragma once

#include "insitu/ir/module.h"

namespace insitu {

inline constexpr int64_t kMaxPeeledBody = 4096;

StatusOr<bool> peel_loops(Module& module);

}  // namespace insitu
