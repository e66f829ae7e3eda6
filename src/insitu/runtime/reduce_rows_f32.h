// The f32 row folds of the reduce kernels (reduce_kernels.cc), compiled per vector width and
// run at this CPU's (cpu_level.h). Each gives the reference evaluator's value bit for bit
// (src/insitu/evaluator/reduce.cc): a sum is init + x0 + x1 + ... in double, in that order,
// rounded once; a max or min is its in-order fold.
//
// Why: a row of a softmax or a layer norm is a chain of dependent adds; folding 16 rows side by
// side (two 8-row tiles transposed in registers, one double vector add per column) keeps the
// adds in flight without reordering any row's sum. Before, 8 rows were read element by element
// into SSE registers: 1.5-2.6 ms for the row sum of a 4096 x 1024 block loop on one thread.
#pragma once

#include <cstdint>
#include <optional>

namespace insitu::kernels {

// Rows read side by side by sum_rows_f32.
inline constexpr int64_t kSummedRows = 16;

// sums[k] += rows[k][0], then rows[k][1], ... rows[k][n - 1], in double, for k < kSummedRows
// (a row of several runs takes one call per run).
void sum_rows_f32(const float* const* rows, int64_t n, double* sums);

// The fold of init and run[0..count) under maximum (or minimum) as maximum_value(acc, x) folds
// it in order, or nullopt where the order could matter or the run is short: a NaN in the run
// (or infinities of both signs), or fewer elements than a vector. The caller then folds in
// order.
std::optional<float> max_or_min_run_f32(bool maximum, float init, const float* run, int64_t count);

}  // namespace insitu::kernels
