#include "insitu/passes/layout_assignment.h"

#include <functional>

#include "insitu/ir/copy_reason.h"
#include "insitu/passes/name_table.h"
#include "insitu/support/str.h"

namespace insitu {
namespace {

// Whether two array layouts differ in a way that needs a copy on CPU: minor_to_major or memory
// space (tiles and other fields do not change dense bytes).
bool layouts_need_copy(const Layout& from, const Layout& to) {
  return from.minor_to_major != to.minor_to_major || from.memory_space != to.memory_space;
}

std::string layout_text(const Layout& layout) { return "{" + layout.fields_to_string() + "}"; }
std::string memory_space_text(int64_t memory_space) { return str_cat("S(", memory_space, ")"); }

// Says what a consumer requires of one array leaf and what it got: the detail of a copy.
using DescribeMismatch = std::function<std::string(const ShapeIndex& index, const Instruction& producer,
                                                   const Layout& have, const Layout& want)>;

// Makes values match a required shape's layouts, inserting copies where they really differ.
class Conformer {
 public:
  // adopt_tiles: a producer whose layout differs only in tiles takes the required ones.
  // default_space_is_any: a required layout in the default memory space S(0) accepts any memory
  // space (a custom call's constraint names a layout; where the operand lives is decided later,
  // as by XLA's memory space assignment); a required non-default space must be met.
  Conformer(Computation& computation, NameTable& names, Instruction* before, bool adopt_tiles,
            bool default_space_is_any, DescribeMismatch describe)
      : computation_(computation), names_(names), before_(before), adopt_tiles_(adopt_tiles),
        default_space_is_any_(default_space_is_any), describe_(std::move(describe)) {}

  // An instruction holding `producer`'s value in `want`'s layouts (producer itself if it does).
  Instruction* conform(Instruction* producer, const Shape& want) {
    ShapeIndex index;
    return conform_at(producer, want, index);
  }
  bool changed() const { return changed_; }

 private:
  Instruction* insert(std::unique_ptr<Instruction> instruction) {
    changed_ = true;
    return before_ ? computation_.insert_instruction_before(std::move(instruction), before_)
                   : computation_.add_instruction(std::move(instruction));
  }

  bool leaf_needs_copy(const Layout& have, const Layout& want) const {
    if (default_space_is_any_ && want.memory_space == 0) return have.minor_to_major != want.minor_to_major;
    return layouts_need_copy(have, want);
  }

  bool needs_copy(const Shape& have, const Shape& want) const {
    if (have.is_array() && want.is_array()) return leaf_needs_copy(have.layout(), want.layout());
    if (!have.is_tuple() || !want.is_tuple() || have.tuple_size() != want.tuple_size()) return false;
    for (int64_t i = 0; i < have.tuple_size(); ++i)
      if (needs_copy(have.tuple_shape(i), want.tuple_shape(i))) return true;
    return false;
  }

  Instruction* conform_at(Instruction* producer, const Shape& want, ShapeIndex& index) {
    const Shape& have = producer->shape();
    if (have.is_array() && want.is_array()) return conform_array(producer, want, index);
    if (!have.is_tuple() || !want.is_tuple() || have.tuple_size() != want.tuple_size()) return producer;
    if (producer->opcode() == Opcode::kTuple) return conform_tuple(producer, want, index);
    if (!needs_copy(have, want)) return producer;
    // a tuple-shaped result of another op: take it apart, conform the parts, put it together
    auto tuple = std::make_unique<Instruction>(Opcode::kTuple, names_.unique("tuple"), Shape());
    std::vector<Shape> element_shapes;
    for (int64_t i = 0; i < have.tuple_size(); ++i) {
      auto element = std::make_unique<Instruction>(Opcode::kGetTupleElement, names_.unique("get-tuple-element"),
                                                   have.tuple_shape(i));
      element->tuple_index = i;
      element->append_operand(producer);
      index.push_back(i);
      Instruction* conformed = conform_at(insert(std::move(element)), want.tuple_shape(i), index);
      index.pop_back();
      tuple->append_operand(conformed);
      element_shapes.push_back(conformed->shape());
    }
    tuple->set_shape(Shape::tuple(std::move(element_shapes)));
    return insert(std::move(tuple));
  }

