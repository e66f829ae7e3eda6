// Copy-insertion rules for writes into an existing buffer: in-place ops (R1), while loops
// updating their init (R2) and conditionals whose branches update their operand (R3). The
// rules about new occupants of a buffer (R2b, R4, R5) are in copy_insertion_occupants.cc.
#include "insitu/passes/copy_insertion_internal.h"
#include "insitu/support/str.h"

namespace insitu::copy_insertion {
namespace {

// An occupant of `origin`'s buffer, defined before `writer`, that is still read after it or
// returned: the old contents `writer` must not destroy.
struct LiveOccupant {
  ValueId value = -1;
  std::vector<Use> later_uses;
  std::vector<ShapeIndex> root_leaves;
};
std::optional<LiveOccupant> live_occupant_after(const BufferFacts& facts, ValueId origin, const Instruction* writer) {
  for (ValueId member : facts.group(origin)) {
    const Instruction* definer = facts.defining_instruction(member);
    if (definer->opcode() != Opcode::kParameter && facts.order(definer) >= facts.order(writer)) continue;
    LiveOccupant occupant{member, facts.uses_after(member, writer), facts.root_leaves(member)};
    if (!occupant.later_uses.empty() || !occupant.root_leaves.empty()) return occupant;
  }
  return std::nullopt;
}

// "is read by %y" / "is returned at {1}".
std::string describe_reader(const LiveOccupant& occupant) {
  if (!occupant.later_uses.empty()) return "is read by " + name_of(occupant.later_uses.front().instruction);
  return "is returned at root leaf " + shape_index_to_string(occupant.root_leaves.front());
}

// The fix for "`writer` overwrites a buffer whose old value is still needed": when the old
// value is only read later, those readers get a copy taken before the write (the write still
// lands in the buffer it was meant for); when it is returned, the writer works on a copy.
CopyFix fix_live_after_write(const BufferFacts& facts, const Instruction* writer, const Use& write,
                             const LiveOccupant& occupant, CopyReason reason, std::string detail) {
  if (occupant.root_leaves.empty())
    return CopyFix{.value = occupant.value, .insert_before = writer, .uses = occupant.later_uses, .reason = reason,
                   .detail = std::move(detail)};
  ValueId operand = facts.value_at(write.instruction->operand(write.operand_number), write.operand_index);
  return CopyFix{.value = operand, .insert_before = writer, .uses = {write}, .reason = reason, .detail = std::move(detail)};
}

// Another leaf of `operand` of `user` whose value shares `origin`'s buffer.
std::optional<ShapeIndex> other_leaf_with_origin(const BufferFacts& facts, const Instruction* operand,
                                                 const ShapeIndex& leaf, ValueId origin) {
  for (const auto& [index, value] : facts.dataflow().leaf_values(operand))
    if (index != leaf && !facts.value(value).shape.is_token() && facts.origin(value) == origin) return index;
  return std::nullopt;
}

}  // namespace

// R1: an in-place op needs its operand's buffer to itself.
std::optional<CopyFix> check_in_place_op(const BufferFacts& facts, const Instruction* op) {
  for (const InPlacePair& pair : in_place_pairs(*op)) {
    const Use write{op, pair.operand_number, pair.operand_index};
    const ValueId target = facts.value_at(op->operand(pair.operand_number), pair.operand_index);
    const ValueId origin = facts.origin(target);
    const std::string target_name = describe(facts, target);
    // One buffer as two operands: the other operand would see the write (pytorch#198031).
    for (int64_t m = 0; m < op->operand_count(); ++m) {
      for (const auto& [index, value] : facts.dataflow().leaf_values(op->operand(m))) {
        if ((m == pair.operand_number && index == pair.operand_index) || facts.value(value).shape.is_token()) continue;
        if (facts.origin(value) != origin) continue;
        return copy_for(value, Use{op, m, index}, CopyReason::kOperandOverlap,
                        str_cat(name_of(op), " overwrites operand ", pair.operand_number, " (", target_name,
                                ") in place while operand ", m, shape_index_to_string(index), " reads the same buffer (",
                                describe(facts, value), "); the read-only operand gets a copy; pass distinct buffers "
                                "to avoid it"));
      }
    }
    if (std::optional<std::string> why = facts.read_only_reason(origin))
      return copy_for(target, write, CopyReason::kLiveAfterInPlaceWrite,
                      str_cat(name_of(op), " overwrites ", target_name, " in place, but ", *why));
    if (std::optional<LiveOccupant> occupant = live_occupant_after(facts, origin, op))
      return fix_live_after_write(
          facts, op, write, *occupant, CopyReason::kLiveAfterInPlaceWrite,
          str_cat(describe(facts, occupant->value), " ", describe_reader(*occupant), " after ", name_of(op),
                  " overwrites it in place; read it before ", name_of(op), " (the reader must not depend on it), or "
                  "update a value nobody reads afterwards"));
  }
  return std::nullopt;
}

// R2: a loop that updates state leaf i works in its init's buffer, which the caller must give up.
std::optional<CopyFix> check_while_init(const BufferFacts& facts, const Instruction* loop) {
  const Instruction* init = loop->operand(0);
  for (const auto& [index, value] : facts.dataflow().leaf_values(init)) {
    if (facts.value(value).shape.is_token() || !facts.loop_writes_leaf(loop, index)) continue;
    const Use use{loop, 0, index};
    const ValueId origin = facts.origin(value);
    const std::string leaf = str_cat("loop state ", shape_index_to_string(index));
    const std::string state = str_cat(leaf, " of ", name_of(loop));
    if (std::optional<std::string> why = facts.read_only_reason(origin))
      return copy_for(value, use, CopyReason::kLoopCarried,
                      str_cat(name_of(loop), " updates ", leaf,
                              " in its buffer, but its initial value ", *why));
    if (std::optional<ShapeIndex> other = other_leaf_with_origin(facts, init, index, origin))
      return copy_for(value, use, CopyReason::kLoopCarried,
                      str_cat(describe(facts, value), " is the initial value of both ", state, " and state ",
                              shape_index_to_string(*other), ", and the loop updates ", shape_index_to_string(index),
                              "; pass distinct buffers"));
    if (std::optional<LiveOccupant> occupant = live_occupant_after(facts, origin, loop))
      return fix_live_after_write(
          facts, loop, use, *occupant, CopyReason::kLoopCarried,
          str_cat(describe(facts, occupant->value), " ", describe_reader(*occupant), " after ", name_of(loop),
                  ", which updates ", leaf, " in its buffer; read it before the loop, or "
                  "pass the loop a value nobody reads afterwards"));
  }
  return std::nullopt;
}

// R3: a conditional whose branches update an operand leaf, or disagree on a result's buffer.
std::optional<CopyFix> check_conditional(const BufferFacts& facts, const Instruction* conditional) {
  const auto& branches = conditional->called_computations();
  for (size_t b = 0; b < branches.size(); ++b) {
    const Computation* branch = branches[b];
    const Instruction* operand = conditional->operand(static_cast<int64_t>(b) + 1);
    for (const auto& [index, parameter_value] : facts.dataflow().leaf_values(branch->parameter(0))) {
      if (facts.value(parameter_value).shape.is_token() || !facts.overwritten_in_region(parameter_value)) continue;
      const ValueId value = facts.value_at(operand, index);
      const ValueId origin = facts.origin(value);
      const Use use{conditional, static_cast<int64_t>(b) + 1, index};
      const std::string what = str_cat("branch %", branch->name(), " of ", name_of(conditional),
                                       " updates its parameter ", shape_index_to_string(index), " in place");
      if (std::optional<std::string> why = facts.read_only_reason(origin))
        return copy_for(value, use, CopyReason::kConditionalBranch, str_cat(what, ", but ", *why));
      if (std::optional<ShapeIndex> other = other_leaf_with_origin(facts, operand, index, origin))
        return copy_for(value, use, CopyReason::kConditionalBranch,
                        str_cat(what, ", and ", describe(facts, value), " is also its parameter ",
                                shape_index_to_string(*other), "; pass distinct buffers"));
      if (std::optional<LiveOccupant> occupant = live_occupant_after(facts, origin, conditional))
        return fix_live_after_write(facts, conditional, use, *occupant, CopyReason::kConditionalBranch,
                                    str_cat(what, ", but ", describe(facts, occupant->value), " ",
                                            describe_reader(*occupant), " afterwards; read it before ",
                                            name_of(conditional)));
    }
  }
  // Results that do not reuse one operand buffer get a fresh buffer: a branch returning a
  // buffer it does not own (its parameter, a constant, a value it also returns elsewhere)
  // copies it.
  for (const auto& [index, result] : facts.dataflow().leaf_values(conditional)) {
    if (facts.value(result).shape.is_token() || !facts.reused_operand_leaves(conditional, index).empty()) continue;
    for (const Computation* branch : branches) {
      const ValueId value = facts.value_at(branch->root(), index);
      const ValueId origin = facts.origin(value);
      std::string problem;
      if (facts.defining_instruction(origin) == branch->parameter(0)) {
        problem = str_cat("returns its parameter ", shape_index_to_string(facts.value(origin).defining.index),
                          " (", describe(facts, value), ") while another branch returns a different buffer");
      } else if (facts.is_constant(origin)) {
        problem = str_cat("returns the constant ", describe(facts, origin));
      } else {
        for (const auto& [other_index, other] : facts.dataflow().leaf_values(branch->root())) {
          if (other_index == index) break;
          if (facts.origin(other) == origin)
            problem = str_cat("returns ", describe(facts, value), " also as result ", shape_index_to_string(other_index));
        }
      }
      if (problem.empty()) continue;
      return copy_root_leaf(value, index, CopyReason::kConditionalBranch, str_cat("branch %", branch->name(), " of ", name_of(conditional), " ", problem, "; result ",
                           shape_index_to_string(index), " needs one buffer of its own in every branch, so the "
                           "branch returns a copy (returning an update of one shared operand in every branch avoids it)"));
    }
  }
  return std::nullopt;
}

}  // namespace insitu::copy_insertion
