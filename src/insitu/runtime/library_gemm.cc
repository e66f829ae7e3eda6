// Library GEMMs: operand planning, the GEMM calls, the pool split (convolutions:
// library_convolution.cc).
#include "insitu/runtime/library_gemm.h"

#include <algorithm>
#include <atomic>
#include <vector>

#include "insitu/runtime/cpu_level.h"
#include "insitu/runtime/library_internal.h"
#include "insitu/runtime/transpose_tiles.h"
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
  if (offsets.size() < 2) return offsets.empty() || offsets[0] == 0 ? std::optional<int64_t>(0) : std::nullopt;
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

// Result rows go to the library in multiples of this when a tall result is split by rows.
constexpr int64_t kRowQuantum = 16;
// Result columns go to the library in multiples of this (whole vector registers).
constexpr int64_t kColumnQuantum = 16;
// A thread's column block goes to the library this many columns at a call at most. A dot alone
// in its module ([512, 512] x [512, 8192], a transformer's logits, 4,096 columns a thread) ran
// 18.6-24.5 ms on 2 threads in one call per thread, 16% of its samples in the kernel clearing
// fresh pages, and 13.6-15.2 ms in calls of 2,048 (1.5% clearing pages; 1,024: 14.3-18.4; 3,072:
// 15.0-20.2; one thread 31 -> 27 ms); [2048, 512] x [512, 8192] 63-75 -> 57-64 ms; [256, 1024] x
// [1024, 16384] unchanged within the machine's noise (29-37 ms both ways). Inside the whole
// training step's forward graph the same dot ran 14.8-15.8 ms either way.
constexpr int64_t kColumnPanel = 2048;


}  // namespace

namespace {

// A transposed lhs (column-major: the library packs it reading down columns, `leading` apart)
// whose columns are at least this many elements apart is copied to row-major first,
// kTransposedRows rows at a time. On huge pages (buffer.cc) a power-of-two column stride maps
// every row of a column into a few cache sets: [8192, 512]^T x [512, 512] took 70 ms in the
// library that way and 36 ms on 4 KiB pages (where torch's tensors live), twice torch's time
// for that product of a transformer's backward. Copied, 37-50 ms beside the library's 54-60 on
// 4 KiB pages in the same minutes.
constexpr int64_t kTransposedCopyStride = 2048;
constexpr int64_t kTransposedRows = 512;

}  // namespace

void gemm_on_this_thread(int64_t m, int64_t n, int64_t k, const float* a, const GemmOperand& a_layout, const float* b,
                         const GemmOperand& b_layout, float* c, int64_t ldc, bool accumulate) {
#ifdef INSITU_HAVE_ONEDNN
  if (m <= 0 || n <= 0) return;
  if (a_layout.transposed && a_layout.leading >= kTransposedCopyStride && n >= 64 && k > 0) {
    thread_local std::vector<float> rows;
    rows.resize(static_cast<size_t>(std::min(m, kTransposedRows) * k));
    const GemmOperand row_major{false, k, k, 1};
    for (int64_t first = 0; first < m; first += kTransposedRows) {
      const int64_t count = std::min(kTransposedRows, m - first);
      run_at_cpu_level<TransposeToRows>(reinterpret_cast<const uint32_t*>(a), a_layout.leading, first, count, k,
                                        reinterpret_cast<uint32_t*>(rows.data()));
      gemm_on_this_thread(count, n, k, rows.data(), row_major, b, b_layout, c + first * ldc, ldc, accumulate);
    }
    return;
  }
  SingleThreadedLibrary single_threaded;
  const dnnl_status_t status = dnnl_sgemm(a_layout.transposed ? 'T' : 'N', b_layout.transposed ? 'T' : 'N', m, n, k,
                                          1.0f, a, a_layout.leading, b, b_layout.leading, accumulate ? 1.0f : 0.0f,
                                          c, ldc);
  INSITU_CHECK(status == dnnl_success) << "dnnl_sgemm refused a planned problem (status " << static_cast<int>(status)
                                       << ", m=" << m << " n=" << n << " k=" << k << ")";
#else
  (void)m, (void)n, (void)k, (void)a, (void)a_layout, (void)b, (void)b_layout, (void)c, (void)ldc, (void)accumulate;
  INSITU_UNREACHABLE("gemm_on_this_thread called in a build without a GEMM library");
#endif
}

