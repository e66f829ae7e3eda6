// fusion (pass "fusion", function fuse): a chain of elementwise ops over one shape, with the
// broadcasts and scalar constants that feed it, becomes one kLoop fusion (XLA's loop fusion,
// in its HLO form: `fusion(...), kind=kLoop, calls=%fused_computation`).
//
// Why: unfused, every step of `exp(x - broadcast(max)) / broadcast(sum)` writes a full-size
// temp, so a softmax holds several copies of its input at once and streams each through
// memory. Fused, the runtime computes the chain block by block in cache (runtime/
// fusion_kernels.cc) and only the chain's result has a buffer; buffer assignment may put that
// result into an operand that dies at the fusion.
//
// Rules: an instruction joins its consumer's fusion when it is an elementwise op with a native
// kernel (unary, binary, compare, select, convert) of the fusion's dimensions, a broadcast into
// them, or a scalar constant, and every user of it is already in the fusion (so nothing outside
// reads a fused value and no cycle can form); it is not a computation root and has no control
// edges. Scalar constants a fused op reads are copied into the fused computation (the original
// stays for other readers, or goes as dead code). A fusion holds at least two instructions and at least one elementwise op. Runs in the
// entry and the computations control flow calls, after layout-assignment and before the
// schedule and copy insertion, which then treat each fusion as one op reading all its operands.
// Results are unchanged: the fused computation is the same ops on the same elements.
#pragma once

#include "insitu/ir/module.h"

namespace insitu {

StatusOr<bool> fuse(Module& module);

}  // namespace insitu
