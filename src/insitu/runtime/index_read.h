// Internal to the runtime's gather and scatter kernels: one start index read out of an indices
// array of any integer type, as the evaluator's Literal::get_integer reads it.
#pragma once

#include <cstdint>
#include <type_traits>

#include "insitu/runtime/kernels.h"

namespace insitu {

inline int64_t read_index(const ArrayView& indices, int64_t position) {
  int64_t value = 0;
  dispatch_element_type(indices.type(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>)
      value = static_cast<int64_t>(reinterpret_cast<const T*>(indices.data)[position]);
    else if constexpr (kIsSubByteInt<T>)  // s4, u2, ... indices: their value, not their byte
      value = static_cast<int64_t>(reinterpret_cast<const T*>(indices.data)[position].get());
  });
  return value;
}

}  // namespace insitu
