// The typed-FFI LAPACK custom calls that jax.numpy.linalg lowers to on CPU
// (`custom_call_target="lapack_<t><op>_ffi"`, t = s or d): what each computes, planned once per
// call site and run one matrix of the batch at a time, by the reference evaluator (lapack.cc)
// and the runtime (runtime/lapack_kernels.cc) alike, so the two agree bit for bit.
//
// Values are logical row-major matrices in the last two dimensions (jax asks for column-major
// layouts; insitu's values do not depend on layouts). Attributes come from backend_config
// (`{uplo = 76 : ui8, ...}`, ASCII codes). Arithmetic is in double, rounded once when stored.
//   potrf(a) -> (factor, info)        uplo L|U: the Cholesky factor in that triangle; the other
//       triangle keeps a's values. info = 0, or j when the leading minor of order j is not
//       positive definite (a pivot <= 0 or NaN; the factor is then unspecified: jax replaces it
//       with NaN).
//   trsm(a, b[, alpha]) -> x          side, uplo, trans_x (N|T|C), diag (N|U): op(a) x = alpha b
//       (side L) or x op(a) = alpha b; only a's `uplo` triangle is read.
//   getrf(a) -> (lu, ipiv, info)      LU with partial pivoting (the first largest |pivot|, as
//       LAPACK's i?amax): unit-lower L below the diagonal, U on and above it; ipiv 1-based;
//       info = j for the first exactly zero U(j, j) (1-based), else 0.
//   geqrf(a) -> (qr, tau)             Householder QR with LAPACK's reflectors (beta = -sign(alpha)
//       * norm, v(0) = 1): R on and above the diagonal, the reflectors below.
//   orgqr(a, tau) -> q                the first n columns of H(0) ... H(k-1).
//   syevd(a) -> (v, w, info)          mode V|N, uplo: eigenvalues ascending (w) and orthonormal
//       eigenvectors as v's columns, by cyclic Jacobi rotations. An eigenvector's sign (and the
//       basis of a repeated eigenvalue) is not fixed by the problem: insitu makes each vector's
//       largest component positive, which LAPACK does not promise, so a program whose result
//       depends on the sign may differ from XLA:CPU's (jnp.linalg.eigh's values never do).
//       With mode N, v holds the eigenvectors all the same (LAPACK leaves it unspecified).
//   gesdd(a) -> (a', s, u, vt, info)  mode N|S|A: singular values descending (s), by one-sided
//       Jacobi; u and vt (S: reduced; A: full, square a only), each singular pair's sign fixed
//       as syevd's. With mode N, u and vt are zeros; a' keeps a (LAPACK's a' and, for
//       N, its u and vt are unspecified). info = 0.
// c and z (complex) targets are a located error for now.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include "insitu/ir/instruction.h"

namespace insitu::eval {

enum class LapackRoutine : uint8_t { kPotrf, kTrsm, kGetrf, kGeqrf, kOrgqr, kSyevd, kGesdd };

// One call site, checked against its operand and result shapes.
struct LapackCall {
  LapackRoutine routine = LapackRoutine::kPotrf;
  PrimitiveType type = PrimitiveType::kF32;  // f32 or f64
  int64_t batch = 1;  // matrices per call (the product of the leading dimensions)
  int64_t m = 0;      // rows of the matrix the routine factors (b's rows for trsm)
  int64_t n = 0;      // its columns
  int64_t k = 0;      // trsm: the order of a; orgqr: reflectors; gesdd: u's columns (vt's rows)
  char uplo = 'L', side = 'L', trans = 'N', diag = 'N', mode = 'V';
  bool alpha = false;  // trsm with a scalar alpha operand
  int64_t u_size = 0, vt_size = 0;  // gesdd mode N: elements of one u and one vt (zeros)
};

// Whether `target` names one of the routines above (any type letter).
bool is_lapack_target(std::string_view target);

// Plans the call: a located error for a bad target, type, attribute or shape. `outputs` are
// the result's array leaves in order.
StatusOr<LapackCall> plan_lapack_call(const Instruction& call, std::span<const Shape* const> operands,
                                      std::span<const Shape* const> outputs);

// Runs matrix `index` of the batch: `operands` and `outputs` are the leaves' first bytes
// (row-major, one batch after another). An output may be the memory of the operand aliased to
// it (each matrix is read whole before anything is written).
void run_lapack_matrix(const LapackCall& call, int64_t index, std::span<const uint8_t* const> operands,
                       std::span<uint8_t* const> outputs);

}  // namespace insitu::eval
