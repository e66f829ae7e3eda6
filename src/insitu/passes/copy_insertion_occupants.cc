// Copy-insertion rules for buffers that receive a new value: loop state replaced by the body
// root (R2b), entry outputs (R4) and outputs aliased to parameters (R5); and the driver that
// asks every rule in order, callees first.
#include "insitu/passes/copy_insertion_internal.h"
#include "insitu/support/str.h"

namespace insitu::copy_insertion {
namespace {

bool defined_before(const BufferFacts& facts, ValueId value, const Instruction* instruction) {
  const Instruction* definer = facts.defining_instruction(value);
  return definer->opcode() == Opcode::kParameter || facts.order(definer) < facts.order(instruction);
}

// "; declare output_to_operand_aliasing={{}: (0, {})} on %cc if it updates that operand in place"
std::string custom_call_hint(const Instruction* writer, const Use& use) {
  if (writer->opcode() != Opcode::kCustomCall || use.instruction != writer) return "";
  return str_cat(", and ", name_of(writer), " declares no output_to_operand_aliasing for it; declare "
                 "output_to_operand_aliasing={{}: (", use.operand_number, ", ", shape_index_to_string(use.operand_index),
                 ")} if the kernel updates that operand in place");
}

}  // namespace

std::optional<CopyFix> check_new_occupant(const BufferFacts& facts, ValueId slot, ValueId new_value,
                                          CopyReason reason, const std::string& what) {
  const Instruction* writer = facts.defining_instruction(new_value);
  for (ValueId member : facts.group(slot)) {
    if (defined_before(facts, member, writer)) {
      // The old contents must be dead once `writer` starts writing; a reader at `writer` is fine
      // only if it reads each element before writing it.
      std::vector<Use> uses;
      for (const Use& use : facts.uses_after(member, writer, /*inclusive=*/true))
        if (use.instruction != writer || !facts.can_write_over(writer, member, facts.value(new_value).defining.index))
          uses.push_back(use);
      std::vector<ShapeIndex> escapes = facts.root_leaves(member);
      if (uses.empty() && escapes.empty()) continue;
      std::string reader = uses.empty() ? "returned at root leaf " + shape_index_to_string(escapes.front())
                                        : "read by " + name_of(uses.front().instruction);
      const std::string source = facts.value(new_value).defining.instruction == writer
                                     ? str_cat("its new value from ", name_of(writer))
                                     : str_cat(describe(facts, new_value), " from ", name_of(writer));
      std::string detail = str_cat(what, " receives ", source, " while its old value ", describe(facts, member),
                                   " is still ", reader,
                                   uses.empty() ? std::string() : custom_call_hint(writer, uses.front()), "; read ",
                                   describe(facts, member), " before ", name_of(writer), ", or update it in place");
      return CopyFix{.value = member, .insert_before = writer, .uses = std::move(uses),
                     .root_leaves = std::move(escapes), .reason = reason, .detail = std::move(detail)};
    }
    if (member != slot && facts.writes_on_define(member)) {
      // A later in-place update of the slot would destroy the new value.
      std::optional<Use> use = facts.inheriting_use(member);
      INSITU_CHECK(use.has_value()) << describe(facts, member) << " writes a buffer it does not inherit";
      ValueId updated = facts.value_at(use->instruction->operand(use->operand_number), use->operand_index);
      return copy_for(updated, *use, reason,
                      str_cat(name_of(use->instruction), " updates ", describe(facts, updated), " in place after ", what,
                              " already received ", describe(facts, new_value), " in the same buffer; it updates a copy"));
    }
    if (member != slot)
      for (const Use& use : facts.branch_writes(member)) {
        // A branch of a later conditional updating the slot in place would destroy it too.
        return copy_for(member, use, reason,
                        str_cat("a branch of ", name_of(use.instruction), " updates ", describe(facts, member),
                                " in place after ", what, " already received ", describe(facts, new_value),
                                " in the same buffer; it updates a copy"));
      }
  }
  return std::nullopt;
}

// R2b: inside a while body, root leaf i becomes loop state i for the next iteration.
std::optional<CopyFix> check_while_body(const BufferFacts& facts, const Computation* body) {
  const Instruction* loop = facts.caller(body);
  const Instruction* parameter = body->parameter(0);
  const auto& root_leaves = facts.dataflow().leaf_values(body->root());
  // First: the new value must be a buffer the body owns.
  for (size_t i = 0; i < root_leaves.size(); ++i) {
    const auto& [index, value] = root_leaves[i];
    if (facts.value(value).shape.is_token()) continue;
    const ValueId slot = facts.value_at(parameter, index);
    const ValueId origin = facts.origin(value);
    if (origin == slot) continue;
    std::string problem;
    if (facts.defining_instruction(origin) == parameter) {
      problem = str_cat("is loop state ", shape_index_to_string(facts.value(origin).defining.index),
                        ", which lives in another state buffer");
    } else if (facts.is_constant(origin)) {
      problem = "is a constant (read-only)";
    } else {
      for (size_t k = 0; k < i; ++k)
        if (facts.origin(root_leaves[k].second) == origin)
          problem = str_cat("is also the new loop state ", shape_index_to_string(root_leaves[k].first));
    }
    if (problem.empty()) continue;
    return copy_root_leaf(value, index, CopyReason::kLoopCarried,
                          str_cat("the body of ", name_of(loop), " returns ", describe(facts, value), " as loop state ",
                                  shape_index_to_string(index), ", but it ", problem,
                                  "; each state leaf needs its own buffer, so the body returns a copy"));
  }
  // Then: the old state must be dead where the new one is written.
  for (const auto& [index, value] : root_leaves) {
    if (facts.value(value).shape.is_token()) continue;
    const ValueId slot = facts.value_at(parameter, index);
    const ValueId origin = facts.origin(value);
    if (origin == slot) continue;
    if (auto fix = check_new_occupant(facts, slot, origin, CopyReason::kLoopCarried,
                                      str_cat("loop state ", shape_index_to_string(index), " of ", name_of(loop))))
      return fix;
  }
  return std::nullopt;
}

// R4: entry outputs are buffers the caller receives: never a constant, an unaliased parameter,
// or one buffer twice. Every read-only leaf is reported at once (each needs its own copy
// whatever the others get, so they are independent); a shared buffer only when none is.
std::vector<CopyFix> check_entry_outputs(const BufferFacts& facts) {
  const Computation* entry = facts.module().entry();
  const auto& root_leaves = facts.dataflow().leaf_values(entry->root());
  std::vector<CopyFix> read_only;
  for (const auto& [index, value] : root_leaves) {
    if (facts.value(value).shape.is_token()) continue;
    const ValueId origin = facts.origin(value);
    const Instruction* definer = facts.defining_instruction(origin);
    if (facts.is_constant(origin))
      read_only.push_back(copy_root_leaf(value, index, CopyReason::kReadOnlyLiveOut,
                            str_cat("output ", shape_index_to_string(index), " returns the constant ",
                                    describe(facts, origin), ", whose buffer is read-only; the caller gets a copy")));
    else if (definer->opcode() == Opcode::kParameter && definer->parent() == entry &&
             !facts.aliased_to_output(origin, index))
      read_only.push_back(copy_root_leaf(
          value, index, CopyReason::kReadOnlyLiveOut,
          str_cat("output ", shape_index_to_string(index), " returns parameter ", definer->parameter_number,
                  facts.value(origin).defining.index.empty() ? std::string()
                                                             : shape_index_to_string(facts.value(origin).defining.index),
                  " (", describe(facts, origin),
                  ") unchanged, but the caller still owns that parameter; alias it to output ",
                  shape_index_to_string(index), " (input_output_alias, or donate it) to return it without a copy")));
  }
  if (!read_only.empty()) return read_only;
  std::unordered_map<ValueId, size_t> first_leaf;  // origin -> the first root leaf holding it
  for (size_t j = 0; j < root_leaves.size(); ++j) {
    if (facts.value(root_leaves[j].second).shape.is_token()) continue;
    const ValueId origin = facts.origin(root_leaves[j].second);
    auto [seen, inserted] = first_leaf.try_emplace(origin, j);
    if (!inserted) {
      const size_t k = seen->second;
      // Copy the output that is not aliased to the buffer's parameter.
      const bool j_owns = facts.aliased_to_output(origin, root_leaves[j].first);
      const auto& [copied_index, copied_value] = j_owns ? root_leaves[k] : root_leaves[j];
      const ShapeIndex& kept_index = j_owns ? root_leaves[j].first : root_leaves[k].first;
      return {copy_root_leaf(copied_value, copied_index, CopyReason::kNonDistinctOutput,
                             str_cat("outputs ", shape_index_to_string(kept_index), " and ",
                                     shape_index_to_string(copied_index), " would both be the buffer of ",
                                     describe(facts, origin), "; every output needs its own buffer, so output ",
                                     shape_index_to_string(copied_index), " is a copy"))};
    }
  }
  return {};
}

// R5: an output aliased to a parameter is written into that parameter's buffer.
std::optional<CopyFix> check_entry_aliases(const BufferFacts& facts) {
  const Computation* entry = facts.module().entry();
  for (const InputOutputAlias& alias : facts.module().config().input_output_alias) {
    const ValueId output = facts.value_at(entry->root(), alias.output_index);
    const ValueId slot = facts.value_at(entry->parameter(alias.parameter_number), alias.parameter_index);
    const ValueId origin = facts.origin(output);
    if (origin == slot) continue;
    if (auto fix = check_new_occupant(
            facts, slot, origin, CopyReason::kLiveAfterInPlaceWrite,
            str_cat("parameter ", alias.parameter_number,
                    alias.parameter_index.empty() ? std::string() : shape_index_to_string(alias.parameter_index), " (",
                    describe(facts, slot), "), aliased to output ", shape_index_to_string(alias.output_index), ",")))
      return fix;
  }
  return std::nullopt;
}

}  // namespace insitu::copy_insertion
