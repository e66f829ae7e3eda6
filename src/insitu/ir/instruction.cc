#include "insitu/ir/instruction.h"

#include <algorithm>

#include "insitu/ir/computation.h"

namespace insitu {
namespace {

void add_unique(std::vector<Instruction*>& list, Instruction* instruction) {
  if (std::find(list.begin(), list.end(), instruction) == list.end()) list.push_back(instruction);
}

void remove_one(std::vector<Instruction*>& list, Instruction* instruction) {
  auto it = std::find(list.begin(), list.end(), instruction);
  if (it != list.end()) list.erase(it);
}

}  // namespace

void Instruction::append_operand(Instruction* operand) {
  INSITU_CHECK(operand != nullptr) << "null operand for " << name_;
  operands_.push_back(operand);
  add_unique(operand->users_, this);
}

void Instruction::replace_operand(int64_t i, Instruction* new_operand) {
  Instruction* old_operand = operands_.at(i);
  operands_[i] = new_operand;
  // `this` stays a user of old_operand while another operand slot still refers to it.
  if (std::find(operands_.begin(), operands_.end(), old_operand) == operands_.end())
    remove_one(old_operand->users_, this);
  add_unique(new_operand->users_, this);
}

void Instruction::replace_all_uses_with(Instruction* replacement) {
  INSITU_CHECK(replacement != this) << "replace_all_uses_with itself: " << name_;
  std::vector<Instruction*> users = users_;
  for (Instruction* user : users) {
    for (int64_t i = 0; i < user->operand_count(); ++i)
      if (user->operands_[i] == this) user->replace_operand(i, replacement);
  }
  if (parent_ != nullptr && parent_->root() == this) parent_->set_root(replacement);
}

void Instruction::add_control_predecessor(Instruction* predecessor) {
  add_unique(control_predecessors_, predecessor);
  add_unique(predecessor->control_successors_, this);
}

const std::string* Instruction::frontend_attribute(std::string_view key) const {
  for (const auto& [k, v] : frontend_attributes)
    if (k == key) return &v;
  return nullptr;
}

void Instruction::set_frontend_attribute(std::string key, std::string value) {
  for (auto& [k, v] : frontend_attributes) {
    if (k == key) {
      v = std::move(value);
      return;
    }
  }
  frontend_attributes.emplace_back(std::move(key), std::move(value));
}

bool is_integer_constant(const Instruction& instruction, int64_t value) {
  return instruction.opcode() == Opcode::kConstant && instruction.shape().is_array() &&
         instruction.shape().rank() == 0 && is_integral(instruction.shape().element_type()) &&
         instruction.literal.get_integer(0) == value;
}

bool is_placement_annotation(std::string_view target) {
  return target == "MoveToHost" || target == "MoveToDevice" || target == "annotate_device_placement" ||
         target == "Sharding" || target == "ShardBarrierFrom" || target == "ShardBarrierTo" ||
         target == "LayoutConstraint";
}

}  // namespace insitu
