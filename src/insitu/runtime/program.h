// Internal to the runtime: an analyzed computation compiled into steps over buffer slices.
//
// Every array leaf an instruction reads or writes is resolved once, at Executable::create, to
// a slice (allocation, offset, size) of buffer assignment. A leaf without a slice is an
// unmaterialized scalar broadcast: it resolves to the scalar's slice, marked `scalar`.
#pragma once

#include <vector>

#include <optional>
#include <string>

#include "insitu/ir/grid_loop.h"
#include "insitu/ir/instruction.h"
#include "insitu/passes/buffer_assignment.h"
#include "insitu/runtime/kernels.h"
#include "insitu/runtime/native_custom_call.h"

namespace insitu::runtime_internal {

struct Leaf {
  ShapeIndex index;             // within the instruction's shape
  const Shape* shape = nullptr; // the leaf's shape (the broadcast's, for a scalar leaf)
  int64_t allocation = -1;      // -1: no memory (token)
  int64_t offset = 0;
  int64_t size = 0;
  bool scalar = false;          // reads one element for every position
  bool same_memory(const Leaf& other) const {
    return allocation == other.allocation && offset == other.offset && size == other.size && scalar == other.scalar;
  }
};

// One array a native step binds per call: the first leaf of an operand, or an output leaf,
// without its index (Executor::bind_views reads these, contiguous, on every run of the step).
struct Binding {
  const Shape* shape = nullptr;
  int64_t allocation = -1;  // -1: none (a token operand)
  int64_t offset = 0;
  bool scalar = false;
};

class Executor;
struct Step;
struct Program;

// What a step does when it runs, chosen once at Executable::create: the executor's member for
// its kind (a native kernel, the fallback, a copy, a loop, ...). Steps that move no data
// (parameter, tuple, get-tuple-element, bitcast, views, constants kept in constant buffers)
// are left out of the program.
using StepRunner = Status (Executor::*)(const Step& step);

// A grid loop whose outer iterations run on the pool's workers (analysis/parallel_grid.h): each
// worker copies the private state into its own copy of the loop's per-worker allocation, sets
// the counter to its first step and runs the body once per step of its chunk.
struct ParallelGridPlan {
  int64_t parallel_axes = 0;
  int64_t outer = 0;            // independent outer iterations
  int64_t inner = 0;            // steps per outer iteration
  int64_t allocation = -1;      // the per-worker allocation (BufferAssignment::per_worker_allocation)
  int64_t allocation_size = 0;  // its bytes
  Leaf counter;                 // the body parameter's counter leaf
  std::vector<Leaf> private_state;  // the body parameter's private leaves (counter included)
};

struct Step {
  const Instruction* instruction = nullptr;
  StepRunner run = nullptr;
  std::vector<std::vector<Leaf>> operands;  // per operand, its array leaves in leaf order
  std::vector<Leaf> outputs;                // the instruction's array leaves in leaf order
  std::vector<Binding> bindings;            // operands' first leaves, then outputs (set last)
  std::vector<const Program*> callees;      // while: {condition, body}; conditional: branches; call
  NativeKernel kernel;                      // native steps: the selected kernel and its plan
  // Native steps: operands whose bytes overlap an output in a way the kernel does not allow
  // (anything but the in-place cases of kernels.h): copied to scratch before each call.
  std::vector<int> staged;
  PreparedCustomCall native_custom_call;  // custom-call steps run natively: prepared at create
  int64_t bytes_written = 0;  // what one run writes (ExecutionStats::bytes_written); callees count their own
  int64_t bytes_staged = 0;   // of those, a materialized (dynamic-)slice's (ExecutionStats::bytes_staged)
  std::optional<GridLoopInfo> grid_loop;  // a while that runs a Pallas kernel's grid (stats' kernel_grids)
  std::optional<ParallelGridPlan> parallel_grid;  // a grid loop whose steps may run on threads
  std::string in_order_because;                   // a grid loop's, when they may not
};

// Sets step.parallel_grid, or step.in_order_because, for a grid loop's while step whose callees
// are set (analysis/parallel_grid.h says when its steps may run on threads).
void plan_parallel_grid(const Instruction& loop, const BufferAssignment& assignment, Step& step);

struct Program {
  const Computation* computation = nullptr;
  std::vector<Step> steps;
  std::vector<std::vector<Leaf>> parameters;  // per parameter number, its leaves
  std::vector<Leaf> root;
};

}  // namespace insitu::runtime_internal
