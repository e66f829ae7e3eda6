// tiled_axpy: 2 * x + y over f32[M, N] with a 2-D grid of 32x32 tiles (example_kernels.h).
#include "examples/kernels/example_kernels.h"

namespace insitu::examples {

KernelSpec tiled_axpy_kernel() {
  KernelSpec spec;
  spec.name = "tiled_axpy";
  spec.in_specs.resize(2);
  spec.out_specs.resize(1);
  spec.specialize = [](std::span<const Shape> operands, std::span<const Shape> results, KernelSpec& spec) {
    if (operands.empty() || operands[0].rank() != 2) return;  // the call check reports the rank
    constexpr int64_t kTile = 32;
    BlockSpec tile;
    tile.block_shape = {kTile, kTile};
    tile.index_map = [](std::span<const int64_t> grid_index) {
      return std::vector<int64_t>{grid_index[0], grid_index[1]};
    };
    spec.in_specs = {tile, tile};
    spec.out_specs = {tile};
    spec.grid = {(operands[0].dimension(0) + kTile - 1) / kTile, (operands[0].dimension(1) + kTile - 1) / kTile};
    spec.dimension_semantics = {DimensionSemantics::kParallel, DimensionSemantics::kParallel};
  };
  // On a CUDA device: each tile's team of threads strides over the tile's (clipped) elements.
  spec.cuda_function = "tiled_axpy_cuda";
  spec.cuda_source = R"(__device__ void tiled_axpy_cuda(insitu_team team, insitu_block<const float> x,
                                insitu_block<const float> y, insitu_block<float> out) {
  const long long columns = out.dim(1);
  for (long long k = team.lane; k < out.size(); k += team.lanes) {
    const long long i = k / columns, j = k % columns;
    out(i, j) = 2.0f * x(i, j) + y(i, j);
  }
}
)";
  spec.body = [](const KernelContext&, KernelRefs& refs) {
    BlockRef<float> x = refs.input<float>(0), y = refs.input<float>(1), out = refs.output<float>(0);
    for (int64_t i = 0; i < out.dim(0); ++i)  // edge tiles are clipped: loop over the ref's shape
      for (int64_t j = 0; j < out.dim(1); ++j) out(i, j) = 2.0f * x(i, j) + y(i, j);
  };
  return spec;
}

}  // namespace insitu::examples
