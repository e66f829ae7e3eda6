// eliminate_copies: try removing each plain copy on a clone; keep the removal when the
// copy-insertion rules still hold (see copy_elimination.h).
#include "insitu/passes/copy_elimination.h"

#include "insitu/passes/copy_insertion_internal.h"

namespace insitu {
namespace {

// Readers of `copy` read its operand instead; the copy is removed.
void forward_copy(Instruction* copy) {
  Computation* computation = copy->parent();
  copy->replace_all_uses_with(copy->operand(0));
  if (computation->root() == copy) computation->set_root(copy->operand(0));
  computation->remove_instruction(copy);
}

// Plain copies (no layout or memory-space change) in the computations that own buffers.
std::vector<std::pair<std::string, std::string>> candidate_copies(const Module& module) {
  std::vector<std::pair<std::string, std::string>> out;
  Dataflow dataflow = Dataflow::compute(module);
  for (const Computation* computation : dataflow.analyzed_computations())
    for (const Instruction* instruction : computation->instructions())
      if (instruction->opcode() == Opcode::kCopy && instruction->shape() == instruction->operand(0)->shape() &&
          instruction->control_predecessors().empty() && instruction->control_successors().empty())
        out.emplace_back(computation->name(), instruction->name());
  return out;
}

// The violation removing `copy` would cause, if any.
std::optional<copy_insertion::CopyFix> violation_without(const Module& module, const std::string& computation,
                                                          const std::string& copy) {
  std::unique_ptr<Module> trial = module.clone();
  forward_copy(trial->find_computation(computation)->find_instruction(copy));
  Dataflow dataflow = Dataflow::compute(*trial);
  BufferFacts facts(*trial, dataflow);
  return copy_insertion::find_violation(facts);
}

}  // namespace

StatusOr<bool> eliminate_copies(Module& module) {
  bool changed = false;
  for (bool progress = true; progress;) {
    progress = false;
    for (const auto& [computation, name] : candidate_copies(module)) {
      Instruction* copy = module.find_computation(computation)->find_instruction(name);
      std::optional<copy_insertion::CopyFix> violation = violation_without(module, computation, name);
      if (!violation) {
        forward_copy(copy);
        progress = changed = true;
        continue;
      }
      std::optional<CopyReason> reason = copy_reason(*copy);
      if (!reason || *reason == CopyReason::kUserCopy) {
        set_copy_reason(*copy, violation->reason, "a copy written in the input program, needed because " +
                                                      violation->detail);
        changed = true;
      }
    }
  }
  return changed;
}

}  // namespace insitu
