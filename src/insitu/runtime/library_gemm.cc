// Library GEMMs: operand planning, the one place that calls the library, the pool split.
#include "insitu/runtime/library_gemm.h"

#include <algorithm>

#include "insitu/support/check.h"

#ifdef INSITU_HAVE_ONEDNN
#include <omp.h>

#include <oneapi/dnnl/dnnl.h>
#endif

namespace insitu::kernels {

bool library_gemm_available() {
#ifdef INSITU_HAVE_ONEDNN
  return true;
#else
  return false;
#endif
}

namespace {

// The stride of evenly spaced offsets starting at 0 (0 for fewer than two), or nullopt.
std::optional<int64_t> even_stride(std::span<const int64_t> offsets) {
  if (offsets.empty() || offsets[0] != 0) return offsets.empty() ? std::optional<int64_t>(0) : std::nullopt;
  if (offsets.size() < 2) return 0;
  const int64_t stride = offsets[1];
  for (size_t i = 0; i < offsets.size(); ++i)
    if (offsets[i] != static_cast<int64_t>(i) * stride) return std::nullopt;
  return stride;
}

}  // namespace

std::optional<GemmOperand> gemm_operand(std::span<const int64_t> row_offsets, std::span<const int64_t> column_offsets) {
  const std::optional<int64_t> row = even_stride(row_offsets), column = even_stride(column_offsets);
  if (!row || !column) return std::nullopt;
  const int64_t rows = static_cast<int64_t>(row_offsets.size()), columns = static_cast<int64_t>(column_offsets.size());
  // A size-1 dimension has no stride to honour: give it the one BLAS wants.
  const int64_t row_stride = rows <= 1 ? std::max<int64_t>(columns, 1) : *row;
  const int64_t column_stride = columns <= 1 ? std::max<int64_t>(rows, 1) : *column;
  if (column_stride == 1 && row_stride >= std::max<int64_t>(columns, 1))
    return GemmOperand{false, row_stride, row_stride, column_stride};
  if (row_stride == 1 && column_stride >= std::max<int64_t>(rows, 1))
    return GemmOperand{true, column_stride, row_stride, column_stride};
  return std::nullopt;
}

namespace {

// Result columns go to the library in multiples of this (whole vector registers).
constexpr int64_t kColumnQuantum = 16;

#ifdef INSITU_HAVE_ONEDNN
// For one library call: the library runs on this thread alone, and the caller's own OpenMP
// setting (the calling thread may be an application's OpenMP thread) comes back.
class SingleThreadedLibrary {
 public:
  SingleThreadedLibrary() : saved_(omp_get_max_threads()) { omp_set_num_threads(1); }
  ~SingleThreadedLibrary() { omp_set_num_threads(saved_); }
  SingleThreadedLibrary(const SingleThreadedLibrary&) = delete;
  SingleThreadedLibrary& operator=(const SingleThreadedLibrary&) = delete;

 private:
  int saved_;
};
#endif

}  // namespace

void gemm_on_this_thread(int64_t m, int64_t n, int64_t k, const float* a, const GemmOperand& a_layout, const float* b,
                         const GemmOperand& b_layout, float* c, int64_t ldc) {
#ifdef INSITU_HAVE_ONEDNN
  if (m <= 0 || n <= 0) return;
  SingleThreadedLibrary single_threaded;
  const dnnl_status_t status = dnnl_sgemm(a_layout.transposed ? 'T' : 'N', b_layout.transposed ? 'T' : 'N', m, n, k,
                                          1.0f, a, a_layout.leading, b, b_layout.leading, 0.0f, c, ldc);
  INSITU_CHECK(status == dnnl_success) << "dnnl_sgemm refused a planned problem (status " << static_cast<int>(status)
                                       << ", m=" << m << " n=" << n << " k=" << k << ")";
#else
  (void)m, (void)n, (void)k, (void)a, (void)a_layout, (void)b, (void)b_layout, (void)c, (void)ldc;
  INSITU_UNREACHABLE("gemm_on_this_thread called in a build without a GEMM library");
#endif
}

void library_gemm(const GemmProblem& problem, const float* lhs, const float* rhs, float* out, ThreadPool& pool) {
  const int64_t batches = static_cast<int64_t>(problem.lhs_batch.size());
  const int64_t quanta = (problem.n + kColumnQuantum - 1) / kColumnQuantum;
  if (batches == 0 || quanta == 0 || problem.m == 0) return;
  // Enough tasks for every thread: the batches, each cut into column blocks when there are
  // fewer batches than threads.
  const int64_t threads = pool.thread_count();
  const int64_t blocks = std::clamp<int64_t>((threads + batches - 1) / batches, 1, quanta);
  pool.parallel_for(batches * blocks, [&](int64_t begin, int64_t end) {
    for (int64_t task = begin; task < end; ++task) {
      const int64_t batch = task / blocks, block = task % blocks;
      const auto [first_quantum, last_quantum] = ThreadPool::chunk_range(quanta, blocks, block);
      const int64_t first = first_quantum * kColumnQuantum;
      const int64_t columns = std::min(problem.n, last_quantum * kColumnQuantum) - first;
      if (columns <= 0) continue;
      gemm_on_this_thread(problem.m, columns, problem.k, lhs + problem.lhs_batch[batch], problem.lhs_layout,
                          rhs + problem.rhs_batch[batch] + first * problem.rhs_layout.column_stride, problem.rhs_layout,
                          out + batch * problem.m * problem.n + first, problem.n);
    }
  });
}

}  // namespace insitu::kernels
