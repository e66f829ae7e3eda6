// A matrix stored column-major copied row-major, 8 x 8 tiles transposed in vector registers:
// the library GEMM's transposed lhs (library_gemm.cc) and the transpose kernel's 4-byte matrix
// transposes (data_movement_kernels.cc) both run it. Element by element, the copy of
// [512, 2048]^T took 2 of the 6 ms of the product it fed.
//
// TransposeToRows::run(a, leading, first, count, k, rows): rows[i * k + j] =
// a[j * leading + first + i] for i < count, j < k, over 4-byte elements of any type (floats,
// integers: every access is a memcpy of the bits, so the pointers may point at either). Each
// tile reads 8 elements down each of 8 columns and takes 3 shuffle stages; the edges go element
// by element. Run it through run_at_cpu_level (cpu_level.h), which compiles it for the CPU's
// vector width. (Not a template: GCC takes no vector_size of a dependent type.)
#pragma once

#include <cstdint>

namespace insitu {

struct TransposeToRows {
  using Vector = uint32_t __attribute__((vector_size(32)));

  [[gnu::always_inline]] static inline void run(const uint32_t* a, int64_t leading, int64_t first, int64_t count,
                                                int64_t k, uint32_t* rows) {
    const int64_t count8 = count - count % 8, k8 = k - k % 8;
    for (int64_t j0 = 0; j0 < k8; j0 += 8) {
      for (int64_t i0 = 0; i0 < count8; i0 += 8) {
        Vector r[8];
        for (int c = 0; c < 8; ++c) __builtin_memcpy(&r[c], a + (j0 + c) * leading + first + i0, sizeof(Vector));
        Vector t[8], u[8];
        for (int c = 0; c < 8; c += 2) {  // pairs of columns interleaved within 128-bit halves
          t[c] = __builtin_shufflevector(r[c], r[c + 1], 0, 8, 1, 9, 4, 12, 5, 13);
          t[c + 1] = __builtin_shufflevector(r[c], r[c + 1], 2, 10, 3, 11, 6, 14, 7, 15);
        }
        for (int c = 0; c < 8; c += 4) {  // then pairs of pairs
          u[c] = __builtin_shufflevector(t[c], t[c + 2], 0, 1, 8, 9, 4, 5, 12, 13);
          u[c + 1] = __builtin_shufflevector(t[c], t[c + 2], 2, 3, 10, 11, 6, 7, 14, 15);
          u[c + 2] = __builtin_shufflevector(t[c + 1], t[c + 3], 0, 1, 8, 9, 4, 5, 12, 13);
          u[c + 3] = __builtin_shufflevector(t[c + 1], t[c + 3], 2, 3, 10, 11, 6, 7, 14, 15);
        }
        for (int c = 0; c < 4; ++c) {  // then the halves: row c and row c + 4 of the tile
          const Vector low = __builtin_shufflevector(u[c], u[c + 4], 0, 1, 2, 3, 8, 9, 10, 11);
          const Vector high = __builtin_shufflevector(u[c], u[c + 4], 4, 5, 6, 7, 12, 13, 14, 15);
          __builtin_memcpy(rows + (i0 + c) * k + j0, &low, sizeof(Vector));
          __builtin_memcpy(rows + (i0 + c + 4) * k + j0, &high, sizeof(Vector));
        }
      }
      for (int64_t i = count8; i < count; ++i)
        for (int64_t j = j0; j < j0 + 8; ++j) __builtin_memcpy(rows + i * k + j, a + j * leading + first + i, 4);
    }
    for (int64_t j = k8; j < k; ++j)
      for (int64_t i = 0; i < count; ++i) __builtin_memcpy(rows + i * k + j, a + j * leading + first + i, 4);
  }
};

}  // namespace insitu
