// BufferFacts: origins, groups, writes and liveness on one Dataflow snapshot, and the
// instruction-level buffer facts (buffer_facts.h).
#include "insitu/analysis/buffer_facts.h"

#include <algorithm>

#include "insitu/ir/computation.h"
#include "insitu/support/str.h"

namespace insitu {

BufferFacts::BufferFacts(const Module& module, const Dataflow& dataflow) : module_(module), dataflow_(dataflow) {
  for (const Computation* computation : dataflow.analyzed_computations()) {
    int64_t position = 0;
    for (const Instruction* instruction : computation->instructions()) {
      order_[instruction] = position++;
      if (instruction->opcode() == Opcode::kWhile || instruction->opcode() == Opcode::kConditional)
        for (const Computation* callee : instruction->called_computations()) callers_[callee] = instruction;
    }
  }
  // Value ids follow the analyzed computations callees first, then program order, so every
  // value's origin depends only on values already visited.
  const int64_t count = static_cast<int64_t>(dataflow.values().size());
  origin_.assign(count, -1);
  writes_on_define_.assign(count, false);
  for (ValueId id = 0; id < count; ++id) {
    origin_[id] = id;
    const Position& defining = dataflow.value(id).defining;
    const Instruction* instruction = defining.instruction;
    if (std::optional<Use> use = inheriting_use(id)) {
      origin_[id] = origin_[value_at(use->instruction->operand(use->operand_number), use->operand_index)];
      if (instruction->opcode() == Opcode::kWhile) {
        writes_on_define_[id] = loop_writes_leaf(instruction, defining.index);
      } else if (instruction->opcode() == Opcode::kConditional) {
        const std::vector<ShapeIndex> leaves = reused_operand_leaves(instruction, defining.index);
        for (size_t b = 0; b < leaves.size(); ++b) {
          const Computation* branch = instruction->called_computations()[b];
          if (overwritten_in_region(value_at(branch->parameter(0), leaves[b]))) writes_on_define_[id] = true;
        }
      } else {
        writes_on_define_[id] = true;  // an in-place op
      }
    }
    groups_[origin_[id]].push_back(id);
  }
}

std::optional<Use> BufferFacts::inheriting_use(ValueId id) const {
  const Position& defining = value(id).defining;
  const Instruction* instruction = defining.instruction;
  switch (instruction->opcode()) {
    case Opcode::kWhile:
      return Use{instruction, 0, defining.index};
    case Opcode::kConditional: {
      std::vector<ShapeIndex> leaves = reused_operand_leaves(instruction, defining.index);
      if (leaves.empty()) return std::nullopt;
      return Use{instruction, 1, leaves[0]};
    }
    default:
      for (const InPlacePair& pair : in_place_pairs(*instruction))
        if (pair.output_index == defining.index) return Use{instruction, pair.operand_number, pair.operand_index};
      return std::nullopt;
  }
}

std::vector<ShapeIndex> BufferFacts::reused_operand_leaves(const Instruction* conditional,
                                                           const ShapeIndex& index) const {
  // Every branch's root leaf must derive from one of its parameter leaves, and the caller's
  // operand values at those leaves must share one origin.
  std::vector<ShapeIndex> leaves;
  ValueId common = -1;
  const auto& branches = conditional->called_computations();
  for (size_t b = 0; b < branches.size(); ++b) {
    const Computation* branch = branches[b];
    ValueId root_origin = origin_.at(value_at(branch->root(), index));
    const Position& defining = value(root_origin).defining;
    if (defining.instruction != branch->parameter(0)) return {};
    ValueId operand_origin = origin_.at(value_at(conditional->operand(static_cast<int64_t>(b) + 1), defining.index));
    if (common != -1 && operand_origin != common) return {};
    common = operand_origin;
    leaves.push_back(defining.index);
  }
  return leaves;
}

const std::vector<ValueId>& BufferFacts::group(ValueId origin) const {
  static const std::vector<ValueId> kEmpty;
  auto it = groups_.find(origin);
  return it == groups_.end() ? kEmpty : it->second;
}

bool BufferFacts::overwritten_in_region(ValueId parameter_value) const {
  for (ValueId member : group(parameter_value))
    if (writes_on_define_.at(member) || !branch_writes(member).empty()) return true;
  return false;
}

std::vector<Use> BufferFacts::branch_writes(ValueId id) const {
  // Branches are analyzed before their caller, so their groups are complete here even while
  // the constructor is still assigning origins in the caller.
  std::vector<Use> out;
  for (const Use& use : value(id).uses) {
    if (use.instruction->opcode() != Opcode::kConditional || use.operand_number < 1) continue;
    const Computation* branch = use.instruction->called_computations()[use.operand_number - 1];
    if (overwritten_in_region(value_at(branch->parameter(0), use.operand_index))) out.push_back(use);
  }
  return out;
}

bool BufferFacts::loop_writes_leaf(const Instruction* loop, const ShapeIndex& index) const {
  const Computation* body = loop->while_body();
  ValueId parameter_value = value_at(body->parameter(0), index);
  return origin_.at(value_at(body->root(), index)) != parameter_value || overwritten_in_region(parameter_value);
}

std::vector<Use> BufferFacts::uses_after(ValueId id, const Instruction* instruction, bool inclusive) const {
  std::vector<Use> out;
  const int64_t at = order(instruction);
  for (const Use& use : value(id).uses) {
    int64_t when = order(use.instruction);
    if (when > at || (inclusive && when == at)) out.push_back(use);
  }
  return out;
}

std::vector<ShapeIndex> BufferFacts::root_leaves(ValueId id) const {
  std::vector<ShapeIndex> out;
  const Instruction* root = value(id).computation()->root();
  for (const Position& position : value(id).positions)
    if (position.instruction == root) out.push_back(position.index);
  return out;
}

const Instruction* BufferFacts::caller(const Computation* computation) const {
  auto it = callers_.find(computation);
  return it == callers_.end() ? nullptr : it->second;
}

bool BufferFacts::is_constant(ValueId id) const { return defining_instruction(id)->opcode() == Opcode::kConstant; }

bool BufferFacts::is_loop_initializer_constant(ValueId id) const {
  return insitu::is_loop_initializer_constant(value(id));
}

bool BufferFacts::aliased_to_output(ValueId parameter_value, const ShapeIndex& output_index) const {
  const Position& defining = value(parameter_value).defining;
  if (defining.instruction->opcode() != Opcode::kParameter || defining.instruction->parent() != module_.entry())
    return false;
  const InputOutputAlias* alias =
      module_.config().find_parameter_alias(defining.instruction->parameter_number, defining.index);
  return alias != nullptr && alias->output_index == output_index;
}

std::optional<std::string> BufferFacts::read_only_reason(ValueId origin) const {
  const Position& defining = value(origin).defining;
  const Instruction* instruction = defining.instruction;
  if (instruction->opcode() == Opcode::kConstant) {
    if (is_loop_initializer_constant(origin)) return std::nullopt;
    return str_cat(describe(*this, origin), " is a constant (read-only)");
  }
  if (instruction->opcode() != Opcode::kParameter) return std::nullopt;
  const Computation* computation = instruction->parent();
  if (computation == module_.entry()) {
    for (const InputOutputAlias& alias : module_.config().input_output_alias)
      if (alias.parameter_number == instruction->parameter_number && alias.parameter_index == defining.index)
        return std::nullopt;
    return str_cat("parameter ", instruction->parameter_number,
                   defining.index.empty() ? std::string() : shape_index_to_string(defining.index), " (",
                   describe(*this, origin), ") is not donated, so the caller still owns it; donate it "
                   "(buffer_donor / donate_argnums) to update it in place");
  }
  const Instruction* call = caller(computation);
  if (call != nullptr && call->opcode() == Opcode::kWhile && call->while_condition() == computation)
    return str_cat(describe(*this, origin), " is loop state seen by the condition of %", call->name(),
                   ", which must not change it");
  return std::nullopt;
}

bool BufferFacts::can_write_over(const Instruction* reader, ValueId operand_value, const ShapeIndex& result_index) const {
  if (!writes_elementwise_at(*reader, result_index) && reader->opcode() != Opcode::kCopy) return false;
  const Shape* result = reader->shape().subshape(result_index);
  return result != nullptr && *result == value(operand_value).shape;
}

std::string describe(const BufferFacts& facts, ValueId id) { return facts.value(id).to_string(); }

bool is_unmaterialized_scalar_broadcast(const Value& value) {
  const Instruction* broadcast = value.defining.instruction;
  if (broadcast->opcode() != Opcode::kBroadcast || broadcast->operand(0)->shape().rank() != 0) return false;
  if (value.positions.size() != 1 || broadcast == broadcast->parent()->root()) return false;
  return std::all_of(value.uses.begin(), value.uses.end(), [](const Use& use) {
    const Opcode opcode = use.instruction->opcode();
    return is_elementwise(opcode) || opcode == Opcode::kFusion;  // fusions read it as a scalar too
  });
}

}  // namespace insitu
