// Instruction: one HLO instruction, its operands, called computations and attributes.
//
// Instructions are owned by their Computation. Operand and user lists are kept consistent by
// the mutators below (append_operand, replace_operand, replace_all_uses_with); never edit
// `operands_`/`users_` behind their back. Attributes are plain public fields (InstructionAttributes): each is
// meaningful only for the opcodes its comment names, and the verifier checks which are set.
// Attributes insitu does not model are kept verbatim in `extra_attributes` (printed back in
// order), so real dumps round-trip even when they carry attributes insitu ignores.
#pragma once

#include <list>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "insitu/ir/attributes.h"
#include "insitu/ir/literal.h"
#include "insitu/ir/opcode.h"
#include "insitu/ir/shape.h"
#include "insitu/support/status.h"

namespace insitu {

class Computation;
class ForwardTrial;
class Instruction;
// A computation's instructions in program order (Computation::instructions_).
using InstructionList = std::list<std::unique_ptr<Instruction>>;

// custom-call's attributes.
struct CustomCallAttributes {
  std::string target;                     // custom_call_target="..." (required)
  std::string api_version;                // api_version=API_VERSION_...; empty if not written
  bool has_side_effect = false;           // custom_call_has_side_effect=true
  std::vector<OutputOperandAlias> output_to_operand_aliasing;
  // operand_layout_constraints={shape, ...}: one shape (with layout) per operand, if written.
  std::optional<std::vector<Shape>> operand_layout_constraints;
  std::string schedule;                   // schedule=SCHEDULE_...; empty if not written
  bool operator==(const CustomCallAttributes&) const = default;
};

// Custom-call targets that say where a value lives or how it is laid out (host memory, a
// device, a sharding, a sharding barrier, a layout), not what it is: MoveToHost, MoveToDevice,
// annotate_device_placement, Sharding, ShardBarrierFrom, ShardBarrierTo, LayoutConstraint.
// Their value is their one operand (the evaluator returns it; simplify forwards it when the
// layout stays).
bool is_placement_annotation(std::string_view target);

// The custom-call target of an array whose every element is written before anything reads it
// (insitu's Pallas lowering makes an output whose blocks cover it and whose ref the kernel never
// reads so): no operands; the CPU runtime writes nothing to make it, the evaluator gives zeros.
inline constexpr std::string_view kUnreadMemoryTarget = "insitu_unread_memory";

// How much of a constant's value the HLO text gave. Only kWritten can be evaluated: XLA prints
// large constants as `{...}` unless dumped with --xla_dump_large_constants, and its parser
// reads a single scalar for an array as element 0 followed by zeros.
enum class ConstantValue : uint8_t {
  kWritten,         // every element written
  kElided,          // `{...}`
  kScalarForArray,  // `f32[16] constant(1)`: one value for several elements
};

// Every attribute an instruction may carry, as plain fields. One struct so that cloning and
// comparing instructions copy and compare them all without listing them.
struct InstructionAttributes {
  // --- each meaningful for the opcodes named ---
  int64_t parameter_number = -1;              // parameter(N)
  int64_t tuple_index = -1;                   // get-tuple-element: index=
  // get-tuple-element written inside an operand list as `%tuple#index` (current XLA's spelling):
  // the printer writes it back that way, with no line of its own.
  bool written_as_operand_suffix = false;
  int64_t iota_dimension = -1;                // iota: iota_dimension=
  std::vector<int64_t> dimensions;            // dimensions={..}: broadcast, transpose, reduce,
                                              // reverse, concatenate, map, sort
  Literal literal;                            // constant
  ConstantValue constant_value = ConstantValue::kWritten;  // constant: how much the text gave
  std::vector<SliceDimension> slice;          // slice: slice={[a:b:c],..}
  std::vector<int64_t> dynamic_slice_sizes;   // dynamic-slice; also gather's slice_sizes
  std::vector<PaddingDimension> padding;      // pad: padding=
  std::vector<WindowDimension> window;        // reduce-window, select-and-scatter: window=
  ComparisonDirection comparison_direction = ComparisonDirection::kEq;  // compare: direction=
  ComparisonType comparison_type = ComparisonType::kDefault;            // compare: type=
  std::string comparison_order;               // compare: order=TOTAL|PARTIAL as written (current XLA's
                                              // spelling of type=), printed back that way
  DotDimensionNumbers dot_dimension_numbers;  // dot
  std::vector<std::string> operand_precision; // dot: operand_precision={..}; empty if unwritten
  GatherDimensionNumbers gather_dimension_numbers;
  ScatterDimensionNumbers scatter_dimension_numbers;
  bool indices_are_sorted = false;            // gather, scatter
  bool unique_indices = false;                // scatter
  bool is_stable = false;                     // sort
  std::string fusion_kind;                    // fusion: kind=kLoop|kInput|kOutput|kCustom
  int64_t exponent_bits = 0;                  // reduce-precision
  int64_t mantissa_bits = 0;                  // reduce-precision
  CustomCallAttributes custom_call;           // custom-call
  std::vector<OutputOperandAlias> fusion_output_to_operand_aliasing;  // fusion

