// f32 row folds of the reduce kernels at this CPU's vector width (reduce_rows_f32.h).
#include "insitu/runtime/reduce_rows_f32.h"

#include <cmath>
#include <cstring>
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#endif

#include "insitu/runtime/cpu_level.h"
#include "insitu/runtime/element_compute.h"

// The vector helpers below are always inlined into their per-level variants, so no vector
// crosses a call boundary: GCC's note that their ABI would change with AVX does not apply.
#pragma GCC diagnostic ignored "-Wpsabi"
// GCC 12's _mm512_cvtps_pd starts from _mm512_undefined_pd(), which it then calls maybe
// uninitialized (a false report in its own header).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace insitu::kernels {
namespace {

using F8 = float __attribute__((vector_size(32)));
using D8 = double __attribute__((vector_size(64)));
using I8 = int32_t __attribute__((vector_size(32)));

// Columns i..i+7 of rows[0..7], transposed: r[j] holds column i + j, lane k row k. Each register
// starts as two 128-bit loads, rows k and k + 4 (the second an insert from memory, off the
// shuffle port), so only the 4 x 4 transposes within 128-bit lanes shuffle: 16 shuffles for the
// 64 floats where loading rows whole and transposing 8 x 8 took 24 (the row sums ran on the
// shuffle port, with the conversions to double).
[[gnu::always_inline]] inline void load_transposed8(const float* const* rows, int64_t i, F8* r) {
  constexpr I8 kLow = {0, 8, 1, 9, 4, 12, 5, 13}, kHigh = {2, 10, 3, 11, 6, 14, 7, 15};
  constexpr I8 kPairLow = {0, 1, 8, 9, 4, 5, 12, 13}, kPairHigh = {2, 3, 10, 11, 6, 7, 14, 15};
  for (int half = 0; half < 2; ++half) {  // columns 0-3, then 4-7
    F8 t[4];
    for (int k = 0; k < 4; ++k) {
      std::memcpy(&t[k], rows[k] + i + 4 * half, 16);
      std::memcpy(reinterpret_cast<char*>(&t[k]) + 16, rows[k + 4] + i + 4 * half, 16);
    }
    const F8 a0 = __builtin_shuffle(t[0], t[1], kLow), a1 = __builtin_shuffle(t[0], t[1], kHigh);
    const F8 a2 = __builtin_shuffle(t[2], t[3], kLow), a3 = __builtin_shuffle(t[2], t[3], kHigh);
    r[4 * half] = __builtin_shuffle(a0, a2, kPairLow);
    r[4 * half + 1] = __builtin_shuffle(a0, a2, kPairHigh);
    r[4 * half + 2] = __builtin_shuffle(a1, a3, kPairLow);
    r[4 * half + 3] = __builtin_shuffle(a1, a3, kPairHigh);
  }
}

// 16 rows as two transposed 8 x 8 tiles per 8 columns: each column one double add per tile,
// each row's adds in its own order. The tail columns add element by element, in order. (AVX2
// from GCC's generic vectors; AVX-512 below in intrinsics, where GCC 12 splits the generic
// 8-float to 8-double conversion in four.)
struct SumRows {
  [[gnu::always_inline]] static inline void run(const float* const* rows, int64_t n, double* sums) {
    D8 low, high;
    for (int k = 0; k < 8; ++k) {
      low[k] = sums[k];
      high[k] = sums[8 + k];
    }
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
      F8 a[8], b[8];
      load_transposed8(rows, i, a);
      load_transposed8(rows + 8, i, b);
      for (int j = 0; j < 8; ++j) {
        low += __builtin_convertvector(a[j], D8);
        high += __builtin_convertvector(b[j], D8);
      }
    }
    for (; i < n; ++i) {
      for (int k = 0; k < 8; ++k) {
        low[k] += static_cast<double>(rows[k][i]);
        high[k] += static_cast<double>(rows[8 + k][i]);
      }
    }
    for (int k = 0; k < 8; ++k) {
      sums[k] = low[k];
      sums[8 + k] = high[k];
    }
  }
};

#if defined(__x86_64__) && defined(__GNUC__)
#define INSITU_AVX512 __attribute__((target("avx512f")))