namespace {

// ---- Matrix-vector products (m == 1 or n == 1: a decode step's dots) ----
//
// Memory-bound, so what matters is streaming the matrix once at full bandwidth: each task reads
// a contiguous run of whole matrix rows. oneDNN's sgemm split by result columns read them at
// about 25 GB/s on 2 threads where 40 was possible. Results do not depend on the thread
// count: the split into chunks depends on the shape only, and partial sums are added in chunk
// order. Built for the machine it runs on (AVX-512, AVX2 with FMA or the x86-64 baseline,
// picked at the first call with __builtin_cpu_supports; not ifunc target_clones, whose resolvers
// run before a sanitizer's runtime is up) through 16-lane vector types.

using Lanes = float __attribute__((vector_size(64)));
constexpr int64_t kLanes = 16;

// Lanes are loaded and stored with memcpy (unaligned) and never passed to or returned from a
// function: a 64-byte vector crossing a call would have a different ABI in each clone.
#define INSITU_LOAD_LANES(name, from) \
  Lanes name;                          \
  __builtin_memcpy(&name, (from), sizeof(Lanes))

// The lane sums of acc[0..kRows) (kRows <= 16) into sums[0..kRows): sums[i] is the sum of
// acc[i]'s 16 lanes. A transposing tree (15 adds for 16 rows, not 15 per row): halves of pairs of
// vectors are added, so each level halves the lanes per row and doubles the rows per vector.
template <int kRows>
[[gnu::always_inline]] inline void sum_lanes_of_rows(const Lanes* acc, float* sums) {
  Lanes a[16];
  for (int i = 0; i < 16; ++i) a[i] = i < kRows ? acc[i] : Lanes{};  // absent rows fold away
  Lanes b[8], c[4], d[2];
  for (int i = 0; i < 8; ++i)  // 8 lanes per row
    b[i] = __builtin_shufflevector(a[2 * i], a[2 * i + 1], 0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23) +
           __builtin_shufflevector(a[2 * i], a[2 * i + 1], 8, 9, 10, 11, 12, 13, 14, 15, 24, 25, 26, 27, 28, 29, 30, 31);
  for (int i = 0; i < 4; ++i)  // 4 lanes per row
    c[i] = __builtin_shufflevector(b[2 * i], b[2 * i + 1], 0, 1, 2, 3, 8, 9, 10, 11, 16, 17, 18, 19, 24, 25, 26, 27) +
           __builtin_shufflevector(b[2 * i], b[2 * i + 1], 4, 5, 6, 7, 12, 13, 14, 15, 20, 21, 22, 23, 28, 29, 30, 31);
  for (int i = 0; i < 2; ++i)  // 2 lanes per row
    d[i] = __builtin_shufflevector(c[2 * i], c[2 * i + 1], 0, 1, 4, 5, 8, 9, 12, 13, 16, 17, 20, 21, 24, 25, 28, 29) +
           __builtin_shufflevector(c[2 * i], c[2 * i + 1], 2, 3, 6, 7, 10, 11, 14, 15, 18, 19, 22, 23, 26, 27, 30, 31);
  const Lanes all = __builtin_shufflevector(d[0], d[1], 0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30) +
                    __builtin_shufflevector(d[0], d[1], 1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
  float lanes[kLanes];
  __builtin_memcpy(lanes, &all, sizeof(Lanes));
  std::copy(lanes, lanes + kRows, sums);
}

// out[r] = sum_j matrix[r * ld + j] * vector[j] for r in [0, rows), j in [0, length).
// kRows rows at once: as many streams from memory (one sequential stream leaves a core's
// memory bandwidth idle: 20 GB/s on 2 threads where 8 rows at once read at 28), one vector
// load per kRows row loads, and their lane sums in one transposing tree (rows of an attention
// head are 64 floats long: a sum per row would cost more than its loads). The rows left over
// go one at a time. The order of additions depends on the shape and the instruction set
// (kRows), never on the threads.
template <int kRows>
[[gnu::always_inline]] inline void dot_rows_body(const float* matrix, int64_t ld, const float* vector, int64_t rows,
                                                 int64_t length, float* out) {
  const int64_t vector_end = length - length % kLanes;
  int64_t r = 0;
  for (; r + kRows <= rows; r += kRows) {
    const float* block = matrix + r * ld;
    Lanes acc[kRows];
    for (int i = 0; i < kRows; ++i) acc[i] = Lanes{};
    for (int64_t j = 0; j < vector_end; j += kLanes) {
      INSITU_LOAD_LANES(x, vector + j);
      for (int i = 0; i < kRows; ++i) {
        INSITU_LOAD_LANES(row, block + i * ld + j);
        acc[i] += row * x;
      }
    }
    float sums[kRows];
    sum_lanes_of_rows<kRows>(acc, sums);
    for (int i = 0; i < kRows; ++i) {
      float sum = sums[i];
      for (int64_t j = vector_end; j < length; ++j) sum += block[i * ld + j] * vector[j];
      out[r + i] = sum;
    }
  }
  for (; r < rows; ++r) {
    const float* row = matrix + r * ld;
    Lanes acc = {};
    for (int64_t j = 0; j < vector_end; j += kLanes) {
      INSITU_LOAD_LANES(values, row + j);
      INSITU_LOAD_LANES(x, vector + j);
      acc += values * x;
    }
    float sum = 0;
    sum_lanes_of_rows<1>(&acc, &sum);
    for (int64_t j = vector_end; j < length; ++j) sum += row[j] * vector[j];
    out[r] = sum;
  }
}

// acc[j] = sum_r vector[r] * matrix[r * ld + j] over r in [0, rows), j in [0, length), rows
// in order, kRows at a time (kRows streams from memory; the rows left over one at a time).
template <int kRows>
[[gnu::always_inline]] inline void combine_rows_body(const float* matrix, int64_t ld, const float* vector, int64_t rows,
                                                     int64_t length, float* acc) {
  if (length == 4 * kLanes) {  // an attention head's 64 values: the sums stay in registers
    Lanes sum[4] = {};
    for (int64_t r = 0; r < rows; ++r) {
      const float* row = matrix + r * ld;
      for (int i = 0; i < 4; ++i) {
        INSITU_LOAD_LANES(values, row + i * kLanes);
        sum[i] = sum[i] + vector[r] * values;
      }
    }
    __builtin_memcpy(acc, sum, sizeof(sum));
    return;
  }
  std::fill(acc, acc + length, 0.0f);
  int64_t r = 0;
  for (; r + kRows <= rows; r += kRows) {
    const float* block = matrix + r * ld;
    const float* x = vector + r;
    int64_t j = 0;
    for (; j + kLanes <= length; j += kLanes) {
      INSITU_LOAD_LANES(sum, acc + j);
      for (int i = 0; i < kRows; ++i) {
        INSITU_LOAD_LANES(row, block + i * ld + j);
        sum = sum + x[i] * row;
      }
      __builtin_memcpy(acc + j, &sum, sizeof(Lanes));
    }
    for (; j < length; ++j) {
      float sum = acc[j];
      for (int i = 0; i < kRows; ++i) sum = sum + x[i] * block[i * ld + j];
      acc[j] = sum;
    }
  }
  for (; r < rows; ++r) {
    const float* m = matrix + r * ld;
    const float x = vector[r];
    for (int64_t j = 0; j < length; ++j) acc[j] += x * m[j];
  }
}

// Each body compiled for each instruction set; the best one this CPU has, chosen once.
using MatVecFn = void (*)(const float*, int64_t, const float*, int64_t, int64_t, float*);
#if defined(__x86_64__) && defined(__GNUC__)
// `wide`: rows at once with AVX-512's 32 vector registers; `narrow`: with 16 (AVX2, SSE).
#define INSITU_MATVEC_VARIANTS(name, wide, narrow)                                                            \
  __attribute__((target("avx512f"))) void name##_avx512(const float* m, int64_t ld, const float* v, int64_t r, \
                                                        int64_t n, float* o) {                                \
    name##_body<wide>(m, ld, v, r, n, o);                                                                     \
  }                                                                                                           \
  __attribute__((target("avx2,fma"))) void name##_avx2(const float* m, int64_t ld, const float* v,         \
                                                           int64_t r, int64_t n, float* o) {                  \
    name##_body<narrow>(m, ld, v, r, n, o);                                                                   \
  }                                                                                                           \
  void name##_baseline(const float* m, int64_t ld, const float* v, int64_t r, int64_t n, float* o) {          \
    name##_body<narrow>(m, ld, v, r, n, o);                                                                   \
  }                                                                                                           \
  MatVecFn name##_for_this_cpu() {                                                                            \
    switch (cpu_level()) {                                                                                    \
      case CpuLevel::kAvx512: return &name##_avx512;                                                          \
      case CpuLevel::kAvx2Fma: return &name##_avx2;                                                           \
      case CpuLevel::kBaseline: break;                                                                        \
    }                                                                                                         \
    return &name##_baseline;                                                                                  \
  }
