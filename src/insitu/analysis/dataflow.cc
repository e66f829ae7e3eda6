#include "insitu/analysis/dataflow.h"

#include <algorithm>
#include <functional>
#include <unordered_set>

#include "insitu/support/str.h"

namespace insitu {
namespace {

using Leaves = std::vector<std::pair<ShapeIndex, ValueId>>;

bool is_forwarder(Opcode opcode) {
  switch (opcode) {
    case Opcode::kTuple:
    case Opcode::kGetTupleElement:
    case Opcode::kBitcast:
    case Opcode::kOptimizationBarrier:
    case Opcode::kCopyDone:
    case Opcode::kAddDependency:
      return true;
    default:
      return false;
  }
}

// Computations reached through control flow (while, conditional, call), callees first.
std::vector<const Computation*> control_flow_computations(const Module& module) {
  std::vector<const Computation*> order;
  std::unordered_set<const Computation*> visited;
  std::function<void(const Computation*)> visit = [&](const Computation* computation) {
    if (!visited.insert(computation).second) return;
    for (const Instruction* instruction : computation->instructions()) {
      Opcode opcode = instruction->opcode();
      if (opcode == Opcode::kWhile || opcode == Opcode::kConditional || opcode == Opcode::kCall)
        for (const Computation* callee : instruction->called_computations()) visit(callee);
    }
    order.push_back(computation);
  };
  if (module.entry() != nullptr) visit(module.entry());
  return order;
}

// Leaves of `leaves` under `{element}`, with that prefix removed. Leaves are in leaf order
// (for_each_leaf), so those of one element are contiguous: a binary search finds them (a
// get-tuple-element of an n-leaf tuple costs its own leaves, not n).
Leaves sub_leaves(const Leaves& leaves, int64_t element) {
  auto first_element = [](const std::pair<ShapeIndex, ValueId>& leaf) { return leaf.first.empty() ? -1 : leaf.first[0]; };
  auto begin = std::partition_point(leaves.begin(), leaves.end(), [&](const auto& leaf) { return first_element(leaf) < element; });
  auto end = std::partition_point(begin, leaves.end(), [&](const auto& leaf) { return first_element(leaf) == element; });
  Leaves out;
  out.reserve(static_cast<size_t>(end - begin));
  for (auto leaf = begin; leaf != end; ++leaf) out.emplace_back(ShapeIndex(leaf->first.begin() + 1, leaf->first.end()), leaf->second);
  return out;
}

}  // namespace

const Computation* Value::computation() const { return defining.instruction->parent(); }

std::string Value::to_string() const {
  std::string out = "%" + defining.instruction->name();
  if (!defining.index.empty()) out += shape_index_to_string(defining.index);
  return out;
}

bool is_loop_initializer_constant(const Value& value) {
  if (value.defining.instruction->opcode() != Opcode::kConstant || value.uses.size() != 1) return false;
  if (value.uses[0].instruction->opcode() != Opcode::kWhile) return false;
  // One position besides its definition: the leaf of the while's initial state.
  return value.positions.size() <= 2;
}

std::string_view link_kind_name(LinkKind kind) {
  switch (kind) {
    case LinkKind::kWhileState: return "while-state";
    case LinkKind::kConditionalOperand: return "conditional-operand";
    case LinkKind::kConditionalResult: return "conditional-result";
    case LinkKind::kCallBoundary: return "call-boundary";
    case LinkKind::kInPlace: return "in-place";
    case LinkKind::kInputOutputAlias: return "input-output-alias";
  }
  return "?";
}

ValueId Dataflow::value_at(const Instruction* instruction, const ShapeIndex& index) const {
  auto it = leaves_.find(instruction);
  INSITU_CHECK(it != leaves_.end()) << "%" << instruction->name() << " is not in an analyzed computation";
  // Leaves are in leaf order, which is the shape indices' lexicographic order: a tuple of
  // thousands of leaves (a training step's parameters) is searched, not scanned.
  const auto& leaves = it->second;
  auto found = std::lower_bound(leaves.begin(), leaves.end(), index,
                                [](const auto& leaf, const ShapeIndex& wanted) { return leaf.first < wanted; });
  if (found != leaves.end() && found->first == index) return found->second;
  INSITU_UNREACHABLE("%" << instruction->name() << " has no leaf " << shape_index_to_string(index));
  return -1;
}

const std::vector<std::pair<ShapeIndex, ValueId>>& Dataflow::leaf_values(const Instruction* instruction) const {
  auto it = leaves_.find(instruction);
  INSITU_CHECK(it != leaves_.end()) << "%" << instruction->name()
                                    << " has no values: it is not in an analyzed computation, or it is used "
                                       "before it is defined (the module is not in a valid order)";
  return it->second;
}

Dataflow Dataflow::compute(const Module& module) {
  Dataflow dataflow;
  dataflow.computations_ = control_flow_computations(module);
  // each computation's instructions listed once for the passes below
  std::vector<std::vector<Instruction*>> orders;
  size_t instructions = 0;
  for (const Computation* computation : dataflow.computations_) {
    orders.push_back(computation->instructions());
    instructions += orders.back().size();
  }
  dataflow.leaves_.reserve(instructions);
  dataflow.values_.reserve(instructions);

  auto define = [&](const Instruction* instruction, const ShapeIndex& index, const Shape& shape) {
    Value value;
    value.id = static_cast<ValueId>(dataflow.values_.size());
    value.defining = {instruction, index};
    value.shape = shape;
    dataflow.values_.push_back(std::move(value));
    return dataflow.values_.back().id;
  };
  auto define_all = [&](const Instruction* instruction) {
    Leaves leaves;
    instruction->shape().for_each_leaf(
        [&](const Shape& leaf, const ShapeIndex& index) { leaves.emplace_back(index, define(instruction, index, leaf)); });
    return leaves;
  };

  // Values at every leaf.
  for (const std::vector<Instruction*>& order : orders) {
    for (const Instruction* instruction : order) {
      Leaves leaves;
      switch (instruction->opcode()) {
        case Opcode::kTuple:
          for (int64_t i = 0; i < instruction->operand_count(); ++i)
            for (auto [index, value] : dataflow.leaf_values(instruction->operand(i))) {
              index.insert(index.begin(), i);
              leaves.emplace_back(std::move(index), value);
            }
          break;
        case Opcode::kGetTupleElement:
          leaves = sub_leaves(dataflow.leaf_values(instruction->operand(0)), instruction->tuple_index);
          break;
        case Opcode::kBitcast:
        case Opcode::kOptimizationBarrier:
        case Opcode::kAddDependency:  // (value, token): the value, ordered after the token
          leaves = dataflow.leaf_values(instruction->operand(0));
          break;
        case Opcode::kCopyDone:
          leaves = sub_leaves(dataflow.leaf_values(instruction->operand(0)), 0);
          break;
        case Opcode::kCopyStart:  // (destination, source, context): the source is forwarded
          instruction->shape().for_each_leaf([&](const Shape& leaf, const ShapeIndex& index) {
            bool source = !index.empty() && index[0] == 1;
            leaves.emplace_back(index, source ? dataflow.value_at(instruction->operand(0), {index.begin() + 1, index.end()})
                                              : define(instruction, index, leaf));
          });
          break;
        default:
          leaves = define_all(instruction);
          break;
      }
      dataflow.leaves_[instruction] = std::move(leaves);
    }
  }

  // Positions and uses.
  for (const std::vector<Instruction*>& order : orders) {
    for (const Instruction* instruction : order) {
      for (const auto& [index, value] : dataflow.leaf_values(instruction))
        dataflow.values_[value].positions.push_back({instruction, index});
      if (is_forwarder(instruction->opcode())) continue;
      for (int64_t i = 0; i < instruction->operand_count(); ++i) {
        // (instruction, operand, leaf) is new each time: no search (a constant read 2,000 times
        // made one quadratic)
        for (const auto& [index, value] : dataflow.leaf_values(instruction->operand(i)))
          dataflow.values_[value].uses.push_back(Use{instruction, i, index});
      }
    }
  }

  // Must-share links.
  auto link = [&](ValueId a, ValueId b, LinkKind kind, const Instruction* at) {
    if (a != b) dataflow.links_.push_back({a, b, kind, at});
  };
  auto link_leaves = [&](const Instruction* from, const Instruction* to, LinkKind kind, const Instruction* at) {
    for (const auto& [index, value] : dataflow.leaf_values(to)) link(dataflow.value_at(from, index), value, kind, at);
  };
  for (const std::vector<Instruction*>& order : orders) {
    for (const Instruction* instruction : order) {
      switch (instruction->opcode()) {
        case Opcode::kWhile: {
          const Computation* condition = instruction->while_condition();
          const Computation* body = instruction->while_body();
          link_leaves(instruction->operand(0), instruction, LinkKind::kWhileState, instruction);
          link_leaves(instruction, body->parameter(0), LinkKind::kWhileState, instruction);
          link_leaves(instruction, condition->parameter(0), LinkKind::kWhileState, instruction);
          link_leaves(instruction, body->root(), LinkKind::kWhileState, instruction);
          break;
        }
        case Opcode::kConditional:
          for (size_t b = 0; b < instruction->called_computations().size(); ++b) {
            const Computation* branch = instruction->called_computations()[b];
            link_leaves(instruction->operand(b + 1), branch->parameter(0), LinkKind::kConditionalOperand, instruction);
            link_leaves(branch->root(), instruction, LinkKind::kConditionalResult, instruction);
          }
          break;
        case Opcode::kCall: {
          const Computation* callee = instruction->to_apply();
          for (int64_t i = 0; i < instruction->operand_count(); ++i)
            link_leaves(instruction->operand(i), callee->parameter(i), LinkKind::kCallBoundary, instruction);
          link_leaves(callee->root(), instruction, LinkKind::kCallBoundary, instruction);
          break;
        }
        default:
          for (const InPlacePair& pair : in_place_pairs(*instruction))
            link(dataflow.value_at(instruction->operand(pair.operand_number), pair.operand_index),
                 dataflow.value_at(instruction, pair.output_index), LinkKind::kInPlace, instruction);
          break;
      }
    }
  }
  if (const Computation* entry = module.entry(); entry != nullptr && entry->root() != nullptr) {
    for (const InputOutputAlias& alias : module.config().input_output_alias) {
      const Instruction* parameter = entry->parameter(alias.parameter_number);
      link(dataflow.value_at(parameter, alias.parameter_index), dataflow.value_at(entry->root(), alias.output_index),
           LinkKind::kInputOutputAlias, entry->root());
    }
  }
  return dataflow;
}

std::string Dataflow::to_string() const {
  std::string out;
  for (const Value& value : values_) {
    out += str_cat("value ", value.id, " ", value.to_string(), ": ", value.shape.to_string(), "\n");
    for (const Position& position : value.positions)
      out += str_cat("  at %", position.instruction->name(), shape_index_to_string(position.index), "\n");
    for (const Use& use : value.uses)
      out += str_cat("  read by %", use.instruction->name(), " operand ", use.operand_number,
                     shape_index_to_string(use.operand_index), "\n");
  }
  for (const MustShareLink& l : links_)
    out += str_cat("link ", values_[l.a].to_string(), " ~ ", values_[l.b].to_string(), " (", link_kind_name(l.kind),
                   " at %", l.at->name(), ")\n");
  return out;
}

}  // namespace insitu
