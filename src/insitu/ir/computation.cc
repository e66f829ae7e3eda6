#include "insitu/ir/computation.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "insitu/support/str.h"

namespace insitu {

Instruction* Computation::add_instruction(std::unique_ptr<Instruction> instruction) {
  return insert_instruction_before(std::move(instruction), nullptr);
}

Instruction* Computation::insert_instruction_before(std::unique_ptr<Instruction> instruction,
                                                    Instruction* before) {
  Instruction* raw = instruction.get();
  raw->parent_ = this;
  if (raw->opcode() == Opcode::kParameter && raw->parameter_number >= 0) {
    size_t number = static_cast<size_t>(raw->parameter_number);
    if (parameters_.size() <= number) parameters_.resize(number + 1, nullptr);
    parameters_[number] = raw;
  }
  auto position = instructions_.end();
  if (before != nullptr) {
    INSITU_CHECK(before->parent_ == this) << before->name() << " is not in " << name_;
    position = before->position_;
  }
  raw->position_ = instructions_.insert(position, std::move(instruction));
  changed();
  return raw;
}

void Computation::insert_instructions_before(std::vector<std::unique_ptr<Instruction>> instructions,
                                             Instruction* before) {
  for (std::unique_ptr<Instruction>& instruction : instructions) insert_instruction_before(std::move(instruction), before);
}

void Computation::remove_instruction(Instruction* instruction) {
  detach(instruction);
  instructions_.erase(instruction->position_);
  changed();
}

void Computation::remove_instructions(const std::vector<Instruction*>& instructions) {
  std::unordered_set<const Instruction*> removed(instructions.size());
  // its users, in the batch, came before it and are detached already
  for (Instruction* instruction : instructions)
    if (removed.insert(instruction).second) detach(instruction);
  for (Instruction* instruction : instructions)
    if (removed.erase(instruction) != 0) instructions_.erase(instruction->position_);
  changed();
}

void Computation::move_instruction_to(Instruction* instruction, Computation& to) {
  INSITU_CHECK(instruction->parent_ == this && instruction->opcode() != Opcode::kParameter)
      << "moving %" << instruction->name() << " out of " << name_;
  to.instructions_.splice(to.instructions_.end(), instructions_, instruction->position_);
  instruction->parent_ = &to;
  changed();
  to.changed();
}

void Computation::detach(Instruction* instruction) {
  INSITU_CHECK(instruction->parent_ == this) << "removing " << instruction->name() << ", which is not in " << name_;
  INSITU_CHECK(instruction->users().empty()) << "removing " << instruction->name() << " which has users";
  INSITU_CHECK(instruction != root_) << "removing the root " << instruction->name();
  for (Instruction* operand : instruction->operands_) operand->remove_user(instruction);
  for (Instruction* predecessor : instruction->control_predecessors_) {
    auto& successors = predecessor->control_successors_;
    successors.erase(std::remove(successors.begin(), successors.end(), instruction), successors.end());
  }
  for (Instruction* successor : instruction->control_successors_) {
    auto& predecessors = successor->control_predecessors_;
    predecessors.erase(std::remove(predecessors.begin(), predecessors.end(), instruction), predecessors.end());
  }
  if (instruction->opcode() == Opcode::kParameter) {
    for (auto& p : parameters_)
      if (p == instruction) p = nullptr;
  }
}

std::vector<Instruction*> Computation::instructions() const {
  if (!order_valid_.load(std::memory_order_acquire)) {
    std::lock_guard<std::mutex> lock(order_mutex_);
    if (!order_valid_.load(std::memory_order_relaxed)) {
      order_.clear();
      order_.reserve(instructions_.size());
      for (const auto& instruction : instructions_) order_.push_back(instruction.get());
      order_valid_.store(true, std::memory_order_release);
    }
  }
  return order_;
}

void Computation::set_instruction_order(const std::vector<Instruction*>& order) {
  INSITU_CHECK(order.size() == instructions_.size()) << "reordering " << name_ << ": wrong instruction count";
  std::unordered_set<const Instruction*> placed;
  placed.reserve(order.size());
  for (Instruction* instruction : order) {
    INSITU_CHECK(instruction->parent_ == this && placed.insert(instruction).second)
        << "reordering " << name_ << ": %" << instruction->name() << " is missing or listed twice";
    instructions_.splice(instructions_.end(), instructions_, instruction->position_);  // to the back, in order
  }
  changed();
}

Instruction* Computation::find_instruction(std::string_view name) const {
  for (const auto& instruction : instructions_)
    if (instruction->name() == name) return instruction.get();
  return nullptr;
}

std::string Computation::signature_string() const {
  std::string out = "(";
  for (size_t i = 0; i < parameters_.size(); ++i) {
    if (i > 0) out += ", ";
    out += parameters_[i] ? parameters_[i]->name() + ": " + parameters_[i]->shape().to_string() : "<missing>";
  }
  out += ") -> ";
  out += root_ ? root_->shape().to_string() : "<no root>";
  return out;
}

namespace {

// An instruction's user index as it was: rebuilt from its (restored) user list where it had one.
void reindex(std::vector<Instruction*>& users, std::unique_ptr<std::unordered_map<Instruction*, size_t>>& index,
             bool indexed) {
  if (!indexed) {
    index.reset();
    return;
  }
  index = std::make_unique<std::unordered_map<Instruction*, size_t>>();
  for (size_t i = 0; i < users.size(); ++i) index->emplace(users[i], i);
}

}  // namespace

ForwardTrial::ForwardTrial(Instruction* value)
    : computation_(value->parent_), value_(value), operand_(nullptr), next_(nullptr), was_root_(false),
      operand_indexed_(false), value_indexed_(false) {
  INSITU_CHECK(computation_ != nullptr && value->operand_count() == 1 && !value->has_control_edges() &&
               value->operand(0) != value)
      << "forwarding %" << value->name() << ": it needs one operand, a computation and no control edges";
  operand_ = value->operand(0);
  was_root_ = computation_->root_ == value;
  auto after = std::next(value->position_);
  next_ = after == computation_->instructions_.end() ? nullptr : after->get();
  operand_users_ = operand_->users_;
  value_users_ = value->users_;
  operand_indexed_ = operand_->user_index_ != nullptr;
  value_indexed_ = value->user_index_ != nullptr;
  for (Instruction* reader : value->users_)
    for (int64_t i = 0; i < reader->operand_count(); ++i)
      if (reader->operands_[i] == value) slots_.emplace_back(reader, i);
  value->replace_all_uses_with(operand_);
  computation_->detach(value);
  owned_ = std::move(*value->position_);
  computation_->instructions_.erase(value->position_);
  computation_->changed();
}

void ForwardTrial::undo() {
  if (owned_ == nullptr) return;  // kept, or undone already
  computation_->insert_instruction_before(std::move(owned_), next_);
  for (const auto& [reader, i] : slots_) reader->operands_[i] = value_;
  operand_->users_ = operand_users_;
  value_->users_ = value_users_;
  reindex(operand_->users_, operand_->user_index_, operand_indexed_);
  reindex(value_->users_, value_->user_index_, value_indexed_);
  if (was_root_) computation_->root_ = value_;
}

}  // namespace insitu
