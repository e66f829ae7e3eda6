// Parallel grid loops: when the steps of a Pallas kernel's grid loop (ir/grid_loop.h) may run
// on several threads, and what each thread must hold for itself.
//
// insitu's Pallas lowering (python/insitu/pallas.py) proves, from the kernel's index maps
// evaluated over the whole grid, that the grid's leading `parallel_axes` axes are independent:
// steps of different outer iterations (one outer iteration = one point of those axes, its
// inner steps in row-major order) write disjoint blocks of every array and read no block
// another outer iteration writes. It records that on the loop (kGridParallelAttribute), or why
// not (kGridInOrderAttribute). This header adds what the loop's form must give so that a
// runtime can split the outer iterations into contiguous chunks, one per worker:
//
//   - a counter: state element `counter` starts at the constant 0, the body adds 1 and the
//     condition is `counter < steps` (seen through kLoop fusions, as the optimized module holds
//     them). A worker sets it to its chunk's first step and runs the body once per step of its
//     chunk; the condition is not evaluated.
//   - nothing with an order of its own: no collective, custom call or other side effect in the
//     body.
//   - private state: the state elements the body changes and nothing reads after the loop (the
//     counter, the kernel's scratch). Each worker starts from its own copy of their initial
//     values. Every other element is shared: read-only, or an array the steps update in place
//     at the blocks the proof says are disjoint.
//
// Buffer assignment (passes/buffer_assignment.h) puts every buffer only such a loop uses (the
// private state and every value of its body and condition) into an allocation of the loop's
// own; the CPU runtime gives each worker a copy of that allocation.
#pragma once

#include <string>
#include <unordered_set>
#include <variant>
#include <vector>

#include "insitu/ir/instruction.h"

namespace insitu {

struct ParallelGrid {
  int64_t parallel_axes = 0;  // leading grid axes whose points are independent
  int64_t outer = 0;          // their points (the product of their sizes)
  int64_t steps = 0;          // grid steps: outer x inner
  int64_t counter = 0;        // the state element counting steps
  std::vector<int64_t> private_state;  // state elements each worker holds its own copy of (counter included)
};

// How `loop`'s steps may run on threads, or why they run in order (a sentence for stats and
// explain). Requires a grid loop (grid_loop_info); looks at the loop's attributes, its counter
// and its users only.
std::variant<ParallelGrid, std::string> parallel_grid(const Instruction& loop);

// The computations `instruction` runs: those it calls and those they call, transitively (a
// loop's body and condition with everything inside them).
std::unordered_set<const Computation*> computations_run_by(const Instruction& instruction);

}  // namespace insitu