#else
#define INSITU_MATVEC_VARIANTS(name, wide, narrow) \
  MatVecFn name##_for_this_cpu() { return [](const float* m, int64_t ld, const float* v, int64_t r, int64_t n, float* o) { name##_body<narrow>(m, ld, v, r, n, o); }; }
#endif
INSITU_MATVEC_VARIANTS(dot_rows, 8, 4)
INSITU_MATVEC_VARIANTS(combine_rows, 8, 4)
#undef INSITU_MATVEC_VARIANTS

// One batch's product as a matrix (rows of `length` contiguous floats, `ld` apart) against a
// vector: dot: out[r] = row r . vector; combine: out[j] = sum_r vector[r] * row r [j].
struct MatVec {
  bool dot = false;
  int64_t rows = 0, length = 0, ld = 0;
  int64_t vector_stride = 1;
};

// The problem as a matrix-vector product, or nullopt (a general product, or a vector whose
// matrix is not stored by rows: the library's GEMM then).
std::optional<MatVec> plan_matvec(const GemmProblem& p) {
  if (p.m == 1) {  // vector lhs (1 x k, stride column_stride), matrix rhs (k x n)
    if (!p.rhs_layout.transposed) return MatVec{false, p.k, p.n, p.rhs_layout.leading, p.lhs_layout.column_stride};
    return MatVec{true, p.n, p.k, p.rhs_layout.leading, p.lhs_layout.column_stride};
  }
  if (p.n == 1) {  // matrix lhs (m x k), vector rhs (k x 1, stride row_stride)
    if (!p.lhs_layout.transposed) return MatVec{true, p.m, p.k, p.lhs_layout.leading, p.rhs_layout.row_stride};
    return MatVec{false, p.k, p.m, p.lhs_layout.leading, p.rhs_layout.row_stride};
  }
  return std::nullopt;
}

