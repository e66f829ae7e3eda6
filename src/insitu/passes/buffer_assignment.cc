// Buffer assignment (stub: being written).
#include "insitu/passes/buffer_assignment.h"

namespace insitu {

std::optional<BufferSlice> BufferAssignment::slice(ValueId value) const {
  if (value < 0 || value >= static_cast<ValueId>(slices_.size())) return std::nullopt;
  return slices_[value];
}

std::optional<BufferSlice> BufferAssignment::slice_at(const Instruction* instruction, const ShapeIndex& index) const {
  return slice(dataflow_.value_at(instruction, index));
}

int64_t BufferAssignment::temp_bytes() const {
  int64_t bytes = 0;
  for (const Allocation& allocation : allocations_)
    if (allocation.kind == AllocationKind::kTemp) bytes += allocation.size;
  return bytes;
}

std::string BufferAssignment::to_string() const { return "BufferAssignment: not written yet\n"; }
std::string BufferAssignment::memory_usage_report() const { return "not written yet\n"; }

StatusOr<BufferAssignment> assign_buffers(const Module&) { return unimplemented("buffer assignment not written yet"); }

}  // namespace insitu
