// The linear-algebra ops (op family kLinalg): cholesky and triangular-solve, as XLA's
// operation semantics and its CPU expanders define them.
//
// Each op is one algorithm on one row-major matrix (or one matrix pair) of a batch, written
// here once: the reference evaluator (linalg.cc) runs it on Literals and the runtime's kernels
// (runtime/linalg_kernels.cc) on raw slices, so the two agree bit for bit. Arithmetic is in
// double for f32 and f64 (rounded once when stored); other element types are a located error.
//
//   cholesky(a), lower=B         a: [..., n, n]. Reads only a's lower (lower=true) or upper
//       triangle; returns L with a = L L^T in that triangle (U with a = U^T U for upper) and
//       zeros in the other one. A matrix whose factorization meets a negative or NaN pivot
//       comes back all NaN (XLA's expander does the same); lower defaults to false.
//   triangular-solve(a, b), left_side=B, lower=B, unit_diagonal=B, transpose_a=T
//       a: [..., k, k] triangular (only the `lower` triangle is read, and not its diagonal when
//       unit_diagonal), b: [..., m, n] with k = m (left_side) or n. Solves op(a) x = b
//       (left_side) or x op(a) = b, op(a) = a, a^T (TRANSPOSE) or a^H (ADJOINT, = a^T for reals);
//       the result has b's shape. transpose_a is required (NO_TRANSPOSE, TRANSPOSE or ADJOINT),
//       the booleans default to false, as in XLA.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <span>
#include <vector>

#include "insitu/ir/instruction.h"

namespace insitu::eval {

struct CholeskyOptions {
  bool lower = false;
};
enum class TransposeA : uint8_t { kNoTranspose, kTranspose, kAdjoint };
struct TriangularSolveOptions {
  bool left_side = false;
  bool lower = false;
  bool unit_diagonal = false;
  TransposeA transpose_a = TransposeA::kNoTranspose;
};

// A batch of matrices: `batch` of them, each a rows x columns block of b (or of a, for cholesky),
// `order` the side of the square matrix a.
struct MatrixBatch {
  int64_t batch = 0;
  int64_t order = 0;
  int64_t rows = 0;
  int64_t columns = 0;
};

// The instruction's attributes and shapes, checked: a located error for a bad value or shape.
StatusOr<CholeskyOptions> cholesky_options(const Instruction& instruction);
StatusOr<TriangularSolveOptions> triangular_solve_options(const Instruction& instruction);
// `operands`: the operand shapes; the result must be shape-compatible with what the op returns.
StatusOr<MatrixBatch> linalg_batch(const Instruction& instruction, std::span<const Shape* const> operands);

// The Cholesky factor of the lower triangle of w (n x n, row-major), in place, column by
// column; the upper triangle is not touched. Returns the first failing column, or -1. XLA's
// rule (lapack = false): a pivot whose square root is NaN fails (0 does not). LAPACK's rule:
// a pivot that is not > 0 fails, is stored as is, and the factorization stops there.
inline int64_t cholesky_lower(std::vector<double>& w, int64_t n, bool lapack) {
  for (int64_t j = 0; j < n; ++j) {
    double pivot = w[j * n + j];
    for (int64_t k = 0; k < j; ++k) pivot -= w[j * n + k] * w[j * n + k];
    if (lapack && !(pivot > 0)) {
      w[j * n + j] = pivot;
      return j;
    }
    const double root = std::sqrt(pivot);
    w[j * n + j] = root;
    for (int64_t i = j + 1; i < n; ++i) {
      double value = w[i * n + j];
      for (int64_t k = 0; k < j; ++k) value -= w[i * n + k] * w[j * n + k];
      w[i * n + j] = value / root;
    }
    if (std::isnan(root)) return j;  // the rest is NaN'd by the caller
  }
  return -1;
}

// One n x n matrix `a` into `out` (may not overlap).
template <typename T>
void cholesky_matrix(const T* a, T* out, int64_t n, CholeskyOptions options) {
  // w: the factor, lower triangle, row-major; a's upper triangle is read as its transpose.
  std::vector<double> w(static_cast<size_t>(n * n), 0.0);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j <= i; ++j)
      w[i * n + j] = static_cast<double>(options.lower ? a[i * n + j] : a[j * n + i]);
  const bool failed = cholesky_lower(w, n, /*lapack=*/false) >= 0;
  const double nan = std::numeric_limits<double>::quiet_NaN();
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j) {
      const bool kept = options.lower ? j <= i : i <= j;
      const double value = failed ? nan : !kept ? 0.0 : options.lower ? w[i * n + j] : w[j * n + i];
      out[i * n + j] = static_cast<T>(value);
    }
}

// One system: `a` k x k, `b` and `out` rows x columns (out may not overlap a or b).
template <typename T>
void triangular_solve_matrix(const T* a, const T* b, T* out, const MatrixBatch& shape,
                             TriangularSolveOptions options) {
  const int64_t k = shape.order;
  const bool transposed = options.transpose_a != TransposeA::kNoTranspose;
  // e: the matrix of the equivalent left-side system e y = c, dense (zeros off its triangle);
  // for the right side, x op(a) = b is op(a)^T x^T = b^T.
  std::vector<double> e(static_cast<size_t>(k * k), 0.0);
  for (int64_t i = 0; i < k; ++i)
    for (int64_t j = 0; j < k; ++j) {
      // e(i, j) = op(a)(i, j) (left) or op(a)(j, i) (right); op(a)(r, c) = a(r, c) or a(c, r)
      const bool swap = transposed != !options.left_side;
      const int64_t r = swap ? j : i, c = swap ? i : j;
      const bool stored = options.lower ? c <= r : r <= c;
      if (r == c) e[i * k + j] = options.unit_diagonal ? 1.0 : static_cast<double>(a[r * k + c]);
      else if (stored) e[i * k + j] = static_cast<double>(a[r * k + c]);
    }
  const bool forward = (options.lower != transposed) == options.left_side;  // e lower triangular
  // Systems: one per column of b (left side) or per row (right side), `k` unknowns each.
  const int64_t systems = options.left_side ? shape.columns : shape.rows;
  const int64_t step = options.left_side ? shape.columns : 1;       // between unknowns
  const int64_t first = options.left_side ? 1 : shape.columns;      // between systems
  std::vector<double> y(static_cast<size_t>(k));
  for (int64_t s = 0; s < systems; ++s) {
    for (int64_t i = 0; i < k; ++i) y[i] = static_cast<double>(b[s * first + i * step]);
    for (int64_t t = 0; t < k; ++t) {
      const int64_t i = forward ? t : k - 1 - t;
      double value = y[i];
      const int64_t begin = forward ? 0 : i + 1, end = forward ? i : k;  // the solved unknowns
      for (int64_t j = begin; j < end; ++j) value -= e[i * k + j] * y[j];
      y[i] = value / e[i * k + i];
    }
    for (int64_t i = 0; i < k; ++i) out[s * first + i * step] = static_cast<T>(y[i]);
  }
}

}  // namespace insitu::eval
