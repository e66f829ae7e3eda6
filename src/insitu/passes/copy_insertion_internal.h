// Internals of copy insertion, shared with copy elimination: the rule checks over the buffer
// facts (analysis/buffer_facts.h), the rule order, and the edit that inserts one copy.
#pragma once

#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "insitu/analysis/buffer_facts.h"
#include "insitu/ir/copy_reason.h"
#include "insitu/passes/name_table.h"

namespace insitu::copy_insertion {

using insitu::BufferFacts;
using insitu::describe;

// One copy to insert: `value` is copied right before `insert_before`, and the listed reads
// and root leaves of that computation then see the copy.
struct CopyFix {
  ValueId value = -1;
  const Instruction* insert_before = nullptr;
  std::vector<Use> uses;
  std::vector<ShapeIndex> root_leaves;
  CopyReason reason = CopyReason::kUserCopy;
  std::string detail;
};

// The two shapes most fixes take: `use` reads a copy of `value` taken right before it; root
// leaf `leaf` of the value's computation returns a copy of `value`.
inline CopyFix copy_for(ValueId value, const Use& use, CopyReason reason, std::string detail) {
  return CopyFix{.value = value, .insert_before = use.instruction, .uses = {use}, .reason = reason,
                 .detail = std::move(detail)};
}
inline CopyFix copy_root_leaf(ValueId value, const ShapeIndex& leaf, CopyReason reason, std::string detail) {
  return CopyFix{.value = value, .root_leaves = {leaf}, .reason = reason, .detail = std::move(detail)};
}

// "%name", as fix details spell an instruction.
inline std::string name_of(const Instruction* instruction) { return "%" + instruction->name(); }

// The rules (copy_insertion.h lists them); each returns the first violation it finds.
std::optional<CopyFix> check_in_place_op(const BufferFacts& facts, const Instruction* op);        // R1
std::optional<CopyFix> check_while_init(const BufferFacts& facts, const Instruction* loop);       // R2
std::optional<CopyFix> check_while_body(const BufferFacts& facts, const Computation* body);       // R2b
std::optional<CopyFix> check_conditional(const BufferFacts& facts, const Instruction* conditional);  // R3
std::vector<CopyFix> check_entry_outputs(const BufferFacts& facts);  // R4: all read-only leaves, or one shared
std::optional<CopyFix> check_entry_aliases(const BufferFacts& facts);                              // R5

// Shared by R2b and R5: `new_value` becomes the occupant of `slot`'s buffer (a body parameter
// leaf or an aliased entry parameter leaf); every older occupant must be dead where it is
// defined and no occupant may overwrite it later.
std::optional<CopyFix> check_new_occupant(const BufferFacts& facts, ValueId slot, ValueId new_value,
                                          CopyReason reason, const std::string& what);

// The first violation in the module, regions callees first, as a batch: one fix, or the
// independent root-leaf fixes R4 reports together (each still needed after the others are
// applied); empty when every rule holds.
std::vector<CopyFix> find_violations(const BufferFacts& facts);
// Its first fix only (copy elimination asks whether any rule is violated, and which).
std::optional<CopyFix> find_violation(const BufferFacts& facts);

// Inserts the copy `fix` describes, its name (and any tuple's it rebuilds) fresh in `names`
// (the module's, kept by the caller across fixes); returns it.
Instruction* apply_fix(const Dataflow& dataflow, const CopyFix& fix, NameTable& names);
// Applies a batch from find_violations (all of it computed on `dataflow`): a batch of root-leaf
// fixes as one edit of the entry root (one insertion, one root rebuild), else its first fix.
// Returns how many copies it inserted.
int64_t apply_fixes(const Dataflow& dataflow, const std::vector<CopyFix>& fixes, NameTable& names);


}  // namespace insitu::copy_insertion