  Instruction* conform_tuple(Instruction* tuple, const Shape& want, ShapeIndex& index) {
    std::vector<Instruction*> operands;
    bool replaced = false;
    for (int64_t i = 0; i < tuple->operand_count(); ++i) {
      index.push_back(i);
      operands.push_back(conform_at(tuple->operand(i), want.tuple_shape(i), index));
      index.pop_back();
      replaced |= operands.back() != tuple->operand(i);
    }
    std::vector<Shape> element_shapes;
    for (Instruction* operand : operands) element_shapes.push_back(operand->shape());
    Shape shape = Shape::tuple(std::move(element_shapes));
    if (!replaced) {
      if (!(tuple->shape() == shape)) {  // an element adopted the required tiles
        tuple->set_shape(std::move(shape));
        changed_ = true;
      }
      return tuple;
    }
    // a new tuple: other users of the old one keep what they had
    auto fresh = std::make_unique<Instruction>(Opcode::kTuple, names_.unique(tuple->name()), std::move(shape));
    for (Instruction* operand : operands) fresh->append_operand(operand);
    return insert(std::move(fresh));
  }

  Instruction* conform_array(Instruction* producer, const Shape& want, const ShapeIndex& index) {
    const Shape& have = producer->shape();
    if (have.layout() == want.layout()) return producer;
    if (!leaf_needs_copy(have.layout(), want.layout())) {
      // only tiles (or an unconstrained memory space) differ: dense on CPU, so the producer may simply take the required ones
      Opcode opcode = producer->opcode();
      bool forwards = opcode == Opcode::kParameter || opcode == Opcode::kGetTupleElement ||
                      opcode == Opcode::kBitcast || opcode == Opcode::kTuple;
      if (adopt_tiles_ && !forwards) {
        producer->mutable_shape().set_layout(want.layout());
        changed_ = true;
      }
      return producer;
    }
    if (adopt_tiles_ && can_compute_in(*producer, want.layout())) {
      // computed straight into the required layout: on CPU every such op works on logical
      // indices, so its layout is only where the bytes go
      producer->mutable_shape().set_layout(want.layout());
      changed_ = true;
      return producer;
    }
    Layout layout = want.layout();
    if (default_space_is_any_ && layout.memory_space == 0) layout.memory_space = have.layout().memory_space;
    Shape shape = Shape::array(have.element_type(), have.dimensions(), std::move(layout));
    auto copy = std::make_unique<Instruction>(Opcode::kCopy, names_.unique("copy"), std::move(shape));
    copy->append_operand(producer);
    CopyReason reason = have.layout().memory_space != want.layout().memory_space ? CopyReason::kMemorySpaceChange
                                                                                   : CopyReason::kLayoutChange;
    set_copy_reason(*copy, reason, describe_(index, *producer, have.layout(), want.layout()));
    return insert(std::move(copy));
  }

  // An entry result leaf computed by an op whose layout nothing else observes: the op may
  // produce the interface's layout itself instead of being copied into it. Not for ops whose
  // layout is tied to something else (parameters, forwarders, bitcasts, in-place updates,
  // control flow, custom calls, fusions, copies) or whose value another user also reads.
  bool can_compute_in(const Instruction& producer, const Layout& want) const {
    if (want.memory_space != producer.shape().layout().memory_space) return false;
    for (const Instruction* user : producer.users())
      if (user != computation_.root() || user->opcode() != Opcode::kTuple) return false;
    if (is_elementwise(producer.opcode())) return producer.opcode() != Opcode::kMap;
    switch (producer.opcode()) {
      case Opcode::kTranspose:
      case Opcode::kDot:
      case Opcode::kReduce:
      case Opcode::kBroadcast:
      case Opcode::kReshape:
      case Opcode::kSlice:
      case Opcode::kConcatenate:
      case Opcode::kIota:
      case Opcode::kPad:
      case Opcode::kReverse:
      case Opcode::kDynamicSlice:
      case Opcode::kGather: return true;
      default: return false;
    }
  }

