// Race analysis for kernel grids over aliased buffers.
//
// Two grid steps may run concurrently when their indices differ in at least one parallel axis.
// A race is (a) one step writing a block of output o that a concurrent step reads through the
// input aliased to o, or (b) two concurrent steps writing overlapping blocks of one output.
// (Revisiting an output block along sequential axes, the accumulator pattern, is fine.)
//
// The static check evaluates the index maps over the whole grid (up to kMaxAnalysedSteps
// steps) at the first call with concrete shapes (or at registration when out_shapes are known);
// the dynamic check (--check-races) runs the same analysis over the blocks each step actually
// touched during a run.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "insitu/kernel/kernel.h"
#include "insitu/support/status.h"

namespace insitu {

inline constexpr int64_t kMaxAnalysedSteps = 1 << 16;

struct BlockRegion {
  std::vector<int64_t> block_index;
  std::vector<int64_t> start;   // elements
  std::vector<int64_t> extent;  // elements, clipped at the array's edge
};

// The blocks one grid step touches: inputs[i] and outputs[o] regions (one per operand).
struct StepBlocks {
  std::vector<int64_t> grid_index;
  std::vector<BlockRegion> inputs;
  std::vector<BlockRegion> outputs;
};

// Finds a race among `steps` (see above). The error names the kernel, both grid indices and
// the block indices.
Status find_races(const KernelSpec& spec, std::span<const StepBlocks> steps);

// Evaluates the index maps over the grid for arrays of the given dimensions and runs
// find_races. Grids larger than kMaxAnalysedSteps are not analysed (ok; use --check-races).
Status check_races_statically(const KernelSpec& spec, std::span<const std::vector<int64_t>> input_dimensions,
                              std::span<const std::vector<int64_t>> output_dimensions);

}  // namespace insitu
