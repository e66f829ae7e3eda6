// Which library runs insitu's dots (issue 9): every Debian GEMM candidate on the same f32
// row-major C = A x B, 1024^3 and 2048^3, 2 threads, in one run.
//
// Each library is dlopen'ed from its Debian path with RTLD_LOCAL | RTLD_DEEPBIND (OpenBLAS and
// BLIS both export cblas_sgemm, so one process cannot link both), and runs two ways:
//   - threaded by itself (openblas-pthread, blis-pthread, oneDNN's OpenMP);
//   - single-threaded ("serial" builds) on insitu's ThreadPool, the result's columns split
//     into one block per thread: how the runtime would call it, with one pool for everything
//     and results that do not depend on the thread count.
// Eigen 3.4 (header-only) runs serial on the pool too. A library whose file is missing is
// skipped with a message. GFLOP/s = 2*M*N*K / time; compare rows of one run only.
//
// Run: build/bench/gemm_libraries_bench --benchmark_min_time=1
#include <dlfcn.h>

#include <Eigen/Core>
#include <cstdio>
#include <vector>

#include "bench_util.h"

namespace insitu::bench {
namespace {

constexpr int kThreads = 2;
constexpr const char* kLib = "/usr/lib/x86_64-linux-gnu/";

// cblas_sgemm(order, transa, transb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc).
using CblasSgemm = void (*)(int, int, int, int, int, int, float, const float*, int, const float*, int, float, float*,
                            int);
constexpr int kRowMajor = 101, kNoTrans = 111;
// dnnl_sgemm(transa, transb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc): row-major.
using DnnlSgemm = int (*)(char, char, int64_t, int64_t, int64_t, float, const float*, int64_t, const float*, int64_t,
                          float, float*, int64_t);
using SetThreads = void (*)(int);

void* open_library(const std::string& path) {
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND);
  if (handle == nullptr) std::fprintf(stderr, "gemm_libraries_bench: skipped %s (%s)\n", path.c_str(), dlerror());
  return handle;
}

template <typename F>
F symbol(void* library, const char* name) {
  return library == nullptr ? nullptr : reinterpret_cast<F>(dlsym(library, name));
}

struct Matrices {
  int64_t n;
  std::vector<float> a, b, c;
  explicit Matrices(int64_t size) : n(size), a(size * size), b(size * size), c(size * size) {
    for (int64_t i = 0; i < size * size; ++i) {
      a[i] = static_cast<float>(i % 7) * 0.25f - 0.5f;
      b[i] = static_cast<float>(i % 5) * 0.5f - 1.0f;
    }
  }
};

ThreadPool& pool() {
  static ThreadPool threads(kThreads);
  return threads;
}

// fn(column_begin, column_count) for one column block per pool thread.
template <typename F>
void on_pool(int64_t n, F fn) {
  pool().parallel_for(kThreads, [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      const auto [first, last] = ThreadPool::chunk_range(n, kThreads, t);
      fn(first, last - first);
    }
  });
}

void report(benchmark::State& state, int64_t n) {
  state.counters["GFLOP/s"] =
      benchmark::Counter(2.0 * static_cast<double>(n) * n * n * state.iterations() * 1e-9, benchmark::Counter::kIsRate);
}

void BM_CblasThreaded(benchmark::State& state, const char* directory) {
  void* library = open_library(std::string(kLib) + directory + "/libblas.so.3");
  auto sgemm = symbol<CblasSgemm>(library, "cblas_sgemm");
  if (sgemm == nullptr) return state.SkipWithError("library not installed");
  if (auto set = symbol<SetThreads>(library, "openblas_set_num_threads")) set(kThreads);
  if (auto set = symbol<SetThreads>(library, "bli_thread_set_num_threads")) set(kThreads);
  Matrices m(state.range(0));
  const int n = static_cast<int>(m.n);
  for (auto _ : state)
    sgemm(kRowMajor, kNoTrans, kNoTrans, n, n, n, 1.0f, m.a.data(), n, m.b.data(), n, 0.0f, m.c.data(), n);
  report(state, m.n);
}

void BM_CblasSerialOnPool(benchmark::State& state, const char* directory) {
  void* library = open_library(std::string(kLib) + directory + "/libblas.so.3");
  auto sgemm = symbol<CblasSgemm>(library, "cblas_sgemm");
  if (sgemm == nullptr) return state.SkipWithError("library not installed");
  Matrices m(state.range(0));
  const int n = static_cast<int>(m.n);
  for (auto _ : state) {
    on_pool(n, [&](int64_t first, int64_t count) {
      sgemm(kRowMajor, kNoTrans, kNoTrans, n, static_cast<int>(count), n, 1.0f, m.a.data(), n, m.b.data() + first, n,
            0.0f, m.c.data() + first, n);
    });
  }
  report(state, m.n);
}

void BM_OneDnnThreaded(benchmark::State& state) {
  void* library = open_library(std::string(kLib) + "libdnnl.so.2");
  auto sgemm = symbol<DnnlSgemm>(library, "dnnl_sgemm");
  if (sgemm == nullptr) return state.SkipWithError("library not installed");
  Matrices m(state.range(0));
  for (auto _ : state) sgemm('N', 'N', m.n, m.n, m.n, 1.0f, m.a.data(), m.n, m.b.data(), m.n, 0.0f, m.c.data(), m.n);
  report(state, m.n);
}

