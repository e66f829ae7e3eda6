// Runs a KernelSpec's grid over caller-owned buffers (the semantics are in kernel.h).
//
// Inputs and outputs are dense row-major arrays in memory the caller owns; blocks are strided
// views into them (zero-copy). For every input_output_aliases pair (i, o), inputs[i].data must
// equal outputs[o].data: one buffer. Only BlockSpecs with memory_space != 0 are staged through
// a scratch copy; their bytes are counted in GridStats::staged_bytes.
//
// Order: grid indices in row-major order. Axes before the first parallel axis run in order;
// the run of consecutive parallel axes after it is split over the pool (each worker walks its
// chunk in row-major order); the axes after that run in order inside each parallel step.
// Without a pool, or with one thread, everything runs on the caller in row-major order (the
// evaluator's oracle order).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "insitu/kernel/kernel.h"
#include "insitu/kernel/race_check.h"
#include "insitu/runtime/thread_pool.h"
#include "insitu/support/status.h"

namespace insitu {

struct GridOperand {
  uint8_t* data = nullptr;
  PrimitiveType type = PrimitiveType::kInvalid;
  std::vector<int64_t> dimensions;
};

struct GridStats {
  int64_t staged_bytes = 0;  // copied into and out of scratch blocks (memory_space != 0)
  int64_t steps = 0;
};

struct GridOptions {
  ThreadPool* pool = nullptr;  // null: single-threaded, row-major order
  // Record every step's block reads and writes and report a race after the run (the runtime
  // --check-races mode, for kernels the static check could not analyse).
  bool record_races = false;
  // The caller already ran check_kernel_call for these shapes (prepare_kernel_call at create).
  bool call_checked = false;
};

// Checks the spec against concrete operand/output shapes: counts, block ranks, aliases (same
// dtype and shape), out_shapes. Messages name the kernel.
Status check_kernel_call(const KernelSpec& spec, std::span<const GridOperand> inputs,
                         std::span<const GridOperand> outputs);

// Runs every grid step. Errors: bad index maps (wrong rank, a block starting outside the array)
// and, with record_races, a race.
Status run_grid(const KernelSpec& spec, std::span<const GridOperand> inputs, std::span<const GridOperand> outputs,
                const GridOptions& options, GridStats& stats);

// The element region of block `block_index` of an array: start and clipped extent per dim.
// Error if the block starts outside the array.
Status block_region(const KernelSpec& spec, const BlockSpec& block_spec, std::span<const int64_t> dimensions,
                    std::span<const int64_t> block_index, BlockRegion& region);

// Total grid steps (1 for an empty grid).
int64_t grid_size(std::span<const int64_t> grid);
// The grid index of linear step `step` in row-major order.
void grid_index_of(std::span<const int64_t> grid, int64_t step, std::vector<int64_t>& index);

// Process-wide switch for record_races in the runtime and evaluator (the CLI's --check-races).
void set_check_races(bool enabled);
bool check_races_enabled();

}  // namespace insitu
