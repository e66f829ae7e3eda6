// row-fusion (pass "row-fusion", function fuse_rows): the reduces and fusions of one row
// computation (a layer norm's two row sums and the [rows]-sized arithmetic on them, a softmax's
// max, its sum of exponentials and the division that reads both back along each row) become one
// fusion, kind=kCustom, whose body holds them in program order, nested fusions included.
//
// Why: run one after another, each member streams the whole array: a layer norm over
// f32[4096,1024] read x three times from memory, and even a Pallas kernel's 1 MiB block, in L2,
// went through L2 three to four times. The runtime runs a row fusion a chunk of rows at a time
// (runtime/row_fusion_kernels.cc): each chunk's rows pass through every member while they are in
// L1, the [rows]-sized values between members live in per-thread scratch, and only the group's
// outputs reach memory. Results are unchanged: every member runs its own kernel on its own rows,
// so each reduce sums each row in the same order.
//
// Rules. A seed is a reduce, or a reduce fusion (kind=kInput), of every dimension after the
// first k of an f32 input of at least kMinRowElements elements; its result's dimensions are the
// rows. Going forward in program order from the seed, an instruction that reads a member joins
// when it is itself row-local over the same rows: a reduce or reduce fusion of every dimension
// after the rows, a kLoop fusion whose result's leading dimensions are the rows, a bitcast or reshape
// that keeps the rows, or a get-tuple-element of a member; every array it produces is f32; and every
// read of a member inside a fused body is elementwise at the same position or a broadcast that
// keeps the row dimensions in place (a row's mean stretched along it). Anything else that reads
// a member, or reads something that does, is a reader outside, and nothing after it that also
// reads it may join (no cycle through the outside). A sibling joins too: a reduce or reduce
// fusion of the same rows that reads no member and is read only by members (a layer norm
// backward's second row sum beside the group grown from its first), so its inputs are not
// streamed once more. The group is kept when it holds at least two
// members over whole rows (reduces, reduce fusions, loop fusions over more than the rows), every
// value read outside is read only after its last member, and it has at most kMaxRowOutputs such
// values (a tuple when several). Runs after reshape-bitcasts (the bitcasts between [rows] and
// [rows, 1] are then members) and before copies are decided; the fusion is one op for them.
#pragma once

#include "insitu/ir/module.h"

namespace insitu {

StatusOr<bool> fuse_rows(Module& module);

}  // namespace insitu
