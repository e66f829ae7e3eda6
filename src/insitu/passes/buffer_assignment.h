// Buffer assignment: where every value lives at run time.
//
// Input: an optimized module (copies inserted, so every must-share link in Dataflow is legal)
// and its schedule (the instruction order of each computation). Output: allocations and, for
// every materialized value, a slice (allocation, offset, size):
//
//   parameter allocations  one per entry parameter leaf; the caller's buffer, used in place
//   output allocations     one per entry result leaf not aliased to a parameter (fresh buffers
//                          the caller receives); aliased outputs live in their parameter's
//   temp arena             one allocation holding every other value at an offset; values whose
//                          live ranges do not overlap share bytes (liveness reuse); an
//                          elementwise op may write into an operand that dies at it
//   per-worker arenas      a parallel grid loop's private buffers (its body's values, its
//                          counter and scratch: analysis/parallel_grid.h), packed the same way
//                          in an allocation of its own, which each of its workers copies
//   constants              read-only allocations holding literal data
//
// Values linked by must-share links (loop state, in-place pairs, conditional results,
// input_output_alias) get one slice. Some values borrow another buffer's bytes instead
// (buffer_assignment_internal.h): a scalar broadcast whose users are all elementwise ops has no
// slice (the runtime reads the scalar at each user), and a view (a reshape keeping row-major
// order, a contiguous slice) read only by plain readers has a slice inside its operand's. The
// borrowed buffer stays live to the borrower's last reader, and the borrower is materialized
// after all when that buffer is written in between (an in-place update). And an update a
// dynamic-update-slice (or a scatter of one window that sets) writes in place is computed
// straight into its window of the stack when its producer reads that window only where it
// writes it (placed_for; buffer_assignment_internal.h says when): the update then moves nothing. Byte sizes are dense
// (tiles do not pad), as on XLA:CPU. peak_memory_bytes counts every live byte at the worst point of the
// schedule, parameters included, a buffer shared by aliasing once.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "insitu/analysis/dataflow.h"
#include "insitu/analysis/live_range.h"

