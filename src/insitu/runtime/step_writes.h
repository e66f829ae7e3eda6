// Internal to the CPU runtime's Executable::create: what a step writes (ExecutionStats::
// bytes_written) and which of its operands it copies to scratch before each run because they
// overlap an output in a way its kernel does not allow (the in-place contract,
// analysis/in_place.h, says which overlaps a kernel takes).
#pragma once

#include <cstdint>
#include <vector>

#include "insitu/runtime/program.h"

namespace insitu::runtime_internal {

// The bytes a leaf reads (a scalar leaf reads one element), and whether two leaves' bytes
// overlap (allocations never share memory).
int64_t leaf_bytes(const Leaf& leaf);
bool leaves_overlap(const Leaf& a, const Leaf& b);

// What one run of `step` writes: an update in place in its operand's memory writes its update;
// a loop, call or conditional nothing itself (its steps count); a dynamic view nothing;
// anything else its output leaves. Pre: the step's runner is chosen.
int64_t bytes_written_by(const Step& step);

// Operands a native step copies to scratch first: those overlapping an output in a way its
// kernel does not handle.
std::vector<int> staged_operands(const Instruction& instruction, const Step& step);

}  // namespace insitu::runtime_internal
