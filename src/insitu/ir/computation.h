// Computation: a named list of instructions in program order with a root; the module's
// ENTRY or a computation called by while/conditional/call/fusion/reduce/...
//
// Instruction order is a valid topological order (operands first) and, for a module with
// is_scheduled=true, the schedule.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "insitu/ir/instruction.h"

namespace insitu {

class Module;

class Computation {
 public:
  explicit Computation(std::string name) : name_(std::move(name)) {}
  Computation(const Computation&) = delete;
  Computation& operator=(const Computation&) = delete;

  const std::string& name() const { return name_; }
  void set_name(std::string name) { name_ = std::move(name); }
  Module* parent() const { return parent_; }
  SourceLocation location() const { return location_; }
  void set_location(SourceLocation location) { location_ = location; }
  // `, execution_thread="..."` after the closing brace; empty if not written.
  const std::string& execution_thread() const { return execution_thread_; }
  void set_execution_thread(std::string thread) { execution_thread_ = std::move(thread); }

  // Appends an instruction (program order) and returns it. Parameters are also recorded by
  // number.
  Instruction* add_instruction(std::unique_ptr<Instruction> instruction);
  // Inserts `instruction` right before `before` in program order.
  Instruction* insert_instruction_before(std::unique_ptr<Instruction> instruction, Instruction* before);
  // Inserts `instructions`, in their order, right before `before` (at the end when null).
  void insert_instructions_before(std::vector<std::unique_ptr<Instruction>> instructions, Instruction* before);
  // Removes an instruction that has no users and is not the root.
  void remove_instruction(Instruction* instruction);
  // Removes a batch: none is the root, and every user of each is in the batch, before it (a
  // fused group in reverse order). An instruction listed twice is removed once.
  void remove_instructions(const std::vector<Instruction*>& instructions);
  // Moves `instruction`, a non-parameter, with its operands and users as they are, to the end
  // of `to`: the caller makes both valid again (an outliner first makes its operands `to`'s
  // parameters and moves its users with it; it re-roots this computation if it was the root).
  void move_instruction_to(Instruction* instruction, Computation& to);

  // Program order (a copy: the caller may change the computation while it walks it). Kept as a
  // vector beside the list until the next change, so that the passes that walk every
  // computation in turn do not each chase the list's nodes: a 100,000-add chain's list took
  // 3.8 ms a walk, 20% of its compile over 84 walks. Safe to call from several threads at once
  // while nothing changes the computation (grid workers evaluate a shared body).
  std::vector<Instruction*> instructions() const;
  // Reorders the instructions (a schedule pass): `order` must hold each instruction once.
  void set_instruction_order(const std::vector<Instruction*>& order);
  int64_t instruction_count() const { return static_cast<int64_t>(instructions_.size()); }
  Instruction* find_instruction(std::string_view name) const;

  // parameter(i) for i in [0, parameter_count()).
  const std::vector<Instruction*>& parameters() const { return parameters_; }
  Instruction* parameter(int64_t i) const { return parameters_.at(i); }
  int64_t parameter_count() const { return static_cast<int64_t>(parameters_.size()); }

  Instruction* root() const { return root_; }
  void set_root(Instruction* root) { root_ = root; }

  // "(p0: f32[2], p1: s32[]) -> f32[2]"
  std::string signature_string() const;

 private:
  friend class Module;
  friend class ForwardTrial;

  std::string name_;
  Module* parent_ = nullptr;
  SourceLocation location_;
  std::string execution_thread_;
  // Unlinks `instruction` from its operands' users and its control edges (remove_instruction's
  // first half: the caller erases it from instructions_).
  void detach(Instruction* instruction);

  // Instructions in program order, a list so that inserting before one and removing one take
  // O(1) (each instruction holds its own position: a pass outlining thousands of fusions into a
  // 30,000-instruction computation was quadratic in a vector).
  InstructionList instructions_;
  // instructions_ in order while `order_valid_`; every change to instructions_ clears the flag
  // (changed()), the next instructions() refills it under order_mutex_.
  mutable std::vector<Instruction*> order_;
  mutable std::atomic<bool> order_valid_{false};
  mutable std::mutex order_mutex_;
  void changed() { order_valid_.store(false, std::memory_order_relaxed); }
  std::vector<Instruction*> parameters_;  // indexed by parameter number
  Instruction* root_ = nullptr;
};

// Forwards the readers of `value` (an instruction of one operand, without control edges: a
// plain copy) to its operand and takes `value` out of its computation, reversibly, so that a
// pass can try a removal on the module itself and keep it only where an analysis of the result
// agrees (copy elimination; a trial on a clone of the module cost 94% of compiling XLA's own
// optimized decode step). undo() puts back exactly what was there: each reader's operand
// slots, both user lists in their order, the root, the place in program order; keep() destroys
// `value`. A trial left alone is undone when it goes. Nothing else may change the computation
// between a trial and its undo; trials over one computation are undone in reverse order.
class ForwardTrial {
 public:
  explicit ForwardTrial(Instruction* value);
  ForwardTrial(const ForwardTrial&) = delete;
  ForwardTrial& operator=(const ForwardTrial&) = delete;
  ~ForwardTrial() { undo(); }

  void undo();
  void keep() { owned_.reset(); }

 private:
  Computation* computation_;
  Instruction* value_;
  Instruction* operand_;
  Instruction* next_;  // after value_ in program order; null at the end
  bool was_root_;
  std::vector<std::pair<Instruction*, int64_t>> slots_;  // (reader, operand number) that read value_
  std::vector<Instruction*> operand_users_, value_users_;
  bool operand_indexed_, value_indexed_;
  std::unique_ptr<Instruction> owned_;  // value_, while it is out
};

}  // namespace insitu
