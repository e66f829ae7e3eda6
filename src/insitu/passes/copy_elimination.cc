// eliminate_copies: try removing each plain copy (a ForwardTrial on the module itself); keep the
// removal when the copy-insertion rules still hold (see copy_elimination.h); then pairs of
// copies chained through in-place updates.
#include "insitu/passes/copy_elimination.h"

#include <list>

#include "insitu/passes/copy_insertion_internal.h"

namespace insitu {
namespace {

// Plain copies (no layout or memory-space change) in the computations that own buffers.
std::vector<Instruction*> candidate_copies(const Module& module) {
  std::vector<Instruction*> out;
  Dataflow dataflow = Dataflow::compute(module);
  for (const Computation* computation : dataflow.analyzed_computations())
    for (Instruction* instruction : computation->instructions())
      if (is_plain_copy(*instruction)) out.push_back(instruction);
  return out;
}

// A copy that copy insertion made so the caller does not receive a read-only buffer (R4), and
// that is still exactly that: only the entry root reads it, and it copies a constant or a leaf
// of an entry parameter that no input_output_alias or buffer_donor names. Removing it always
// breaks R4, so it is kept without a trial (each trial analyses the whole module: a
// 100,000-leaf tuple returned as is would cost 100,000 analyses).
bool keeps_read_only_output(const Module& module, const Instruction* copy) {
  std::optional<CopyReason> reason = copy_reason(*copy);
  const Computation* entry = module.entry();
  if (reason != CopyReason::kReadOnlyLiveOut || copy->parent() != entry) return false;
  for (const Instruction* user : copy->users())
    if (user != entry->root() || user->opcode() != Opcode::kTuple) return false;
  if (copy->users().empty() && copy != entry->root()) return false;
  const Instruction* source = copy->operand(0);
  while (source->opcode() == Opcode::kGetTupleElement) source = source->operand(0);
  if (source->opcode() == Opcode::kConstant) return true;
  if (source->opcode() != Opcode::kParameter || source->parent() != entry) return false;
  for (const InputOutputAlias& alias : module.config().input_output_alias)
    if (alias.parameter_number == source->parameter_number) return false;
  for (const BufferDonor& donor : module.config().buffer_donors)
    if (donor.parameter_number == source->parameter_number) return false;
  return true;
}

// Removes `copies` (their readers read each one's operand) unless that causes a violation of
// the copy rules; returns the violation, where there is one, with the module as it was.
std::optional<copy_insertion::CopyFix> remove_unless_violated(Module& module,
                                                              std::initializer_list<Instruction*> copies) {
  std::list<ForwardTrial> trials;
  for (Instruction* copy : copies) trials.emplace_back(copy);
  const Dataflow dataflow = Dataflow::compute(module);
  const BufferFacts facts(module, dataflow);
  std::optional<copy_insertion::CopyFix> violation = copy_insertion::find_violation(facts);
  if (violation) {
    while (!trials.empty()) trials.pop_back();  // undone, the last first
  } else {
    for (ForwardTrial& trial : trials) trial.keep();
  }
  return violation;
}

// The plain copy that `copy`'s operand updates in place, through at most a few in-place writes
// (copy A; dynamic-update-slice of A; copy B of that): XLA's module of a layer-by-layer cache
// update copies the cache before each write, and each of two such copies is kept by the other
// (the aliased output receives its value from the one left), so only both go together.
Instruction* copy_updated_by(Instruction* copy) {
  Instruction* value = copy->operand(0);
  for (int step = 0; step < 8; ++step) {
    if (is_plain_copy(*value)) return step == 0 ? nullptr : value;
    const std::vector<InPlacePair> pairs = in_place_pairs(*value);
    if (pairs.size() != 1 || !pairs[0].operand_index.empty()) return nullptr;
    value = value->operand(pairs[0].operand_number);
  }
  return nullptr;
}

}  // namespace

bool is_plain_copy(const Instruction& instruction) {
  return instruction.opcode() == Opcode::kCopy && instruction.shape() == instruction.operand(0)->shape() &&
         !instruction.has_control_edges();
}

StatusOr<bool> eliminate_copies(Module& module) {
  bool changed = false;
  for (bool progress = true; progress;) {
    progress = false;
    // Removing one candidate leaves the others in place (a kept trial deletes only that copy).
    const std::vector<Instruction*> candidates = candidate_copies(module);
    for (Instruction* copy : candidates) {
      if (keeps_read_only_output(module, copy)) continue;
      std::optional<copy_insertion::CopyFix> violation = remove_unless_violated(module, {copy});
      if (!violation) {
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
    // no copy goes alone (so every candidate is still there): a copy and the copy it updates
    for (Instruction* copy : progress ? std::vector<Instruction*>{} : candidates) {
      Instruction* updated = copy_updated_by(copy);
      if (updated == nullptr || keeps_read_only_output(module, copy) || keeps_read_only_output(module, updated) ||
          remove_unless_violated(module, {copy, updated}))
        continue;
      progress = changed = true;
      break;  // the candidates changed
    }
  }
  return changed;
}

}  // namespace insitu
