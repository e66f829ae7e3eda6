// `insitu explain`: copies with their reasons, aliases, unused donors, peak memory; as text,
// JSON (DESIGN.md's schema; both from passes/explain.h) or Graphviz.
#include <map>

#include "insitu/ir/copy_reason.h"
#include "cli/module_loader.h"
#include "cli/opt_command.h"
#include "insitu/passes/explain.h"
#include "insitu/passes/optimize.h"
#include "insitu/kernel/plugin.h"
#include "insitu/support/str.h"

namespace insitu::cli {
namespace {

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
std::string explain_dot(const Module& module, const Explanation& explanation) {
  std::map<const Instruction*, const CopyExplanation*> copy_of;
  for (const CopyExplanation& copy : explanation.copies) copy_of[copy.copy] = &copy;
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
        label += str_cat("\\n", copy_reason_name(it->second->reason), " (", it->second->bytes, " bytes)");
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
  if (options.device == "cuda")
    if (Status status = retarget_for_cuda(*optimized); !status.ok())
      return report_error(context, status, options.module_path);
  const Explanation explanation = explain_module(*optimized);
  if (options.json) {
    context.out << explanation_json(explanation);
  } else if (options.dot) {
    context.out << explain_dot(*optimized->module, explanation);
  } else {
    context.out << explanation_text(explanation);
  }
  return 0;
}

}  // namespace insitu::cli
