// Shared by the example kernels: a 1-D grid of row blocks over dim 0 of an array.
#pragma once

#include <algorithm>

#include "insitu/kernel/kernel.h"

namespace insitu::examples {

// Blocks of whole rows along dim 0, about `target_elements` each; a rank-0 array is one block.
inline void use_row_blocks(const Shape& shape, KernelSpec& spec, int64_t target_elements = 1 << 16) {
  BlockSpec block;
  if (shape.rank() == 0) {
    spec.grid = {};
    spec.dimension_semantics = {};
  } else {
    const int64_t row = std::max<int64_t>(1, shape.element_count() / std::max<int64_t>(1, shape.dimension(0)));
    const int64_t rows = std::clamp<int64_t>(target_elements / row, 1, std::max<int64_t>(1, shape.dimension(0)));
    block.block_shape = shape.dimensions();
    block.block_shape[0] = rows;
    block.index_map = [rank = shape.rank()](std::span<const int64_t> grid_index) {
      std::vector<int64_t> index(rank, 0);
      index[0] = grid_index[0];
      return index;
    };
    spec.grid = {(shape.dimension(0) + rows - 1) / rows};
    spec.dimension_semantics = {DimensionSemantics::kParallel};
  }
  for (BlockSpec& in : spec.in_specs) in = block;
  for (BlockSpec& out : spec.out_specs) out = block;
}

// Calls fn(element pointer offsets) over a block: the fast path for a contiguous block.
template <typename T, typename Fn>
void for_each_element(const BlockRef<T>& ref, Fn&& fn) {
  if (ref.is_contiguous()) {
    T* data = ref.data();
    for (int64_t k = 0, n = ref.size(); k < n; ++k) fn(data[k]);
    return;
  }
  ref.for_each_index([&](std::span<const int64_t> index) { fn(ref.data()[ref.offset(index)]); });
}

}  // namespace insitu::examples
