#include "insitu/ir/module.h"

#include <algorithm>
#include <unordered_map>

namespace insitu {

Computation* Module::add_computation(std::unique_ptr<Computation> computation) {
  computation->parent_ = this;
  computations_.push_back(std::move(computation));
  return computations_.back().get();
}

Computation* Module::add_computation_before(std::unique_ptr<Computation> computation, const Computation* before) {
  computation->parent_ = this;
  auto it = std::find_if(computations_.begin(), computations_.end(),
                         [&](const auto& c) { return c.get() == before; });
  return computations_.insert(it, std::move(computation))->get();
}

void Module::remove_computation(Computation* computation) {
  INSITU_CHECK(computation != entry_) << "removing the entry computation " << computation->name();
  auto it = std::find_if(computations_.begin(), computations_.end(),
                         [&](const auto& c) { return c.get() == computation; });
  INSITU_CHECK(it != computations_.end()) << computation->name() << " is not in module " << name_;
  computations_.erase(it);
}

std::vector<Computation*> Module::computations() const {
  std::vector<Computation*> out;
  out.reserve(computations_.size());
  for (const auto& computation : computations_) out.push_back(computation.get());
  return out;
}

Computation* Module::find_computation(std::string_view name) const {
  for (const auto& computation : computations_)
    if (computation->name() == name) return computation.get();
  return nullptr;
}

ComputationLayout Module::entry_layout() const {
  if (config_.entry_computation_layout) return *config_.entry_computation_layout;
  ComputationLayout layout;
  if (entry_ == nullptr) return layout;
  for (Instruction* parameter : entry_->parameters())
    layout.parameter_shapes.push_back(parameter ? parameter->shape() : Shape());
  if (entry_->root()) layout.result_shape = entry_->root()->shape();
  return layout;
}

SourceLocation Module::header_attribute_location(std::string_view attribute) const {
  for (const auto& [name, location] : header_attribute_locations_)
    if (name == attribute) return location;
  return location_;
}

void Module::set_header_attribute_location(std::string attribute, SourceLocation location) {
  header_attribute_locations_.emplace_back(std::move(attribute), location);
}

std::unique_ptr<Module> Module::clone() const {
  auto copy = std::make_unique<Module>(name_);
  copy->location_ = location_;
  copy->header_attribute_locations_ = header_attribute_locations_;
  copy->config_ = config_;
  copy->stack_frame_sections_ = stack_frame_sections_;
  std::unordered_map<const Computation*, Computation*> computation_map;
  for (const auto& computation : computations_) {
    auto new_computation = std::make_unique<Computation>(computation->name());
    new_computation->set_location(computation->location());
    new_computation->set_execution_thread(computation->execution_thread());
    computation_map[computation.get()] = copy->add_computation(std::move(new_computation));
  }
  for (const auto& computation : computations_) {
    Computation* target = computation_map.at(computation.get());
    std::unordered_map<const Instruction*, Instruction*> instruction_map;
    for (Instruction* old_instruction : computation->instructions()) {
      auto instruction = std::make_unique<Instruction>(old_instruction->opcode(), old_instruction->name(),
                                                       old_instruction->shape());
      Instruction& i = *instruction;
      const Instruction& o = *old_instruction;
      i.set_location(o.location());
      i.attributes() = o.attributes();
      for (Instruction* operand : o.operands()) i.append_operand(instruction_map.at(operand));
      for (Instruction* predecessor : o.control_predecessors())
        i.add_control_predecessor(instruction_map.at(predecessor));
      std::vector<Computation*> called;
      for (Computation* c : o.called_computations()) called.push_back(computation_map.at(c));
      i.set_called_computations(std::move(called));
      instruction_map[old_instruction] = target->add_instruction(std::move(instruction));
    }
    if (computation->root()) target->set_root(instruction_map.at(computation->root()));
  }
  if (entry_) copy->entry_ = computation_map.at(entry_);
  return copy;
}

}  // namespace insitu
