// ThreadPool (thread_pool.h).
#include "insitu/runtime/thread_pool.h"

#include <algorithm>
#include <chrono>
#include <system_error>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

#include "insitu/support/str.h"

namespace insitu {
namespace {

// How long a thread spins on a condition before it sleeps on the condition variable: about
// the gap between two parallel steps of a program of small steps, far below a futex wake-up
// and sleep (tens of microseconds on a VM).
constexpr auto kSpinMicroseconds = std::chrono::microseconds(50);

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#endif
}

// Spins until done() or the spin time is over; true when done() held.
template <typename Done>
bool spin_until(Done done) {
  const auto until = std::chrono::steady_clock::now() + kSpinMicroseconds;
  for (int round = 0;; ++round) {
    if (done()) return true;
    cpu_relax();
    if ((round & 63) == 63 && std::chrono::steady_clock::now() >= until) return done();
  }
}

std::atomic<const OpenMpRuntime*> host_openmp{nullptr};

struct OpenMpJob {
  const std::function<void(int64_t, int64_t)>* fn;
  int64_t n, chunks;
  const OpenMpRuntime* runtime;
};

// One team member's share: chunks t, t + team, ... (all of them in a team of one, as a nested
// region gets).
void run_openmp_chunks(void* data) {
  const auto* job = static_cast<const OpenMpJob*>(data);
  const int64_t team = std::max(1, job->runtime->num_threads());
  for (int64_t chunk = job->runtime->thread_num(); chunk < job->chunks; chunk += team) {
    const auto [begin, end] = ThreadPool::chunk_range(job->n, job->chunks, chunk);
    (*job->fn)(begin, end);
  }
}

}  // namespace

void set_host_openmp(const OpenMpRuntime* runtime) { host_openmp.store(runtime, std::memory_order_release); }

int ThreadPool::hardware_threads() {
  // Read once: hardware_concurrency() asks the kernel through /sys (microseconds per call),
  // and the default thread count is looked up on every execute().
  static const int cores = [] {
    const unsigned count = std::thread::hardware_concurrency();
    return count == 0 ? 1 : static_cast<int>(count);
  }();
  return cores;
}

ThreadPool::ThreadPool(int threads) : thread_count_(threads <= 0 ? hardware_threads() : threads) {
  // Worker w (1-based) runs chunk w; the caller runs chunk 0.
  const int wanted = thread_count_;
  try {
    for (int worker = 1; worker < wanted; ++worker) workers_.emplace_back([this, worker] { work(worker); });
  } catch (const std::system_error& error) {
    start_error_ = str_cat("the system refused to start worker thread ", workers_.size() + 1, " of ", wanted - 1, " (",
                           error.what(), ")");
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
    }
    start_.notify_all();
    for (std::thread& worker : workers_) worker.join();
    workers_.clear();
    stopping_ = false;
    thread_count_ = 1;
  }
}

StatusOr<std::unique_ptr<ThreadPool>> ThreadPool::start(int threads) {
  if (threads > kMaxThreads)
    return invalid_argument(str_cat("cannot run ", threads, " threads (at most ", kMaxThreads, "; this machine has ",
                                    hardware_threads(), " cores)"));
  auto pool = std::make_unique<ThreadPool>(threads);
  if (!pool->started())
    return resource_exhausted(str_cat("cannot start ", threads, " threads: ", pool->start_error_,
                                      "; use fewer threads (this machine has ", hardware_threads(), " cores)"));
  return pool;
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  start_.notify_all();
  for (std::thread& worker : workers_) worker.join();
}

std::pair<int64_t, int64_t> ThreadPool::chunk_range(int64_t n, int64_t chunks, int64_t chunk) {
  // 128-bit products keep n*chunk exact for any n.
  const auto begin = static_cast<int64_t>(static_cast<__int128>(n) * chunk / chunks);
  const auto end = static_cast<int64_t>(static_cast<__int128>(n) * (chunk + 1) / chunks);
  return {begin, end};
}

int64_t ThreadPool::chunk_count(int64_t n) const { return std::max<int64_t>(1, std::min<int64_t>(thread_count_, n)); }

void ThreadPool::parallel_for(int64_t n, const std::function<void(int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  const int64_t chunks = chunk_count(n);
  if (chunks == 1) return fn(0, n);  // no lock: concurrent callers of a 1-thread pool share nothing
  if (const OpenMpRuntime* runtime = host_openmp.load(std::memory_order_acquire)) {
    OpenMpJob job{&fn, n, chunks, runtime};
    runtime->parallel(run_openmp_chunks, &job, static_cast<unsigned>(chunks), 0);
    return;
  }
  {
    std::unique_lock<std::mutex> lock(mutex_);
    if (running_) {  // another parallel_for (nested or another thread's) is running
      lock.unlock();
      fn(0, n);
      return;
    }
    running_ = true;
    job_ = &fn;
    job_size_ = n;
    job_chunks_ = chunks;
    pending_ = static_cast<int>(chunks - 1);
    ++generation_;
  }
  start_.notify_all();
  const auto [begin, end] = chunk_range(n, chunks, 0);
  fn(begin, end);
  spin_until([&] { return pending_.load(std::memory_order_acquire) == 0; });
  std::unique_lock<std::mutex> lock(mutex_);
  done_.wait(lock, [&] { return pending_ == 0; });
  job_ = nullptr;
  running_ = false;
}

void ThreadPool::work(int worker) {
  uint64_t seen = 0;
  while (true) {
    spin_until([&] { return stopping_.load(std::memory_order_relaxed) || generation_.load(std::memory_order_acquire) != seen; });
    std::unique_lock<std::mutex> lock(mutex_);
    start_.wait(lock, [&] { return stopping_ || generation_ != seen; });
    if (stopping_) return;
    seen = generation_;
    if (worker >= job_chunks_) continue;  // fewer chunks than workers this time
    const auto* job = job_;
    const auto [begin, end] = chunk_range(job_size_, job_chunks_, worker);
    lock.unlock();
    (*job)(begin, end);
    lock.lock();
    if (--pending_ == 0) done_.notify_one();
  }
}

}  // namespace insitu
