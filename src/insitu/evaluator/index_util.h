// Multi-index iteration over row-major arrays, shared by the evaluator's ops and the runtime's
// native kernels (which must walk indices exactly as the evaluator does).
#pragma once

#include <algorithm>
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

// Offsets (in elements) of every row-major multi-index of `sizes`, each dimension moving by the
// matching stride: the positions a walk over those dimensions visits, in order.
inline std::vector<int64_t> row_major_offsets(const std::vector<int64_t>& sizes, const std::vector<int64_t>& strides) {
  std::vector<int64_t> offsets;
  int64_t count = 1;
  for (int64_t size : sizes) count *= size;
  offsets.reserve(static_cast<size_t>(count));
  for_each_index(sizes, [&](std::span<const int64_t> index) {
    int64_t offset = 0;
    for (size_t i = 0; i < index.size(); ++i) offset += index[i] * strides[i];
    offsets.push_back(offset);
  });
  return offsets;
}

inline bool contains(const std::vector<int64_t>& values, int64_t value) {
  return std::find(values.begin(), values.end(), value) != values.end();
}

// Every entry in [0, bound), no duplicates (dimension lists of gather/scatter/...).
inline bool distinct_in_range(const std::vector<int64_t>& values, int64_t bound) {
  for (size_t i = 0; i < values.size(); ++i) {
    if (values[i] < 0 || values[i] >= bound) return false;
    for (size_t j = 0; j < i; ++j)
      if (values[j] == values[i]) return false;
  }
  return true;
}

}  // namespace insitu
