// BufferFacts: which buffer every value of a Dataflow snapshot lives in, when it is read and
// who writes it, on the current instruction order. Copy insertion's rules, copy elimination's
// trials and the schedule read these facts; the scalar-broadcast rule below is an
// instruction-level fact buffer assignment and the runtime share with them (which outputs may
// share an operand's memory is analysis/in_place.h's).
//
// A value's *origin* is the value whose buffer it occupies: an in-place op's output lives in
// its in-place operand's buffer, a while result in its init's buffer, a conditional result in
// its operand's buffer when every branch returns (a pass-through or in-place update of) one
// operand leaf. Every other value starts a buffer of its own. Values with one origin form a
// *group*: one buffer whose occupants follow each other along the schedule.
//
// Pre: the module is verified and calls are flattened (one call site per control-flow
// computation); the facts are a snapshot: recompute them after any edit.
#pragma once

#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "insitu/analysis/dataflow.h"

namespace insitu {

class BufferFacts {
 public:
  BufferFacts(const Module& module, const Dataflow& dataflow);

  const Module& module() const { return module_; }
  const Dataflow& dataflow() const { return dataflow_; }
  const Value& value(ValueId id) const { return dataflow_.value(id); }
  ValueId value_at(const Instruction* instruction, const ShapeIndex& index = {}) const {
    return dataflow_.value_at(instruction, index);
  }

  ValueId origin(ValueId value) const { return origin_.at(value); }
  // Values whose origin is `origin`, in definition order.
  const std::vector<ValueId>& group(ValueId origin) const;
  // Whether defining `value` wrote into its origin's buffer (an in-place op, a loop or a
  // branch that updates the buffer).
  bool writes_on_define(ValueId value) const { return writes_on_define_.at(value); }
  // Whether some occupant of `parameter_value`'s buffer (a parameter leaf of a called
  // computation) overwrites it inside that computation, directly or through a nested
  // conditional whose branch updates its parameter.
  bool overwritten_in_region(ValueId parameter_value) const;
  // The conditional operand leaves through which `value` is handed to a branch that updates
  // that parameter leaf in place: the conditional writes `value`'s buffer. Such a write has
  // no occupant in the group when the result does not reuse the operand buffer (another
  // branch returns something else), so the rules must ask for it explicitly.
  std::vector<Use> branch_writes(ValueId value) const;
  // Whether while `loop` writes its state leaf `index` (new value or in-place update).
  bool loop_writes_leaf(const Instruction* loop, const ShapeIndex& index) const;
  // For a conditional result that reuses an operand buffer: per branch, the parameter leaf
  // its root leaf derives from. Empty when the result gets a fresh buffer.
  std::vector<ShapeIndex> reused_operand_leaves(const Instruction* conditional, const ShapeIndex& index) const;

  // Position of `instruction` in its computation's schedule.
  int64_t order(const Instruction* instruction) const { return order_.at(instruction); }
  const Instruction* defining_instruction(ValueId id) const { return value(id).defining.instruction; }
  // Uses of `value` strictly after (or, with `inclusive`, at or after) `instruction`.
  std::vector<Use> uses_after(ValueId value, const Instruction* instruction, bool inclusive = false) const;
  // Leaves of its computation's root where `value` sits.
  std::vector<ShapeIndex> root_leaves(ValueId value) const;
  // Why the buffer of `origin` must not be written, or nullopt when the program owns it.
  std::optional<std::string> read_only_reason(ValueId origin) const;
  // The while/conditional that calls `computation`; nullptr for the entry.
  const Instruction* caller(const Computation* computation) const;
  bool is_constant(ValueId value) const;
  // A constant whose only reader is a while loop it initializes (a loop counter's 0): it is
  // materialized into the loop's buffer on every run, so the loop may update it in place.
  bool is_loop_initializer_constant(ValueId value) const;
  // An entry parameter leaf aliased to output `output_index`?
  bool aliased_to_output(ValueId parameter_value, const ShapeIndex& output_index) const;
  // Whether `reader` may write its result (its leaf `result_index`) over the operand value it
  // reads (elementwise op or copy of one shape, which reads each element before writing it).
  bool can_write_over(const Instruction* reader, ValueId operand_value, const ShapeIndex& result_index = {}) const;
  // The use through which `value` inherits its origin's buffer (in-place operand, while init,
  // conditional operand); nullopt for a value that starts its own buffer.
  std::optional<Use> inheriting_use(ValueId value) const;

 private:
  const Module& module_;
  const Dataflow& dataflow_;
  std::vector<ValueId> origin_;
  std::vector<bool> writes_on_define_;
  std::unordered_map<ValueId, std::vector<ValueId>> groups_;
  std::unordered_map<const Instruction*, int64_t> order_;
  std::unordered_map<const Computation*, const Instruction*> callers_;
};

// "%name" / "%name{1}" for messages.
std::string describe(const BufferFacts& facts, ValueId value);


// broadcast(scalar) read only by elementwise ops and fusions, and not a root: it needs no
// bytes, its readers read the scalar (buffer assignment leaves it unmaterialized; the runtime
// resolves its leaf to the scalar's slice).
bool is_unmaterialized_scalar_broadcast(const Value& value);

}  // namespace insitu
