// Internals of buffer assignment shared by its files (buffer_assignment.cc, the borrowed values
// of buffer_assignment_views.cc). Not part of the library's interface.
#pragma once

#include <vector>

#include "insitu/analysis/dataflow.h"
#include "insitu/analysis/live_range.h"
#include "insitu/passes/buffer_assignment.h"

namespace insitu::buffer_assignment_internal {

// One buffer of LiveRanges and what buffer assignment decides about it.
struct BufferPlan {
  std::vector<ValueId> values;
  TimeInterval range;
  int64_t size = 0;
  bool materialized = true;
  AllocationKind kind = AllocationKind::kTemp;
  const Value* parameter = nullptr;     // the entry parameter leaf it holds
  const Value* constant = nullptr;      // the constant it holds
  std::vector<ShapeIndex> outputs;      // entry result leaves it holds
  BufferId merged_into = -1;            // elementwise reuse: lives in that buffer's bytes
  BufferId view_of = -1;                // a view: its bytes are view_offset into that buffer
  int64_t view_offset = 0;
  // A dynamic view (a dynamic-slice whose result is contiguous for every start): its bytes lie
  // in view_of's at an offset known only at run time. It gets an allocation of its own kind
  // (kDynamicView) whose base the runtime sets when the dynamic-slice runs; views of it are
  // static views into that allocation.
  bool dynamic_view = false;
  bool lent = false;                    // some view reads its bytes
  // Placed (place_updates): the value is computed straight into the window of view_of's bytes
  // that a dynamic-update-slice (`placed_for`) then writes it to; not a view (its instruction
  // computes), and that dynamic-update-slice moves no data.
  const Instruction* placed_for = nullptr;
  int64_t allocation = -1;
  int64_t offset = 0;
};

// Decides which buffers are not materialized because they can read another buffer's bytes:
//   - a scalar broadcast read only by elementwise ops: each user reads the scalar;
//   - a view: a reshape that keeps row-major element order, or a contiguous slice of a
//     row-major array, read only by plain readers: its bytes are a range of its operand's;
//   - a dynamic view: a dynamic-slice whose result is contiguous in its row-major operand for
//     every start (leading sizes 1, then one partial dimension, then full ones), read only by
//     plain readers: a stacked layer's weights or cache read where they lie; also a dynamic
//     view of a dynamic view (each based at run time on the last);
//   - either kind carried unchanged through while loops as their state (the loop's body hands
//     it back as it got it), or handed to a conditional's branch in its operand tuple, and read
//     only in place there: the view is that loop state or branch operand too (a Pallas kernel
//     body's inner loop, or a step under pl.when, reading its blocks).
// Either way the borrowed buffer must hold the same bytes until the borrower's last reader,
// so its live range is extended to there; when something writes it in between (an in-place
// update scheduled before the last reader), the borrower is materialized after all.
// Then updates computed in place (place_updates): a dynamic-update-slice that writes, in place,
// a value U into the window a dynamic-slice at the same starts read as a dynamic view (a
// read-modify-write of one layer of a stack: Adam's m[i] -> m'[i], a scan's row of ys written
// over its row of xs) gets U computed straight into that window, when U's instruction reads
// the window's old bytes only element by element at the positions it writes, nothing else
// reads them from U's time on, and nothing writes the stack again before U's last reader;
// the dynamic-update-slice then moves no data (the update was written twice before: into a
// temp, then copied into the stack). An update that does not read the stack at all (a KV row
// from a dot, a Pallas output block) needs no dynamic-slice: with starts known before its
// producer runs and a window contiguous wherever it starts, it gets a dynamic view of its own
// (dynamic_view and placed_for both set), whose base the runtime sets from the update-slice's
// starts just before the producer runs.
// Runs on freshly classified plans, before elementwise reuse and packing; what `options` rules
// out stays materialized.
void borrow_buffers(const Dataflow& dataflow, const LiveRanges& live, const BufferAssignmentOptions& options,
                    std::vector<BufferPlan>& plans);

}  // namespace insitu::buffer_assignment_internal
