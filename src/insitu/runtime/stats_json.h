// The JSON of one call's ExecutionStats: the run fields of `insitu run --stats` (DESIGN.md's CLI
// contract) and of the Python package's Executable.stats, from one place: copies_executed,
// bytes_copied, bytes_written, bytes_staged, peak_memory_bytes, run_seconds,
// fallback_ops_executed, copies_in_module (each copy's name and reason), on a CUDA device its
// name and transfers, and pallas_kernels where grid loops ran.
#pragma once

#include <nlohmann/json.hpp>

#include "insitu/runtime/executable.h"

namespace insitu {

nlohmann::json run_stats_json(const Executable& executable, const ExecutionStats& stats);

}  // namespace insitu
