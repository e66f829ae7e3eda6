// NameTable: the instruction names a module already uses, and fresh ones derived from a base
// ("copy" -> "copy.3"), so instructions a pass creates never collide with existing names.
#pragma once

#include <string>
#include <unordered_map>
#include <unordered_set>

#include "insitu/ir/module.h"
#include "insitu/support/str.h"

namespace insitu {

class NameTable {
 public:
  NameTable() = default;
  // Every instruction name in the module, read when the first fresh name is asked for (a pass
  // that names nothing never pays for a 100,000-instruction module's names). The module must
  // outlive the table.
  explicit NameTable(const Module& module) : module_(&module) {}
  void add(const std::string& name) { used_.insert(name); }
  // `base` itself when unused, otherwise stem.1, stem.2, ... where stem is `base` without a
  // numeric suffix ("n.1" -> "n.2", not "n.1.1").
  std::string unique(const std::string& base) {
    if (module_ != nullptr) read_module();
    if (used_.insert(base).second) return base;
    std::string stem = base;
    size_t dot = stem.rfind('.');
    if (dot != std::string::npos && dot + 1 < stem.size() &&
        stem.find_first_not_of("0123456789", dot + 1) == std::string::npos)
      stem.resize(dot);
    int64_t& suffix = next_suffix_[stem];
    for (;;) {
      std::string candidate = str_cat(stem, ".", ++suffix);
      if (used_.insert(candidate).second) return candidate;
    }
  }

 private:
  void read_module() {
    for (const Computation* computation : module_->computations()) {
      used_.reserve(used_.size() + computation->instruction_count());
      for (const Instruction* instruction : computation->instructions()) used_.insert(instruction->name());
    }
    module_ = nullptr;
  }

  const Module* module_ = nullptr;  // names not read yet
  std::unordered_set<std::string> used_;
  std::unordered_map<std::string, int64_t> next_suffix_;
};

// A new instruction named from `base`, reading `operands`, inserted before `before` (with its
// source location): what passes that build instructions share.
inline Instruction* insert_new_instruction(Computation& computation, Instruction* before, NameTable& names,
                                           Opcode opcode, const std::string& base, Shape shape,
                                           const std::vector<Instruction*>& operands) {
  auto instruction = std::make_unique<Instruction>(opcode, names.unique(base), std::move(shape));
  instruction->set_location(before->location());
  for (Instruction* operand : operands) instruction->append_operand(operand);
  return computation.insert_instruction_before(std::move(instruction), before);
}

}  // namespace insitu
