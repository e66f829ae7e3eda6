// ThreadPool: a fixed set of workers running parallel_for with static partitioning.
//
// parallel_for(n, fn) splits [0, n) into one contiguous chunk per worker, chunk i being
// [n*i/k, n*(i+1)/k) for k workers (fewer chunks when n is small), so the same call always
// gives the same ranges: results never depend on timing. The calling thread runs chunk 0 and
// waits for the rest. With one worker everything runs inline on the caller. A pool runs one
// parallel_for at a time: a call made while one is in flight (nested inside fn, or from
// another thread: two executions sharing the pool) runs inline on its caller, which kernels
// must treat like any other partition (no result depends on the chunking). A worker waiting for
// work, and the caller waiting for the workers, spin for a few microseconds before they sleep:
// a program of many small steps (a decode step runs hundreds) would otherwise pay a futex
// wake-up per step. (std::thread over a Debian thread-pool library: the whole pool is a
// few dozen lines and static partitioning is the property we need.)
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "insitu/support/status.h"

namespace insitu {

// A host's OpenMP runtime (libgomp's entry points): when a process hosts insitu beside a
// framework whose kernels run on OpenMP (torch), insitu's parallel loops run on that
// runtime's team instead of the pool's own workers. OpenMP workers spin for milliseconds after
// each parallel region; a second pool of workers then shares the cores with spinning threads
// (measured: insitu's graphs 1.3-1.9x slower inside a torch training step than alone).
struct OpenMpRuntime {
  void (*parallel)(void (*fn)(void*), void* data, unsigned threads, unsigned flags) = nullptr;  // GOMP_parallel
  int (*thread_num)() = nullptr;                                                               // omp_get_thread_num
  int (*num_threads)() = nullptr;                                                              // omp_get_num_threads
};
// Every pool's parallel_for from now on (nullptr: their own workers again). The runtime must
// outlive its use; chunks keep their static ranges whichever thread runs them.
void set_host_openmp(const OpenMpRuntime* runtime);

class ThreadPool {
 public:
  // `threads` <= 0 means the machine's hardware cores. When the system refuses a worker
  // thread the pool runs everything on the caller (started() says so); start() reports it.
  explicit ThreadPool(int threads = 0);
  // A pool of `threads` workers, or an error saying how many the system refused to start and
  // asking for fewer (more than kMaxThreads is refused without trying).
  static StatusOr<std::unique_ptr<ThreadPool>> start(int threads);
  static constexpr int kMaxThreads = 1024;
  bool started() const { return start_error_.empty(); }
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;
  ~ThreadPool();

  int thread_count() const { return thread_count_; }
  static int hardware_threads();

  // The [begin, end) range chunk `chunk` of `chunks` gets out of n items.
  static std::pair<int64_t, int64_t> chunk_range(int64_t n, int64_t chunks, int64_t chunk);
  // How many chunks parallel_for(n, ...) uses: min(thread_count, n).
  int64_t chunk_count(int64_t n) const;

  // Calls fn(begin, end) over a static partition of [0, n); returns when all chunks are done
  // (on the host's OpenMP team when set_host_openmp gave one).
  void parallel_for(int64_t n, const std::function<void(int64_t begin, int64_t end)>& fn);

 private:
  void work(int worker);

  int thread_count_ = 1;
  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable start_;
  std::condition_variable done_;
  const std::function<void(int64_t, int64_t)>* job_ = nullptr;
  int64_t job_size_ = 0;
  int64_t job_chunks_ = 0;
  // Written under mutex_; atomic so that a worker or the caller can spin on them before
  // sleeping (see kSpinMicroseconds in thread_pool.cc).
  std::atomic<uint64_t> generation_ = 0;
  std::atomic<int> pending_ = 0;
  std::atomic<bool> stopping_ = false;
  bool running_ = false;  // a parallel_for is in flight (other calls run inline)
  std::string start_error_;  // why a worker could not start (the pool then has one thread)
};

}  // namespace insitu
