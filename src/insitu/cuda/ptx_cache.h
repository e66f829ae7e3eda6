// PTX compiled once per plan source. NVRTC takes from a tenth of a second (a decode step) to
// seconds (a training step's hundreds of kernels) per plan; an executable whose plan was
// compiled before loads the PTX kept then: from memory within a process, and across processes
// from the folder named by INSITU_PTX_CACHE when it is set (off by default: nothing is written
// outside the build unless asked). The key is the whole source, the target architecture and
// NVRTC's version, so a changed generator or toolkit never loads stale PTX. A cache file is
// written to a temporary name and renamed, so a crash leaves no half-written PTX behind.
#pragma once

#include <cstdint>
#include <string>

#include "insitu/support/status.h"

namespace insitu::cuda {

struct PtxCacheStats {
  int64_t compiled = 0;     // NVRTC runs
  int64_t memory_hits = 0;  // found in this process
  int64_t disk_hits = 0;    // found in INSITU_PTX_CACHE
};

// compile_to_ptx(source, ...), or the PTX of an earlier compile of the same source.
StatusOr<std::string> cached_ptx(const std::string& source, const std::string& arch = "compute_90");
PtxCacheStats ptx_cache_stats();
// Forgets the PTX held in memory (tests of the disk cache; a long process that compiled many).
void clear_ptx_memory_cache();

}  // namespace insitu::cuda