namespace insitu {

// kDynamicView holds no bytes: it stands for a dynamic-slice's result read inside its operand's
// buffer, at an offset the runtime computes when the dynamic-slice runs (the start indices of
// that call); its values' slices are relative to that base. Its size is 0.
enum class AllocationKind : uint8_t { kParameter, kOutput, kTemp, kConstant, kDynamicView };

struct Allocation {
  int64_t index = 0;
  AllocationKind kind = AllocationKind::kTemp;
  int64_t size = 0;
  int64_t parameter_number = -1;  // kParameter
  ShapeIndex parameter_index;     // kParameter
  ShapeIndex output_index;        // kOutput, or a kParameter aliased to an output
  bool maybe_live_out = false;    // holds (part of) the entry result
  // kTemp: the parallel grid loop whose private buffers this arena holds (each of the loop's
  // workers holds its own copy; analysis/parallel_grid.h); nullptr for the one shared arena.
  const Instruction* per_worker_of = nullptr;
  std::vector<ValueId> values;    // the values assigned to it, by id
};

struct BufferSlice {
  int64_t allocation = -1;
  int64_t offset = 0;
  int64_t size = 0;
  bool operator==(const BufferSlice&) const = default;
};

// What the device that runs the assignment's program can read and write beyond plain slices,
// so that one assignment serves the CPU runtime (every ability) and the CUDA plan (a device
// whose kernels take a pointer per array, with starts known only on the device): each false
// ability materializes what it would have borrowed.
struct BufferAssignmentOptions {
  bool scalar_broadcasts_read_in_place = true;  // a scalar broadcast's users read its scalar
  bool dynamic_views = true;   // a dynamic-slice read where it lies, based at run time by the host
  bool placed_updates = true;  // an update computed in its window of the stack (place_updates)
  bool sort_in_place = true;   // a sort's result i over its dying operand i (kSameSlot)
  bool per_worker_arenas = true;  // parallel grid loops' private buffers, one copy per worker
  static BufferAssignmentOptions for_cuda() {
    return {.scalar_broadcasts_read_in_place = false, .dynamic_views = false, .placed_updates = false,
            .sort_in_place = false, .per_worker_arenas = false};
  }
};

class BufferAssignment {
 public:
  const std::vector<Allocation>& allocations() const { return allocations_; }
  // The slice holding a value; nullopt when the value is not materialized.
  std::optional<BufferSlice> slice(ValueId value) const;
  // A view (a row-major reshape or contiguous slice read in its operand's bytes): its slice lies
  // inside another value's, and the instruction moves no data. A dynamic-slice made a view
  // (its slice is in a kDynamicView allocation) only sets that allocation's base.
  bool is_view(ValueId value) const { return value >= 0 && value < static_cast<ValueId>(views_.size()) && views_[value]; }
  // The dynamic-update-slice a value was computed in place for: the value's slice is the window
  // that dynamic-update-slice writes (so it moves no data); nullptr for every other value.
  const Instruction* placed_for(ValueId value) const {
    return value >= 0 && value < static_cast<ValueId>(placed_for_.size()) ? placed_for_[value] : nullptr;
  }
  // A placed value whose window no dynamic-slice reads: its slice is in a kDynamicView
  // allocation of its own, whose base the runtime sets from placed_for's starts before the
  // value's instruction runs.
  bool sets_own_window(ValueId value) const {
    return value >= 0 && value < static_cast<ValueId>(own_window_.size()) && own_window_[value];
  }
  // The slice at an instruction's leaf (through Dataflow::value_at).
  std::optional<BufferSlice> slice_at(const Instruction* instruction, const ShapeIndex& index = {}) const;
  const Dataflow& dataflow() const { return dataflow_; }
  // The allocation holding a parallel grid loop's private buffers (Allocation::per_worker_of),
  // or -1 when the loop has none (its steps run in order).
  int64_t per_worker_allocation(const Instruction* loop) const {
    for (const auto& [owner, index] : per_worker_)
      if (owner == loop) return index;
    return -1;
  }
  // The flattened schedule and live ranges the assignment was computed on.
  const LiveRanges& live_ranges() const { return live_ranges_; }

  int64_t temp_bytes() const;          // size of the temp arena
  int64_t peak_memory_bytes() const { return peak_memory_bytes_; }
  // A time of the flattened schedule at which peak_memory_bytes are live.
  int64_t peak_time() const { return peak_time_; }
  // The buffers live at that time, each as (its first value, bytes).
  const std::vector<std::pair<ValueId, int64_t>>& peak_buffers() const { return peak_buffers_; }

  // XLA-style dumps: `...after_optimizations-buffer-assignment.txt` and
  // `...after_optimizations-memory-usage-report.txt`.
  std::string to_string() const;
  std::string memory_usage_report() const;

 private:
  friend StatusOr<BufferAssignment> assign_buffers(const Module& module, const BufferAssignmentOptions& options);
  explicit BufferAssignment(Dataflow dataflow) : dataflow_(std::move(dataflow)) {}

  Dataflow dataflow_;
  LiveRanges live_ranges_;
  std::vector<Allocation> allocations_;
  std::vector<std::optional<BufferSlice>> slices_;  // indexed by ValueId
  std::vector<bool> views_;                         // indexed by ValueId
  std::vector<const Instruction*> placed_for_;      // indexed by ValueId
  std::vector<bool> own_window_;                   // indexed by ValueId
  std::vector<std::pair<const Instruction*, int64_t>> per_worker_;  // (parallel grid loop, its allocation)
  int64_t peak_memory_bytes_ = 0;
  int64_t peak_time_ = 0;
  // Live-range section of the dump: each buffer live at the peak, counted once.
  std::vector<std::pair<ValueId, int64_t>> peak_buffers_;  // (first value, bytes)
};

// Requires a module after copy insertion (every must-share link legal on its schedule).
StatusOr<BufferAssignment> assign_buffers(const Module& module, const BufferAssignmentOptions& options = {});

}  // namespace insitu