  Computation& computation_;
  NameTable& names_;
  Instruction* before_;
  bool adopt_tiles_;
  bool default_space_is_any_;
  DescribeMismatch describe_;
  bool changed_ = false;
};

// "in layout {0,1}, but %p has {1,0}" or "in memory space S(1), but %p is in S(0) (S(0)->S(1))"
std::string describe_requirement(const Instruction& producer, const Layout& have, const Layout& want) {
  if (have.memory_space != want.memory_space)
    return str_cat("in memory space ", memory_space_text(want.memory_space), " (layout ", layout_text(want),
                   "), but %", producer.name(), " is in ", memory_space_text(have.memory_space), " (",
                   memory_space_text(have.memory_space), "->", memory_space_text(want.memory_space), ")");
  return str_cat("in layout ", layout_text(want), ", but %", producer.name(), " has ", layout_text(have));
}

// Entry parameters take the interface's shapes (forwarded through get-tuple-element).
bool adopt_parameter_interface(Module& module) {
  if (!module.config().entry_computation_layout) return false;
  const ComputationLayout& interface = *module.config().entry_computation_layout;
  bool changed = false;
  std::function<void(Instruction*)> refresh_elements = [&](Instruction* instruction) {
    for (Instruction* user : instruction->users()) {
      if (user->opcode() != Opcode::kGetTupleElement) continue;
      const Shape& element = instruction->shape().tuple_shape(user->tuple_index);
      if (user->shape() == element || !user->shape().compatible(element)) continue;
      user->set_shape(element);
      refresh_elements(user);
    }
  };
  Computation* entry = module.entry();
  for (int64_t i = 0; i < entry->parameter_count() && i < static_cast<int64_t>(interface.parameter_shapes.size()); ++i) {
    Instruction* parameter = entry->parameter(i);
    const Shape& want = interface.parameter_shapes[i];
    if (parameter == nullptr || parameter->shape() == want || !parameter->shape().compatible(want)) continue;
    parameter->set_shape(want);
    refresh_elements(parameter);
    changed = true;
  }
  return changed;
}

// The entry result leaves take the interface's layouts: tiles adopted; an op read by nothing
// but the root tuple computes its result in the interface's layout; other differences copied.
bool conform_entry_result(Module& module, NameTable& names) {
  if (!module.config().entry_computation_layout) return false;
  const Shape& want = module.config().entry_computation_layout->result_shape;
  Computation* entry = module.entry();
  Instruction* old_root = entry->root();
  if (!old_root->shape().compatible(want)) return false;  // the verifier reports this
  Conformer conformer(*entry, names, /*before=*/nullptr, /*adopt_tiles=*/true,
                      /*default_space_is_any=*/false,
                      [&](const ShapeIndex& index, const Instruction& producer, const Layout& have,
                          const Layout& required) {
                        return str_cat("the entry result ", shape_index_to_string(index),
                                       " must be ", describe_requirement(producer, have, required),
                                       " (entry_computation_layout says so); computing it in the "
                                       "interface layout would avoid the copy");
                      });
  Instruction* root = conformer.conform(old_root, want);
  if (root != old_root) {
    entry->set_root(root);
    if (old_root->users().empty()) entry->remove_instruction(old_root);
  }
  return conformer.changed();
}

// A custom call's operand_layout_constraints: a copy per operand leaf that really differs.
bool conform_custom_call_operands(Computation& computation, NameTable& names) {
  bool changed = false;
  for (Instruction* call : computation.instructions()) {
    if (call->opcode() != Opcode::kCustomCall || !call->custom_call.operand_layout_constraints) continue;
    const std::vector<Shape>& constraints = *call->custom_call.operand_layout_constraints;
    for (int64_t i = 0; i < call->operand_count() && i < static_cast<int64_t>(constraints.size()); ++i) {
      Conformer conformer(computation, names, call, /*adopt_tiles=*/false,
                          /*default_space_is_any=*/true,
                          [&](const ShapeIndex& index, const Instruction& producer, const Layout& have,
                              const Layout& want) {
                            std::string operand = index.empty() ? str_cat("operand ", i)
                                                                : str_cat("operand ", i, " ", shape_index_to_string(index));
                            return str_cat("custom-call %", call->name(), " (target \"", call->custom_call.target,
                                           "\") requires ", operand, " ", describe_requirement(producer, have, want),
                                           "; producing %", producer.name(),
                                           " in the required layout would avoid the copy");
                          });
      Instruction* conformed = conformer.conform(call->operand(i), constraints[i]);
      if (conformed != call->operand(i)) call->replace_operand(i, conformed);
      changed |= conformer.changed();
    }
  }
  return changed;
}

// The entry root leaf at `index`, looking through tuple instructions; nullptr if not found.
const Instruction* entry_result_producer(const Module& module, const ShapeIndex& index) {
  const Instruction* instruction = module.entry()->root();
  for (int64_t i : index) {
    if (instruction->opcode() != Opcode::kTuple || i >= instruction->operand_count()) return nullptr;
    instruction = instruction->operand(i);
  }
  return instruction;
}

// Why a copy of an aliased entry parameter feeding a non-in-place custom call exists (the
// seed's copy.3): the call would otherwise overwrite its own input.
std::string explain_donation_copy(const Module& module, const Instruction& copy) {
  const Instruction* source = copy.operand(0);
  if (source->opcode() != Opcode::kParameter || source->parent() != module.entry()) return "";
  for (const InputOutputAlias& alias : module.config().input_output_alias) {
    if (alias.parameter_number != source->parameter_number || !alias.parameter_index.empty()) continue;
    const Instruction* output = entry_result_producer(module, alias.output_index);
    for (const Instruction* user : copy.users()) {
      if (user != output || user->opcode() != Opcode::kCustomCall || !user->custom_call.output_to_operand_aliasing.empty())
        continue;
      return str_cat(" It is required because %", source->name(), " is aliased to output ",
                     shape_index_to_string(alias.output_index), " (input_output_alias) while custom-call %",
                     user->name(), " (target \"", user->custom_call.target,
                     "\"), which declares no output_to_operand_aliasing, still reads it: the output would "
                     "overwrite the kernel's input. Declaring output_to_operand_aliasing={{}: (0, {})} on the "
                     "custom call (with a kernel that writes in place) makes the copy unnecessary.");
    }
  }
  return "";
}

// Whether two layouts of an array of `dimensions` place its bytes alike: the same order of the
// dimensions longer than 1 (where a dimension of size 1 sits changes nothing).
bool same_bytes(const std::vector<int64_t>& dimensions, const Layout& a, const Layout& b) {
  if (a.memory_space != b.memory_space || a.minor_to_major.size() != b.minor_to_major.size()) return false;
  auto order = [&](const Layout& layout) {
    std::vector<int64_t> kept;
    for (int64_t d : layout.minor_to_major)
      if (d < 0 || d >= static_cast<int64_t>(dimensions.size()) || dimensions[static_cast<size_t>(d)] != 1)
        kept.push_back(d);
    return kept;
  };
  return order(a) == order(b);
}

// A copy written in the input gets its provenance. A copy of a bitcast that only moves a
// dimension of size 1 in the layout (XLA writes [2,1,8]{2,0,1} -> {2,1,0}) copies nothing that
// moves: the bitcast takes the copy's layout and the copy is a plain one, which copy
// elimination removes.
bool record_input_copies(const Module& module, Computation& computation) {
  bool changed = false;
  for (Instruction* copy : computation.instructions()) {
    if (copy->opcode() != Opcode::kCopy || copy->frontend_attribute(kCopyReasonAttribute)) continue;
    Instruction* source = copy->operand(0);
    if (source->opcode() == Opcode::kBitcast && source->shape().is_array() && copy->shape().is_array() &&
        source->shape().dimensions() == copy->shape().dimensions() &&
        source->shape().element_type() == copy->shape().element_type() &&
        source->shape().layout().minor_to_major != copy->shape().layout().minor_to_major &&
        same_bytes(copy->shape().dimensions(), source->shape().layout(), copy->shape().layout()) &&
        computation.root() != source) {
      source->mutable_shape().set_layout(copy->shape().layout());
      changed = true;
    }
    const Shape& from = copy->operand(0)->shape();
    const Shape& to = copy->shape();
    std::string subject = str_cat("copy %", copy->name(), " of %", copy->operand(0)->name());
    if (from.is_array() && to.is_array() && from.layout().memory_space != to.layout().memory_space) {
      std::string spaces = str_cat(memory_space_text(from.layout().memory_space), "->",
                                   memory_space_text(to.layout().memory_space));
      set_copy_reason(*copy, CopyReason::kMemorySpaceChange,
                      str_cat(subject, " was written in the input and moves it from memory space ",
                              memory_space_text(from.layout().memory_space), " to ",
                              memory_space_text(to.layout().memory_space), " (", spaces, ").",
                              explain_donation_copy(module, *copy)));
    } else if (from.is_array() && to.is_array() && layouts_need_copy(from.layout(), to.layout())) {
      set_copy_reason(*copy, CopyReason::kLayoutChange,
                      str_cat(subject, " was written in the input and changes its layout from ",
                              layout_text(from.layout()), " to ", layout_text(to.layout()), ".",
                              explain_donation_copy(module, *copy)));
    } else {
      set_copy_reason(*copy, CopyReason::kUserCopy,
                      str_cat(subject, " was written in the input; it changes neither layout nor memory "
                                       "space, so copy elimination may remove it.",
                              explain_donation_copy(module, *copy)));
    }
    changed = true;
  }
  return changed;
}

}  // namespace

StatusOr<bool> assign_layouts(Module& module) {
  if (module.entry() == nullptr) return failed_precondition("layout-assignment needs a module with an entry computation");
  NameTable names(module);
  bool changed = false;
  // input copies first, so only they are read as written by the user
  for (Computation* computation : module.computations()) changed |= record_input_copies(module, *computation);
  changed |= adopt_parameter_interface(module);
  for (Computation* computation : module.computations()) changed |= conform_custom_call_operands(*computation, names);
  changed |= conform_entry_result(module, names);
  return changed;
}

}  // namespace insitu
