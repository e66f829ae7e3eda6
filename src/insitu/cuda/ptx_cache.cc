#include "insitu/cuda/ptx_cache.h"

#include <unistd.h>

#include <cstdlib>
#include <deque>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <unordered_map>

#include "insitu/cuda/codegen.h"
#include "insitu/support/str.h"

namespace insitu::cuda {
namespace {

namespace fs = std::filesystem;

// At most this much PTX is kept in memory; the oldest goes first.
constexpr size_t kMemoryBytes = size_t{256} << 20;

struct Cache {
  std::mutex mutex;
  std::unordered_map<std::string, std::string> ptx;  // by key (the whole key, no hash)
  std::deque<std::string> order;                     // keys, oldest first
  size_t bytes = 0;
  PtxCacheStats stats;
};

Cache& cache() {
  static Cache* instance = new Cache;  // never destroyed: executables may compile during exit
  return *instance;
}

void remember(Cache& cache, const std::string& key, const std::string& ptx) {
  if (ptx.size() > kMemoryBytes || cache.ptx.count(key)) return;
  while (cache.bytes + ptx.size() > kMemoryBytes && !cache.order.empty()) {
    auto oldest = cache.ptx.find(cache.order.front());
    cache.bytes -= oldest->second.size();
    cache.ptx.erase(oldest);
    cache.order.pop_front();
  }
  cache.ptx.emplace(key, ptx);
  cache.order.push_back(key);
  cache.bytes += ptx.size();
}

}  // namespace

StatusOr<std::string> cached_ptx(const std::string& source, const std::string& arch) {
  const std::string key = str_cat("nvrtc ", nvrtc_version(), " ", arch, "\n", source);
  Cache& cached = cache();
  {
    std::lock_guard<std::mutex> lock(cached.mutex);
    if (auto found = cached.ptx.find(key); found != cached.ptx.end()) {
      ++cached.stats.memory_hits;
      return found->second;
    }
  }
  const char* folder = std::getenv("INSITU_PTX_CACHE");
  fs::path file;
  if (folder != nullptr && *folder != '\0') {
    file = fs::path(folder) / (content_hash(key) + ".ptx");
    std::ifstream in(file, std::ios::binary);
    std::stringstream text;
    if (in) text << in.rdbuf();
    // Only what looks like NVRTC's PTX; anything else (a file damaged since) is compiled over.
    if (text.str().find(".target ") != std::string::npos) {
      std::lock_guard<std::mutex> lock(cached.mutex);
      ++cached.stats.disk_hits;
      remember(cached, key, text.str());
      return text.str();
    }
  }
  INSITU_ASSIGN_OR_RETURN(std::string ptx, compile_to_ptx(source, "insitu_plan.cu", arch));
  if (!file.empty()) {  // best effort: a cache that cannot be written costs only the next compile
    std::error_code error;
    fs::create_directories(file.parent_path(), error);
    const fs::path temporary = file.string() + str_cat(".", ::getpid(), ".tmp");
    {
      std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
      out << ptx;
      out.close();
      if (!out) fs::remove(temporary, error);
    }
    fs::rename(temporary, file, error);
    if (error) fs::remove(temporary, error);
  }
  std::lock_guard<std::mutex> lock(cached.mutex);
  ++cached.stats.compiled;
  remember(cached, key, ptx);
  return ptx;
}

PtxCacheStats ptx_cache_stats() {
  std::lock_guard<std::mutex> lock(cache().mutex);
  return cache().stats;
}

void clear_ptx_memory_cache() {
  Cache& cached = cache();
  std::lock_guard<std::mutex> lock(cached.mutex);
  cached.ptx.clear();
  cached.order.clear();
  cached.bytes = 0;
}

}  // namespace insitu::cuda
