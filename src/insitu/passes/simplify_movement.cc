// simplify's data-movement rewrites (simplify.h): a slice of a dynamic-update-slice whose start
// indices are constants reads the operand or the update directly; a copy that only changes the
// layout of a transpose is the transpose computed in that layout.
#include <algorithm>
#include <optional>
#include <vector>

#include "insitu/passes/flatten_calls.h"
#include "insitu/passes/simplify_internal.h"

namespace insitu::simplify_internal {
namespace {

// The update's window of a dynamic-update-slice with constant start indices, each clamped as
// the op clamps it (to [0, dimension - update dimension]); nothing when a start is computed.
std::optional<std::vector<int64_t>> constant_window(const Instruction& update_slice) {
  const Shape& operand = update_slice.operand(0)->shape();
  const Shape& update = update_slice.operand(1)->shape();
  if (!operand.is_array() || !update.is_array() || update_slice.operand_count() != 2 + operand.rank()) return std::nullopt;
  std::vector<int64_t> starts;
  for (int64_t d = 0; d < operand.rank(); ++d) {
    const Instruction& start = *update_slice.operand(2 + d);
    if (start.opcode() != Opcode::kConstant || !start.shape().is_array() || start.shape().rank() != 0 ||
        !is_integral(start.shape().element_type()))
      return std::nullopt;
    const int64_t value = start.literal.get_integer(0);
    starts.push_back(std::clamp<int64_t>(value, 0, operand.dimension(d) - update.dimension(d)));
  }
  return starts;
}

// The last index a slice dimension reads (its limit exclusive, in steps of its stride).
int64_t last_read(const SliceDimension& s) { return s.start + (s.limit - s.start - 1) / s.stride * s.stride; }

// Rewrites `slice` to read the update-slice's operand or update, when it may.
bool fold(Instruction& slice) {
  Instruction* update_slice = slice.operand(0);
  // only an update-slice the slice alone reads (it then dies): one that goes on to be updated
  // further is a chain slice-update-folding reads in place, layer after layer, and a slice
  // moved to an older version of it would have to be staged before that version is overwritten
  if (update_slice->opcode() != Opcode::kDynamicUpdateSlice || slice.has_control_edges() ||
      update_slice->users().size() != 1 || update_slice->parent()->root() == update_slice)
    return false;
  const std::optional<std::vector<int64_t>> window = constant_window(*update_slice);
  if (!window || slice.slice.size() != window->size()) return false;
  const Shape& update = update_slice->operand(1)->shape();
  bool misses = false, inside = true;
  for (size_t d = 0; d < window->size(); ++d) {
    const SliceDimension& s = slice.slice[d];
    if (s.limit <= s.start || s.stride < 1) return false;  // (an empty slice: left alone)
    const int64_t first = (*window)[d], last = first + update.dimension(static_cast<int64_t>(d)) - 1;
    // no index read in [first, last]: the first read index at or after `first` is past `last`
    const int64_t next = s.start >= first ? s.start : s.start + (first - s.start + s.stride - 1) / s.stride * s.stride;
    misses |= next > last || next > last_read(s);
    inside &= s.start >= first && last_read(s) <= last;
  }
  if (misses) {
    slice.replace_operand(0, update_slice->operand(0));
    return true;
  }
  if (!inside) return false;
  for (size_t d = 0; d < window->size(); ++d) {
    SliceDimension& s = slice.slice[d];
    const int64_t last = last_read(s);
    s.start -= (*window)[d];
    s.limit = last - (*window)[d] + 1;  // the same indices, within the update
  }
  slice.replace_operand(0, update_slice->operand(1));
  return true;
}

}  // namespace

bool fold_slices_of_updates(Computation& computation) {
  bool changed = false;
  for (Instruction* instruction : computation.instructions())
    if (instruction->opcode() == Opcode::kSlice)
      while (fold(*instruction)) changed = true;  // a chain of updates, each missed in turn
  return changed;
}

bool fold_layout_copies_into_transposes(Computation& computation, NameTable& names) {
  bool changed = false;
  for (Instruction* copy : computation.instructions()) {
    if (copy->opcode() != Opcode::kCopy || copy->has_control_edges() || !copy->shape().is_array()) continue;
    const Instruction* transpose = copy->operand(0);
    if (transpose->opcode() != Opcode::kTranspose || !transpose->shape().is_array() ||
        transpose->shape().dimensions() != copy->shape().dimensions() ||
        transpose->shape().element_type() != copy->shape().element_type() ||
        transpose->shape().layout().memory_space != copy->shape().layout().memory_space)
      continue;
    std::unique_ptr<Instruction> direct = clone_without_operands(*transpose, names.unique(transpose->name()));
    direct->mutable_shape() = copy->shape();
    direct->append_operand(transpose->operand(0));
    Instruction* placed = computation.insert_instruction_before(std::move(direct), copy);
    copy->replace_all_uses_with(placed);
    if (computation.root() == copy) computation.set_root(placed);
    changed = true;  // (dead code then removes the copy, and the first transpose if nothing else reads it)
  }
  return changed;
}

}  // namespace insitu::simplify_internal
