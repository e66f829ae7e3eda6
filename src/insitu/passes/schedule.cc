// schedule_module: soft edges from readers of old values to their overwriters, then a list
// schedule (see schedule.h).
#include "insitu/passes/schedule.h"

#include <unordered_map>
#include <unordered_set>

#include "insitu/analysis/buffer_facts.h"
#include "insitu/passes/flatten_calls.h"

namespace insitu {
namespace {

// A write event: `writer` replaces the contents of the buffer of `old_value`.
struct WriteEvent {
  const Instruction* writer = nullptr;
  ValueId old_value = -1;
};

std::vector<WriteEvent> write_events(const BufferFacts& facts, const Computation* computation) {
  std::vector<WriteEvent> events;
  auto overwrite_group = [&](const Instruction* writer, ValueId value) {
    if (writer->parent() != computation || writer->opcode() == Opcode::kParameter) return;
    for (ValueId member : facts.group(facts.origin(value))) events.push_back({writer, member});
  };
  for (const Instruction* instruction : computation->instructions()) {
    for (const InPlacePair& pair : in_place_pairs(*instruction))
      overwrite_group(instruction, facts.value_at(instruction->operand(pair.operand_number), pair.operand_index));
    if (instruction->opcode() == Opcode::kWhile) {
      for (const auto& [index, value] : facts.dataflow().leaf_values(instruction->operand(0)))
        if (facts.loop_writes_leaf(instruction, index)) overwrite_group(instruction, value);
    }
    if (instruction->opcode() == Opcode::kConditional) {
      const auto& branches = instruction->called_computations();
      for (size_t b = 0; b < branches.size(); ++b)
        for (const auto& [index, value] : facts.dataflow().leaf_values(branches[b]->parameter(0)))
          if (facts.overwritten_in_region(value))
            overwrite_group(instruction, facts.value_at(instruction->operand(static_cast<int64_t>(b) + 1), index));
    }
  }
  // A new value for a buffer the computation's caller owns.
  auto replace = [&](ValueId slot, ValueId new_value) {
    ValueId origin = facts.origin(new_value);
    if (origin != slot) overwrite_group(facts.defining_instruction(origin), slot);
  };
  const Instruction* caller = facts.caller(computation);
  if (caller != nullptr && caller->opcode() == Opcode::kWhile && caller->while_body() == computation) {
    for (const auto& [index, value] : facts.dataflow().leaf_values(computation->root()))
      replace(facts.value_at(computation->parameter(0), index), value);
  }
  if (computation == facts.module().entry()) {
    for (const InputOutputAlias& alias : facts.module().config().input_output_alias)
      replace(facts.value_at(computation->parameter(alias.parameter_number), alias.parameter_index),
              facts.value_at(computation->root(), alias.output_index));
  }
  return events;
}

class Graph {
 public:
  explicit Graph(const std::vector<Instruction*>& nodes) {
    for (size_t i = 0; i < nodes.size(); ++i) index_[nodes[i]] = static_cast<int64_t>(i);
    successors_.resize(nodes.size());
    predecessor_count_.assign(nodes.size(), 0);
    for (size_t i = 0; i < nodes.size(); ++i) {
      for (const Instruction* operand : nodes[i]->operands()) add_edge(operand, nodes[i]);
      for (const Instruction* predecessor : nodes[i]->control_predecessors()) add_edge(predecessor, nodes[i]);
    }
  }
  bool contains(const Instruction* instruction) const { return index_.count(instruction) != 0; }
  int64_t index(const Instruction* instruction) const { return index_.at(instruction); }
  void add_edge(const Instruction* from, const Instruction* to) {
    if (!contains(from) || !contains(to)) return;
    successors_[index(from)].push_back(index(to));
    ++predecessor_count_[index(to)];
  }
  bool reaches(int64_t from, int64_t to) const {
    std::vector<bool> seen(successors_.size(), false);
    std::vector<int64_t> stack{from};
    while (!stack.empty()) {
      int64_t node = stack.back();
      stack.pop_back();
      if (node == to) return true;
      if (seen[node]) continue;
      seen[node] = true;
      for (int64_t next : successors_[node]) stack.push_back(next);
    }
    return false;
  }
  const std::vector<int64_t>& successors(int64_t node) const { return successors_[node]; }
  std::vector<int64_t> predecessor_counts() const { return predecessor_count_; }

