// explain_module and its text and JSON forms (explain.h).
#include "insitu/passes/explain.h"

#include <nlohmann/json.hpp>

#include <unordered_set>
#include <variant>

#include "insitu/analysis/parallel_grid.h"
#include "insitu/ir/copy_reason.h"
#include "insitu/ir/grid_loop.h"
#include "insitu/support/str.h"

namespace insitu {
namespace {

std::string_view alias_kind_name(AliasKind kind) { return kind == AliasKind::kMustAlias ? "must-alias" : "may-alias"; }

// Each grid loop with the copies of arrays inside it or of its initial state (the while's
// operand, or an element of the tuple it is). A scalar's copy (the step counter's initial
// constant) is no block or array of the kernel's: left out.
std::vector<KernelLoopExplanation> explain_kernels(const Module& module, const std::vector<CopyExplanation>& copies) {
  std::vector<KernelLoopExplanation> kernels;
  for (const Computation* computation : module.computations())
    for (const Instruction* instruction : computation->instructions()) {
      std::optional<GridLoopInfo> info = grid_loop_info(*instruction);
      if (!info) continue;
      KernelLoopExplanation& kernel = kernels.emplace_back();
      kernel.loop = instruction;
      kernel.kernel = info->kernel;
      kernel.grid = info->grid;
      kernel.aliases = info->aliases;
      std::variant<ParallelGrid, std::string> parallel = parallel_grid(*instruction);
      if (const ParallelGrid* grid = std::get_if<ParallelGrid>(&parallel)) kernel.parallel_axes = grid->parallel_axes;
      else kernel.in_order_because = std::get<std::string>(std::move(parallel));
      const std::unordered_set<const Computation*> inside = computations_run_by(*instruction);
      const Instruction* state = instruction->operand(0);
      for (const CopyExplanation& copy : copies) {
        if (copy.copy->shape().is_array() && copy.copy->shape().rank() == 0) continue;  // the step counter
        bool initial = copy.copy == state;
        if (state->opcode() == Opcode::kTuple)
          for (const Instruction* element : state->operands()) initial |= copy.copy == element;
        if (initial || inside.count(copy.copy->parent())) kernel.copies.push_back(copy.copy);
      }
    }
  return kernels;
}

}  // namespace

int64_t Explanation::copied_bytes() const {
  int64_t bytes = 0;
  for (const CopyExplanation& copy : copies) bytes += copy.bytes;
  return bytes;
}

Explanation explain_module(const Module& optimized) {
  Explanation explanation;
  explanation.module_name = optimized.name();
  for (const Computation* computation : optimized.computations()) {
    for (const Instruction* instruction : computation->instructions()) {
      if (instruction->opcode() != Opcode::kCopy) continue;
      std::optional<CopyReason> reason = copy_reason(*instruction);
      std::string detail = copy_detail(*instruction);
      if (!reason && detail.empty()) detail = "a copy written in the input program";
      explanation.copies.push_back(
          {instruction, instruction->shape().byte_size(), reason.value_or(CopyReason::kUserCopy), std::move(detail)});
    }
  }
  explanation.aliases = optimized.config().input_output_alias;
  explanation.unused_donors = recorded_unused_donors(optimized);
  explanation.kernels = explain_kernels(optimized, explanation.copies);
  return explanation;
}

Explanation explain_module(const OptimizedModule& optimized) {
  Explanation explanation = explain_module(*optimized.module);
  explanation.unused_donors = optimized.donors.unused;
  if (optimized.buffers) {
    explanation.peak_memory_bytes = optimized.buffers->peak_memory_bytes();
    const Dataflow& dataflow = optimized.buffers->dataflow();
    for (ValueId id = 0; id < static_cast<ValueId>(dataflow.values().size()); ++id)
      if (const Instruction* update = optimized.buffers->placed_for(id))
        explanation.placed_updates.push_back(
            {dataflow.value(id).defining.instruction, update, dataflow.value(id).shape.byte_size()});
  }
  return explanation;
}

std::string explanation_text(const Explanation& e) {
  std::string out = str_cat("module ", e.module_name, ": ", e.copies.size(), e.copies.size() == 1 ? " copy" : " copies",
                            " (", e.copied_bytes(), " bytes)");
  if (e.peak_memory_bytes) out += str_cat(", peak memory ", *e.peak_memory_bytes, " bytes");
  out += "\n";
  for (const CopyExplanation& copy : e.copies)
    out += str_cat("copy %", copy.copy->name(), " in ", copy.copy->parent()->name(), ": ", copy.bytes, " bytes, ",
                   copy_reason_name(copy.reason), "\n  ", copy.detail, "\n");
  for (const InputOutputAlias& alias : e.aliases)
    out += str_cat("alias: output ", shape_index_to_string(alias.output_index), " is written into parameter ",
                   alias.parameter_number, " ", shape_index_to_string(alias.parameter_index), " (",
                   alias_kind_name(alias.kind), ")\n");
  for (const UnusedDonor& donor : e.unused_donors)
    out += str_cat("unused donor: parameter ", donor.parameter_number, " ", shape_index_to_string(donor.parameter_index),
                   ": ", donor_reason_name(donor.reason), "\n  ", donor.detail, "\n");
  for (const PlacedUpdateExplanation& placed : e.placed_updates)
    out += str_cat("in its window: %", placed.producer->name(), " (", placed.bytes, " bytes) is computed where %",
                   placed.update->name(), " writes it, which then moves nothing\n");
  for (const KernelLoopExplanation& kernel : e.kernels) {
    out += str_cat("pallas kernel ", kernel.kernel, " (grid ", kernel.grid, ", loop %", kernel.loop->name(),
                   kernel.aliases.empty() ? std::string() : str_cat(", input->output aliases ", kernel.aliases), "): ");
    if (kernel.copies.empty()) {
      out += "in place (no copy of its arrays or loop state)";
    } else {
      out += str_cat(kernel.copies.size(), kernel.copies.size() == 1 ? " copy:" : " copies:");
      for (const Instruction* copy : kernel.copies) out += str_cat(" %", copy->name());
      out += " (their reasons above)";
    }
    if (kernel.parallel_axes > 0)
      out += str_cat("; grid ", kernel.parallel_axes == 1 ? "axis 0" : str_cat("axes 0-", kernel.parallel_axes - 1),
                     " on threads\n");
    else
      out += str_cat("; steps in order: ", kernel.in_order_because, "\n");
  }
  return out;
}

std::string explanation_json(const Explanation& e) {
  nlohmann::json out;
  out["copies"] = nlohmann::json::array();
  for (const CopyExplanation& copy : e.copies)
    out["copies"].push_back({{"name", copy.copy->name()},
                             {"bytes", copy.bytes},
                             {"reason", std::string(copy_reason_name(copy.reason))},
                             {"detail", copy.detail}});
  out["peak_memory_bytes"] = e.peak_memory_bytes ? nlohmann::json(*e.peak_memory_bytes) : nlohmann::json(nullptr);
  out["aliases"] = nlohmann::json::array();
  for (const InputOutputAlias& alias : e.aliases)
    out["aliases"].push_back({{"output_index", nlohmann::json(alias.output_index)},
                              {"parameter", alias.parameter_number},
                              {"parameter_index", nlohmann::json(alias.parameter_index)},
                              {"kind", std::string(alias_kind_name(alias.kind))}});
  out["unused_donors"] = nlohmann::json::array();
  for (const UnusedDonor& donor : e.unused_donors)
    out["unused_donors"].push_back({{"parameter", donor.parameter_number},
                                    {"parameter_index", nlohmann::json(donor.parameter_index)},
                                    {"reason", std::string(donor_reason_name(donor.reason))},
                                    {"detail", donor.detail}});
  if (!e.placed_updates.empty()) {
    out["placed_updates"] = nlohmann::json::array();
    for (const PlacedUpdateExplanation& placed : e.placed_updates)
      out["placed_updates"].push_back(
          {{"producer", placed.producer->name()}, {"update", placed.update->name()}, {"bytes", placed.bytes}});
  }
  if (!e.kernels.empty()) {
    out["pallas_kernels"] = nlohmann::json::array();
    for (const KernelLoopExplanation& kernel : e.kernels) {
      nlohmann::json copies = nlohmann::json::array();
      for (const Instruction* copy : kernel.copies) copies.push_back(copy->name());
      out["pallas_kernels"].push_back({{"name", kernel.kernel},
                                       {"grid", kernel.grid},
                                       {"aliases", kernel.aliases},
                                       {"loop", kernel.loop->name()},
                                       {"in_place", kernel.copies.empty()},
                                       {"copies", std::move(copies)},
                                       {"parallel_axes", kernel.parallel_axes},
                                       {"in_order_because", kernel.parallel_axes > 0 ? nlohmann::json(nullptr)
                                                                                     : nlohmann::json(kernel.in_order_because)}});
    }
  }
  return out.dump(2) + "\n";
}

}  // namespace insitu
