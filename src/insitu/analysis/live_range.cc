#include "insitu/analysis/live_range.h"

#include <algorithm>
#include <functional>
#include <numeric>

#include "insitu/support/str.h"

namespace insitu {
namespace {

bool calls_control_flow(const Instruction* instruction) {
  Opcode opcode = instruction->opcode();
  return opcode == Opcode::kWhile || opcode == Opcode::kConditional || opcode == Opcode::kCall;
}

// Union-find over value ids; the representative is the smallest id of its set.
class DisjointSets {
 public:
  explicit DisjointSets(int64_t size) : parent_(size) { std::iota(parent_.begin(), parent_.end(), 0); }
  int64_t find(int64_t x) {
    while (parent_[x] != x) x = parent_[x] = parent_[parent_[x]];
    return x;
  }
  void unite(int64_t a, int64_t b) {
    a = find(a);
    b = find(b);
    if (a == b) return;
    if (b < a) std::swap(a, b);
    parent_[b] = a;
  }

 private:
  std::vector<int64_t> parent_;
};

}  // namespace

int64_t LiveRanges::time(const Instruction* instruction) const {
  auto it = times_.find(instruction);
  INSITU_CHECK(it != times_.end()) << "%" << instruction->name() << " is not in the flattened schedule";
  return it->second;
}

TimeInterval LiveRanges::computation_span(const Computation* computation) const {
  auto it = spans_.find(computation);
  INSITU_CHECK(it != spans_.end()) << computation->name() << " is not in the flattened schedule";
  return it->second;
}

LiveRanges LiveRanges::compute(const Module& module, const Dataflow& dataflow) {
  LiveRanges ranges;

  // Flatten: callees of control flow right before their caller instruction.
  std::function<void(const Computation*)> flatten = [&](const Computation* computation) {
    if (ranges.spans_.count(computation) != 0) return;  // a callee shared by two callers
    const int64_t start = static_cast<int64_t>(ranges.sequence_.size());
    ranges.spans_[computation] = {start, start};  // marks it in progress
    for (const Instruction* instruction : computation->instructions()) {
      if (calls_control_flow(instruction))
        for (const Computation* callee : instruction->called_computations()) flatten(callee);
      ranges.times_[instruction] = static_cast<int64_t>(ranges.sequence_.size());
      ranges.sequence_.push_back(instruction);
    }
    ranges.spans_[computation] = {start, static_cast<int64_t>(ranges.sequence_.size())};
  };
  const Computation* entry = module.entry();
  INSITU_CHECK(entry != nullptr) << "live ranges need an entry computation";
  flatten(entry);
  const int64_t end_time = ranges.schedule_end_time();

  // Value ranges.
  const auto& values = dataflow.values();
  ranges.value_ranges_.resize(values.size());
  for (const Value& value : values) {
    const Instruction* defining = value.defining.instruction;
    const Computation* computation = defining->parent();
    const TimeInterval span = ranges.computation_span(computation);
    TimeInterval range;
    // Parameters are defined when their computation starts (nothing scheduled before them
    // in that computation may take their bytes).
    range.start = defining->opcode() == Opcode::kParameter ? span.start : ranges.time(defining);
    range.end = range.start;
    for (const Position& position : value.positions) {
      const Instruction* at = position.instruction;
      // A root leaf is handed to the caller: live to the end of its computation.
      int64_t t = at == at->parent()->root() ? ranges.computation_span(at->parent()).end : ranges.time(at);
      range.end = std::max(range.end, t);
    }
    for (const Use& use : value.uses) range.end = std::max(range.end, ranges.time(use.instruction));
    if (computation == entry && defining->opcode() == Opcode::kParameter) {
      range.start = 0;
      range.end = end_time;  // the caller's buffer exists for the whole program
    }
    range.end = std::min(range.end, end_time);
    ranges.value_ranges_[value.id] = range;
  }

  // Buffers: union linked values.
  DisjointSets sets(static_cast<int64_t>(values.size()));
  for (const MustShareLink& link : dataflow.links()) sets.unite(link.a, link.b);
  std::unordered_map<int64_t, BufferId> buffer_of_root;
  ranges.buffer_of_.resize(values.size());
  for (const Value& value : values) {
    const int64_t root = sets.find(value.id);
    auto [it, inserted] = buffer_of_root.emplace(root, static_cast<BufferId>(ranges.buffer_values_.size()));
    if (inserted) {
      ranges.buffer_values_.emplace_back();
      ranges.buffer_ranges_.push_back(ranges.value_ranges_[value.id]);
    }
    const BufferId buffer = it->second;
    ranges.buffer_of_[value.id] = buffer;
    ranges.buffer_values_[buffer].push_back(value.id);
    TimeInterval& hull = ranges.buffer_ranges_[buffer];
    hull.start = std::min(hull.start, ranges.value_ranges_[value.id].start);
    hull.end = std::max(hull.end, ranges.value_ranges_[value.id].end);
  }
  return ranges;
}

std::string LiveRanges::to_string(const Dataflow& dataflow) const {
  std::string out = str_cat("HloLiveRange (max ", schedule_end_time(), "):\n  InstructionSequence:\n");
  for (size_t i = 0; i < sequence_.size(); ++i) out += str_cat("    ", i, ":", sequence_[i]->name(), "\n");
  out += "  BufferLiveRange:\n";
  for (const Value& value : dataflow.values()) {
    const TimeInterval& range = value_ranges_.at(value.id);
    out += str_cat("    ", value.defining.instruction->name(), shape_index_to_string(value.defining.index), ":",
                   range.start, "-", range.end, "\n");
  }
  return out;
}

}  // namespace insitu
