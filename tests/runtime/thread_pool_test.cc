// ThreadPool: static partitioning (same ranges every time), every item exactly once, inline
// execution with one thread, nested calls.
#include <algorithm>
#include <atomic>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "insitu/runtime/thread_pool.h"

namespace insitu {
namespace {

TEST(RuntimeThreadPool, ChunksAreStaticAndCoverTheRange) {
  EXPECT_EQ(ThreadPool::chunk_range(10, 4, 0), (std::pair<int64_t, int64_t>{0, 2}));
  EXPECT_EQ(ThreadPool::chunk_range(10, 4, 1), (std::pair<int64_t, int64_t>{2, 5}));
  EXPECT_EQ(ThreadPool::chunk_range(10, 4, 2), (std::pair<int64_t, int64_t>{5, 7}));
  EXPECT_EQ(ThreadPool::chunk_range(10, 4, 3), (std::pair<int64_t, int64_t>{7, 10}));
  ThreadPool pool(4);
  EXPECT_EQ(pool.chunk_count(2), 2);
  EXPECT_EQ(pool.chunk_count(1000), 4);
  for (int run = 0; run < 20; ++run) {
    std::mutex mutex;
    std::set<std::pair<int64_t, int64_t>> ranges;
    pool.parallel_for(1003, [&](int64_t begin, int64_t end) {
      std::lock_guard<std::mutex> lock(mutex);
      ranges.insert({begin, end});
    });
    EXPECT_EQ(ranges, (std::set<std::pair<int64_t, int64_t>>{{0, 250}, {250, 501}, {501, 752}, {752, 1003}}));
  }
}

TEST(RuntimeThreadPool, EveryItemRunsExactlyOnceOnSeveralThreads) {
  ThreadPool pool(3);
  std::vector<std::atomic<int>> hits(100000);
  std::mutex mutex;
  std::set<std::thread::id> threads;
  pool.parallel_for(static_cast<int64_t>(hits.size()), [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) hits[i]++;
    std::lock_guard<std::mutex> lock(mutex);
    threads.insert(std::this_thread::get_id());
  });
  for (const auto& hit : hits) ASSERT_EQ(hit.load(), 1);
  EXPECT_EQ(threads.size(), 3u);
}

TEST(RuntimeThreadPool, OneThreadRunsInlineAndNestedCallsWork) {
  ThreadPool single(1);
  std::thread::id ran_on;
  single.parallel_for(50, [&](int64_t begin, int64_t end) {
    EXPECT_EQ(begin, 0);
    EXPECT_EQ(end, 50);
    ran_on = std::this_thread::get_id();
  });
  EXPECT_EQ(ran_on, std::this_thread::get_id());

  ThreadPool pool(2);
  std::atomic<int64_t> total{0};
  pool.parallel_for(4, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i)
      pool.parallel_for(10, [&](int64_t b, int64_t e) { total += e - b; });  // nested: inline
  });
  EXPECT_EQ(total.load(), 40);
  EXPECT_GE(ThreadPool(0).thread_count(), 1);
}

}  // namespace
}  // namespace insitu

namespace insitu {
namespace {

// A stand-in for a host's OpenMP runtime: GOMP_parallel runs fn on `team` threads (fewer
// than asked when team_limit says so), each with its thread number, and counts its regions.
thread_local int team_member = 0;
int team_size = 1, team_limit = 64, regions = 0;
void fake_parallel(void (*fn)(void*), void* data, unsigned threads, unsigned) {
  ++regions;
  team_size = std::min<int>(static_cast<int>(threads), team_limit);
  std::vector<std::thread> members;
  for (int t = 1; t < team_size; ++t) members.emplace_back([=] { team_member = t; fn(data); });
  team_member = 0;
  fn(data);
  for (std::thread& member : members) member.join();
}
int fake_thread_num() { return team_member; }
int fake_num_threads() { return team_size; }

TEST(RuntimeThreadPool, RunsOnTheHostOpenMpTeamWithTheSameChunks) {
  OpenMpRuntime runtime{fake_parallel, fake_thread_num, fake_num_threads};
  ThreadPool pool(4);
  for (int limit : {64, 2, 1}) {  // a full team, a smaller one, a nested region's team of one
    SCOPED_TRACE(limit);
    team_limit = limit;
    regions = 0;
    set_host_openmp(&runtime);
    std::mutex mutex;
    std::set<std::pair<int64_t, int64_t>> ranges;
    std::vector<int> seen(1000, 0);
    pool.parallel_for(1000, [&](int64_t begin, int64_t end) {
      std::lock_guard<std::mutex> lock(mutex);
      ranges.insert({begin, end});
      for (int64_t i = begin; i < end; ++i) ++seen[i];
    });
    set_host_openmp(nullptr);
    EXPECT_EQ(regions, 1);
    EXPECT_EQ(ranges, (std::set<std::pair<int64_t, int64_t>>{{0, 250}, {250, 500}, {500, 750}, {750, 1000}}));
    EXPECT_EQ(std::count(seen.begin(), seen.end(), 1), 1000);
  }
  regions = 0;
  std::atomic<int64_t> total = 0;
  pool.parallel_for(100, [&](int64_t begin, int64_t end) { total += end - begin; });  // its own workers again
  EXPECT_EQ(total, 100);
  EXPECT_EQ(regions, 0);
}

}  // namespace
}  // namespace insitu
