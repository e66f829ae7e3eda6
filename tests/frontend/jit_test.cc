// jit: the executable cache, donation, mutating kernels (the seed's scenarios), stage dumps and
// traces. Uses the example plus_one kernel (examples/kernels, output 0 aliased to input 0).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "insitu/passes/explain.h"
#include "insitu/frontend/jit.h"
#include "insitu/frontend/kernel_call.h"
#include "insitu/frontend/ops.h"
#include "insitu/frontend/trace_events.h"

namespace insitu {
namespace {

std::vector<Tensor> mutate_plus_one(std::vector<Tensor>& a) {
  call_kernel_mutating("plus_one", {a[0]});
  return {};
}

TEST(FrontendJit, MutationReachesTheCallerInPlaceWithoutCopies) {
  for (int threads : {1, 2}) {
    JitFunction f = jit(mutate_plus_one, {.name = "plus_one_", .threads = threads});
    Array x = Array::from_vector<int32_t>({4}, {1, 1, 1, 1}, "x");
    const void* before = x.data();
    StatusOr<std::vector<Array>> out = f({x});
    ASSERT_TRUE(out.ok()) << out.status().to_string();
    EXPECT_TRUE(out->empty());
    EXPECT_FALSE(x.deleted());
    EXPECT_EQ(*x.to_vector<int32_t>(), (std::vector<int32_t>{2, 2, 2, 2}));
    EXPECT_EQ(x.data(), before) << "the kernel wrote into the caller's buffer";
    EXPECT_TRUE(explain_module(*f.last_compiled()->optimized).copies.empty())
        << explanation_text(explain_module(*f.last_compiled()->optimized));
    EXPECT_EQ(f.last_stats().bytes_copied, 0);
    ASSERT_TRUE(f({x}).ok());
    EXPECT_EQ(*x.to_vector<int32_t>(), (std::vector<int32_t>{3, 3, 3, 3}));
    EXPECT_EQ(f.cache_size(), 1);
    EXPECT_EQ(f.cache_hits(), 1);
  }
}

TEST(FrontendJit, FunctionalKernelWithDonationRunsInPlace) {
  JitFunction f = jit([](std::vector<Tensor>& a) { return call_kernel("plus_one", {a[0]}); },
                      {.donate_argnums = {0}, .name = "plus_one"});
  Array x = Array::from_vector<float>({3}, {1.5f, 2.5f, 3.5f}, "x");
  const void* before = x.data();
  StatusOr<std::vector<Array>> out = f({x});
  ASSERT_TRUE(out.ok()) << out.status().to_string();
  ASSERT_EQ(out->size(), 1u);
  EXPECT_EQ(*(*out)[0].to_vector<float>(), (std::vector<float>{2.5f, 3.5f, 4.5f}));
  EXPECT_EQ((*out)[0].data(), before);
  EXPECT_TRUE(x.deleted());
  EXPECT_TRUE(explain_module(*f.last_compiled()->optimized).copies.empty())
        << explanation_text(explain_module(*f.last_compiled()->optimized));
  EXPECT_EQ(f.last_stats().bytes_copied, 0);
}

TEST(FrontendJit, ReadingTheOldValueAfterTheWriteCostsExactlyOneCopy) {
  for (int threads : {1, 2}) {
    JitFunction f = jit(
        [](std::vector<Tensor>& a) {
          Tensor old = a[0].clone();
          call_kernel_mutating("plus_one", {a[0]});
          // One op reads both the value from before the write and the one after it, so the
          // old value is live across the in-place write: it must be copied first.
          return std::vector<Tensor>{old + a[0]};
        },
        {.name = "plus_one_and_read", .threads = threads});
    Array x = Array::from_vector<int32_t>({4}, {1, 2, 3, 4}, "x");
    StatusOr<std::vector<Array>> out = f({x});
    ASSERT_TRUE(out.ok()) << out.status().to_string();
    EXPECT_EQ(*x.to_vector<int32_t>(), (std::vector<int32_t>{2, 3, 4, 5}));
    EXPECT_EQ(*(*out)[0].to_vector<int32_t>(), (std::vector<int32_t>{3, 5, 7, 9}));
    const Explanation explanation = explain_module(*f.last_compiled()->optimized);
    const std::vector<CopyExplanation>& copies = explanation.copies;
    ASSERT_EQ(copies.size(), 1u) << explanation_text(explanation);
    EXPECT_EQ(copies[0].reason, CopyReason::kLiveAfterInPlaceWrite);
    EXPECT_EQ(copies[0].bytes, 16);
  }
}

TEST(FrontendJit, DonatedArrayUseIsAnErrorNamingIt) {
  JitFunction f = jit([](std::vector<Tensor>& a) { return std::vector<Tensor>{a[0] + 1.0}; },
                      {.donate_argnums = {0}, .name = "inc"});
  Array cache = Array::zeros(Shape::array(PrimitiveType::kF32, {16, 8}), "cache");
  ASSERT_TRUE(f({cache}).ok());
  EXPECT_TRUE(cache.deleted());
  StatusOr<std::vector<Array>> again = f({cache});
  ASSERT_FALSE(again.ok());
  EXPECT_NE(again.status().message().find("array 'cache' (f32[16,8]) was donated to a previous call and has been deleted"),
            std::string::npos)
      << again.status().message();
  StatusOr<std::vector<float>> read = cache.to_vector<float>();
  ASSERT_FALSE(read.ok());
  EXPECT_NE(read.status().message().find("array 'cache'"), std::string::npos);
}

TEST(FrontendJit, CacheKeyIncludesShapesAndDonation) {
  JitFunction f = jit([](std::vector<Tensor>& a) { return std::vector<Tensor>{a[0] * 2.0}; }, {.name = "twice"});
  Array a = Array::from_vector<float>({2}, {1, 2}, "a");
  ASSERT_TRUE(f({a}).ok());
  ASSERT_TRUE(f({a}).ok());
  EXPECT_EQ(f.cache_misses(), 1);
  EXPECT_EQ(f.cache_hits(), 1);
  Array b = Array::from_vector<float>({3}, {1, 2, 3}, "b");
  ASSERT_TRUE(f({b}).ok());
  EXPECT_EQ(f.cache_size(), 2);
  // Same shapes, now donated: a new executable, never the undonated one (pytorch/xla#8464).
  StatusOr<std::vector<Array>> donated = f.call({a}, {0});
  ASSERT_TRUE(donated.ok()) << donated.status().to_string();
  EXPECT_EQ(f.cache_size(), 3);
  EXPECT_EQ(f.cache_misses(), 3);
  EXPECT_TRUE(a.deleted());
  EXPECT_EQ(*(*donated)[0].to_vector<float>(), (std::vector<float>{2, 4}));
  EXPECT_FALSE(f.last_compiled()->optimized->config().input_output_alias.empty());
  // And back: the undonated executable is reused, and its input stays alive.
  ASSERT_TRUE(f({b}).ok());
  EXPECT_FALSE(b.deleted());
  EXPECT_TRUE(f.last_compiled()->optimized->config().input_output_alias.empty());
  EXPECT_EQ(f.cache_size(), 3);
}

TEST(FrontendJit, StageDumpsAndChromeTrace) {
  const std::filesystem::path directory = std::filesystem::temp_directory_path() / "insitu_frontend_jit_test";
  std::filesystem::remove_all(directory);
  std::filesystem::create_directories(directory);
  TraceRecorder& recorder = TraceRecorder::global();
  const std::string trace_path = (directory / "trace.json").string();
  recorder.set_path(trace_path);
  JitFunction f = jit(mutate_plus_one, {.name = "dumped", .dump_to = (directory / "dump").string()});
  Array x = Array::from_vector<int32_t>({4}, {0, 0, 0, 0}, "x");
  ASSERT_TRUE(f({x}).ok());
  ASSERT_TRUE(recorder.flush().ok());
  recorder.set_path("");
  bool before = false, after = false, buffers = false;
  for (const auto& entry : std::filesystem::directory_iterator(directory / "dump")) {
    const std::string name = entry.path().filename().string();
    before |= name.ends_with(".jit_dumped.before_optimizations.txt");
    after |= name.ends_with(".jit_dumped.after_optimizations.txt");
    buffers |= name.ends_with(".jit_dumped.after_optimizations-buffer-assignment.txt");
  }
  EXPECT_TRUE(before && after && buffers);
  std::ifstream file(trace_path);
  std::stringstream text;
  text << file.rdbuf();
  EXPECT_NE(text.str().find("{\"traceEvents\":["), std::string::npos);
  EXPECT_NE(text.str().find("\"name\":\"optimize_module\",\"cat\":\"compile\",\"ph\":\"X\""), std::string::npos) << text.str();
  EXPECT_NE(text.str().find("\"name\":\"execute jit_dumped\""), std::string::npos) << text.str();
  // Each kernel run and each compile pass is an event of its own.
  EXPECT_NE(text.str().find("\"name\":\"plus_one\",\"cat\":\"kernel\",\"ph\":\"X\""), std::string::npos) << text.str();
  for (const char* pass : {"donor-matching", "schedule", "copy-insertion", "copy-elimination"})
    EXPECT_NE(text.str().find(std::string("\"name\":\"") + pass + "\",\"cat\":\"compile-pass\",\"ph\":\"X\""),
              std::string::npos)
        << pass << " in " << text.str();
  EXPECT_NE(text.str().find("\"dur\":"), std::string::npos);
}

// One jit function called from 4 threads at once, 1,000 calls each, each thread mutating its
// own array in place through the plus_one kernel (jit.h: runs are not serialized). Run under
// ThreadSanitizer by scripts/sanitize.
TEST(FrontendJit, FourThreadsCallOneFunctionAtOnce) {
  JitFunction f = jit(mutate_plus_one, {.name = "plus_one_concurrent", .threads = 1});
  constexpr int kThreads = 4, kCalls = 1000;
  std::vector<Array> arrays;
  for (int t = 0; t < kThreads; ++t) arrays.push_back(Array::from_vector<int32_t>({64}, std::vector<int32_t>(64, t), "x"));
  std::vector<std::string> errors(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      const void* before = arrays[t].data();
      for (int call = 0; call < kCalls && errors[t].empty(); ++call) {
        StatusOr<std::vector<Array>> out = f({arrays[t]});
        if (!out.ok()) errors[t] = out.status().to_string();
      }
      if (arrays[t].data() != before) errors[t] = "the kernel did not write in place";
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (int t = 0; t < kThreads; ++t) {
    EXPECT_EQ(errors[t], "") << "thread " << t;
    EXPECT_EQ(*arrays[t].to_vector<int32_t>(), std::vector<int32_t>(64, t + kCalls)) << "thread " << t;
  }
  EXPECT_EQ(f.cache_size(), 1);
  EXPECT_EQ(f.cache_hits() + f.cache_misses(), kThreads * kCalls);
  EXPECT_EQ(f.last_stats().bytes_copied, 0);
}

}  // namespace
}  // namespace insitu

namespace insitu {
namespace {

// JitOptions::device: the seed's mutating kernel on GPU 0 (its CUDA body, in place), or, with
// no GPU, the call says why; it never runs on the CPU instead.
TEST(FrontendJit, OnCudaTheMutationReachesTheCallerOrTheCallSaysWhyNot) {
  JitFunction f = jit(mutate_plus_one, {.name = "plus_one_cuda", .device = DeviceKind::kCuda});
  Array x = Array::from_vector<int32_t>({4}, {1, 1, 1, 1}, "x");
  StatusOr<std::vector<Array>> out = f({x});
  if (!out.ok()) {
    const std::string message = out.status().to_string();
    EXPECT_TRUE(message.find("CUDA") != std::string::npos || message.find("GPU") != std::string::npos) << message;
    EXPECT_EQ(*x.to_vector<int32_t>(), (std::vector<int32_t>{1, 1, 1, 1}));
    return;
  }
  EXPECT_EQ(*x.to_vector<int32_t>(), (std::vector<int32_t>{2, 2, 2, 2}));
  EXPECT_GT(f.last_stats().bytes_to_device, 0);
}

}  // namespace
}  // namespace insitu
