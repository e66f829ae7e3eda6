// Dataflow analysis: which value sits at every array leaf of every instruction, where each
// value is read, and which values must share one buffer.
//
// Values are SSA: every leaf has exactly one value. An instruction either defines the values
// of its leaves or forwards its operands' values unchanged:
//
//   forwards  tuple, get-tuple-element, bitcast, opt-barrier, copy-done (copy-start's {0}),
//             copy-start's {1} (its source)
//   defines   everything else, including parameters of called computations and the results
//             of while, conditional and call (phi-like values: what flows in and out of a
//             called computation is tied together by must-share links, not by reusing ids)
//
// Analyzed computations are the entry and those reached through while (condition, body),
// conditional (branches) and call. Computations called by fusion, reduce, map, sort, scatter
// and custom-call are opaque: they compute scalars or run as one kernel and own no buffers.
//
// Must-share links say "these two values must live in one buffer" and why:
//   kWhileState          init leaf i ~ body parameter i ~ condition parameter i ~ body root i
//                        ~ while result i
//   kConditionalOperand  branch b's parameter leaf k ~ operand b+1 leaf k
//   kConditionalResult   each branch root leaf j ~ conditional result leaf j
//   kCallBoundary        callee parameters ~ call operands; callee root ~ call result
//   kInPlace             an in-place operand ~ its output (dynamic-update-slice, scatter,
//                        custom-call/fusion output_to_operand_aliasing)
//   kInputOutputAlias    entry parameter leaf ~ entry root leaf (input_output_alias)
// Copy insertion makes every link legal; buffer assignment then unions linked values.
#pragma once

#include <string>
#include <unordered_map>
#include <vector>

#include "insitu/analysis/in_place.h"
#include "insitu/ir/module.h"

namespace insitu {

using ValueId = int64_t;

struct Position {
  const Instruction* instruction = nullptr;
  ShapeIndex index;
  bool operator==(const Position&) const = default;
};

// `instruction` reads the value at operand `operand_number`, leaf `operand_index`.
struct Use {
  const Instruction* instruction = nullptr;
  int64_t operand_number = 0;
  ShapeIndex operand_index;
  bool operator==(const Use&) const = default;
};

struct Value {
  ValueId id = -1;
  Position defining;               // where the value is created
  Shape shape;                     // an array or token leaf
  std::vector<Position> positions; // every leaf holding it, the defining one first
  std::vector<Use> uses;           // instructions that read it (forwarders are not readers)
  const Computation* computation() const;
  // "%name" or "%name{1,0}"
  std::string to_string() const;
};

// A constant read by nothing but one while loop, at one leaf of its initial state (a loop
// counter's 0). It is materialized into the loop's buffer on every run instead of living in
// read-only memory, so the loop may update it in place: no copy.
bool is_loop_initializer_constant(const Value& value);

enum class LinkKind : uint8_t {
  kWhileState,
  kConditionalOperand,
  kConditionalResult,
  kCallBoundary,
  kInPlace,
  kInputOutputAlias,
};
std::string_view link_kind_name(LinkKind kind);

struct MustShareLink {
  ValueId a = -1;
  ValueId b = -1;
  LinkKind kind = LinkKind::kInPlace;
  const Instruction* at = nullptr;  // the while/conditional/call/in-place op/entry root
};

class Dataflow {
 public:
  // Requires a verified module.
  static Dataflow compute(const Module& module);

  const std::vector<Value>& values() const { return values_; }
  const Value& value(ValueId id) const { return values_.at(id); }
  // The value at an array/token leaf of an analyzed instruction.
  ValueId value_at(const Instruction* instruction, const ShapeIndex& index = {}) const;
  const Value& value_of(const Instruction* instruction, const ShapeIndex& index = {}) const {
    return value(value_at(instruction, index));
  }
  bool has_values(const Instruction* instruction) const { return leaves_.count(instruction) != 0; }
  // (index, value) for every array/token leaf of the instruction, in leaf order.
  const std::vector<std::pair<ShapeIndex, ValueId>>& leaf_values(const Instruction* instruction) const;

  const std::vector<MustShareLink>& links() const { return links_; }
  // Computations whose instructions carry values (entry + control-flow callees), callees first.
  const std::vector<const Computation*>& analyzed_computations() const { return computations_; }

  std::string to_string() const;

 private:
  std::vector<Value> values_;
  std::unordered_map<const Instruction*, std::vector<std::pair<ShapeIndex, ValueId>>> leaves_;
  std::vector<MustShareLink> links_;
  std::vector<const Computation*> computations_;
};

}  // namespace insitu
