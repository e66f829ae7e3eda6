#include "insitu/passes/conditional_in_place.h"

#include <algorithm>
#include <memory>
#include <optional>
#include <vector>

#include "insitu/analysis/in_place.h"
#include "insitu/passes/name_table.h"

namespace insitu {
namespace {

// The value a branch's parameter holds at element `element` (-1: the parameter is the array):
// the conditional's operand, or that operand tuple's element; null when not known.
Instruction* operand_value(const Instruction& conditional, size_t branch, int64_t element) {
  Instruction* operand = conditional.operand(static_cast<int64_t>(branch) + 1);
  if (element < 0) return operand;
  return operand->opcode() == Opcode::kTuple ? operand->operand(element) : nullptr;
}

// The parameter element a branch root's leaf `value` passes through unchanged (-1: the whole
// parameter; through bitcasts that keep its shape), or nullopt.
std::optional<int64_t> passed_through(const Computation& branch, const Instruction* value) {
  const Instruction* parameter = branch.parameter(0);
  while (value->opcode() == Opcode::kBitcast && value->shape() == value->operand(0)->shape()) value = value->operand(0);
  if (value == parameter && parameter->shape().is_array()) return -1;
  if (value->opcode() == Opcode::kGetTupleElement && value->operand(0) == parameter) return value->tuple_index;
  return std::nullopt;
}

// The element of the branch's parameter that holds `value` (-1: the parameter is the array), if
// exactly one does.
std::optional<int64_t> element_holding(const Instruction& conditional, size_t branch, const Instruction* value) {
  const Instruction* operand = conditional.operand(static_cast<int64_t>(branch) + 1);
  if (operand == value) return -1;
  if (operand->opcode() != Opcode::kTuple) return std::nullopt;
  std::optional<int64_t> found;
  for (int64_t k = 0; k < operand->operand_count(); ++k)
    if (operand->operand(k) == value) {
      if (found) return std::nullopt;
      found = k;
    }
  return found;
}

// Read by nothing but the conditional (directly, or through operand tuples only it reads), and
// the program's own to write.
bool dies_at(const Instruction& value, const Instruction& conditional) {
  const Opcode opcode = value.opcode();
  if (opcode == Opcode::kConstant || value.has_control_edges() || value.parent()->root() == &value ||
      (opcode == Opcode::kParameter && value.parent() == value.parent()->parent()->entry()))
    return false;
  for (const Instruction* user : value.users()) {
    if (user == &conditional) continue;
    if (user->opcode() != Opcode::kTuple || user->parent()->root() == user) return false;
    for (const Instruction* reader : user->users())
      if (reader != &conditional) return false;
  }
  return true;
}

// Writes result leaf `leaf` (-1: the whole result) of `conditional` into its operand's buffer
// where the header's conditions hold; true if it did.
bool rewrite_leaf(Instruction& conditional, int64_t leaf, NameTable& names) {
  const std::vector<Computation*>& branches = conditional.called_computations();
  auto root_value = [&](const Computation* branch) -> Instruction* {
    Instruction* root = branch->root();
    if (leaf < 0) return root;
    return root->opcode() == Opcode::kTuple ? root->operand(leaf) : nullptr;
  };
  // the value the pass-through branches hand on
  Instruction* source = nullptr;
  for (size_t b = 0; b < branches.size(); ++b) {
    const Instruction* value = root_value(branches[b]);
    if (value == nullptr) return false;
    if (std::optional<int64_t> element = passed_through(*branches[b], value)) {
      Instruction* held = operand_value(conditional, b, *element);
      if (held == nullptr || (source != nullptr && held != source)) return false;
      source = held;
    }
  }
  if (source == nullptr || !source->shape().is_array() || !dies_at(*source, conditional)) return false;
  // every other branch takes it once as a parameter leaf and computes the result anew
  std::vector<std::pair<size_t, int64_t>> writes;  // (branch, its parameter element holding source)
  for (size_t b = 0; b < branches.size(); ++b) {
    const Instruction* value = root_value(branches[b]);
    if (passed_through(*branches[b], value)) continue;
    std::optional<int64_t> element = element_holding(conditional, b, source);
    // a branch that does not read the value (simplify dropped it from its operands) gets it as
    // one more element of its parameter tuple: -2 until the rewrite appends it
    const Instruction* operand = conditional.operand(static_cast<int64_t>(b) + 1);
    if (!element && operand->opcode() == Opcode::kTuple && operand->users().size() == 1 &&
        std::count(conditional.operands().begin(), conditional.operands().end(), operand) == 1 &&
        branches[b]->parameter(0)->shape().is_tuple() && operand->parent()->root() != operand)
      element = -2;
    const Opcode opcode = value->opcode();
    // read by the root tuple alone, once (or the root itself)
    const Instruction* root = branches[b]->root();
    const bool only_returned =
        leaf < 0 ? value->users().empty()
                 : value->users().size() == 1 && std::count(root->operands().begin(), root->operands().end(), value) == 1;
    if (!element || !only_returned || !value->shape().is_array() || value->shape() != source->shape() ||
        value->has_control_edges() || opcode == Opcode::kParameter || opcode == Opcode::kGetTupleElement ||
        opcode == Opcode::kConstant || !in_place_pairs(*value).empty())  // (an update in place already)
      return false;
    writes.emplace_back(b, *element);
  }
  if (writes.empty()) return false;
  for (auto [b, element] : writes) {
    Computation& branch = *branches[b];
    Instruction* root = branch.root();
    Instruction* value = root_value(&branch);
    Instruction* parameter = branch.parameter(0);
    if (element == -2) {  // the operand tuple and the parameter get the value as a last element
      Instruction* operand = conditional.operand(static_cast<int64_t>(b) + 1);
      std::vector<Instruction*> elements(operand->operands().begin(), operand->operands().end());
      elements.push_back(source);
      std::vector<Shape> shapes;
      for (const Instruction* piece : elements) shapes.push_back(piece->shape());
      Instruction* extended = insert_new_instruction(*conditional.parent(), &conditional, names, Opcode::kTuple,
                                                     operand->name(), Shape::tuple(shapes), elements);
      conditional.replace_operand(static_cast<int64_t>(b) + 1, extended);
      conditional.parent()->remove_instruction(operand);
      parameter->set_shape(extended->shape());
      element = static_cast<int64_t>(elements.size()) - 1;
    }
    Instruction* target = parameter;
    if (element >= 0) {
      target = insert_new_instruction(branch, root, names, Opcode::kGetTupleElement, "in_place", source->shape(),
                                      {parameter});
      target->tuple_index = element;
    }
    Instruction* zero = insert_new_instruction(branch, root, names, Opcode::kConstant, "zero",
                                               Shape::array(PrimitiveType::kS32, {}), {});
    zero->literal = Literal::scalar<int32_t>(0);
    std::vector<Instruction*> operands = {target, value};
    operands.insert(operands.end(), static_cast<size_t>(source->shape().rank()), zero);
    if (leaf < 0) {  // after the root it writes, which it becomes
      auto update = std::make_unique<Instruction>(Opcode::kDynamicUpdateSlice, names.unique("written_in_place"),
                                                  source->shape());
      update->set_location(root->location());
      for (Instruction* operand : operands) update->append_operand(operand);
      branch.set_root(branch.add_instruction(std::move(update)));
    } else {
      root->replace_operand(leaf, insert_new_instruction(branch, root, names, Opcode::kDynamicUpdateSlice,
                                                         "written_in_place", source->shape(), operands));
    }
  }
  return true;
}

}  // namespace

StatusOr<bool> write_conditionals_in_place(Module& module) {
  NameTable names(module);
  bool changed = false;
  for (Computation* computation : module.computations())
    for (Instruction* instruction : computation->instructions()) {
      if (instruction->opcode() != Opcode::kConditional || instruction->has_control_edges()) continue;
      const Shape& shape = instruction->shape();
      if (shape.is_array()) {
        changed |= rewrite_leaf(*instruction, -1, names);
      } else if (shape.is_tuple()) {
        for (int64_t leaf = 0; leaf < shape.tuple_size(); ++leaf)
          if (shape.tuple_shape(leaf).is_array()) changed |= rewrite_leaf(*instruction, leaf, names);
      }
    }
  return changed;
}

}  // namespace insitu
