// `insitu explain`: copies with their reasons, aliases, unused donors, peak memory; as text,
// JSON (DESIGN.md's schema) or Graphviz.
#include <map>

#include <nlohmann/json.hpp>

#include "insitu/ir/copy_reason.h"
#include "insitu/module_loader.h"
#include "insitu/opt_command.h"
#include "insitu/passes/optimize.h"
#include "insitu/plugins.h"
#include "insitu/support/str.h"

namespace insitu::cli {
namespace {

struct CopyReport {
  const Instruction* copy;
  int64_t bytes;
  std::string reason;
  std::string detail;
};

std::vector<CopyReport> collect_copies(const Module& module) {
  std::vector<CopyReport> copies;
  for (const Computation* computation : module.computations()) {
    for (const Instruction* instruction : computation->instructions()) {
      if (instruction->opcode() != Opcode::kCopy) continue;
      std::optional<CopyReason> reason = copy_reason(*instruction);
      std::string detail = copy_detail(*instruction);
      if (!reason && detail.empty()) detail = "a copy written in the input program";
      copies.push_back({instruction, instruction->shape().byte_size(),
                        std::string(copy_reason_name(reason.value_or(CopyReason::kUserCopy))), std::move(detail)});
    }
  }
  return copies;
}

nlohmann::json index_json(const ShapeIndex& index) { return nlohmann::json(index); }

std::string explain_json(const OptimizedModule& optimized, const std::vector<CopyReport>& copies) {
  nlohmann::json out;
  out["copies"] = nlohmann::json::array();
  for (const CopyReport& copy : copies)
    out["copies"].push_back({{"name", copy.copy->name()}, {"bytes", copy.bytes}, {"reason", copy.reason},
                             {"detail", copy.detail}});
  out["peak_memory_bytes"] = optimized.buffers->peak_memory_bytes();
  out["aliases"] = nlohmann::json::array();
  for (const InputOutputAlias& alias : optimized.module->config().input_output_alias)
    out["aliases"].push_back({{"output_index", index_json(alias.output_index)},
                              {"parameter", alias.parameter_number},
                              {"parameter_index", index_json(alias.parameter_index)},
                              {"kind", alias.kind == AliasKind::kMustAlias ? "must-alias" : "may-alias"}});
  out["unused_donors"] = nlohmann::json::array();
  for (const UnusedDonor& donor : optimized.unused_donors)
    out["unused_donors"].push_back({{"parameter", donor.parameter_number},
                                    {"parameter_index", index_json(donor.parameter_index)},
                                    {"reason", std::string(donor_reason_name(donor.reason))},
                                    {"detail", donor.detail}});
  return out.dump(2) + "\n";
}

std::string explain_text(const OptimizedModule& optimized, const std::vector<CopyReport>& copies) {
  int64_t copied = 0;
  for (const CopyReport& copy : copies) copied += copy.bytes;
  std::string out = str_cat("module ", optimized.module->name(), ": ", copies.size(), copies.size() == 1 ? " copy" : " copies",
                            " (", copied, " bytes), peak memory ", optimized.buffers->peak_memory_bytes(), " bytes\n");
  for (const CopyReport& copy : copies) {
    out += str_cat("copy %", copy.copy->name(), " in ", copy.copy->parent()->name(), ": ", copy.bytes, " bytes, ",
                   copy.reason, "\n  ", copy.detail, "\n");
  }
  for (const InputOutputAlias& alias : optimized.module->config().input_output_alias)
    out += str_cat("alias: output ", shape_index_to_string(alias.output_index), " is written into parameter ",
                   alias.parameter_number, " ", shape_index_to_string(alias.parameter_index), " (",
                   alias.kind == AliasKind::kMustAlias ? "must-alias" : "may-alias", ")\n");
  for (const UnusedDonor& donor : optimized.unused_donors)
    out += str_cat("unused donor: parameter ", donor.parameter_number, " ", shape_index_to_string(donor.parameter_index),
                   ": ", donor_reason_name(donor.reason), "\n  ", donor.detail, "\n");
  return out;
}

std::string dot_escape(std::string_view text) {
  std::string out;
  for (char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out;
}

// Graphviz: one cluster per computation; copies red with their reason; parameters aliased to an
// output drawn blue with the output they become; edges from operand to user.
std::string explain_dot(const OptimizedModule& optimized, const std::vector<CopyReport>& copies) {
  const Module& module = *optimized.module;
  std::map<const Instruction*, const CopyReport*> copy_of;
  for (const CopyReport& copy : copies) copy_of[copy.copy] = &copy;
  std::map<int64_t, std::string> alias_of_parameter;
  for (const InputOutputAlias& alias : module.config().input_output_alias)
    alias_of_parameter[alias.parameter_number] += str_cat("aliased to output ", shape_index_to_string(alias.output_index), " ");
  std::string out = str_cat("digraph \"", dot_escape(module.name()), "\" {\n  rankdir=TB;\n  node [shape=box, fontname=\"monospace\"];\n");
  int cluster = 0;
  std::map<const Instruction*, std::string> ids;
  for (const Computation* computation : module.computations())
    for (const Instruction* instruction : computation->instructions()) ids[instruction] = str_cat("n", ids.size());
  for (const Computation* computation : module.computations()) {
    out += str_cat("  subgraph cluster_", cluster++, " {\n    label=\"", dot_escape(computation->name()),
                   computation == module.entry() ? " (ENTRY)" : "", "\";\n");
    for (const Instruction* instruction : computation->instructions()) {
      std::string label = str_cat("%", instruction->name(), "\\n", opcode_name(instruction->opcode()), " ",
                                  dot_escape(instruction->shape().to_string()));
      std::string style;
      if (auto it = copy_of.find(instruction); it != copy_of.end()) {
        label += str_cat("\\n", it->second->reason, " (", it->second->bytes, " bytes)");
        style = ", color=red, fontcolor=red, penwidth=2";
      } else if (computation == module.entry() && instruction->opcode() == Opcode::kParameter &&
                 alias_of_parameter.count(instruction->parameter_number)) {
        label += "\\n" + alias_of_parameter[instruction->parameter_number];
        style = ", color=blue, fontcolor=blue, penwidth=2";
      }
      if (instruction == computation->root()) style += ", peripheries=2";
      out += str_cat("    ", ids[instruction], " [label=\"", label, "\"", style, "];\n");
    }
    out += "  }\n";
  }
  for (const auto& [instruction, id] : ids)
    for (const Instruction* operand : instruction->operands()) out += str_cat("  ", ids[operand], " -> ", id, ";\n");
  return out + "}\n";
}

}  // namespace

int explain_command(const ExplainOptions& options, CliContext& context) {
  for (const std::string& plugin : options.plugins)
    if (Status status = load_plugin(plugin); !status.ok()) return report_error(context, status);
  StatusOr<std::unique_ptr<Module>> module = load_module(context, options.module_path);
  if (!module.ok()) return report_error(context, module.status(), options.module_path);
  StatusOr<OptimizedModule> optimized = optimize_module(std::move(module).value());
  if (!optimized.ok()) return report_error(context, optimized.status(), options.module_path);
  std::vector<CopyReport> copies = collect_copies(*optimized->module);
  if (options.json) {
    context.out << explain_json(*optimized, copies);
  } else if (options.dot) {
    context.out << explain_dot(*optimized, copies);
  } else {
    context.out << explain_text(*optimized, copies);
  }
  return 0;
}

}  // namespace insitu::cli
