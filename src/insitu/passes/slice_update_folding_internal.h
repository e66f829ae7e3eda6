// slice-update-folding's matchers (slice_update_folding_match.cc), which the folding
// (slice_update_folding.cc) calls: what a block update looks like, found in the IR. Not an API.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "insitu/ir/computation.h"

namespace insitu::slice_update_folding_internal {

// One block of an array that is updated in place: %y = dynamic-update-slice(%x, %kv, %p...)
// where %x is (a unit reshape of) the block read out of the array at `starts`.
struct Block {
  Instruction* updated = nullptr;  // %y
  Instruction* written = nullptr;  // what writes %y back (%r), not one of the readers rewired
  // The array as the block's read names it (the same array as the write-back's, same_array; it
  // is defined before the read, so before %y, where the fold goes). Form 1 only.
  Instruction* source = nullptr;
  std::vector<int64_t> sizes;      // the block, in the array's rank
  // Where the block starts: per array dimension an index instruction (a dynamic-slice's start,
  // clamped when folded) or, when `dynamic` is false, the constant in static_starts.
  bool dynamic = false;
  std::vector<Instruction*> dynamic_starts;
  std::vector<int64_t> static_starts;
};

// Through a chain of reshapes that only add or drop dimensions of size 1: the first value that
// is not one.
Instruction* through_unit_reshape(Instruction* instruction);

// The window a scatter writes when it writes exactly one, per operand dimension; nullopt else.
std::optional<std::vector<int64_t>> single_window(const Instruction* scatter);

// The index type of a block's inner update (a dynamic-update-slice or a single-window
// scatter), or nullopt when it cannot be folded; `fallback` for an update without starts.
std::optional<PrimitiveType> update_index_type(const Instruction* updated, PrimitiveType fallback);

// Which dimension of the updated block each array dimension is (-1: one the block holds once).
std::vector<int64_t> inner_dimensions(std::span<const int64_t> sizes, const Shape& updated);

// Form 3 (slice_update_folding.h): a block read out, handed to a conditional whose result
// (leaf `leaf`; -1: the whole result) is written back at the same start.
struct ConditionalBlock {
  Instruction* conditional = nullptr;
  int64_t leaf = -1;
  Instruction* read = nullptr;     // %d: the dynamic-slice
  Instruction* block = nullptr;    // %x: %d through unit reshapes, what the branches receive
  Instruction* result = nullptr;   // the conditional, or its get-tuple-element of `leaf`
  // Per branch: the element of its operand tuple holding %x (-1: the operand is %x, -2: the
  // operand is a tuple without it) and whether its root hands the block on unchanged.
  std::vector<int64_t> element;
  std::vector<bool> passes_through;
};
std::optional<ConditionalBlock> match_conditional_write_back(Instruction* z);

// Form 1 (a block read out, updated and written back at the same start), form 2 (unrolled
// layers' blocks of one array stacked back) and the stacked-pieces form (per-layer arrays
// updated and stacked): slice_update_folding.h draws each.
std::optional<Block> match_write_back(Instruction* z);
std::optional<std::vector<Block>> match_stack(Instruction* z, Instruction*& cache);
std::optional<std::vector<Block>> match_stacked_pieces(Instruction* z, std::vector<Instruction*>& sources);

}  // namespace insitu::slice_update_folding_internal
