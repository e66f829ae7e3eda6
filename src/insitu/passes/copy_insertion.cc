// copy-insertion driver: the rule order (find_violations), then: find the first violation (or
// batch of independent ones), insert its copies, recompute, repeat.
#include "insitu/passes/copy_insertion.h"

#include "insitu/passes/copy_insertion_internal.h"
#include "insitu/passes/flatten_calls.h"
#include "insitu/support/str.h"

namespace insitu {
namespace copy_insertion {

// The rule order: regions callees first (analyzed computations are in that order); within one,
// in-place ops (R1), then conditionals (R3) and loops (R2), then a while body's root (R2b),
// and the entry's outputs (R4, R5) last, so every copy fixes the innermost conflict first.
std::vector<CopyFix> find_violations(const BufferFacts& facts) {
  for (const Computation* computation : facts.dataflow().analyzed_computations()) {
    const std::vector<Instruction*> instructions = computation->instructions();
    for (const Instruction* instruction : instructions)
      if (!in_place_pairs(*instruction).empty())
        if (auto fix = check_in_place_op(facts, instruction)) return {*fix};
    for (const Instruction* instruction : instructions)
      if (instruction->opcode() == Opcode::kConditional)
        if (auto fix = check_conditional(facts, instruction)) return {*fix};
    for (const Instruction* instruction : instructions)
      if (instruction->opcode() == Opcode::kWhile)
        if (auto fix = check_while_init(facts, instruction)) return {*fix};
    const Instruction* caller = facts.caller(computation);
    if (caller != nullptr && caller->opcode() == Opcode::kWhile && caller->while_body() == computation)
      if (auto fix = check_while_body(facts, computation)) return {*fix};
    if (computation == facts.module().entry()) {
      if (std::vector<CopyFix> fixes = check_entry_outputs(facts); !fixes.empty()) return fixes;
      if (auto fix = check_entry_aliases(facts)) return {*fix};
    }
  }
  return {};
}

std::optional<CopyFix> find_violation(const BufferFacts& facts) {
  std::vector<CopyFix> fixes = find_violations(facts);
  if (fixes.empty()) return std::nullopt;
  return std::move(fixes.front());
}

}  // namespace copy_insertion

StatusOr<bool> insert_copies(Module& module) {
  INSITU_RETURN_IF_ERROR(check_calls_flattened(module, "copy-insertion"));
  // Every copy fixes one conflict for good, and a conflict is about one leaf: the bound (which
  // only guards against a rule bug) counts leaves, so a wide tuple may need a copy per leaf.
  int64_t leaf_count = 0;
  for (const Computation* computation : module.computations())
    for (const Instruction* instruction : computation->instructions()) leaf_count += instruction->shape().leaf_count();
  const int64_t limit = 64 + 8 * leaf_count;
  NameTable names(module);  // once: every copy's name comes from it
  int64_t copies = 0;
  for (int64_t step = 0;; ++step) {
    Dataflow dataflow = Dataflow::compute(module);
    BufferFacts facts(module, dataflow);
    std::vector<copy_insertion::CopyFix> fixes = copy_insertion::find_violations(facts);
    if (fixes.empty()) return step > 0;
    if (copies >= limit)
      return internal_error(str_cat("copy insertion did not converge after ", copies, " copies; last conflict: ",
                                    fixes.front().detail));
    // A buffer (b(...)) is never copied: the program's meaning would need two of it.
    for (const copy_insertion::CopyFix& fix : fixes) {
      const Value& value = dataflow.value(fix.value);
      if (value.shape.is_buffer())
        return invalid_argument(str_cat(value.to_string(), " is a non-copyable buffer (", value.shape.to_string(false),
                                        ") but the program needs a copy of it: ", fix.detail),
                                value.defining.instruction->location());
    }
    copies += copy_insertion::apply_fixes(dataflow, fixes, names);
  }
}

}  // namespace insitu
