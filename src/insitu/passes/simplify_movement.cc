// simplify's data-movement rewrites (simplify.h): a slice of a dynamic-update-slice whose start
// indices are constants reads the operand or the update directly; elementwise ops over updates
// of broadcast scalars at disjoint constant windows are computed per window; a copy that only
// changes the layout of a transpose is the transpose computed in that layout.
#include <algorithm>
#include <memory>
#include <optional>
#include <unordered_map>
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

// An elementwise tree (elementwise_windows): its root, nodes (elementwise binary ops of the
// root's shape read only inside the tree) and leaves, each either an update (a
// dynamic-update-slice of a broadcast scalar at a constant window, read only by the tree) or a
// broadcast scalar of the root's shape.
struct WindowTree {
  std::vector<Instruction*> nodes;  // operands before users; the root last
  std::vector<Instruction*> updates;
  std::vector<std::vector<int64_t>> windows;  // per update, its clamped starts
};

bool broadcast_scalar(const Instruction& instruction, const Shape& shape) {
  return instruction.opcode() == Opcode::kBroadcast && instruction.operand_count() == 1 &&
         instruction.operand(0)->shape().is_array() && instruction.operand(0)->shape().rank() == 0 &&
         instruction.shape() == shape && !instruction.has_control_edges();
}

bool tree_op(const Instruction& instruction, const Shape& shape) {
  if (!is_elementwise_binary(instruction.opcode()) || instruction.has_control_edges() || instruction.shape() != shape)
    return false;
  for (const Instruction* operand : instruction.operands())
    if (operand->shape() != shape) return false;  // (a compare's or a complex's operands differ)
  return true;
}

// Collects the tree under `node` into `tree`; false when some operand is neither a node, an
// update nor a broadcast scalar.
bool collect(Instruction* node, const Shape& shape, WindowTree& tree) {
  for (Instruction* operand : node->operands()) {
    if (broadcast_scalar(*operand, shape)) continue;
    const bool only_here = operand->users().size() == 1 && operand->parent()->root() != operand;
    if (operand->opcode() == Opcode::kDynamicUpdateSlice && only_here && !operand->has_control_edges() &&
        operand->shape() == shape && broadcast_scalar(*operand->operand(0), shape)) {
      std::optional<std::vector<int64_t>> window = constant_window(*operand);
      if (!window) return false;
      tree.updates.push_back(operand);
      tree.windows.push_back(std::move(*window));
      continue;
    }
    if (!only_here || !tree_op(*operand, shape) || !collect(operand, shape, tree)) return false;
  }
  tree.nodes.push_back(node);
  return true;
}

bool disjoint(const WindowTree& tree) {
  for (size_t a = 0; a < tree.updates.size(); ++a)
    for (size_t b = a + 1; b < tree.updates.size(); ++b) {
      const Shape& ua = tree.updates[a]->operand(1)->shape();
      const Shape& ub = tree.updates[b]->operand(1)->shape();
      bool apart = false;
      for (int64_t d = 0; d < ua.rank(); ++d) {
        const int64_t sa = tree.windows[a][d], sb = tree.windows[b][d];
        apart |= sa + ua.dimension(d) <= sb || sb + ub.dimension(d) <= sa;
      }
      if (!apart) return false;
    }
  return true;
}

// The tree's ops again over `shape`, each leaf read through `leaf` (its replacement): the last
// instruction made.
template <typename Leaf>
Instruction* rebuild(const WindowTree& tree, const Shape& shape, Computation& computation, Instruction* before,
                     NameTable& names, Leaf leaf) {
  std::unordered_map<const Instruction*, Instruction*> made;
  for (Instruction* node : tree.nodes) {
    std::unique_ptr<Instruction> op = clone_without_operands(*node, names.unique(node->name()));
    op->mutable_shape() = shape;
    for (Instruction* operand : node->operands()) {
      const auto found = made.find(operand);
      op->append_operand(found != made.end() ? found->second : leaf(operand));
    }
    made[node] = computation.insert_instruction_before(std::move(op), before);
  }
  return made.at(tree.nodes.back());
}

}  // namespace

bool elementwise_windows(Computation& computation, NameTable& names) {
  bool changed = false;
  for (Instruction* root : computation.instructions()) {
    const Shape& shape = root->shape();
    if (!shape.is_array() || !tree_op(*root, shape)) continue;
    // the largest tree only: a root read by another op of the tree's kind is a node of that one
    if (root->users().size() == 1 && computation.root() != root && tree_op(*root->users()[0], shape)) continue;
    WindowTree tree;
    if (!collect(root, shape, tree) || tree.updates.empty() || !disjoint(tree)) continue;
    // everywhere but the windows: the tree over the broadcasts (a fill the fusion pass makes one loop)
    Instruction* result = rebuild(tree, shape, computation, root, names, [](Instruction* leaf) {
      return leaf->opcode() == Opcode::kDynamicUpdateSlice ? leaf->operand(0) : leaf;
    });
    // in window k: the tree over its update, the other leaves' scalars broadcast to its shape
    for (size_t k = 0; k < tree.updates.size(); ++k) {
      Instruction* update = tree.updates[k];
      const Shape& window_shape = update->operand(1)->shape();
      Instruction* in_window = rebuild(tree, window_shape, computation, root, names, [&](Instruction* leaf) {
        if (leaf == update) return update->operand(1);
        const bool update_leaf = leaf->opcode() == Opcode::kDynamicUpdateSlice;
        Instruction* scalar = update_leaf ? leaf->operand(0)->operand(0) : leaf->operand(0);
        auto broadcast = std::make_unique<Instruction>(Opcode::kBroadcast, names.unique("broadcast"), window_shape);
        broadcast->append_operand(scalar);
        return computation.insert_instruction_before(std::move(broadcast), root);
      });
      std::unique_ptr<Instruction> written = clone_without_operands(*update, names.unique(update->name()));
      written->mutable_shape() = shape;
      written->append_operand(result);
      written->append_operand(in_window);
      for (int64_t i = 2; i < update->operand_count(); ++i) written->append_operand(update->operand(i));
      result = computation.insert_instruction_before(std::move(written), root);
    }
    root->replace_all_uses_with(result);
    if (computation.root() == root) computation.set_root(result);
    changed = true;  // (dead code then removes the old tree and its updates)
  }
  return changed;
}

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