void run_matvec(const GemmProblem& p, const MatVec& mv, const float* lhs, const float* rhs, float* out,
                ThreadPool& pool) {
  const MatVecFn dot_rows = dot_rows_for_this_cpu();  // per call: cpu_level() may be limited
  const MatVecFn combine_rows = combine_rows_for_this_cpu();
  const int64_t batches = static_cast<int64_t>(p.lhs_batch.size());
  const bool vector_is_lhs = p.m == 1;
  // Chunks of whole rows: at most 16 per batch, of at least 32 rows (a shape-only split).
  const int64_t chunk_rows = std::max<int64_t>(32, (mv.rows + 15) / 16);
  const int64_t chunks = (mv.rows + chunk_rows - 1) / chunk_rows;
  // combine: partial sums per chunk, then added in chunk order.
  // Kept by the calling thread across calls: a fresh buffer this size (often above malloc's
  // mmap threshold) would fault in its pages on every call.
  thread_local std::vector<float> partial_buffer;
  const size_t partial_size = mv.dot ? 0 : static_cast<size_t>(batches * chunks * mv.length);
  if (partial_buffer.size() < partial_size) partial_buffer.resize(partial_size);
  float* partials = partial_buffer.data();
  const int64_t result_size = p.m * p.n;
  pool.parallel_for(batches * chunks, [&](int64_t begin, int64_t end) {
    std::vector<float> gathered;
    for (int64_t task = begin; task < end; ++task) {
      const int64_t batch = task / chunks, chunk = task % chunks;
      const float* matrix = (vector_is_lhs ? rhs + p.rhs_batch[batch] : lhs + p.lhs_batch[batch]);
      const float* vector = (vector_is_lhs ? lhs + p.lhs_batch[batch] : rhs + p.rhs_batch[batch]);
      const int64_t vector_length = mv.dot ? mv.length : mv.rows;
      if (mv.vector_stride != 1 && vector_length > 1) {  // a strided vector, gathered (tiny)
        gathered.resize(static_cast<size_t>(vector_length));
        for (int64_t i = 0; i < vector_length; ++i) gathered[i] = vector[i * mv.vector_stride];
        vector = gathered.data();
      }
      const int64_t first = chunk * chunk_rows, count = std::min(chunk_rows, mv.rows - first);
      if (mv.dot)
        dot_rows(matrix + first * mv.ld, mv.ld, vector, count, mv.length, out + batch * result_size + first);
      else
        combine_rows(matrix + first * mv.ld, mv.ld, vector + first, count, mv.length,
                     partials + (batch * chunks + chunk) * mv.length);
    }
  });
  if (mv.dot) return;
  // The chunks' sums added in chunk order, per batch and column block (one batch has work for
  // every thread too).
  constexpr int64_t kSumColumns = 512;
  const int64_t column_blocks = (mv.length + kSumColumns - 1) / kSumColumns;
  pool.parallel_for(batches * column_blocks, [&](int64_t begin, int64_t end) {
    for (int64_t task = begin; task < end; ++task) {
      const int64_t batch = task / column_blocks, first = task % column_blocks * kSumColumns;
      const int64_t last = std::min(mv.length, first + kSumColumns);
      float* result = out + batch * result_size;
      const float* chunk_sums = partials + batch * chunks * mv.length;
      std::copy(chunk_sums + first, chunk_sums + last, result + first);
      for (int64_t chunk = 1; chunk < chunks; ++chunk)
        for (int64_t j = first; j < last; ++j) result[j] += chunk_sums[chunk * mv.length + j];
    }
  });
}

}  // namespace

