// apply_fix: inserts one copy and points the chosen reads and root leaves at it. Reads through
// tuples are redirected by rebuilding the tuple (in place when the reader is its only user).
#include <algorithm>
#include <map>
#include <unordered_map>
#include <unordered_set>

#include "insitu/passes/copy_insertion_internal.h"
#include "insitu/passes/flatten_calls.h"
#include "insitu/support/str.h"

namespace insitu::copy_insertion {
namespace {

class Editor {
 public:
  Editor(Computation* computation, NameTable& names) : computation_(computation), names_(names) {}

  // base.1, base.2, ...: the first one no instruction has.
  std::string fresh_name(const std::string& base) { return names_.unique(str_cat(base, ".1")); }

  // Inserts before `before` (at the end when null).
  Instruction* insert(std::unique_ptr<Instruction> instruction, Instruction* before) {
    return before ? computation_->insert_instruction_before(std::move(instruction), before)
                  : computation_->add_instruction(std::move(instruction));
  }

  Instruction* element(Instruction* tuple, int64_t i, Instruction* before) {
    if (tuple->opcode() == Opcode::kTuple) return tuple->operand(i);
    auto gte = std::make_unique<Instruction>(Opcode::kGetTupleElement, fresh_name("get-tuple-element"),
                                             tuple->shape().tuple_shape(i));
    gte->tuple_index = i;
    gte->append_operand(tuple);
    return insert(std::move(gte), before);
  }

  // `holder` with its leaf `index` replaced by `replacement`. When `owner` is holder's only
  // reader (one operand slot), a tuple is edited in place; otherwise a new tuple is built.
  Instruction* replace_leaf(Instruction* holder, const ShapeIndex& index, Instruction* replacement,
                            Instruction* before, bool may_edit) {
    if (index.empty()) return replacement;
    const int64_t i = index.front();
    const ShapeIndex rest(index.begin() + 1, index.end());
    if (may_edit && holder->opcode() == Opcode::kTuple && comes_after(holder, replacement)) {
      Instruction* inner = holder->operand(i);
      bool inner_editable = inner->users().size() == 1 &&
                            std::count(holder->operands().begin(), holder->operands().end(), inner) == 1 &&
                            inner != computation_->root();
      // Whatever the inner edit creates must come before the holder that now reads it.
      holder->replace_operand(i, replace_leaf(inner, rest, replacement, holder, inner_editable));
      if (holder->operand(i) != inner) remove_if_dead(inner);
      return holder;
    }
    std::vector<Instruction*> elements;
    std::vector<Shape> shapes;
    for (int64_t e = 0; e < holder->shape().tuple_size(); ++e) {
      Instruction* part = element(holder, e, before);
      if (e == i) part = replace_leaf(part, rest, replacement, before, /*may_edit=*/false);
      elements.push_back(part);
      shapes.push_back(part->shape());
    }
    auto tuple = std::make_unique<Instruction>(Opcode::kTuple, fresh_name("tuple"), Shape::tuple(shapes));
    for (Instruction* part : elements) tuple->append_operand(part);
    return insert(std::move(tuple), before);
  }

  bool comes_after(const Instruction* a, const Instruction* b) const {
    const std::vector<Instruction*> order = computation_->instructions();
    return std::find(order.begin(), order.end(), a) > std::find(order.begin(), order.end(), b);
  }

  // An instruction whose whole result is `value`, available before `before`.
  Instruction* materialize(const Value& value, Instruction* before) {
    const std::vector<Instruction*> order = computation_->instructions();
    auto position_of = [&](const Instruction* instruction) {
      return std::find(order.begin(), order.end(), instruction) - order.begin();
    };
    const auto limit = before ? position_of(before) : static_cast<int64_t>(order.size());
    for (const Position& position : value.positions)
      if (position.index.empty() && position_of(position.instruction) < limit)
        return const_cast<Instruction*>(position.instruction);
    Instruction* current = const_cast<Instruction*>(value.defining.instruction);
    for (int64_t i : value.defining.index) current = element(current, i, before);
    return current;
  }

  // Removes tuples and get-tuple-elements that an edit left without readers.
 public:
  void remove_if_dead(Instruction* instruction) {
    if (instruction->opcode() != Opcode::kTuple && instruction->opcode() != Opcode::kGetTupleElement &&
        instruction->opcode() != Opcode::kBitcast)
      return;
    if (!instruction->users().empty() || instruction == computation_->root()) return;
    std::vector<Instruction*> operands = instruction->operands();
    computation_->remove_instruction(instruction);
    std::sort(operands.begin(), operands.end());
    operands.erase(std::unique(operands.begin(), operands.end()), operands.end());
    for (Instruction* operand : operands) remove_if_dead(operand);
  }

