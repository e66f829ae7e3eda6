// exp, expm1, log, tanh, logistic and erf of f32 values as insitu computes them, in the evaluator
// (the oracle) and in every runtime kernel: one definition, so the two agree bit for bit.
//
// Why not std::exp: glibc's expf/logf/tanhf/erff are scalar calls (15-65 ns per element measured
// here), so a softmax or a GELU ran 20-100x below memory bandwidth, and a vectorized libm (libmvec)
// rounds differently from the scalar one the evaluator would call. These functions are
// branch-free (selects, not jumps) and use only +, -, *, /, fma, float<->int conversions and bit
// operations, so GCC vectorizes a loop over them; the same operations in the same order give
// the same bits in a vector lane as in a scalar call. The exponential's argument reduction and
// polynomial are explicit fused multiply-adds (std::fma: exactly rounded wherever it runs, one
// instruction in the runtime's AVX2 and AVX-512 variants, libm's fmaf in the x86-64 baseline
// the evaluator is built for: the same bits, and a chain half as long: exp of f32[4096,1024]
// 1.4x faster). Nothing else may be contracted into an FMA differently in the two
// (CMakeLists.txt compiles the evaluator and the runtime with -ffp-contract=off).
//
// Accuracy (tests/evaluator/float_functions_test.cc measures it against double precision over
// a sweep of every 251st bit pattern and the special values): exp <= 1 ulp, expm1 <= 2 ulp,
// log <= 1 ulp, tanh <= 3 ulp, logistic <= 3 ulp, erf <= 2 ulp (1.03 over every float below 5,
// measured once; the test sweeps every float of [0.5, 4) too). Special values follow IEEE/C:
// NaN -> NaN, exp(-inf) = 0, exp(+inf) = inf, log(0) = -inf, log(x < 0) = NaN, tanh(+-inf) =
// +-1, erf(+-inf) = +-1, signed zeros kept. f64 and complex values use the C library, as
// before (not vectorized).
//
// Method, textbook: exp reduces x = k ln2 + r with |r| <= ln2/2 (Cody-Waite: ln2 split in a
// short head times k exactly plus a tail), e^r by its Taylor series to r^8 (truncation far
// below an ulp), 2^k scaled in two halves so that subnormal results round once. expm1 evaluates
// 2^k expm1(r) + (2^k - 1) (no cancellation near 0). log writes x = 2^e m with m in
// [sqrt(1/2), sqrt(2)), log m = 2 atanh(s), s = (m-1)/(m+1), to s^9. tanh(x) = e/(e+2) with
// e = expm1(2|x|), the sign copied back. logistic(x) = 1/(1 + e^-x), written as e^x/(1 + e^x)
// for negative x so that it never overflows.
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>
#include <type_traits>