// oneDNN single-threaded (omp_set_num_threads(1) on each pool thread: no OpenMP team, so no
// workers left spinning after the call) over the pool's column blocks.
void BM_OneDnnSerialOnPool(benchmark::State& state) {
  void* library = open_library(std::string(kLib) + "libdnnl.so.2");
  auto sgemm = symbol<DnnlSgemm>(library, "dnnl_sgemm");
  auto set_threads = symbol<SetThreads>(library, "omp_set_num_threads");
  if (sgemm == nullptr || set_threads == nullptr) return state.SkipWithError("library not installed");
  Matrices m(state.range(0));
  const int64_t n = m.n;
  for (auto _ : state) {
    on_pool(n, [&](int64_t first, int64_t count) {
      set_threads(1);
      sgemm('N', 'N', n, count, n, 1.0f, m.a.data(), n, m.b.data() + first, n, 0.0f, m.c.data() + first, n);
    });
  }
  report(state, m.n);
}

// The floor of a blocked matmul (a Pallas kernel's grid i, j, k in blocks of state.range(1)):
// oneDNN on each block straight into C's window (beta 0 at k = 0, 1 after), the (i, j) blocks
// split over the pool by rows of blocks, each thread's in grid order. Beside
// BM_OneDnnSerialOnPool at the same n, what per-call packing of small blocks costs.
void BM_OneDnnBlocksOnPool(benchmark::State& state) {
  void* library = open_library(std::string(kLib) + "libdnnl.so.2");
  auto sgemm = symbol<DnnlSgemm>(library, "dnnl_sgemm");
  auto set_threads = symbol<SetThreads>(library, "omp_set_num_threads");
  if (sgemm == nullptr || set_threads == nullptr) return state.SkipWithError("library not installed");
  Matrices m(state.range(0));
  const int64_t n = m.n, b = state.range(1), blocks = n / b;
  for (auto _ : state) {
    pool().parallel_for(blocks, [&](int64_t first, int64_t last) {
      set_threads(1);
      for (int64_t i = first; i < last; ++i)
        for (int64_t j = 0; j < blocks; ++j)
          for (int64_t k = 0; k < blocks; ++k)
            sgemm('N', 'N', b, b, b, 1.0f, m.a.data() + i * b * n + k * b, n, m.b.data() + k * b * n + j * b, n,
                  k == 0 ? 0.0f : 1.0f, m.c.data() + i * b * n + j * b, n);
    });
  }
  report(state, m.n);
}

void BM_EigenSerialOnPool(benchmark::State& state) {
  using Matrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  using Stride = Eigen::OuterStride<>;
  Matrices m(state.range(0));
  const int64_t n = m.n;
  for (auto _ : state) {
    on_pool(n, [&](int64_t first, int64_t count) {
      Eigen::Map<const Matrix> a(m.a.data(), n, n);
      Eigen::Map<const Matrix, 0, Stride> b(m.b.data() + first, n, count, Stride(n));
      Eigen::Map<Matrix, 0, Stride> c(m.c.data() + first, n, count, Stride(n));
      c.noalias() = a * b;
    });
  }
  report(state, m.n);
}

// The runtime's own dot kernel (whatever it runs now) on the same problem, through an Executable.
void BM_InsituDot(benchmark::State& state) {
  const int64_t n = state.range(0);
  const std::string text = "HloModule matmul\nENTRY main {\n  a = f32[" + std::to_string(n) + "," + std::to_string(n) +
                           "] parameter(0)\n  b = f32[" + std::to_string(n) + "," + std::to_string(n) +
                           "] parameter(1)\n  ROOT c = f32[" + std::to_string(n) + "," + std::to_string(n) +
                           "] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n}\n";
  Compiled compiled = compile(text);
  if (compiled.executable == nullptr) return state.SkipWithError(compiled.error.c_str());
  Matrices m(n);
  Literal a(Shape::array(PrimitiveType::kF32, {n, n})), b(Shape::array(PrimitiveType::kF32, {n, n}));
  std::memcpy(a.untyped_data(), m.a.data(), m.a.size() * 4);
  std::memcpy(b.untyped_data(), m.b.data(), m.b.size() * 4);
  const std::vector<BufferHandle> arguments = {*BufferHandle::from_literal(a), *BufferHandle::from_literal(b)};
  for (auto _ : state) {
    StatusOr<std::vector<BufferHandle>> result = compiled.executable->execute(arguments, {.threads = kThreads});
    if (!result.ok()) return state.SkipWithError(result.status().to_string().c_str());
  }
  report(state, n);
}

#define INSITU_GEMM_SIZES ->Arg(1024)->Arg(2048)->Unit(benchmark::kMillisecond)->UseRealTime()
BENCHMARK_CAPTURE(BM_CblasThreaded, openblas_pthread, "openblas-pthread") INSITU_GEMM_SIZES;
BENCHMARK_CAPTURE(BM_CblasSerialOnPool, openblas_serial, "openblas-serial") INSITU_GEMM_SIZES;
BENCHMARK_CAPTURE(BM_CblasThreaded, blis_pthread, "blis-pthread") INSITU_GEMM_SIZES;
BENCHMARK_CAPTURE(BM_CblasSerialOnPool, blis_serial, "blis-serial") INSITU_GEMM_SIZES;
BENCHMARK(BM_OneDnnThreaded) INSITU_GEMM_SIZES;
BENCHMARK(BM_OneDnnSerialOnPool) INSITU_GEMM_SIZES;
BENCHMARK(BM_OneDnnBlocksOnPool)->Args({1024, 128})->Args({1024, 512})->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_EigenSerialOnPool) INSITU_GEMM_SIZES;
BENCHMARK(BM_InsituDot) INSITU_GEMM_SIZES;

}  // namespace
}  // namespace insitu::bench

BENCHMARK_MAIN();
