// Internal to the runtime's data-movement kernels: walking an array row by row.
//
// A row is the last dimension; the rows of dimensions [d0, ..., dn-1, dn] are indexed by the
// leading multi-index (d0..dn-1). for_each_row calls fn(row, leading_index) for every row, in
// parallel chunks of rows when the array is large: each chunk decodes its first leading index
// once and then counts up, so the per-row cost is a few additions.
#pragma once

#include <algorithm>
#include <cstring>
#include <span>
#include <vector>

#include "insitu/runtime/kernels.h"

namespace insitu::kernels {

// The number of rows and the row length of `dimensions` (a scalar is one row of one element).
inline std::pair<int64_t, int64_t> rows_of(std::span<const int64_t> dimensions) {
  if (dimensions.empty()) return {1, 1};
  int64_t rows = 1;
  for (size_t i = 0; i + 1 < dimensions.size(); ++i) rows *= dimensions[i];
  return {rows, dimensions.back()};
}

// A multi-index or stride list: up to 8 entries live inline (no allocation per kernel call for
// arrays of rank <= 8), more on the heap.
class IndexVector {
 public:
  IndexVector() = default;
  explicit IndexVector(size_t size, int64_t value = 0) : size_(size) {
    if (size > kInline) heap_.assign(size, value);
    else std::fill_n(inline_, size, value);
  }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  int64_t* data() { return size_ > kInline ? heap_.data() : inline_; }
  const int64_t* data() const { return size_ > kInline ? heap_.data() : inline_; }
  int64_t& operator[](size_t i) { return data()[i]; }
  int64_t operator[](size_t i) const { return data()[i]; }
  int64_t back() const { return data()[size_ - 1]; }
  std::span<const int64_t> span() const { return {data(), size_}; }
  operator std::vector<int64_t>() const { return std::vector<int64_t>(data(), data() + size_); }  // for plans

 private:
  static constexpr size_t kInline = 8;
  int64_t inline_[kInline] = {};
  std::vector<int64_t> heap_;
  size_t size_ = 0;
};

template <typename Fn>
void for_each_row(ThreadPool& pool, std::span<const int64_t> dimensions, Fn&& fn) {
  const auto [rows, row_length] = rows_of(dimensions);
  if (rows == 0 || row_length == 0) return;
  const size_t leading = dimensions.empty() ? 0 : dimensions.size() - 1;
  const int64_t threshold_rows = std::max<int64_t>(1, kParallelElements / row_length);
  run_range(pool, rows, threshold_rows, [&](int64_t begin, int64_t end) {
    IndexVector index(leading, 0);
    int64_t rest = begin;
    for (size_t d = leading; d-- > 0;) {
      index[d] = rest % dimensions[d];
      rest /= dimensions[d];
    }
    for (int64_t row = begin; row < end; ++row) {
      fn(row, index.span());
      for (size_t d = leading; d-- > 0;) {
        if (++index[d] < dimensions[d]) break;
        index[d] = 0;
      }
    }
  });
}

// Row-major strides in elements.
inline IndexVector strides_of(std::span<const int64_t> dimensions) {
  IndexVector strides(dimensions.size(), 1);
  for (int64_t i = static_cast<int64_t>(dimensions.size()) - 2; i >= 0; --i)
    strides[i] = strides[i + 1] * dimensions[i + 1];
  return strides;
}

// Copies `count` elements of `width` bytes from `from` (stepping `stride` elements) to `to`.
inline void copy_strided(uint8_t* to, const uint8_t* from, int64_t count, int64_t stride, int64_t width) {
  if (stride == 1) {
    if (count > 0) std::memcpy(to, from, static_cast<size_t>(count * width));
    return;
  }
  switch (width) {
    case 1: for (int64_t i = 0; i < count; ++i) to[i] = from[i * stride]; return;
    case 2: {
      auto* t = reinterpret_cast<uint16_t*>(to);
      auto* f = reinterpret_cast<const uint16_t*>(from);
      for (int64_t i = 0; i < count; ++i) t[i] = f[i * stride];
      return;
    }
    case 4: {
      auto* t = reinterpret_cast<uint32_t*>(to);
      auto* f = reinterpret_cast<const uint32_t*>(from);
      for (int64_t i = 0; i < count; ++i) t[i] = f[i * stride];
      return;
    }
    case 8: {
      auto* t = reinterpret_cast<uint64_t*>(to);
      auto* f = reinterpret_cast<const uint64_t*>(from);
      for (int64_t i = 0; i < count; ++i) t[i] = f[i * stride];
      return;
    }
    default:
      for (int64_t i = 0; i < count; ++i) std::memcpy(to + i * width, from + i * stride * width, width);
  }
}

}  // namespace insitu::kernels