namespace {

// A long contraction (k at least kSplitMinimumRatio times the longer of m and n, and at least two
// chunks) is cut into chunks of kSplitChunk: each chunk's product is a task of its own, and the
// partial products are added in chunk order. Each thread then reads its chunks' parts of both
// operands once, where a split of the result's columns had every thread read the whole lhs: the
// backward's [512, 8192] x [8192, 512] on 2 threads 13.5-17.5 ms before, 13.2-14.2 after (five
// alternations; 27 ms on one thread either way). The chunks depend on k alone, so the sum's order
// does not depend on the thread count.
constexpr int64_t kSplitChunk = 2048;
constexpr int64_t kSplitMinimumRatio = 4;
// Partial products held at most (elements, all chunks and batches together).
constexpr int64_t kSplitMaximumPartials = int64_t{1} << 22;

int64_t contraction_chunks(const GemmProblem& problem, int64_t batches) {
  const int64_t chunks = problem.k / kSplitChunk;
  if (chunks < 2 || problem.k < kSplitMinimumRatio * std::max(problem.m, problem.n) ||
      (chunks - 1) * batches * problem.m * problem.n > kSplitMaximumPartials)
    return 1;
  return chunks;
}

// library_gemm over `chunks` contraction chunks (the last takes the remainder): chunk 0 into
// `out` (accumulating where asked), the others into partials, each product's columns split in
// blocks where the pool has more threads than products; then out += partial 1, 2, ... in order,
// rows split over the pool.
void split_contraction_gemm(const GemmProblem& problem, int64_t chunks, const float* lhs, const float* rhs, float* out,
                            ThreadPool& pool, int64_t ldc, bool accumulate) {
  const int64_t batches = static_cast<int64_t>(problem.lhs_batch.size());
  const int64_t m = problem.m, n = problem.n, size = m * n;
  thread_local std::vector<float> held;  // (the calling thread's: the workers see it through `partials`)
  held.resize(static_cast<size_t>((chunks - 1) * batches * size));
  float* const partials = held.data();
  const GemmOperand &a_layout = problem.lhs_layout, &b_layout = problem.rhs_layout;
  // more threads than chunk products: each product's columns split too (whole vector registers)
  const int64_t quanta = (n + kColumnQuantum - 1) / kColumnQuantum;
  const int64_t blocks = std::clamp<int64_t>((pool.thread_count() + batches * chunks - 1) / (batches * chunks), 1, quanta);
  pool.parallel_for(batches * chunks * blocks, [&](int64_t begin, int64_t end) {
    for (int64_t task = begin; task < end; ++task) {
      const int64_t product = task / blocks, block = task % blocks;
      const int64_t batch = product / chunks, chunk = product % chunks;
      const auto [first_quantum, last_quantum] = ThreadPool::chunk_range(quanta, blocks, block);
      const int64_t column = first_quantum * kColumnQuantum;
      const int64_t width = std::min(n, last_quantum * kColumnQuantum) - column;
      if (width <= 0) continue;
      const int64_t first = chunk * kSplitChunk;
      const int64_t length = chunk + 1 == chunks ? problem.k - first : kSplitChunk;
      const float* a = lhs + problem.lhs_batch[batch] + first * a_layout.column_stride;
      const float* b = rhs + problem.rhs_batch[batch] + first * b_layout.row_stride + column * b_layout.column_stride;
      if (chunk == 0)
        gemm_on_this_thread(m, width, length, a, a_layout, b, b_layout, out + batch * m * ldc + column, ldc, accumulate);
      else
        gemm_on_this_thread(m, width, length, a, a_layout, b, b_layout,
                            partials + ((chunk - 1) * batches + batch) * size + column, n, false);
    }
  });
  pool.parallel_for(batches * m, [&](int64_t begin, int64_t end) {
    for (int64_t row = begin; row < end; ++row) {
      const int64_t batch = row / m, i = row % m;
      float* c = out + batch * m * ldc + i * ldc;
      for (int64_t chunk = 1; chunk < chunks; ++chunk) {
        const float* p = partials + ((chunk - 1) * batches + batch) * size + i * n;
        for (int64_t j = 0; j < n; ++j) c[j] += p[j];
      }
    }
  });
}

}  // namespace

