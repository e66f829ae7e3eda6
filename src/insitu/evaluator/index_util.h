// Multi-index iteration over row-major arrays, shared by the evaluator's ops.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace insitu {

// Calls fn(index) for every multi-index of `dimensions` in row-major order (last dimension
// fastest). `index` is a span valid for the duration of the call. A zero-size dimension means
// no calls; rank 0 means exactly one call with an empty index.
template <typename Fn>
void for_each_index(std::span<const int64_t> dimensions, Fn&& fn) {
  for (int64_t d : dimensions)
    if (d == 0) return;
  std::vector<int64_t> index(dimensions.size(), 0);
  while (true) {
    fn(std::span<const int64_t>(index));
    int64_t axis = static_cast<int64_t>(dimensions.size()) - 1;
    for (; axis >= 0; --axis) {
      if (++index[axis] < dimensions[axis]) break;
      index[axis] = 0;
    }
    if (axis < 0) return;
  }
}

// Row-major strides (in elements) of `dimensions`.
inline std::vector<int64_t> row_major_strides(std::span<const int64_t> dimensions) {
  std::vector<int64_t> strides(dimensions.size(), 1);
  for (int64_t i = static_cast<int64_t>(dimensions.size()) - 2; i >= 0; --i)
    strides[i] = strides[i + 1] * dimensions[i + 1];
  return strides;
}

}  // namespace insitu