 private:
  std::unordered_map<const Instruction*, int64_t> index_;
  std::vector<std::vector<int64_t>> successors_;
  std::vector<int64_t> predecessor_count_;
};

// Whether running `candidate` now ends the life of one of the values it reads.
bool frees_buffer(const BufferFacts& facts, const Instruction* candidate, const std::vector<bool>& scheduled,
                  const Graph& graph) {
  for (const Instruction* operand : candidate->operands()) {
    for (const auto& [index, value] : facts.dataflow().leaf_values(operand)) {
      // Returned values, parameters (owned by the caller) and constants are never freed.
      Opcode definer = facts.defining_instruction(value)->opcode();
      if (!facts.root_leaves(value).empty() || definer == Opcode::kParameter || definer == Opcode::kConstant) continue;
      bool last = true;
      for (const Use& use : facts.value(value).uses)
        if (use.instruction != candidate && !scheduled[graph.index(use.instruction)]) last = false;
      if (last) return true;
    }
  }
  return false;
}

bool schedule_computation(Computation* computation, const BufferFacts& facts) {
  const std::vector<Instruction*> original = computation->instructions();
  Graph graph(original);
  for (const WriteEvent& event : write_events(facts, computation)) {
    for (const Use& use : facts.value(event.old_value).uses) {
      if (use.instruction == event.writer || !graph.contains(use.instruction)) continue;
      // Y -> X only where X does not already (or through this edge would) come before Y.
      if (!graph.reaches(graph.index(event.writer), graph.index(use.instruction)))
        graph.add_edge(use.instruction, event.writer);
    }
  }
  std::vector<int64_t> waiting = graph.predecessor_counts();
  std::vector<bool> scheduled(original.size(), false);
  std::vector<Instruction*> order;
  const Instruction* root = computation->root();
  while (order.size() < original.size()) {
    int64_t best = -1;
    bool best_frees = false;
    for (size_t i = 0; i < original.size(); ++i) {
      if (scheduled[i] || waiting[i] != 0) continue;
      if (original[i] == root && order.size() + 1 < original.size()) continue;  // the root last
      if (original[i]->opcode() == Opcode::kParameter) {  // defined at entry: first, so copies of
        best = static_cast<int64_t>(i);                    // them can go anywhere after
        break;
      }
      bool frees = frees_buffer(facts, original[i], scheduled, graph);
      if (best == -1 || (frees && !best_frees)) {
        best = static_cast<int64_t>(i);
        best_frees = frees;
      }
    }
    if (best == -1) {  // only the root (with users) is ready
      for (size_t i = 0; i < original.size() && best == -1; ++i)
        if (!scheduled[i] && waiting[i] == 0) best = static_cast<int64_t>(i);
    }
    INSITU_CHECK(best != -1) << "schedule of " << computation->name() << " has a cycle";
    scheduled[best] = true;
    order.push_back(original[best]);
    for (int64_t next : graph.successors(best)) --waiting[next];
  }
  if (order == original) return false;
  computation->set_instruction_order(order);
  return true;
}

}  // namespace

StatusOr<bool> schedule_module(Module& module) {
  INSITU_RETURN_IF_ERROR(check_calls_flattened(module, "schedule"));
  Dataflow dataflow = Dataflow::compute(module);
  BufferFacts facts(module, dataflow);
  bool changed = false;
  for (const Computation* computation : dataflow.analyzed_computations())
    changed |= schedule_computation(const_cast<Computation*>(computation), facts);
  return changed;
}

}  // namespace insitu
