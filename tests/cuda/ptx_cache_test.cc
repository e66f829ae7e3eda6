// The PTX cache (cuda/ptx_cache.h): a plan source is compiled by NVRTC once per process, and
// once per INSITU_PTX_CACHE folder across processes; a changed architecture compiles again, and
// a damaged cache file is compiled over. Needs NVRTC (no GPU).
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "insitu/cuda/codegen.h"
#include "insitu/cuda/ptx_cache.h"
#include "insitu/support/str.h"

namespace insitu::cuda {
namespace {

namespace fs = std::filesystem;

// A kernel no other test compiles (the cache is the process's).
std::string unique_source(const std::string& tag) {
  return str_cat("// ", tag, " ", ::getpid(), " ", std::chrono::steady_clock::now().time_since_epoch().count(),
                 "\nextern \"C\" __global__ void twice(float* x, long long n) {\n",
                 "  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;\n",
                 "  if (i < n) x[i] *= 2.0f;\n}\n");
}

std::vector<fs::path> files_in(const fs::path& folder) {
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(folder)) files.push_back(entry.path());
  return files;
}

TEST(PtxCache, ASourceIsCompiledOncePerProcess) {
  if (!cuda_available()) GTEST_SKIP() << "built without NVRTC";
  const std::string source = unique_source("memory");
  const PtxCacheStats before = ptx_cache_stats();
  StatusOr<std::string> first = cached_ptx(source);
  ASSERT_TRUE(first.ok()) << first.status().to_string();
  StatusOr<std::string> second = cached_ptx(source);
  ASSERT_TRUE(second.ok()) << second.status().to_string();
  EXPECT_EQ(*first, *second);
  const PtxCacheStats after = ptx_cache_stats();
  EXPECT_EQ(after.compiled - before.compiled, 1);
  EXPECT_EQ(after.memory_hits - before.memory_hits, 1);
  // Another architecture is another key.
  ASSERT_TRUE(cached_ptx(source, "compute_80").ok());
  EXPECT_EQ(ptx_cache_stats().compiled - before.compiled, 2);
}

TEST(PtxCache, AFolderKeepsItAcrossProcessesAndADamagedFileIsCompiledOver) {
  if (!cuda_available()) GTEST_SKIP() << "built without NVRTC";
  const fs::path folder = fs::temp_directory_path() / str_cat("insitu_ptx_cache_", ::getpid());
  fs::remove_all(folder);
  ::setenv("INSITU_PTX_CACHE", folder.c_str(), 1);
  const std::string source = unique_source("disk");
  const PtxCacheStats before = ptx_cache_stats();
  StatusOr<std::string> compiled = cached_ptx(source);
  ASSERT_TRUE(compiled.ok()) << compiled.status().to_string();
  std::vector<fs::path> files = files_in(folder);
  ASSERT_EQ(files.size(), 1u);  // the PTX, no temporary left
  EXPECT_EQ(files[0].extension(), ".ptx");

  clear_ptx_memory_cache();  // as a new process would start
  StatusOr<std::string> loaded = cached_ptx(source);
  ASSERT_TRUE(loaded.ok()) << loaded.status().to_string();
  EXPECT_EQ(*loaded, *compiled);
  EXPECT_EQ(ptx_cache_stats().disk_hits - before.disk_hits, 1);
  EXPECT_EQ(ptx_cache_stats().compiled - before.compiled, 1);

  std::ofstream(files[0], std::ios::trunc) << "not PTX";
  clear_ptx_memory_cache();
  StatusOr<std::string> repaired = cached_ptx(source);
  ASSERT_TRUE(repaired.ok()) << repaired.status().to_string();
  EXPECT_EQ(*repaired, *compiled);
  EXPECT_EQ(ptx_cache_stats().compiled - before.compiled, 2);
  std::ifstream in(files[0]);
  std::string first_line;
  std::getline(in, first_line);
  EXPECT_NE(first_line, "not PTX");

  ::unsetenv("INSITU_PTX_CACHE");
  fs::remove_all(folder);
}

}  // namespace
}  // namespace insitu::cuda