// load_transposed8 in intrinsics (the insert folds the second load).
INSITU_AVX512 [[gnu::always_inline]] inline void load_transposed8_intrinsics(const float* const* rows, int64_t i,
                                                                           __m256* r) {
  for (int half = 0; half < 2; ++half) {
    __m256 t[4];
    for (int k = 0; k < 4; ++k)
      t[k] = _mm256_insertf128_ps(_mm256_castps128_ps256(_mm_loadu_ps(rows[k] + i + 4 * half)),
                                  _mm_loadu_ps(rows[k + 4] + i + 4 * half), 1);
    const __m256 a0 = _mm256_unpacklo_ps(t[0], t[1]), a1 = _mm256_unpackhi_ps(t[0], t[1]);
    const __m256 a2 = _mm256_unpacklo_ps(t[2], t[3]), a3 = _mm256_unpackhi_ps(t[2], t[3]);
    r[4 * half] = _mm256_shuffle_ps(a0, a2, 0x44);
    r[4 * half + 1] = _mm256_shuffle_ps(a0, a2, 0xee);
    r[4 * half + 2] = _mm256_shuffle_ps(a1, a3, 0x44);
    r[4 * half + 3] = _mm256_shuffle_ps(a1, a3, 0xee);
  }
}

INSITU_AVX512 void sum_rows_avx512(const float* const* rows, int64_t n, double* sums) {
  __m512d low = _mm512_loadu_pd(sums), high = _mm512_loadu_pd(sums + 8);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m256 a[8], b[8];
    load_transposed8_intrinsics(rows, i, a);
    load_transposed8_intrinsics(rows + 8, i, b);
    for (int j = 0; j < 8; ++j) {
      low = _mm512_add_pd(low, _mm512_cvtps_pd(a[j]));
      high = _mm512_add_pd(high, _mm512_cvtps_pd(b[j]));
    }
  }
  _mm512_storeu_pd(sums, low);
  _mm512_storeu_pd(sums + 8, high);
  for (; i < n; ++i)
    for (int k = 0; k < kSummedRows; ++k) sums[k] += static_cast<double>(rows[k][i]);
}
#undef INSITU_AVX512
#endif

// f32 and u32 vectors of kBytes (GCC takes no dependent vector_size: one specialization each).
template <int kBytes>
struct Vectors;
template <>
struct Vectors<16> {
  using Float = float __attribute__((vector_size(16)));
  using Bits = uint32_t __attribute__((vector_size(16)));
};
template <>
struct Vectors<32> {
  using Float = float __attribute__((vector_size(32)));
  using Bits = uint32_t __attribute__((vector_size(32)));
};
template <>
struct Vectors<64> {
  using Float = float __attribute__((vector_size(64)));
  using Bits = uint32_t __attribute__((vector_size(64)));
};

// A run's lanes as MaxOrMinRun keeps them: the max (min), the sum, the least flipped bits.
// to_four() folds the halves together (max or min, sum, unsigned min) down to 16 bytes.
template <bool kMaximum, int kBytes>
struct Lanes {
  typename Vectors<kBytes>::Float acc, poison;
  typename Vectors<kBytes>::Bits zero;

  [[gnu::always_inline]] inline Lanes<kMaximum, 16> to_four() const {
    if constexpr (kBytes == 16) {
      return *this;
    } else {
      using Float = typename Vectors<kBytes / 2>::Float;
      using Bits = typename Vectors<kBytes / 2>::Bits;
      constexpr size_t kHalf = kBytes / 2;
      Float acc_low, acc_high, poison_low, poison_high;
      Bits zero_low, zero_high;
      std::memcpy(&acc_low, &acc, kHalf);
      std::memcpy(&acc_high, reinterpret_cast<const char*>(&acc) + kHalf, kHalf);
      std::memcpy(&poison_low, &poison, kHalf);
      std::memcpy(&poison_high, reinterpret_cast<const char*>(&poison) + kHalf, kHalf);
      std::memcpy(&zero_low, &zero, kHalf);
      std::memcpy(&zero_high, reinterpret_cast<const char*>(&zero) + kHalf, kHalf);
      Lanes<kMaximum, kBytes / 2> half;
      if constexpr (kMaximum) half.acc = acc_low < acc_high ? acc_high : acc_low;
      else half.acc = acc_high < acc_low ? acc_high : acc_low;
      half.poison = poison_low + poison_high;
      half.zero = zero_low < zero_high ? zero_low : zero_high;
      return half.to_four();
    }
  }
};

// Without NaN the in-order max (min) fold's value does not depend on the order but for the
// sign of a zero result, which is +0 (max) or -0 (min) when any element is that zero. So the run
// folds in four accumulators of kBytes-wide vectors (the in-order fold is a chain of dependent
// compare-selects), `poison` sums the elements to see a NaN (a NaN read, or infinities of both
// signs: nullopt, the caller folds in order), and `zero` keeps the least of the elements' bits
// with the winning zero's flipped to 0 (0 at the end: that zero was read). The lanes, that zero
// and the tail fold in order at the end. (Only selects and arithmetic on the vectors: GCC
// lowers a 64-byte compare's result kept as a vector element by element.)
template <bool kMaximum, int kBytes>
struct MaxOrMinRun {
  using Vec = typename Vectors<kBytes>::Float;
  using Bits = typename Vectors<kBytes>::Bits;
  static constexpr int64_t kWidth = kBytes / 4;
  static constexpr uint32_t kWinningZero = kMaximum ? 0u : 0x80000000u;