 private:
  Computation* computation_;
  NameTable& names_;
};

}  // namespace

Instruction* apply_fix(const Dataflow& dataflow, const CopyFix& fix, NameTable& names) {
  const Value& value = dataflow.value(fix.value);
  Computation* computation = const_cast<Computation*>(value.computation());
  Editor editor(computation, names);
  Instruction* before = const_cast<Instruction*>(fix.insert_before);
  // Root leaves get a copy right before a tuple root (edited in place), else at the end.
  if (before == nullptr && computation->root()->opcode() == Opcode::kTuple) before = computation->root();
  Instruction* source = editor.materialize(value, before);
  auto copy = std::make_unique<Instruction>(Opcode::kCopy, editor.fresh_name("copy"), source->shape());
  copy->append_operand(source);
  set_copy_reason(*copy, fix.reason, fix.detail);
  Instruction* inserted = editor.insert(std::move(copy), before);
  // A value reaches a leaf through bitcasts (which forward it), so the leaf may expect another
  // shape of the same bytes: give it a bitcast of the copy.
  // (After bitcast-lowering no bitcast changes layouts, so a leaf that differs only in layout
  // got it from a tuple's or get-tuple-element's written shape: the same values, no bitcast.)
  auto shaped_as = [&](const Shape& wanted, Instruction* at) -> Instruction* {
    if (wanted == inserted->shape() || wanted.compatible(inserted->shape())) return inserted;
    auto bitcast = std::make_unique<Instruction>(Opcode::kBitcast, editor.fresh_name("bitcast"), wanted);
    bitcast->append_operand(inserted);
    return editor.insert(std::move(bitcast), at);
  };

  for (const Use& use : fix.uses) {
    Instruction* user = const_cast<Instruction*>(use.instruction);
    Instruction* old_operand = user->operand(use.operand_number);
    const bool may_edit = old_operand->users().size() == 1 &&
                          std::count(user->operands().begin(), user->operands().end(), old_operand) == 1 &&
                          old_operand != computation->root();
    Instruction* replacement = shaped_as(*old_operand->shape().subshape(use.operand_index), user);
    user->replace_operand(use.operand_number,
                          editor.replace_leaf(old_operand, use.operand_index, replacement, user, may_edit));
    if (user->operand(use.operand_number) != old_operand) editor.remove_if_dead(old_operand);
  }
  for (const ShapeIndex& leaf : fix.root_leaves) {
    Instruction* root = computation->root();
    const bool may_edit = root->users().empty() && root->opcode() == Opcode::kTuple;
    Instruction* replacement = shaped_as(*root->shape().subshape(leaf), root->opcode() == Opcode::kTuple ? root : nullptr);
    Instruction* new_root = editor.replace_leaf(root, leaf, replacement, nullptr, may_edit);
    if (new_root != root) {
      computation->set_root(new_root);
      editor.remove_if_dead(root);
    }
  }
  return inserted;
}

namespace {

// Whether `fixes` can be applied as one edit of the entry root: all copy top-level leaves of a
// tuple-shaped root, read nowhere else, without bitcasts between value and leaf.
bool is_root_leaf_batch(const Dataflow& dataflow, const std::vector<CopyFix>& fixes) {
  if (fixes.size() < 2) return false;
  const Computation* computation = dataflow.value(fixes.front().value).computation();
  const Instruction* root = computation->root();
  if (!root->shape().is_tuple()) return false;
  for (const CopyFix& fix : fixes) {
    if (!fix.uses.empty() || fix.insert_before != nullptr || fix.root_leaves.size() != 1 ||
        fix.root_leaves[0].size() != 1 || dataflow.value(fix.value).computation() != computation)
      return false;
    const Shape* leaf = root->shape().subshape(fix.root_leaves[0]);
    if (leaf == nullptr || !leaf->compatible(dataflow.value(fix.value).shape)) return false;
  }
  return true;
}

// The batch edit: every copy (and any get-tuple-element it needs) is created first, inserted
// before a tuple root in one go, then the root's operands point at the copies (a root that is
// not an editable tuple is replaced by one tuple). Costs O(module + batch), not O(module) per fix.
void apply_root_leaf_fixes(const Dataflow& dataflow, const std::vector<CopyFix>& fixes, NameTable& names) {
  Computation* computation = const_cast<Computation*>(dataflow.value(fixes.front().value).computation());
  Instruction* root = computation->root();
  const bool edit_root = root->opcode() == Opcode::kTuple && root->users().empty() &&
                         root->control_predecessors().empty() && root->control_successors().empty();
  const std::vector<Instruction*> order = computation->instructions();
  std::unordered_map<const Instruction*, int64_t> position;
  for (size_t i = 0; i < order.size(); ++i) position[order[i]] = static_cast<int64_t>(i);
  const int64_t limit = edit_root ? position.at(root) : static_cast<int64_t>(order.size());

  std::vector<std::unique_ptr<Instruction>> created;  // in creation order: operands first
  auto create = [&](std::unique_ptr<Instruction> instruction) {
    created.push_back(std::move(instruction));
    return created.back().get();
  };
  std::map<std::pair<Instruction*, int64_t>, Instruction*> elements;
  auto element = [&](Instruction* tuple, int64_t i) {
    if (tuple->opcode() == Opcode::kTuple) return tuple->operand(i);
    Instruction*& gte = elements[{tuple, i}];
    if (gte == nullptr) {
      auto made = std::make_unique<Instruction>(Opcode::kGetTupleElement, names.unique("get-tuple-element.1"),
                                                tuple->shape().tuple_shape(i));
      made->tuple_index = i;
      made->append_operand(tuple);
      gte = create(std::move(made));
    }
    return gte;
  };
  std::unordered_map<int64_t, Instruction*> replacement;  // root element -> its copy
  for (const CopyFix& fix : fixes) {
    const Value& value = dataflow.value(fix.value);
    Instruction* source = nullptr;
    for (const Position& at : value.positions) {
      auto found = position.find(at.instruction);
      if (at.index.empty() && found != position.end() && found->second < limit) {
        source = const_cast<Instruction*>(at.instruction);
        break;
      }
    }
    if (source == nullptr) {
      source = const_cast<Instruction*>(value.defining.instruction);
      for (int64_t i : value.defining.index) source = element(source, i);
    }
    auto copy = std::make_unique<Instruction>(Opcode::kCopy, names.unique("copy.1"), source->shape());
    copy->append_operand(source);
    set_copy_reason(*copy, fix.reason, fix.detail);
    replacement[fix.root_leaves[0][0]] = create(std::move(copy));
  }
  if (edit_root) {
    // The root keeps its name and attributes; it is rebuilt once with the new operand list
    // (replacing operands one by one searches the operand list each time).
    std::unique_ptr<Instruction> rebuilt = clone_without_operands(*root, root->name());
    std::vector<Instruction*> replaced;
    for (int64_t e = 0; e < root->operand_count(); ++e) {
      auto copied = replacement.find(e);
      if (copied != replacement.end()) replaced.push_back(root->operand(e));
      rebuilt->append_operand(copied != replacement.end() ? copied->second : root->operand(e));
    }
    Instruction* new_root = create(std::move(rebuilt));
    computation->insert_instructions_before(std::move(created), root);
    computation->set_root(new_root);
    computation->remove_instruction(root);
    Editor editor(computation, names);
    std::sort(replaced.begin(), replaced.end());
    replaced.erase(std::unique(replaced.begin(), replaced.end()), replaced.end());
    for (Instruction* old : replaced) editor.remove_if_dead(old);
    return;
  }
  std::vector<Instruction*> parts;
  std::vector<Shape> shapes;
  for (int64_t e = 0; e < root->shape().tuple_size(); ++e) {
    auto copied = replacement.find(e);
    parts.push_back(copied != replacement.end() ? copied->second : element(root, e));
    shapes.push_back(parts.back()->shape());
  }
  auto tuple = std::make_unique<Instruction>(Opcode::kTuple, names.unique("tuple.1"), Shape::tuple(shapes));
  for (Instruction* part : parts) tuple->append_operand(part);
  Instruction* new_root = create(std::move(tuple));
  computation->insert_instructions_before(std::move(created), nullptr);
  computation->set_root(new_root);
  Editor(computation, names).remove_if_dead(root);
}

}  // namespace

int64_t apply_fixes(const Dataflow& dataflow, const std::vector<CopyFix>& fixes, NameTable& names) {
  if (is_root_leaf_batch(dataflow, fixes)) {
    apply_root_leaf_fixes(dataflow, fixes, names);
    return static_cast<int64_t>(fixes.size());
  }
  // Otherwise one at a time: the rest are found again on the edited module.
  apply_fix(dataflow, fixes.front(), names);
  return 1;
}

}  // namespace insitu::copy_insertion
