// Live ranges on the schedule: when every value and every buffer is live, in one time line.
//
// The schedule is the instruction order of each computation. It is flattened into one sequence
// the way XLA's HloLiveRange does it in module scope: a while's condition and body, a
// conditional's branches and a call's callee are laid out inside their caller's time span,
// right before the while/conditional/call instruction itself:
//
//   entry:  p0 p1 init | cond: s.1 lt | body: s i add root | while gte ROOT
//   time:    0  1   2      3    4        5  6  7   8          9    10  11      (end 12)
//
// A value is live from its definition to its last position or use (inclusive):
//   - parameters start at their computation's first time; entry parameters at 0, and they stay
//     live to the end (the caller's buffer exists for the whole program);
//   - a value at a computation root stays live to the end of that computation's span (for the
//     entry: the end of the schedule);
// A buffer is a set of values tied by Dataflow's must-share links (union-find); its live range
// is the hull of its values' ranges, so a loop-state buffer spans its whole loop.
#pragma once

#include <string>
#include <unordered_map>
#include <vector>

#include "insitu/analysis/dataflow.h"

namespace insitu {

// [start, end], both inclusive, in flattened-schedule time.
struct TimeInterval {
  int64_t start = 0;
  int64_t end = 0;
  bool overlaps(const TimeInterval& other) const { return start <= other.end && other.start <= end; }
  bool operator==(const TimeInterval&) const = default;
};

using BufferId = int64_t;

class LiveRanges {
 public:
  // Requires a verified module and its Dataflow.
  static LiveRanges compute(const Module& module, const Dataflow& dataflow);

  // The flattened schedule; time(i) is i's index in it.
  const std::vector<const Instruction*>& sequence() const { return sequence_; }
  int64_t time(const Instruction* instruction) const;
  // One past the last instruction: entry-root values and entry parameters live to here.
  int64_t schedule_end_time() const { return static_cast<int64_t>(sequence_.size()); }
  // [first time, one past the last time] of an analyzed computation.
  TimeInterval computation_span(const Computation* computation) const;

  const TimeInterval& value_range(ValueId value) const { return value_ranges_.at(value); }

  // Buffers: values unioned by must-share links, numbered in order of their smallest value id.
  int64_t buffer_count() const { return static_cast<int64_t>(buffer_values_.size()); }
  BufferId buffer_of(ValueId value) const { return buffer_of_.at(value); }
  const std::vector<ValueId>& buffer_values(BufferId buffer) const { return buffer_values_.at(buffer); }
  const TimeInterval& buffer_range(BufferId buffer) const { return buffer_ranges_.at(buffer); }

  // XLA's HloLiveRange::ToString look: the sequence, then "name{index}:start-end" per value.
  std::string to_string(const Dataflow& dataflow) const;

 private:
  std::vector<const Instruction*> sequence_;
  std::unordered_map<const Instruction*, int64_t> times_;
  std::unordered_map<const Computation*, TimeInterval> spans_;
  std::vector<TimeInterval> value_ranges_;
  std::vector<BufferId> buffer_of_;
  std::vector<std::vector<ValueId>> buffer_values_;
  std::vector<TimeInterval> buffer_ranges_;
};

}  // namespace insitu
