// explain_module and its text and JSON forms (explain.h).
#include "insitu/passes/explain.h"

#include <nlohmann/json.hpp>

#include "insitu/ir/copy_reason.h"
#include "insitu/support/str.h"

namespace insitu {
namespace {

std::string_view alias_kind_name(AliasKind kind) { return kind == AliasKind::kMustAlias ? "must-alias" : "may-alias"; }

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
  return explanation;
}

Explanation explain_module(const OptimizedModule& optimized) {
  Explanation explanation = explain_module(*optimized.module);
  explanation.unused_donors = optimized.donors.unused;
  if (optimized.buffers) explanation.peak_memory_bytes = optimized.buffers->peak_memory_bytes();
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
  return out.dump(2) + "\n";
}

}  // namespace insitu
