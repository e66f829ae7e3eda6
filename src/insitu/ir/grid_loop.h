// Grid loops: the while loop insitu's Pallas lowering (python/insitu/pallas.py) makes of one
// `pl.pallas_call`, named by frontend attributes JAX puts on every op lowered inside the call:
//
//   %while.5 = (...) while(%init), ..., frontend_attributes={insitu_pallas_aliases="2->0",
//                                          insitu_pallas_grid="8x8x8",insitu_pallas_kernel="matmul"}
//
// The attributes survive printing and re-parsing, so the runtime (stats' pallas_kernels) and
// explain (each kernel with its in-place state) name a kernel the way its author did. The ops
// of the kernel's body (its own loops included) carry an empty kernel name: only the grid loop
// names the kernel.
#pragma once

#include <optional>
#include <string_view>
#include <vector>

#include "insitu/ir/instruction.h"

namespace insitu {

inline constexpr std::string_view kGridKernelAttribute = "insitu_pallas_kernel";
inline constexpr std::string_view kGridShapeAttribute = "insitu_pallas_grid";        // "8x8x8"
inline constexpr std::string_view kGridAliasesAttribute = "insitu_pallas_aliases";  // "2->0,3->1" or ""
// How many leading grid axes the lowering proved independent ("0".."rank"; analysis/parallel_grid.h),
// and, when none, why (a sentence).
inline constexpr std::string_view kGridParallelAttribute = "insitu_pallas_parallel";
inline constexpr std::string_view kGridInOrderAttribute = "insitu_pallas_in_order";

struct GridLoopInfo {
  std::string_view kernel;   // the kernel's name
  std::string_view grid;     // its grid, "8x8x8"
  std::string_view aliases;  // input_output_aliases, "input->output" pairs
  std::string_view parallel;  // kGridParallelAttribute's value ("" when absent)
  std::string_view in_order;  // kGridInOrderAttribute's value
};

// The grid's sizes ("8x8x8" -> {8, 8, 8}); nullopt when a size is not a number ("?": dynamic).
std::optional<std::vector<int64_t>> grid_sizes(std::string_view grid);

// The kernel `loop` runs the grid of, when `loop` is a while with a non-empty
// kGridKernelAttribute.
std::optional<GridLoopInfo> grid_loop_info(const Instruction& loop);

}  // namespace insitu
