// Buffer-assignment dumps in XLA's text style (xla/service/buffer_assignment.cc ToString and
// MemoryUsageReport, HloLiveRange::ToString), so people who read XLA dumps can read these:
//
//   allocation 0: size 16, parameter 0, shape |s32[4]| at ShapeIndex {}, maybe-live-out:
//    value: <3 p0 @0> (size=16,offset=0): s32[4]{0}
#include <algorithm>
#include <cstdio>

#include "insitu/passes/buffer_assignment.h"
#include "insitu/support/str.h"

namespace insitu {
namespace {

// XLA's HumanReadableNumBytes: "88B", "1.50KiB", "2.00MiB".
std::string human_bytes(int64_t bytes) {
  if (bytes < 0) return "-" + human_bytes(-bytes);
  if (bytes < 1024) return str_cat(bytes, "B");
  static const char kUnits[] = "KMGTPE";
  double amount = static_cast<double>(bytes) / 1024.0;
  int unit = 0;
  while (amount >= 1024.0 && unit < 5) {
    amount /= 1024.0;
    ++unit;
  }
  char text[32];
  std::snprintf(text, sizeof(text), "%.2f%ciB", amount, kUnits[unit]);
  return text;
}

// "<3 p0 @0>", "<7 while.1{1} @0>": id, defining leaf, memory space.
std::string value_short_string(const Value& value) {
  const Instruction* instruction = value.defining.instruction;
  std::string index = instruction->shape().is_tuple() ? shape_index_to_string(value.defining.index) : "";
  const int64_t color = value.shape.is_array() ? value.shape.layout().memory_space : 0;
  return str_cat("<", value.id, " ", instruction->name(), index, " @", color, ">");
}

std::string value_long_string(const Value& value) {
  std::string out = value_short_string(value) + "\n positions:\n";
  for (const Position& position : value.positions) {
    const bool tuple = position.instruction->shape().is_tuple();
    out += str_cat("  ", position.instruction->name(), tuple ? shape_index_to_string(position.index) : "", "\n");
  }
  out += " uses:\n";
  for (const Use& use : value.uses) {
    const bool tuple = use.instruction->operand(use.operand_number)->shape().is_tuple();
    out += str_cat("  ", use.instruction->name(), ", operand ", use.operand_number,
                   tuple ? " " + shape_index_to_string(use.operand_index) : "", "\n");
  }
  out += str_cat(" from instruction: ", value.defining.instruction->to_string(), "\n");
  return out;
}

std::string allocation_short_string(const Allocation& allocation, const Dataflow& dataflow, bool human_readable) {
  std::string out = str_cat("allocation ", allocation.index, ": size ",
                            human_readable ? human_bytes(allocation.size) : std::to_string(allocation.size));
  switch (allocation.kind) {
    case AllocationKind::kParameter: {
      std::string shape = "<unknown shape>";
      for (ValueId id : allocation.values) {
        const Instruction* instruction = dataflow.value(id).defining.instruction;
        if (instruction->opcode() == Opcode::kParameter &&
            instruction->parameter_number == allocation.parameter_number && instruction->parent() != nullptr &&
            instruction->parent()->parent() != nullptr && instruction->parent() == instruction->parent()->parent()->entry())
          shape = instruction->shape().to_string(/*with_layout=*/false);
      }
      out += str_cat(", parameter ", allocation.parameter_number, ", shape |", shape, "| at ShapeIndex ",
                     shape_index_to_string(allocation.parameter_index));
      break;
    }
    case AllocationKind::kOutput:
      for (ValueId id : allocation.values) {
        const Value& value = dataflow.value(id);
        out += str_cat(", output shape is |", value.shape.to_string(/*with_layout=*/false), "| at ShapeIndex ",
                       shape_index_to_string(allocation.output_index));
        break;
      }
      break;
    case AllocationKind::kConstant:
      out += ", constant";
      break;
    case AllocationKind::kTemp:
      break;
    case AllocationKind::kDynamicView:
      out += ", dynamic view (no bytes of its own: inside its dynamic-slice's operand, at the call's starts)";
      break;
  }
  if (allocation.maybe_live_out) out += ", maybe-live-out";
  if (allocation.kind == AllocationKind::kTemp) out += ", preallocated-temp";
  if (allocation.per_worker_of != nullptr)
    out += str_cat(", one per worker of %", allocation.per_worker_of->name(), " (a parallel grid loop)");
  return out + ":\n";
}

}  // namespace

std::string BufferAssignment::to_string() const {
  std::string out = "BufferAssignment:\n";
  int64_t total = 0;
  std::vector<ValueId> used;
  for (const Allocation& allocation : allocations_) {
    total += allocation.size;
    out += allocation_short_string(allocation, dataflow_, /*human_readable=*/false);
    for (ValueId id : allocation.values) {
      const BufferSlice& slice = *slices_[id];
      out += str_cat(" value: ", value_short_string(dataflow_.value(id)), " (size=", slice.size,
                     ",offset=", slice.offset, "): ", dataflow_.value(id).shape.to_string(), "\n");
      used.push_back(id);
    }
    for (ValueId id = 0; id < static_cast<ValueId>(views_.size()); ++id) {
      if (!views_[id] || slices_[id]->allocation != allocation.index) continue;
      const BufferSlice& slice = *slices_[id];
      out += str_cat(" view: ", value_short_string(dataflow_.value(id)), " (size=", slice.size,
                     ",offset=", slice.offset, "): ", dataflow_.value(id).shape.to_string(), "\n");
    }
  }
  out += str_cat("\nTotal bytes used: ", total, " (", human_bytes(total), ")\n");
  out += "\nUsed values:\n";
  std::sort(used.begin(), used.end());
  for (ValueId id : used) out += value_long_string(dataflow_.value(id));
  out += live_ranges_.to_string(dataflow_);
  out += str_cat("  Live ranges at ", peak_time_, " (peak):\n");
  for (const auto& [id, bytes] : peak_buffers_)
    out += str_cat("    ", dataflow_.value(id).to_string().substr(1), ": ", bytes, " bytes\n");
  out += str_cat("  Peak memory: ", peak_memory_bytes_, " bytes (", human_bytes(peak_memory_bytes_), ")\n");
  return out;
}

std::string BufferAssignment::memory_usage_report() const {
  int64_t total = 0;
  for (const Allocation& allocation : allocations_) total += allocation.size;
  std::string out = str_cat("Total bytes used: ", total, " (", human_bytes(total), ")\n");
  out += "\nAllocations sorted by size:\n\n";
  std::vector<const Allocation*> sorted;
  for (const Allocation& allocation : allocations_) sorted.push_back(&allocation);
  std::stable_sort(sorted.begin(), sorted.end(),
                   [](const Allocation* a, const Allocation* b) { return a->size > b->size; });
  out += "cumulative_size; total_size - cumulative_size; allocation\n";
  out += std::string(78, '-') + "\n";
  int64_t cumulative = 0;
  char line[96];
  for (const Allocation* allocation : sorted) {
    cumulative += allocation->size;
    const double percent = total > 0 ? 100.0 * static_cast<double>(cumulative) / static_cast<double>(total) : 100.0;
    std::snprintf(line, sizeof(line), "%10s(%3.0f%%); %10s; ", human_bytes(cumulative).c_str(), percent,
                  human_bytes(total - cumulative).c_str());
    out += line + allocation_short_string(*allocation, dataflow_, /*human_readable=*/true);
  }
  out += "\n\nAllocations sorted by size with their values:\n";
  for (const Allocation* allocation : sorted) {
    out += allocation_short_string(*allocation, dataflow_, /*human_readable=*/true);
    if (allocation->values.size() <= 1) continue;
    // One row per offset: the biggest value there, how many values share it, their shapes.
    struct Row {
      int64_t offset = 0;
      int64_t size = 0;
      std::vector<ValueId> values;
    };
    std::vector<Row> rows;
    for (ValueId id : allocation->values) {
      const BufferSlice& slice = *slices_[id];
      auto it = std::find_if(rows.begin(), rows.end(), [&](const Row& row) { return row.offset == slice.offset; });
      if (it == rows.end()) it = rows.insert(rows.end(), Row{slice.offset, 0, {}});
      it->size = std::max(it->size, slice.size);
      it->values.push_back(id);
    }
    std::stable_sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) {
      return a.size != b.size ? a.size > b.size : a.offset < b.offset;
    });
    int64_t rows_total = 0;
    for (const Row& row : rows) rows_total += row.size;
    out += "\tcumulative_size;       size;       offset; used_by_n_values; shapes_list\n";
    out += "\t" + std::string(60, '-') + "\n";
    int64_t row_cumulative = 0;
    for (const Row& row : rows) {
      row_cumulative += row.size;
      const double percent =
          rows_total > 0 ? 100.0 * static_cast<double>(row_cumulative) / static_cast<double>(rows_total) : 100.0;
      std::snprintf(line, sizeof(line), "\t%9s(%3.0f%%); %10s; %12lld; %16zu; ", human_bytes(row_cumulative).c_str(),
                    percent, human_bytes(row.size).c_str(), static_cast<long long>(row.offset), row.values.size());
      std::vector<std::pair<std::string, int64_t>> shapes;  // in order of first appearance
      for (ValueId id : row.values) {
        std::string shape = dataflow_.value(id).shape.to_string(/*with_layout=*/false);
        auto it = std::find_if(shapes.begin(), shapes.end(), [&](const auto& entry) { return entry.first == shape; });
        if (it == shapes.end()) shapes.emplace_back(shape, 1);
        else ++it->second;
      }
      out += line + str_join(shapes, ", ", [](const auto& entry) {
               return entry.second == 1 ? entry.first : str_cat(entry.second, "×", entry.first);
             }) + "\n";
    }
    out += "\n";
  }
  return out;
}

}  // namespace insitu
