// Structural module equality: the check behind "parse(print(m)) equals m".
//
// Everything the printer writes is compared (header configuration, computations in order,
// instructions field by field, roots, control predecessors, stack-frame sections); source
// locations are not. Frontend attributes compare as a set of key/value pairs because the printer
// writes them sorted by key, as XLA does.
#include "insitu/ir/module_equal.h"

#include <algorithm>
#include <string_view>

#include "insitu/support/str.h"

namespace insitu {
namespace {

using AttributeList = std::vector<std::pair<std::string, std::string>>;

std::string_view trimmed(std::string_view text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.remove_suffix(1);
  while (!text.empty() && text.front() == '\n') text.remove_prefix(1);
  return text;
}

AttributeList sorted(AttributeList list) {
  std::sort(list.begin(), list.end());
  return list;
}

std::vector<std::string> names_of(const std::vector<Instruction*>& instructions) {
  std::vector<std::string> names;
  for (const Instruction* i : instructions) names.push_back(i ? i->name() : "<null>");
  return names;
}

std::vector<std::string> names_of(const std::vector<Computation*>& computations) {
  std::vector<std::string> names;
  for (const Computation* c : computations) names.push_back(c ? c->name() : "<null>");
  return names;
}

// Returns the name of the first differing instruction field, or "" when all are equal.
std::string first_instruction_difference(const Instruction& a, const Instruction& b) {
  if (a.name() != b.name()) return "name";
  if (a.opcode() != b.opcode()) return "opcode";
  if (a.shape() != b.shape()) return str_cat("shape (", a.shape().to_string(), " vs ", b.shape().to_string(), ")");
  if (names_of(a.operands()) != names_of(b.operands())) return "operands";
  if (names_of(a.control_predecessors()) != names_of(b.control_predecessors())) return "control-predecessors";
  if (names_of(a.called_computations()) != names_of(b.called_computations())) return "called computations";
  if (a.literal.valid() && b.literal.valid() && a.literal.shape() != b.literal.shape()) return "literal shape";
  // Every other attribute at once; frontend attributes are a map, compared without order.
  InstructionAttributes attributes_a = a.attributes(), attributes_b = b.attributes();
  attributes_a.frontend_attributes = sorted(a.frontend_attributes);
  attributes_b.frontend_attributes = sorted(b.frontend_attributes);
  if (!(attributes_a == attributes_b)) return str_cat("attributes (", a.to_string(), " vs ", b.to_string(), ")");
  return "";
}

std::string first_config_difference(const ModuleConfig& a, const ModuleConfig& b) {
  if (a.is_scheduled != b.is_scheduled) return "is_scheduled";
  if (a.input_output_alias != b.input_output_alias) return "input_output_alias";
  if (a.buffer_donors != b.buffer_donors) return "buffer_donor";
  if (a.alias_passthrough_params != b.alias_passthrough_params) return "alias_passthrough_params";
  if (a.entry_computation_layout != b.entry_computation_layout) return "entry_computation_layout";
  if (a.allow_spmd_sharding_propagation_to_parameters != b.allow_spmd_sharding_propagation_to_parameters)
    return "allow_spmd_sharding_propagation_to_parameters";
  if (a.allow_spmd_sharding_propagation_to_output != b.allow_spmd_sharding_propagation_to_output)
    return "allow_spmd_sharding_propagation_to_output";
  if (a.replica_count != b.replica_count) return "replica_count";
  if (a.num_partitions != b.num_partitions) return "num_partitions";
  if (sorted(a.frontend_attributes) != sorted(b.frontend_attributes)) return "frontend_attributes";
  if (a.extra_attributes != b.extra_attributes) return "extra header attributes";
  return "";
}

bool computations_equal(const Computation& a, const Computation& b, std::string* difference) {
  auto fail = [&](const std::string& message) {
    if (difference) *difference = message;
    return false;
  };
  if (a.execution_thread() != b.execution_thread())
    return fail(str_cat("computation ", a.name(), ": execution_thread differs"));
  std::vector<Instruction*> left = a.instructions();
  std::vector<Instruction*> right = b.instructions();
  for (size_t k = 0; k < std::min(left.size(), right.size()); ++k) {
    std::string field = first_instruction_difference(*left[k], *right[k]);
    if (!field.empty()) {
      return fail(str_cat("computation ", a.name(), ", instruction #", k, " (", left[k]->name(), " vs ",
                          right[k]->name(), "): ", field, " differs"));
    }
  }
  if (left.size() != right.size())
    return fail(str_cat("computation ", a.name(), ": ", left.size(), " vs ", right.size(), " instructions"));
  std::string root_a = a.root() ? a.root()->name() : "<none>";
  std::string root_b = b.root() ? b.root()->name() : "<none>";
  if (root_a != root_b) return fail(str_cat("computation ", a.name(), ": root ", root_a, " vs ", root_b));
  if (names_of(a.parameters()) != names_of(b.parameters()))
    return fail(str_cat("computation ", a.name(), ": parameters differ"));
  return true;
}

}  // namespace

bool modules_equal(const Module& a, const Module& b, std::string* difference) {
  auto fail = [&](const std::string& message) {
    if (difference) *difference = message;
    return false;
  };
  if (a.name() != b.name()) return fail(str_cat("module name ", a.name(), " vs ", b.name()));
  std::string field = first_config_difference(a.config(), b.config());
  if (!field.empty()) return fail("header attribute " + field + " differs");
  std::vector<Computation*> left = a.computations();
  std::vector<Computation*> right = b.computations();
  for (size_t k = 0; k < std::min(left.size(), right.size()); ++k) {
    if (left[k]->name() != right[k]->name())
      return fail(str_cat("computation #", k, ": ", left[k]->name(), " vs ", right[k]->name()));
    if (!computations_equal(*left[k], *right[k], difference)) return false;
  }
  if (left.size() != right.size()) return fail(str_cat(left.size(), " vs ", right.size(), " computations"));
  std::string entry_a = a.entry() ? a.entry()->name() : "<none>";
  std::string entry_b = b.entry() ? b.entry()->name() : "<none>";
  if (entry_a != entry_b) return fail("ENTRY computation " + entry_a + " vs " + entry_b);
  if (trimmed(a.stack_frame_sections()) != trimmed(b.stack_frame_sections())) return fail("stack-frame sections differ");
  if (difference) difference->clear();
  return true;
}

}  // namespace insitu
