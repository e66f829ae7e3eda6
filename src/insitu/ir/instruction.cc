#include "insitu/ir/instruction.h"

#include <algorithm>

#include "insitu/ir/computation.h"

namespace insitu {
namespace {

void add_unique(std::vector<Instruction*>& list, Instruction* instruction) {
  if (std::find(list.begin(), list.end(), instruction) == list.end()) list.push_back(instruction);
}

}  // namespace

void Instruction::add_user(Instruction* user) {
  if (user_index_ == nullptr) {
    add_unique(users_, user);
    if (users_.size() <= kIndexedUsers) return;
    user_index_ = std::make_unique<std::unordered_map<Instruction*, size_t>>();
    for (size_t i = 0; i < users_.size(); ++i) user_index_->emplace(users_[i], i);
    return;
  }
  if (user_index_->emplace(user, users_.size()).second) users_.push_back(user);
}

void Instruction::remove_user(Instruction* user) {
  if (user_index_ == nullptr) {
    auto it = std::find(users_.begin(), users_.end(), user);
    if (it != users_.end()) users_.erase(it);
    return;
  }
  auto it = user_index_->find(user);
  if (it == user_index_->end()) return;
  const size_t slot = it->second;
  user_index_->erase(it);
  if (slot + 1 != users_.size()) {
    users_[slot] = users_.back();
    (*user_index_)[users_[slot]] = slot;
  }
  users_.pop_back();
  if (users_.size() <= kIndexedUsers / 2) user_index_.reset();
}

void Instruction::append_operand(Instruction* operand) {
  INSITU_CHECK(operand != nullptr) << "null operand for " << name_;
  operands_.push_back(operand);
  operand->add_user(this);
}

void Instruction::replace_operand(int64_t i, Instruction* new_operand) {
  Instruction* old_operand = operands_.at(i);
  operands_[i] = new_operand;
  // `this` stays a user of old_operand while another operand slot still refers to it.
  if (std::find(operands_.begin(), operands_.end(), old_operand) == operands_.end())
    old_operand->remove_user(this);
  new_operand->add_user(this);
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

bool is_row_major_reshape(const Instruction& bitcast) {
  const Shape& from = bitcast.operand(0)->shape();
  const Shape& to = bitcast.shape();
  if (!from.is_array() || !to.is_array()) return true;
  auto row_major = [](const Shape& shape) {
    // Dimensions of size 1 do not affect the order of elements; compare the others only.
    std::vector<int64_t> order;
    for (int64_t d : shape.layout().minor_to_major)
      if (shape.dimension(d) != 1) order.push_back(d);
    return std::is_sorted(order.rbegin(), order.rend());
  };
  return from.element_type() == to.element_type() && from.layout().tiles.empty() && to.layout().tiles.empty() &&
         row_major(from) && row_major(to);
}

}  // namespace insitu
