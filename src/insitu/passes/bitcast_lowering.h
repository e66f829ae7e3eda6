// bitcast-lowering: every bitcast that is more than a reshape of row-major data becomes the data
// movement it stands for, so that runtimes that keep arrays in logical row-major order (the
// CPU runtime: buffer.h) compute what the layouts mean.
//
// A bitcast reinterprets its operand's bytes, in the operand's layout, as the result in the
// result's layout. XLA:CPU's optimized modules rely on that: `transpose` into {0,2,1}, then
// `copy` to {2,1,0}, then `bitcast`; or a bitcast straight out of a transpose's layout.
//
//   %b = f32[3,2]{1,0} bitcast(f32[2,3]{0,1} %x)
//     ==>  %t = f32[3,2]{1,0} transpose(%x), dimensions={1,0}    (x's bytes, in memory order)
//          %b = f32[3,2]{1,0} bitcast(%t)                        (a reshape of row-major data)
//          (and a transpose into the result's logical order when its layout is not row-major)
//
// Between element types of one width a bitcast-convert is added; a bitcast between identical
// shapes (tiled layouts included) is removed. Bitcasts inside fusion computations are left as
// they are: a fusion runs its computation as one unit (the evaluator honours layouts there).
// Left alone, and refused when an Executable is built: a bitcast between element types of
// different widths or between different tiled layouts.
//
// Post: every remaining top-level bitcast satisfies is_row_major_reshape (ir/instruction.h), or is one of the two
// refused kinds.
#pragma once

#include "insitu/ir/module.h"

namespace insitu {

StatusOr<bool> lower_bitcasts(Module& module);

// reshape-bitcasts: a reshape between row-major arrays moves no element, so it becomes a bitcast:
// one value to dataflow, copy insertion and buffer assignment, read in its operand's bytes.
// As a reshape it was a value of its own that buffer assignment could only borrow as a view
// when nothing wrote the operand's buffer before its last reader; the residual stream of a
// transformer is updated in place, so each reshape read after that was a copy (52 copies of
// 0.3-0.5 ms in one forward graph). As a bitcast its readers extend the operand's liveness
// and copy insertion orders or copies the in-place writers instead, as for any reader. Only a
// reshape of a value its operand defines (not one forwarded through a get-tuple-element or a
// bitcast, whose layout where it is defined may differ). Runs after fusion (fused computations
// keep their reshapes) and before donor matching.
StatusOr<bool> reshapes_to_bitcasts(Module& module);

}  // namespace insitu
