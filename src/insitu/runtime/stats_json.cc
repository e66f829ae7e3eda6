#include "insitu/runtime/stats_json.h"

#include "insitu/ir/copy_reason.h"
#include "insitu/passes/explain.h"

namespace insitu {

nlohmann::json run_stats_json(const Executable& executable, const ExecutionStats& stats) {
  nlohmann::json json = {{"copies_executed", stats.copies_executed},
                         {"bytes_copied", stats.bytes_copied},
                         {"bytes_written", stats.bytes_written},
                         {"bytes_staged", stats.bytes_staged},
                         {"peak_memory_bytes", stats.peak_memory_bytes},
                         {"run_seconds", stats.run_seconds},
                         {"fallback_ops_executed", stats.fallback_ops_executed},
                         {"copies_in_module", nlohmann::json::array()}};
  if (executable.device() == DeviceKind::kCuda)
    json.update({{"device", executable.device_name()},
                 {"bytes_to_device", stats.bytes_to_device},
                 {"bytes_to_host", stats.bytes_to_host},
                 {"kernels_launched", stats.kernels_launched}});
  for (const CopyExplanation& copy : explain_module(executable.module()).copies)
    json["copies_in_module"].push_back({{"name", copy.copy->name()}, {"reason", copy_reason_name(copy.reason)}});
  if (!stats.kernel_grids.empty()) {
    json["pallas_kernels"] = nlohmann::json::array();
    for (const ExecutionStats::KernelGrid& grid : stats.kernel_grids) {
      nlohmann::json axes = nlohmann::json::array();
      for (int64_t axis = 0; axis < grid.parallel_axes; ++axis) axes.push_back(axis);
      json["pallas_kernels"].push_back(
          {{"name", grid.kernel}, {"grid", grid.grid}, {"aliases", grid.aliases}, {"runs", grid.runs},
           {"steps", grid.steps}, {"bytes_copied", grid.bytes_copied}, {"bytes_staged", grid.bytes_staged},
           {"native", true}, {"parallel_axes", axes},
           {"in_order_because", grid.parallel_axes > 0 ? nlohmann::json(nullptr) : nlohmann::json(grid.in_order_because)}});
    }
  }
  return json;
}

}  // namespace insitu
