// Helpers of the buffer assignment tests (buffer_assignment_test.cc,
// buffer_assignment_views_test.cc): the assignment of a module that must assign, and the slice
// of an instruction found by name.
#pragma once

#include <string_view>

#include "insitu/passes/buffer_assignment.h"
#include "insitu/support/check.h"

namespace insitu::testing {

inline BufferAssignment assign_or_die(const Module& module) {
  auto assignment = assign_buffers(module);
  INSITU_CHECK(assignment.ok()) << assignment.status().to_string();
  return std::move(assignment).value();
}

inline const Instruction* find(const Module& module, std::string_view name) {
  for (const Computation* computation : module.computations())
    if (const Instruction* instruction = computation->find_instruction(name)) return instruction;
  INSITU_UNREACHABLE("no instruction " << name);
  return nullptr;
}

inline BufferSlice slice_of(const BufferAssignment& assignment, const Module& module, std::string_view name,
                     const ShapeIndex& index = {}) {
  auto slice = assignment.slice_at(find(module, name), index);
  INSITU_CHECK(slice.has_value()) << name << " has no slice";
  return *slice;
}

}  // namespace insitu::testing
