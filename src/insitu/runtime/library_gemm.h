// Dense f32 compute on a library made for it (issue 9): oneDNN's sgemm and convolution
// primitive, which pick their kernels for the CPU they run on (AVX-512, AVX2, ...) at run time,
// and insitu's own matrix-vector loops. The dot kernel (dot_kernels.cc) and the convolution
// kernel (convolution_kernels.cc) call them; library_gemm.cc and library_convolution.cc are the
// only files that call the library.
//
// Why oneDNN (bench/gemm_libraries_bench.cc, every Debian candidate in one run; figures in
// bench/README.md): on this 2-core AVX-512 machine it was the fastest at 1024^3 (215-219
// GFLOP/s) and within 3% of the fastest at 2048^3, out of the box and single-threaded on
// insitu's pool; OpenBLAS 0.3.21 and serial BLIS came within 10%, threaded BLIS ran at half
// speed, Eigen at 160. oneDNN dispatches on CPU features at run time (OpenBLAS picks its kernels
// by CPU model: it called this AMD EPYC a "Cooperlake"), and its convolution primitive
// (LibraryConvolution below) runs the common convolutions faster than patches + GEMM.
//
// Threading stays insitu's: the library runs single-threaded on each pool thread (its OpenMP
// runtime is told one thread for the call and restored after, so no OpenMP team is started and
// none is left spinning next to the pool's workers), over a static split of the batches and the
// result's columns. The split depends on the pool's thread count only, never on timing.
//
// Numbers: a library GEMM sums each result element's K products in an order of its own (with
// FMAs), not the evaluator's sequential f32 chain, so it is not bit-identical to it. Any order
// of a K-term f32 sum is within K * 2^-24 * sum_k |a_k * b_k| of the exact sum, so two orders
// differ by at most K * 2^-23 * sum_k |a_k * b_k|: that is the tolerance the tests use
// (tests/runtime/dot_kernels_test.cc, program_kernels_test.cc). The kernels keep their own
// exact loops for products smaller than kLibraryGemmMinimumWork, where a library call costs
// more than it saves, and for operands the library cannot read in place.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "insitu/runtime/thread_pool.h"

namespace insitu::kernels {

// Products of at least this many multiply-adds (batch * M * N * K) go to the library.
inline constexpr int64_t kLibraryGemmMinimumWork = int64_t{1} << 16;

// True when the runtime was built with a GEMM library (INSITU_HAVE_ONEDNN).
bool library_gemm_available();

// How one operand matrix (rows x columns) sits in memory: element (i, j) at
// data[i * row_stride + j * column_stride], one of the strides unit.
struct GemmOperand {
  bool transposed = false;  // stored column-major: (i, j) at j * leading + i
  int64_t leading = 0;      // BLAS's leading dimension
  int64_t row_stride = 0, column_stride = 0;
};

// The operand whose element (i, j) sits at row_offsets[i] + column_offsets[j], or nullopt when
// either list is not evenly spaced from 0 or the library cannot read the matrix in place
// (neither stride unit, or rows and columns overlapping).
std::optional<GemmOperand> gemm_operand(std::span<const int64_t> row_offsets, std::span<const int64_t> column_offsets);

// c (m x n, row-major, row i at c + i * ldc) = a (m x k) x b (k x n), or c += a x b when
// `accumulate`, on the calling thread alone. Pre: library_gemm_available(); ldc >= n; the
// layouts fit the buffers.
void gemm_on_this_thread(int64_t m, int64_t n, int64_t k, const float* a, const GemmOperand& a_layout, const float* b,
                         const GemmOperand& b_layout, float* c, int64_t ldc, bool accumulate = false);

// out[b] = lhs[b] x rhs[b] for each batch b (lhs at lhs + lhs_batch[b], an m x k matrix as
// `lhs_layout` says; rhs at rhs + rhs_batch[b], k x n; out row-major m x n, row i at
// out + i * ldc, ldc 0 meaning n, batches m * ldc apart), or out[b] += lhs[b] x rhs[b] when
// `accumulate` (the old value one more term of the library's sum), split over the pool by
// batches and column (or row) blocks; a long contraction (k at least 4x the longer of m and n,
// two chunks or more) by chunks of k, whose products are added in chunk order (the chunks
// depend on k alone, not on the threads). Pre: library_gemm_available(); ldc 0 or >= n; the offsets and
// layouts fit the buffers.
struct GemmProblem {
  int64_t m = 0, n = 0, k = 0;
  GemmOperand lhs_layout, rhs_layout;
  std::vector<int64_t> lhs_batch, rhs_batch;  // element offsets, one per batch
};
void library_gemm(const GemmProblem& problem, const float* lhs, const float* rhs, float* out, ThreadPool& pool,
                  int64_t ldc = 0, bool accumulate = false);

// A convolution on the library's own convolution primitive (oneDNN's, with its weights in the
// primitive's preferred blocked format, reordered from the caller's per call). Dimensions are
// the library's order: input {N, C, spatial...}, kernel {O, I, spatial...}, output {N, O,
// spatial...}; strides are element strides in the caller's buffers, any layout. Like the GEMMs
// it runs single-threaded on each pool thread (no OpenMP team left spinning beside the pool):
// the batch is cut into `batch_chunks` slices, a number fixed at create so that results do not
// depend on the thread count of a call.
struct LibraryConvolutionSpec {
  std::vector<int64_t> input_dims, input_strides;
  std::vector<int64_t> kernel_dims, kernel_strides;
  std::vector<int64_t> output_dims, output_strides;
  std::vector<int64_t> window_strides, dilations, padding_low, padding_high;  // per spatial dimension
  int64_t batch_chunks = 1;
};
class LibraryConvolution {
 public:
  // The primitive, or null when the library has none for this problem, or only a reference
  // (slow) one, or the build has no library: the caller then runs its own path.
  static std::shared_ptr<const LibraryConvolution> create(const LibraryConvolutionSpec& spec);
  ~LibraryConvolution();
  LibraryConvolution(const LibraryConvolution&) = delete;
  LibraryConvolution& operator=(const LibraryConvolution&) = delete;
  // output = convolution(input, kernel), on the pool's threads. Safe to call concurrently.
  void run(const float* input, const float* kernel, float* output, ThreadPool& pool) const;
  const std::string& implementation() const { return implementation_; }
  struct Handles;  // the library's objects (library_convolution.cc)

 private:
  LibraryConvolution() = default;
  std::unique_ptr<Handles> handles_;
  std::string implementation_;
};

}  // namespace insitu::kernels
