// schedule_module: soft edges from readers of old values to their overwriters, then a list
// schedule (see schedule.h).
#include "insitu/passes/schedule.h"

#include <algorithm>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "insitu/analysis/buffer_facts.h"
#include "insitu/passes/copy_elimination.h"
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
    for (const InPlacePair& pair : in_place_pairs(*instruction)) {
      const ValueId target = facts.value_at(instruction->operand(pair.operand_number), pair.operand_index);
      overwrite_group(instruction, target);
      // a copy the input wrote to be updated (XLA's modules copy a cache before updating it):
      // its source's readers run first too, so copy elimination may update the source instead
      const Instruction* definer = facts.defining_instruction(facts.origin(target));
      if (is_plain_copy(*definer) && definer->shape().is_array())
        overwrite_group(instruction, facts.value_at(definer->operand(0), {}));
    }
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
  // Whether a path leads from `from` to `to`; past `budget` nodes visited, says it may (true).
  bool reaches(int64_t from, int64_t to, int64_t budget = -1) const {
    std::vector<bool> seen(successors_.size(), false);
    std::vector<int64_t> stack{from};
    while (!stack.empty()) {
      int64_t node = stack.back();
      stack.pop_back();
      if (node == to) return true;
      if (seen[node]) continue;
      seen[node] = true;
      if (budget >= 0 && --budget < 0) return true;
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

// The list scheduler's priorities, kept incrementally so a step costs O(log n) plus the uses it
// retires (a rescan of every ready node per step made 200,000-instruction chains quadratic).
// The order it picks: parameters first; then, among ready nodes that free a buffer (run the
// last read of a value that is not returned, a parameter or a constant), the one that frees the
// most bytes net of the bytes it defines, the lowest-numbered on a tie; else the
// lowest-numbered ready node; the root last.
class ReadyList {
 public:
  ReadyList(const BufferFacts& facts, const std::vector<Instruction*>& nodes, const Instruction* root,
            const Graph& graph)
      : facts_(facts), nodes_(nodes), root_(root), graph_(graph), freed_(nodes.size(), 0), defined_(nodes.size(), 0),
        ready_(nodes.size(), false), done_(nodes.size(), false) {
    for (size_t i = 0; i < nodes.size(); ++i)
      for (const auto& [index, value] : facts.dataflow().leaf_values(nodes[i]))
        if (facts.value(value).defining.instruction == nodes[i]) defined_[i] += value_bytes(value);
    // Returned values, parameters (owned by the caller) and constants are never freed.
    std::unordered_map<ValueId, bool> freeable;
    auto can_free = [&](ValueId value) {
      auto [it, inserted] = freeable.try_emplace(value, false);
      if (inserted) {
        const Value& v = facts_.value(value);
        const Opcode definer = v.defining.instruction->opcode();
        const Instruction* root = v.computation()->root();
        it->second = definer != Opcode::kParameter && definer != Opcode::kConstant &&
                     std::none_of(v.positions.begin(), v.positions.end(),
                                  [&](const Position& at) { return at.instruction == root; });
      }
      return it->second;
    };
    // Per value that can be freed: its distinct readers not yet scheduled.
    for (size_t i = 0; i < nodes.size(); ++i) {
      std::vector<ValueId> reads;
      // A get-tuple-element takes only its element's leaves from the tuple (looking at every
      // leaf made n elements of an n-leaf tuple cost n^2).
      const bool element = nodes[i]->opcode() == Opcode::kGetTupleElement;
      for (const Instruction* operand : nodes[i]->operands())
        for (const auto& [index, value] : facts.dataflow().leaf_values(element ? nodes[i] : operand))
          if (can_free(value)) reads.push_back(value);
      std::sort(reads.begin(), reads.end());
      reads.erase(std::unique(reads.begin(), reads.end()), reads.end());
      for (ValueId value : reads) {
        if (readers_.count(value)) continue;
        std::vector<int64_t>& readers = readers_[value];
        int64_t outside = 0;  // readers in other computations never run here: the value stays live
        for (const Use& use : facts.value(value).uses) {
          if (!graph.contains(use.instruction)) {
            ++outside;
            continue;
          }
          readers.push_back(graph.index(use.instruction));
        }
        std::sort(readers.begin(), readers.end());
        readers.erase(std::unique(readers.begin(), readers.end()), readers.end());
        unscheduled_[value] = static_cast<int64_t>(readers.size()) + outside;
      }
      if (!reads.empty()) reads_by_node_[static_cast<int64_t>(i)] = std::move(reads);
    }
    for (const auto& [value, count] : unscheduled_)  // (a last reader elsewhere frees nothing here)
      if (count == 1 && !readers_[value].empty()) add_freed(readers_[value].front(), value_bytes(value));
  }

  void make_ready(int64_t node) {
    ready_[node] = true;
    if (nodes_[node] == root_) root_ready_ = true;
    else if (nodes_[node]->opcode() == Opcode::kParameter) parameters_.insert(node);  // defined at entry: first,
    else if (freed_[node] > 0) freeing_.insert(freeing_key(node));  // so copies of them can go anywhere after
    else others_.insert(node);
  }

  // The next node to run (-1: none is ready).
  int64_t pick() const {
    if (!parameters_.empty()) return *parameters_.begin();
    if (!freeing_.empty()) return freeing_.begin()->second;
    if (!others_.empty()) return *others_.begin();
    return root_ready_ ? graph_.index(root_) : -1;
  }

  void schedule(int64_t node) {
    parameters_.erase(node);
    if (freed_[node] > 0) freeing_.erase(freeing_key(node));
    others_.erase(node);
    ready_[node] = false;
    if (nodes_[node] == root_) root_ready_ = false;
    done_[node] = true;
    auto reads = reads_by_node_.find(node);
    if (reads == reads_by_node_.end()) return;
    for (ValueId value : reads->second) {
      if (--unscheduled_[value] != 1) continue;
      // One reader left: running it frees the value's buffer.
      for (int64_t reader : readers_[value])
        if (!done_[reader]) add_freed(reader, value_bytes(value));
    }
  }

 private:
  int64_t value_bytes(ValueId value) {
    auto [it, inserted] = value_bytes_.try_emplace(value, 0);
    if (inserted) {
      const Value& v = facts_.value(value);
      const Shape* shape = v.defining.instruction->shape().subshape(v.defining.index);
      it->second = shape != nullptr && shape->is_array() ? shape->byte_size() : 0;
    }
    return it->second;
  }
  // Most bytes freed net of bytes defined first, then the lowest index.
  std::pair<int64_t, int64_t> freeing_key(int64_t node) const { return {defined_[node] - freed_[node], node}; }
  void add_freed(int64_t node, int64_t bytes) {
    const bool was_freeing = freed_[node] > 0;
    if (ready_[node] && nodes_[node] != root_ && nodes_[node]->opcode() != Opcode::kParameter) {
      if (was_freeing) freeing_.erase(freeing_key(node));
      else others_.erase(node);
      freed_[node] += std::max<int64_t>(bytes, 1);  // a freed value counts even when it is empty
      freeing_.insert(freeing_key(node));
      return;
    }
    freed_[node] += std::max<int64_t>(bytes, 1);
  }

  const BufferFacts& facts_;
  const std::vector<Instruction*>& nodes_;
  const Instruction* root_;
  const Graph& graph_;
  std::vector<int64_t> freed_, defined_;  // bytes each node frees when run now, bytes it defines
  std::vector<bool> ready_, done_;
  std::unordered_map<ValueId, int64_t> value_bytes_;
  std::set<int64_t> parameters_, others_;
  std::set<std::pair<int64_t, int64_t>> freeing_;
  bool root_ready_ = false;
  std::unordered_map<ValueId, std::vector<int64_t>> readers_;
  std::unordered_map<ValueId, int64_t> unscheduled_;
  std::unordered_map<int64_t, std::vector<ValueId>> reads_by_node_;  // freeable values each node reads
};

// The most nodes one fresh-stack edge's cycle check visits (schedule_computation).
constexpr int64_t kFreshStackSearch = 4096;

bool schedule_computation(Computation* computation, const BufferFacts& facts) {
  const std::vector<Instruction*> original = computation->instructions();
  Graph graph(original);
  for (const WriteEvent& event : write_events(facts, computation)) {
    // Y -> X only where X does not already (or through this edge would) come before Y.
    auto read_first = [&](const Instruction* reader) {
      if (reader == event.writer || !graph.contains(reader)) return;
      if (!graph.reaches(graph.index(event.writer), graph.index(reader))) graph.add_edge(reader, event.writer);
    };
    for (const Use& use : facts.value(event.old_value).uses) {
      read_first(use.instruction);
      // the readers of a plain copy of the old value too (XLA's modules copy a weight the
      // optimizer then updates in place, and the backward pass's dots read the copy): copy
      // elimination may let them read the value itself
      if (is_plain_copy(*use.instruction))
        for (const Instruction* reader : use.instruction->users()) read_first(reader);
    }
  }
  // An update written into a fresh stack (a fill, then dynamic-update-slices into it) is
  // computed after the stack is: buffer assignment computes it straight into its window only
  // when the stack's bytes are in place when it runs (placed_for), and the list scheduler,
  // preferring instructions that free a buffer, ran the updates first and the fill after them,
  // so each update was computed apart and copied in. Added after the readers-first edges, and
  // only where no cycle forms (searched within a budget: past it, no edge), so it never costs
  // one of those.
  std::unordered_map<const Instruction*, bool> fresh;  // per update-slice: its chain starts at a fill
  for (const Instruction* update_slice : original) {  // (operands first: a chain's earlier links known)
    if (update_slice->opcode() != Opcode::kDynamicUpdateSlice || update_slice->operand_count() < 2) continue;
    const Instruction* stack = update_slice->operand(0);
    const auto earlier = fresh.find(stack);
    const bool on_fill = earlier != fresh.end() ? earlier->second
                         : stack->operand_count() == 0 ||
                               (stack->opcode() == Opcode::kBroadcast && stack->operand(0)->operand_count() == 0);
    fresh[update_slice] = on_fill;
    const Instruction* producer = update_slice->operand(1);
    while ((producer->opcode() == Opcode::kBitcast || producer->opcode() == Opcode::kReshape) &&
           producer->users().size() == 1)
      producer = producer->operand(0);
    if (!on_fill || producer->users().size() != 1 || producer->operand_count() == 0 || !graph.contains(producer) ||
        !graph.contains(stack) || producer->parent()->root() == producer)
      continue;
    if (!graph.reaches(graph.index(producer), graph.index(stack), kFreshStackSearch)) graph.add_edge(stack, producer);
  }
  std::vector<int64_t> waiting = graph.predecessor_counts();
  ReadyList ready(facts, original, computation->root(), graph);
  for (size_t i = 0; i < original.size(); ++i)
    if (waiting[i] == 0) ready.make_ready(static_cast<int64_t>(i));
  std::vector<Instruction*> order;
  order.reserve(original.size());
  while (order.size() < original.size()) {
    const int64_t best = ready.pick();
    INSITU_CHECK(best != -1) << "schedule of " << computation->name() << " has a cycle";
    ready.schedule(best);
    order.push_back(original[best]);
    for (int64_t next : graph.successors(best))
      if (--waiting[next] == 0) ready.make_ready(next);
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
