// Which vector instruction set the kernels compiled in several variants (functions with
// __attribute__((target(...))), run_at_cpu_level) run on this CPU, chosen per call. Not ifunc target_clones:
// their resolvers run before a sanitizer's runtime and crash TSan binaries.
//
// set_cpu_level_limit caps the choice for the whole process (tests run every variant a CPU
// has this way; a user can reproduce a smaller machine). Variants held bit for bit to the
// evaluator (the f32 unary functions) give the same bits at every level; the library's
// matrix-vector kernels stay within their stated tolerance.
#pragma once

#include <atomic>

namespace insitu {

enum class CpuLevel { kBaseline, kAvx2Fma, kAvx512 };

inline std::atomic<CpuLevel> cpu_level_limit{CpuLevel::kAvx512};

inline void set_cpu_level_limit(CpuLevel limit) { cpu_level_limit.store(limit, std::memory_order_relaxed); }

inline CpuLevel detected_cpu_level() {
#if defined(__x86_64__) && defined(__GNUC__)
  if (__builtin_cpu_supports("avx512f")) return CpuLevel::kAvx512;
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return CpuLevel::kAvx2Fma;
#endif
  return CpuLevel::kBaseline;
}

inline CpuLevel cpu_level() {
  const CpuLevel detected = detected_cpu_level();
  const CpuLevel limit = cpu_level_limit.load(std::memory_order_relaxed);
  return limit < detected ? limit : detected;
}

// Body::run(args...) compiled for each level and run at this CPU's: Body::run must be
// [[gnu::always_inline]] (it is inlined into each variant and vectorized there).
#if defined(__x86_64__) && defined(__GNUC__)
template <typename Body, typename... Args>
__attribute__((target("avx2,fma"))) void run_avx2_fma(Args... args) {
  Body::run(args...);
}
template <typename Body, typename... Args>
__attribute__((target("avx512f"))) void run_avx512(Args... args) {
  Body::run(args...);
}
#endif

template <typename Body, typename... Args>
void run_at_cpu_level(Args... args) {
#if defined(__x86_64__) && defined(__GNUC__)
  switch (cpu_level()) {
    case CpuLevel::kAvx512: return run_avx512<Body>(args...);
    case CpuLevel::kAvx2Fma: return run_avx2_fma<Body>(args...);
    case CpuLevel::kBaseline: break;
  }
#endif
  Body::run(args...);
}

}  // namespace insitu