  // the least of `least` and x's bits with the winning zero's flipped to 0
  [[gnu::always_inline]] static inline Bits note_zero(Bits least, Vec x) {
    const Bits flipped = __builtin_bit_cast(Bits, x) ^ kWinningZero;
    return flipped < least ? flipped : least;
  }

  [[gnu::always_inline]] static inline Vec take(Vec a, Vec x) {
    if constexpr (kMaximum) return a < x ? x : a;
    else return x < a ? x : a;
  }

  [[gnu::always_inline]] static inline void run(float init, const float* run, int64_t count,
                                                std::optional<float>* result) {
    auto fold = [](float acc, float x) { return kMaximum ? maximum_value(acc, x) : minimum_value(acc, x); };
    *result = std::nullopt;
    if (count < kWidth) return;
    Vec acc, poison = {};
    Bits zero = Bits{} + 1u, zero1 = zero;
    std::memcpy(&acc, run, sizeof(Vec));
    Vec acc1 = acc, acc2 = acc, acc3 = acc;
    int64_t i = 0;
    for (; i + 4 * kWidth <= count; i += 4 * kWidth) {
      Vec x0, x1, x2, x3;
      std::memcpy(&x0, run + i, sizeof(Vec));
      std::memcpy(&x1, run + i + kWidth, sizeof(Vec));
      std::memcpy(&x2, run + i + 2 * kWidth, sizeof(Vec));
      std::memcpy(&x3, run + i + 3 * kWidth, sizeof(Vec));
      poison += (x0 + x1) + (x2 + x3);
      zero = note_zero(note_zero(zero, x0), x1);
      zero1 = note_zero(note_zero(zero1, x2), x3);
      acc = take(acc, x0);
      acc1 = take(acc1, x1);
      acc2 = take(acc2, x2);
      acc3 = take(acc3, x3);
    }
    acc = take(take(acc, acc1), take(acc2, acc3));
    for (; i + kWidth <= count; i += kWidth) {
      Vec x;
      std::memcpy(&x, run + i, sizeof(Vec));
      poison += x;
      zero = note_zero(zero, x);
      acc = take(acc, x);
    }
    // down to four lanes in vectors (a short row spent most of its time folding 16 lanes)
    const Lanes<kMaximum, 16> four = Lanes<kMaximum, kBytes>{acc, poison, zero < zero1 ? zero : zero1}.to_four();
    bool saw_zero = false;
    for (int64_t lane = 0; lane < 4; ++lane) {
      if (four.poison[lane] != four.poison[lane]) return;
      saw_zero |= four.zero[lane] == 0;
    }
    float value = init;  // a NaN init stays: maximum_value and minimum_value return a NaN operand
    for (int64_t lane = 0; lane < 4; ++lane) value = fold(value, four.acc[lane]);
    if (saw_zero) value = fold(value, kMaximum ? 0.0f : -0.0f);
    for (; i < count; ++i) {
      if (std::isnan(run[i])) return;
      value = fold(value, run[i]);
    }
    *result = value;
  }
};

template <bool kMaximum>
std::optional<float> max_or_min_at_cpu_level(float init, const float* run, int64_t count) {
  std::optional<float> result;
#if defined(__x86_64__) && defined(__GNUC__)
  switch (cpu_level()) {
    case CpuLevel::kAvx512: run_avx512<MaxOrMinRun<kMaximum, 64>>(init, run, count, &result); return result;
    case CpuLevel::kAvx2Fma: run_avx2_fma<MaxOrMinRun<kMaximum, 32>>(init, run, count, &result); return result;
    case CpuLevel::kBaseline: break;
  }
#endif
  MaxOrMinRun<kMaximum, 16>::run(init, run, count, &result);  // SSE2's width
  return result;
}

}  // namespace

void sum_rows_f32(const float* const* rows, int64_t n, double* sums) {
#if defined(__x86_64__) && defined(__GNUC__)
  switch (cpu_level()) {
    case CpuLevel::kAvx512: return sum_rows_avx512(rows, n, sums);
    case CpuLevel::kAvx2Fma: return run_avx2_fma<SumRows>(rows, n, sums);
    case CpuLevel::kBaseline: break;
  }
#endif
  // SSE2 has no shuffles across 8 floats: the rows side by side, element by element
  for (int64_t i = 0; i < n; ++i)
    for (int64_t k = 0; k < kSummedRows; ++k) sums[k] += static_cast<double>(rows[k][i]);
}

std::optional<float> max_or_min_run_f32(bool maximum, float init, const float* run, int64_t count) {
  return maximum ? max_or_min_at_cpu_level<true>(init, run, count) : max_or_min_at_cpu_level<false>(init, run, count);
}

}  // namespace insitu::kernels
