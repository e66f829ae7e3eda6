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
// them, an integer iota of them (a causal mask's row and column indices: computed per block,
// never written out), or a scalar constant, and every user of it is already in the fusion (so
// nothing outside reads a fused value and no cycle can form); it is not a computation root and
// has no control edges. Scalar constants a fused op reads are copied into the fused computation (the original
// stays for other readers, or goes as dead code). A broadcast of a scalar read by several
// elementwise ops is first split, one copy per reader, so that each fuses (no full-size array of
// one value is written). An elementwise value the computation returns, read by a chain and
// otherwise only by the root tuple, joins that chain as another output (a multi-output fusion:
// the fused computation's root is a tuple of its outputs, the fusion's readers take
// get-tuple-elements): Adam's m' and v' join the update of p that reads them, so m, v, g and p
// are each read once. So does a value otherwise only written into a stack from outside the
// fusion by a dynamic-update-slice or a scatter (after the fusion's root): a scan's, a
// fori_loop's or an unrolled `.at[i].set` loop's per-layer m' and v', which buffer assignment
// then computes straight into their stacks' windows. A fusion holds at least two instructions and at least one
// elementwise op. Runs in the entry and the computations control flow calls, after
// layout-assignment and before the schedule and copy insertion, which then treat each fusion
// as one op reading all its operands.
// Results are unchanged: the fused computation is the same ops on the same elements.
//
// Reduce fusions (kind=kInput, XLA's name): a reduce of one input and a scalar init over the
// input's trailing dimensions (rows of at most 256 KiB, at least one dimension kept), whose
// input is an elementwise op, grows over its input's dimensions the same way, the reduce the
// fused computation's root. The runtime computes the fused ops a chunk of whole rows at a time
// into per-thread scratch and folds each chunk with the reduce's own kernel: a layer norm's
// (x - mean)^2, a softmax's exp(x - max) read only by its sum, a log-softmax's, a backward's
// sum(g * y) never reach memory. When the reduce's input is read after the reduce too (a
// softmax's exp(x - max), read by its sum and by the division), it is the fusion's second
// output (the root the tuple (reduce, input)): written once, summed while in cache. Other values
// read outside stay out.
//
// Sliced dots (kind=kCustom): an f32 dot's operands that are strided dynamic-slices (blocks that are
// not one contiguous run of their array, so buffer assignment cannot make them views) read by
// the dot alone join it: the runtime's GEMM reads each block where it lies, the array's row
// length its leading dimension (a Pallas matmul's x and y blocks are not copied out per step).
// So does the dot's accumulation into a window of an array, `dynamic-update-slice(%o,
// add(%w, %dot), %i, %j)` with %w the window's old value read at the same starts, or a select of
// it against zero (Pallas's `o_ref[...] += jnp.dot(...)` after zeroing on the first reduction
// step): the fusion's root is the dynamic-update-slice, the fusion aliases its output to %o, and
// the runtime's GEMM writes the window where it lies with beta 0 or 1 (fusion_dots.cc). Before,
// each step copied the window out, added, and copied it back. The library then sums the old value
// with the products in its own order (library_gemm.h's tolerance, one term more); without it,
// the exact loops compute the dot and then the add, as written.
//
// Row fusions (kind=kCustom too, their root not a dot) are row-fusion's (passes/row_fusion.h): it
// runs after this pass and groups the fusions and reduces of one row computation.
//
// Recomputing instead of keeping: before grouping, a big elementwise value (1 MiB or more)
// whose users are all elementwise ops of its shape, some of them 16 or more instructions after
// the others, is computed again just before those far users when that keeps no other input
// alive longer (every input it needs there is a scalar constant or is read there or later
// anyway; the elementwise values between, up to 8, are recomputed with it). A GELU's tanh,
// read by the forward pass and again by the backward one, then dies in the forward pass
// instead of living across both, and each copy fuses into its reader's loop: the transformer
// training step's peak fell from 294 to 260 MB at the same time per step. It costs the
// recomputed ops once more, in a loop that streams the same inputs anyway.
#pragma once

#include "insitu/ir/module.h"

namespace insitu {

StatusOr<bool> fuse(Module& module);

// Inlines every fusion but the kLoop ones (reduce fusions, sliced dots, row fusions and the
// reduce fusions they hold) back into its caller
// and fuses the inlined elementwise chains again as loops: for the CUDA plan, whose kernels
// generate a fused loop, a reduce or a GEMM, not two in one.
bool inline_unlooped_fusions(Module& module);

}  // namespace insitu
