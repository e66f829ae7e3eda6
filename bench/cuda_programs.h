// The programs of the GPU benchmarks (issue 12, bench/cuda_bench.cc) as HLO text, at any size:
// the benchmark runs them at real size on a GPU, tests/cuda/device_memory_test.cc at small size
// on the emulated device against the reference evaluator.
#pragma once

#include <cstdint>
#include <string>

#include "insitu/support/str.h"

namespace insitu::bench {

// One decode step of attention over a KV cache: K and V caches f32[heads, length, dim], both
// donated (input_output_alias), take the new position's key and value in place; the query attends
// over every position (scores, softmax, weighted sum). It reads each cache once: the bytes it
// touches are about 2 * heads * length * dim * 4.
inline std::string decode_step_hlo(int64_t heads, int64_t length, int64_t dim) {
  const std::string cache = str_cat("f32[", heads, ",", length, ",", dim, "]");
  const std::string entry = str_cat("f32[", heads, ",1,", dim, "]");
  const std::string vector = str_cat("f32[", heads, ",", dim, "]");
  const std::string scores = str_cat("f32[", heads, ",", length, "]");
  const std::string row = str_cat("f32[", heads, "]");
  return str_cat(
      "HloModule decode_step, input_output_alias={ {0}: (0, {}, may-alias), {1}: (1, {}, may-alias) }\n\n",
      "max_f32 {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT m = f32[] maximum(a, b)\n}\n\n",
      "add_f32 {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT s = f32[] add(a, b)\n}\n\n",
      "ENTRY main {\n",
      "  k_cache = ", cache, " parameter(0)\n",
      "  v_cache = ", cache, " parameter(1)\n",
      "  new_k = ", entry, " parameter(2)\n",
      "  new_v = ", entry, " parameter(3)\n",
      "  query = ", vector, " parameter(4)\n",
      "  pos = s32[] parameter(5)\n",
      "  zero = s32[] constant(0)\n",
      "  keys = ", cache, " dynamic-update-slice(k_cache, new_k, zero, pos, zero)\n",
      "  values = ", cache, " dynamic-update-slice(v_cache, new_v, zero, pos, zero)\n",
      "  dots = ", scores, " dot(query, keys), lhs_batch_dims={0}, lhs_contracting_dims={1}, rhs_batch_dims={0}, "
      "rhs_contracting_dims={2}\n",
      "  lowest = f32[] constant(-inf)\n",
      "  largest = ", row, " reduce(dots, lowest), dimensions={1}, to_apply=max_f32\n",
      "  largest_b = ", scores, " broadcast(largest), dimensions={0}\n",
      "  shifted = ", scores, " subtract(dots, largest_b)\n",
      "  e = ", scores, " exponential(shifted)\n",
      "  nothing = f32[] constant(0)\n",
      "  total = ", row, " reduce(e, nothing), dimensions={1}, to_apply=add_f32\n",
      "  total_b = ", scores, " broadcast(total), dimensions={0}\n",
      "  weights = ", scores, " divide(e, total_b)\n",
      "  attended = ", vector, " dot(weights, values), lhs_batch_dims={0}, lhs_contracting_dims={1}, "
      "rhs_batch_dims={0}, rhs_contracting_dims={1}\n",
      "  ROOT out = (", cache, ", ", cache, ", ", vector, ") tuple(keys, values, attended)\n",
      "}\n");
}

// An elementwise chain, one loop fusion: reads `count` floats and writes as many; `donated`:
// x is donated to the result (input_output_alias), which is then written over it.
inline std::string elementwise_chain_hlo(int64_t count, bool donated = false) {
  const std::string array = str_cat("f32[", count, "]");
  return str_cat("HloModule chain", donated ? ", input_output_alias={ {}: (0, {}, may-alias) }" : "", "\n\nENTRY main {\n",
                 "  x = ", array, " parameter(0)\n",
                 "  half = f32[] constant(0.5)\n",
                 "  h = ", array, " broadcast(half), dimensions={}\n",
                 "  one = f32[] constant(1)\n",
                 "  o = ", array, " broadcast(one), dimensions={}\n",
                 "  scaled = ", array, " multiply(x, h)\n",
                 "  t = ", array, " tanh(scaled)\n",
                 "  ROOT y = ", array, " add(t, o)\n",
                 "}\n");
}

// C = A B, f32[n, n] each.
inline std::string matmul_hlo(int64_t n) {
  const std::string square = str_cat("f32[", n, ",", n, "]");
  return str_cat("HloModule matmul\n\nENTRY main {\n",
                 "  a = ", square, " parameter(0)\n",
                 "  b = ", square, " parameter(1)\n",
                 "  ROOT c = ", square, " dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n",
                 "}\n");
}

}  // namespace insitu::bench