namespace insitu {
namespace float_functions {

inline float from_bits(uint32_t bits) { return std::bit_cast<float>(bits); }
inline uint32_t to_bits(float value) { return std::bit_cast<uint32_t>(value); }

// 2^k for k in [-126, 127] (a normal float).
inline float power_of_two(int32_t k) { return from_bits(static_cast<uint32_t>(k + 127) << 23); }

// Written as `a > b ? a : b` (x86's maxps exactly): a NaN `a` gives `b`.
inline float max_of(float a, float b) { return a > b ? a : b; }
inline float min_of(float a, float b) { return a < b ? a : b; }

constexpr float kLog2e = 1.44269504088896341f;
constexpr float kLn2Head = 0.693359375f;            // 355/512: k * head is exact for |k| < 2^15
constexpr float kLn2Tail = -2.12194440054690583e-4f;  // ln 2 - head
constexpr float kRoundMagic = 12582912.0f;         // 1.5 * 2^23: adding it rounds to an integer

// k = round(x / ln2) (as a float and an integer) and r = x - k ln2, for |x| < 2^21.
struct Reduced {
  float kf;
  int32_t k;
  float r;
};
inline Reduced reduce_by_ln2(float x) {
  const float kf = std::fma(x, kLog2e, kRoundMagic) - kRoundMagic;
  return {kf, static_cast<int32_t>(kf), std::fma(-kf, kLn2Tail, std::fma(-kf, kLn2Head, x))};
}

// e^r - 1 - r for |r| <= ln2/2 (+ rounding), Taylor to r^8, Horner in fused multiply-adds.
inline float expm1_tail(float r) {
  const float p = std::fma(
      r, std::fma(r, std::fma(r, std::fma(r, std::fma(r, 1.0f / 40320, 1.0f / 5040), 1.0f / 720), 1.0f / 120), 1.0f / 24),
      1.0f / 6);
  return r * r * std::fma(r, p, 0.5f);
}

// e^r of a reduced argument (|r| <= ln2/2): the factor exp and exp_of_normal scale by 2^k.
inline float exp_of_remainder(const Reduced& reduced) { return 1.0f + (reduced.r + expm1_tail(reduced.r)); }

// e^x for x in [-87, 88], where e^x is a normal float: exp's bits without its clamps and
// special cases (er 2^k is exact here as exp's er 2^half 2^(k-half) is). Pre: x in that range.
inline float exp_of_normal(float x) {
  const Reduced reduced = reduce_by_ln2(x);
  return exp_of_remainder(reduced) * power_of_two(reduced.k);
}

inline float exp(float x) {
  // At or below -104 (and for a NaN, put back at the end) the result rounds to 0; it is chosen,
  // not computed: the scaling below would underflow there, and a multiply whose result is
  // subnormal takes a microcode assist on x86 (about 100 cycles a vector): a causal softmax's
  // exp(-inf - max) over half its elements ran 7.5x slower than the other half. Above 89 the
  // result overflows to inf. So k stays in [-150, 129].
  const bool zero = !(x > -104.0f);
  const float clamped = zero ? 0.0f : min_of(x, 89.0f);
  const Reduced reduced = reduce_by_ln2(clamped);
  const float er = exp_of_remainder(reduced);
  const int32_t half = reduced.k >> 1;  // both halves in [-75, 65]: normal scales
  const float result = zero ? 0.0f : er * power_of_two(half) * power_of_two(reduced.k - half);
  return x != x ? x : result;
}

// expm1 of min(max(x, -30), 88) (k in [-44, 127]); a NaN gives expm1(-30) = -1.
inline float expm1_clamped(float x) {
  const float clamped = min_of(max_of(x, -30.0f), 88.0f);
  const Reduced reduced = reduce_by_ln2(clamped);
  const float em = reduced.r + expm1_tail(reduced.r);  // e^r - 1, no cancellation
  const float scale = power_of_two(reduced.k);
  return scale * em + (scale - 1.0f);  // 2^k (e^r - 1) + (2^k - 1); k = 0: em
}

inline float expm1(float x) {
  const float large = x > 88.0f ? exp(x) : expm1_clamped(x);  // beyond 88, expm1 = exp
  return x != x || x == 0.0f ? x : large;                     // NaN, and -0 kept
}

inline float log(float x) {
  // subnormal (and zero, negative) inputs scaled by 2^23 first; specials chosen at the end
  const bool tiny = x < 1.17549435e-38f;
  const float scaled = tiny ? x * 8388608.0f : x;
  const uint32_t bits = to_bits(scaled);
  int32_t e = static_cast<int32_t>(bits >> 23) - 127 - (tiny ? 23 : 0);
  float m = from_bits((bits & 0x007fffffu) | 0x3f800000u);  // [1, 2)
  const bool high = m > 1.41421356f;
  m = high ? m * 0.5f : m;  // [sqrt(1/2), sqrt(2)]
  e += high ? 1 : 0;
  const float f = m - 1.0f;  // exact
  const float s = f / (2.0f + f);
  const float s2 = s * s;
  // 2 atanh(s) = 2s + s R with R = 2s^2/3 + 2s^4/5 + ...; 2s = f - s f, so log m = f - s (f - R)
  const float r = s2 * (2.0f / 3 + s2 * (2.0f / 5 + s2 * (2.0f / 7 + s2 * (2.0f / 9))));
  const float ef = static_cast<float>(e);
  const float result = ef * kLn2Head + ((f - s * (f - r)) + ef * kLn2Tail);
  const float inf = from_bits(0x7f800000u);
  float special = x == 0.0f ? -inf : result;
  special = x < 0.0f ? from_bits(0x7fc00000u) : special;
  special = x == inf ? inf : special;
  return x != x ? x : special;
}

inline float tanh(float x) {
  const uint32_t sign = to_bits(x) & 0x80000000u;
  // tanh(9) rounds to 1; a NaN becomes 9 here and is put back at the end
  const float magnitude = min_of(from_bits(to_bits(x) & 0x7fffffffu), 9.0f);
  const float e = expm1_clamped(2.0f * magnitude);
  const float t = e / (e + 2.0f);
  const float result = from_bits(to_bits(t) | sign);
  return x != x ? x : result;
}

// 1/(1 + e^-x) for x >= 0, e^x/(1 + e^x) below: the exponential never overflows, so a very
// negative x keeps its tiny result instead of rounding 1/(1 + inf) to 0.
inline float logistic(float x) {
  const float e = exp(-from_bits(to_bits(x) & 0x7fffffffu));  // e^-|x| in (0, 1]
  const float r = 1.0f / (1.0f + e);
  return x < 0.0f ? e * r : r;
}

// erf(x) = x + x P(x^2) for |x| < 1; 1 - e^(-x^2 + S(|x|)) for 1 <= |x| < kErfOne, the sign
// copied back; +-1 beyond (where erf rounds to 1 in f32). P and S are least-squares fits with
// their weights refined towards the largest error (a Lawson iteration, on Chebyshev nodes,
// against 40-digit values): P of degree 6 in x^2 approximates erf(x)/x - 1 to 1.2e-9 relative,
// S of degree 8 in |x| - 2.5 approximates log(erfc(|x|)) + x^2 to 8.2e-9. -x^2 + S is one
// fused multiply-add, so the large-|x| argument is rounded once.
constexpr float kErfOne = 3.91920590f;  // the least f32 whose erf rounds to 1

inline float erf(float x) {
  const float t = x * x;
  const float p = std::fma(
      std::fma(std::fma(std::fma(std::fma(std::fma(7.853847637e-05f, t, -8.010189631e-04f), t, 5.188327283e-03f), t,
                                 -2.685381100e-02f),
                        t, 1.128358543e-01f),
               t, -3.761262596e-01f),
      t, 1.283791661e-01f);
  const float near_zero = std::fma(x, p, x);
  const float a = min_of(from_bits(to_bits(x) & 0x7fffffffu), kErfOne);  // a NaN becomes kErfOne
  const float u = a - 2.5f;
  float s = std::fma(1.632282419e-06f, u, -1.327803875e-05f);
  s = std::fma(s, u, 7.733140228e-05f);
  s = std::fma(s, u, -4.202475830e-04f);
  s = std::fma(s, u, 2.165226033e-03f);
  s = std::fma(s, u, -1.085842215e-02f);
  s = std::fma(s, u, 5.610634014e-02f);
  s = std::fma(s, u, -3.526807129e-01f);
  s = std::fma(s, u, -1.556815267e+00f);
  // -a^2 + s is in [-17.4, 0.001] for every a in [0, kErfOne] (s extrapolated below 1 too)
  const float magnitude = a < kErfOne ? 1.0f - exp_of_normal(std::fma(-a, a, s)) : 1.0f;
  const float far = from_bits(to_bits(magnitude) | (to_bits(x) & 0x80000000u));
  const float result = a < 1.0f ? near_zero : far;
  return x != x ? x : result;
}

}  // namespace float_functions

// The functions with_float_unary applies: insitu's own for f32 (f16/bf16 compute in f32), the
// C library's for f64 and complex values.
template <typename T>
inline T exp_of(T v) {
  if constexpr (std::is_same_v<T, float>) return float_functions::exp(v);
  else return std::exp(v);
}
template <typename T>
inline T expm1_of(T v) {
  if constexpr (std::is_same_v<T, float>) return float_functions::expm1(v);
  else return std::expm1(v);
}
template <typename T>
inline T log_of(T v) {
  if constexpr (std::is_same_v<T, float>) return float_functions::log(v);
  else return std::log(v);
}
template <typename T>
inline T tanh_of(T v) {
  if constexpr (std::is_same_v<T, float>) return float_functions::tanh(v);
  else return std::tanh(v);
}
template <typename T>
inline T erf_of(T v) {
  if constexpr (std::is_same_v<T, float>) return float_functions::erf(v);
  else return std::erf(v);
}
template <typename T>
inline T logistic_of(T v) {
  if constexpr (std::is_same_v<T, float>) return float_functions::logistic(v);
  else return T(1) / (T(1) + std::exp(-v));  // the evaluator's formula before f32 had its own
}

}  // namespace insitu