  // --- attributes every instruction may carry ---
  std::string backend_config;                 // verbatim: `{...}` JSON or a quoted string
  std::string sharding;                       // verbatim, braces included
  std::vector<RawAttribute> metadata;         // metadata={op_type="..." source_line=3}, raw values
  bool has_metadata = false;                  // `metadata={}` written (possibly empty)
  // frontend_attributes={key="value",...}; values unescaped. insitu records copy provenance here.
  std::vector<std::pair<std::string, std::string>> frontend_attributes;
  // Everything else written on the instruction, in order, verbatim.
  std::vector<RawAttribute> extra_attributes;


  bool operator==(const InstructionAttributes&) const = default;
};

class Instruction : public InstructionAttributes {
 public:
  Instruction(Opcode opcode, std::string name, Shape shape)
      : opcode_(opcode), name_(std::move(name)), shape_(std::move(shape)) {}
  Instruction(const Instruction&) = delete;
  Instruction& operator=(const Instruction&) = delete;

  Opcode opcode() const { return opcode_; }
  const std::string& name() const { return name_; }
  void set_name(std::string name) { name_ = std::move(name); }
  const Shape& shape() const { return shape_; }
  Shape& mutable_shape() { return shape_; }
  void set_shape(Shape shape) { shape_ = std::move(shape); }
  Computation* parent() const { return parent_; }
  // Where the instruction was written in the HLO text; invalid for built instructions.
  SourceLocation location() const { return location_; }
  void set_location(SourceLocation location) { location_ = location; }

  // --- operands and users ---
  const std::vector<Instruction*>& operands() const { return operands_; }
  Instruction* operand(int64_t i) const { return operands_.at(i); }
  int64_t operand_count() const { return static_cast<int64_t>(operands_.size()); }
  void append_operand(Instruction* operand);
  // Replaces operand i; keeps user lists right.
  void replace_operand(int64_t i, Instruction* new_operand);
  // Distinct users, in the order they became users; except that when a user of an instruction
  // with more than kIndexedUsers users goes, the last user takes its place (as in XLA), so that
  // adding and removing a user stays O(1) for a value read by 100,000 instructions.
  const std::vector<Instruction*>& users() const { return users_; }
  static constexpr size_t kIndexedUsers = 32;
  // Makes every user of this instruction (and the parent's root, if this is it) use
  // `replacement` instead.
  void replace_all_uses_with(Instruction* replacement);

  const std::vector<Instruction*>& control_predecessors() const { return control_predecessors_; }
  const std::vector<Instruction*>& control_successors() const { return control_successors_; }
  bool has_control_edges() const { return !control_predecessors_.empty() || !control_successors_.empty(); }
  void add_control_predecessor(Instruction* predecessor);

  // --- called computations ---
  // while: {condition, body}; conditional: its branches (true, false for a pred selector);
  // call/map/reduce/reduce-window/scatter/sort/all-reduce/...: {to_apply}; fusion: {calls};
  // custom-call: called_computations or to_apply.
  const std::vector<Computation*>& called_computations() const { return called_computations_; }
  void set_called_computations(std::vector<Computation*> computations) {
    called_computations_ = std::move(computations);
  }
  Computation* to_apply() const { return called_computations_.at(0); }
  Computation* while_condition() const { return called_computations_.at(0); }
  Computation* while_body() const { return called_computations_.at(1); }

  const std::string* frontend_attribute(std::string_view key) const;
  void set_frontend_attribute(std::string key, std::string value);
  InstructionAttributes& attributes() { return *this; }
  const InstructionAttributes& attributes() const { return *this; }

  // "%name = shape opcode(...)" in long form; the printer's job, reused in messages.
  std::string to_string() const;

 private:
  friend class Computation;
  friend class ForwardTrial;

  Opcode opcode_;
  std::string name_;
  Shape shape_;
  Computation* parent_ = nullptr;
  SourceLocation location_;
  void add_user(Instruction* user);
  void remove_user(Instruction* user);  // a no-op where `user` is not one

  std::vector<Instruction*> operands_;
  std::vector<Instruction*> users_;
  // Each user's position in users_: built when users_ grows past kIndexedUsers, dropped when it
  // shrinks to half that.
  std::unique_ptr<std::unordered_map<Instruction*, size_t>> user_index_;
  std::vector<Instruction*> control_predecessors_;
  std::vector<Instruction*> control_successors_;
  std::vector<Computation*> called_computations_;
  InstructionList::iterator position_;  // in parent_'s list, while it has a parent
};

// Whether `instruction` is a scalar integer constant equal to `value` (a start index, a loop
// bound, a step).
bool is_integer_constant(const Instruction& instruction, int64_t value);

// Whether `bitcast` (a bitcast or reshape) moves no element in row-major data: equal element
// types and both layouts row-major on the dimensions larger than 1 (so it is a reshape of the
// values). Passes lower bitcasts by it (passes/bitcast_lowering.h); the runtimes run one that
// satisfies it as a view.
bool is_row_major_reshape(const Instruction& bitcast);

}  // namespace insitu
