// at_every_cpu_level: a check run with the runtime's kernels capped at each vector width this
// machine has (cpu_level.h), for kernels compiled in several variants that must agree.
#pragma once

#include <string>

#include <gtest/gtest.h>

#include "insitu/runtime/cpu_level.h"

namespace insitu::testing_runtime {

// Runs `check` with the kernels limited to each CPU level this machine has, then lifts the limit.
template <typename Check>
void at_every_cpu_level(Check check) {
  for (CpuLevel level : {CpuLevel::kBaseline, CpuLevel::kAvx2Fma, CpuLevel::kAvx512}) {
    if (level > detected_cpu_level()) continue;
    SCOPED_TRACE("cpu level " + std::to_string(static_cast<int>(level)));
    set_cpu_level_limit(level);
    check();
  }
  set_cpu_level_limit(CpuLevel::kAvx512);
}

}  // namespace insitu::testing_runtime
