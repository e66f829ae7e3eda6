// copy-insertion: makes every must-share link of Dataflow legal on the schedule by inserting
// `copy` instructions, only where the program's meaning needs one, each with a reason and a
// detail sentence (ir/copy_reason.h).
//
// Why after scheduling: XLA decides copies for every legal order, so a read that could run
// before an in-place write still costs a copy (openxla/xla#20440, #5335). Here the schedule
// pass has already moved such reads first, and liveness is read off the instruction order.
//
// Pre: calls inlined and one caller per while/conditional computation (flatten-calls; checked,
// the error says to run it first); donors matched (a parameter leaf is writable only if it is
// in input_output_alias); instruction order is the schedule (any order is correct, the
// schedule pass's needs the fewest copies; not checkable). Post: buffer assignment may union every linked value into one buffer.
//
// Rules, checked region by region, callees before callers, one copy per violation, then
// re-checked ("live after X" = read later in X's computation, or returned by it):
//   R1  in-place op X on %v: %v must be writable (not a constant or undonated parameter), not
//       also another operand of X (operand-overlap), and dead after X.
//         %x = dus(%v, ..); %y = neg(%v)    ==>  %c = copy(%v); %x = dus(%v, ..); %y = neg(%c)
//   R2  while W updating state leaf i: its init %u must be writable, dead after W and not at two
//       init leaves, else W gets a copy (loop-carried).
//   R2b body root leaf i: a buffer the body owns (not another state leaf, a constant, or twice
//       in the root), written when the old state is dead (loop-carried).
//         ROOT (%a, %b) swapped:  ROOT (%b, %a)  ==>  %t = copy(%a); %c.1 = copy(%b);
//                                                   %c.2 = copy(%t); ROOT (%c.1, %c.2)
//   R3  conditional C: a branch updating its parameter (itself, or through a conditional
//       nested in it, even one whose result is a fresh buffer) needs the operand writable and
//       dead after C; a result that is not one operand buffer updated by every branch is a fresh
//       buffer, and branches returning a buffer they do not own copy it (conditional-branch).
//   R4  entry root: a constant or unaliased parameter returned is copied (read-only-live-out);
//       one buffer at two outputs copies the unaliased one (non-distinct-output).
//   R5  output aliased to parameter p whose value is not p's buffer: p must be dead where the
//       value is written (the seed's copy.3: the custom call still reads p0 while output {0}
//       is written into p0's buffer).
//         %o = custom-call(%p0)  ==>  %copy.1 = copy(%p0); %o = custom-call(%copy.1)
// A value whose old contents are still read is saved by a copy taken before the write (the
// write keeps its buffer); one still returned makes the writer work on a copy instead.
#pragma once

#include "insitu/ir/module.h"

namespace insitu {

StatusOr<bool> insert_copies(Module& module);

}  // namespace insitu