void library_gemm(const GemmProblem& problem, const float* lhs, const float* rhs, float* out, ThreadPool& pool,
                  int64_t ldc, bool accumulate) {
  if (ldc == 0) ldc = problem.n;
  if (problem.k > 0 && ldc == problem.n && !accumulate)
    if (std::optional<MatVec> matvec = plan_matvec(problem)) return run_matvec(problem, *matvec, lhs, rhs, out, pool);
  const int64_t batches = static_cast<int64_t>(problem.lhs_batch.size());
  if (batches == 0 || problem.n == 0 || problem.m == 0) return;
  if (const int64_t chunks = contraction_chunks(problem, batches); chunks > 1)
    return split_contraction_gemm(problem, chunks, lhs, rhs, out, pool, ldc, accumulate);
  // Enough tasks for every thread: the batches, each cut into row blocks (a result at least
  // twice as tall as wide: each thread then reads its rows of the lhs once, where column blocks
  // had every thread read the whole lhs) or column blocks when there are fewer batches than
  // threads.
  const int64_t threads = pool.thread_count();
  const bool by_rows = problem.m >= 2 * problem.n && threads > batches;
  const int64_t quantum = by_rows ? kRowQuantum : kColumnQuantum;
  const int64_t extent = by_rows ? problem.m : problem.n;
  const int64_t quanta = (extent + quantum - 1) / quantum;
  const int64_t blocks = std::clamp<int64_t>((threads + batches - 1) / batches, 1, quanta);
  pool.parallel_for(batches * blocks, [&](int64_t begin, int64_t end) {
    for (int64_t task = begin; task < end; ++task) {
      const int64_t batch = task / blocks, block = task % blocks;
      const auto [first_quantum, last_quantum] = ThreadPool::chunk_range(quanta, blocks, block);
      const int64_t first = first_quantum * quantum;
      const int64_t count = std::min(extent, last_quantum * quantum) - first;
      if (count <= 0) continue;
      const float* a = lhs + problem.lhs_batch[batch];
      const float* b = rhs + problem.rhs_batch[batch];
      float* c = out + batch * problem.m * ldc;
      if (by_rows) {
        gemm_on_this_thread(count, problem.n, problem.k, a + first * problem.lhs_layout.row_stride,
                            problem.lhs_layout, b, problem.rhs_layout, c + first * ldc, ldc, accumulate);
      } else {
        for (int64_t done = 0; done < count; done += kColumnPanel) {
          const int64_t width = std::min(kColumnPanel, count - done);
          gemm_on_this_thread(problem.m, width, problem.k, a, problem.lhs_layout,
                              b + (first + done) * problem.rhs_layout.column_stride, problem.rhs_layout, c + first + done, ldc,
                              accumulate);
        }
      }
    }
  });
}

}  // namespace insitu::kernels
