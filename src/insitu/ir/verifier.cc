// HLO verifier: module structure first (entry, names, roots, parameters, operand order,
// called computations), then every instruction's shape against shape inference, then the
// entry interface and the alias configuration (alias_config_verifier.cc).
#include "insitu/ir/verifier.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "insitu/ir/alias_config_verifier.h"
#include "insitu/ir/replica_groups.h"
#include "insitu/ir/shape_inference.h"
#include "insitu/support/str.h"

namespace insitu {
namespace {

std::string operand_shapes_text(const Instruction& instruction) {
  return str_join(instruction.operands(), ", ",
                  [](const Instruction* operand) { return operand->shape().to_string(/*with_layout=*/false); });
}

SourceLocation location_of(const Instruction& instruction) {
  if (instruction.location().valid() || instruction.parent() == nullptr) return instruction.location();
  return instruction.parent()->location();
}

// Computation names are unique in the module; instruction names in their computation. (XLA's
// parser renames instructions that reuse a name from another computation, which is why its
// verifier can demand module-wide uniqueness; insitu's parser keeps the names as written.)
Status check_names_unique(const Module& module) {
  std::unordered_set<std::string_view> computations;
  std::vector<std::string_view> names;
  for (const Computation* computation : module.computations()) {
    if (!computations.insert(computation->name()).second)
      return invalid_argument(str_cat("computation name %", computation->name(), " is used twice; rename one"),
                              computation->location());
    // a short computation's names sorted side by side (a fused module has thousands: no hash set
    // each), a long one's hashed (sorting 100,000 "add.N" compares long prefixes)
    const std::vector<Instruction*> order = computation->instructions();
    names.clear();
    for (const Instruction* instruction : order) names.push_back(instruction->name());
    auto twice = names.end();
    if (names.size() <= 64) {
      std::sort(names.begin(), names.end());
      twice = std::adjacent_find(names.begin(), names.end());
    } else {
      std::unordered_set<std::string_view> seen(names.size());
      twice = std::find_if(names.begin(), names.end(), [&](std::string_view name) { return !seen.insert(name).second; });
    }
    if (twice == names.end()) continue;
    // the second instruction of that name, in program order, is the one to rename
    const auto first = std::find_if(order.begin(), order.end(), [&](const Instruction* i) { return i->name() == *twice; });
    const Instruction* second = *std::find_if(first + 1, order.end(), [&](const Instruction* i) { return i->name() == *twice; });
    return invalid_argument(str_cat("instruction name %", second->name(), " is used twice in %", computation->name(),
                                    "; rename one"),
                            location_of(*second));
  }
  return ok_status();
}

// `in_module`: the module's computations, which a called computation must be one of.
Status check_computation_structure(const Module& module, const std::unordered_set<const Computation*>& in_module,
                                   const Computation& computation) {
  std::vector<Instruction*> order = computation.instructions();
  if (computation.root() == nullptr)
    return invalid_argument(str_cat("computation %", computation.name(), " has no ROOT instruction"), computation.location());
  if (computation.root()->parent() != &computation || std::find(order.begin(), order.end(), computation.root()) == order.end())
    return invalid_argument(str_cat("the ROOT of %", computation.name(), " is not one of its instructions"), computation.location());
  // Parameters are numbered 0..n-1, each once.
  for (const Instruction* instruction : order) {
    if (instruction->opcode() != Opcode::kParameter) continue;
    int64_t number = instruction->parameter_number;
    if (number < 0 || number >= computation.parameter_count() || computation.parameter(number) != instruction) {
      return invalid_argument(str_cat("%", instruction->name(), ": parameter number ", number, " is used twice in %",
                                      computation.name()),
                              location_of(*instruction));
    }
  }
  for (int64_t i = 0; i < computation.parameter_count(); ++i) {
    if (computation.parameter(i) == nullptr)
      return invalid_argument(str_cat("computation %", computation.name(), " has no parameter(", i, ") but has parameter(",
                                      computation.parameter_count() - 1, "); number parameters 0..n-1"),
                              computation.location());
  }
  // Operands are defined earlier in the same computation (a topological order).
  // A short computation (a fused module has thousands) searches what came before; a long one hashes.
  const bool short_one = order.size() <= 32;
  std::unordered_set<const Instruction*> defined;
  if (!short_one) defined.reserve(order.size());
  for (size_t position = 0; position < order.size(); ++position) {
    const Instruction* instruction = order[position];
    const auto before = order.begin() + static_cast<std::ptrdiff_t>(position);
    for (const Instruction* operand : instruction->operands()) {
      if (operand->parent() != &computation) {
        return invalid_argument(str_cat("%", instruction->name(), " uses %", operand->name(), " from another computation (%",
                                        operand->parent() ? operand->parent()->name() : std::string("none"),
                                        "); pass values to called computations as operands"),
                                location_of(*instruction));
      }
      if (short_one ? std::find(order.begin(), before, operand) == before : !defined.count(operand)) {
        return invalid_argument(str_cat("%", instruction->name(), " uses %", operand->name(),
                                        " before it is defined; instructions must come after their operands"),
                                location_of(*instruction));
      }
    }
    for (const Instruction* predecessor : instruction->control_predecessors()) {
      if (predecessor->parent() != &computation)
        return invalid_argument(str_cat("%", instruction->name(), " has control predecessor %", predecessor->name(),
                                        " from another computation"),
                                location_of(*instruction));
    }
    for (const Computation* called : instruction->called_computations()) {
      if (called == nullptr || !in_module.count(called))
        return invalid_argument(str_cat("%", instruction->name(), " calls a computation that is not in the module"),
                                location_of(*instruction));
      if (called == module.entry())
        return invalid_argument(str_cat("%", instruction->name(), " calls the ENTRY computation %", called->name(),
                                        "; call a separate computation"),
                                location_of(*instruction));
    }
    if (!short_one) defined.insert(instruction);
  }
  return ok_status();
}

// The call graph (every called computation: while, conditional, call, to_apply, fusions,
// custom-call computations) must be acyclic: a computation that calls itself would recurse
// forever. The error names the cycle, at the instruction that closes it.
Status check_call_graph_acyclic(const Module& module) {
  enum class Mark : uint8_t { kNew, kOnPath, kDone };
  std::unordered_map<const Computation*, Mark> marks;
  std::vector<const Computation*> path;
  // Iterative depth-first search: deep call chains must not overflow the stack.
  struct Frame {
    const Computation* computation;
    std::vector<std::pair<const Instruction*, const Computation*>> calls;
    size_t next = 0;
  };
  auto frame_of = [](const Computation* computation) {
    Frame frame{computation, {}, 0};
    for (const Instruction* instruction : computation->instructions())
      for (const Computation* callee : instruction->called_computations()) frame.calls.emplace_back(instruction, callee);
    return frame;
  };
  for (const Computation* start : module.computations()) {
    if (marks[start] != Mark::kNew) continue;
    std::vector<Frame> stack;
    stack.push_back(frame_of(start));
    marks[start] = Mark::kOnPath;
    while (!stack.empty()) {
      Frame& frame = stack.back();
      if (frame.next == frame.calls.size()) {
        marks[frame.computation] = Mark::kDone;
        stack.pop_back();
        continue;
      }
      const auto [instruction, callee] = frame.calls[frame.next++];
      if (callee == nullptr) continue;
      const Mark mark = marks[callee];
      if (mark == Mark::kOnPath) {
        std::string cycle;
        bool in_cycle = false;
        for (const Frame& f : stack) {
          in_cycle |= f.computation == callee;
          if (in_cycle) cycle += f.computation->name() + " -> ";
        }
        cycle += callee->name();
        return invalid_argument(str_cat("%", instruction->name(), " calls ", callee->name(),
                                        " and closes a cycle in the call graph (", cycle,
                                        "); HLO computations cannot recurse: write a while loop"),
                                location_of(*instruction));
      }
      if (mark == Mark::kNew) {
        marks[callee] = Mark::kOnPath;
        stack.push_back(frame_of(callee));
      }
    }
  }
  return ok_status();
}

Status check_instruction_shape(const Instruction& instruction) {
  StatusOr<Shape> inferred = infer_shape(instruction);
  if (!inferred.ok()) return inferred.status().with_location(location_of(instruction));
  if (instruction.shape().compatible(*inferred)) return ok_status();
  return invalid_argument(str_cat("%", instruction.name(), ": shape ", instruction.shape().to_string(false),
                                  " does not match the inferred shape ", inferred->to_string(false), " of ",
                                  opcode_name(instruction.opcode()), "(", operand_shapes_text(instruction), ")"),
                          location_of(instruction));
}

}  // namespace

Status verify_module(const Module& module) {
  if (module.entry() == nullptr)
    return invalid_argument(str_cat("module ", module.name(), " has no ENTRY computation; mark one with ENTRY"));
  INSITU_RETURN_IF_ERROR(check_names_unique(module));
  const std::vector<Computation*> computations = module.computations();
  const std::unordered_set<const Computation*> in_module(computations.begin(), computations.end());
  for (const Computation* computation : computations)
    INSITU_RETURN_IF_ERROR(check_computation_structure(module, in_module, *computation));
  INSITU_RETURN_IF_ERROR(check_call_graph_acyclic(module));
  for (const Computation* computation : module.computations())
    for (const Instruction* instruction : computation->instructions()) {
      INSITU_RETURN_IF_ERROR(check_instruction_shape(*instruction));
      // Groups in a spelling insitu cannot read, or naming what the mesh lacks, are refused here
      // (as XLA's parser refuses them), not first when a run reaches the collective.
      INSITU_RETURN_IF_ERROR(read_replica_groups(*instruction).status());
    }
  INSITU_RETURN_IF_ERROR(verify_entry_computation_layout(module));
  INSITU_RETURN_IF_ERROR(verify_input_output_alias(module));
  INSITU_RETURN_IF_ERROR(verify_buffer_donors(module));
  return ok_status();
}

std::vector<const Instruction*> constants_not_written(const Module& module) {
  std::vector<const Instruction*> found;
  for (const Computation* computation : module.computations())
    for (const Instruction* instruction : computation->instructions())
      if (instruction->opcode() == Opcode::kConstant && instruction->constant_value != ConstantValue::kWritten)
        found.push_back(instruction);
  return found;
}

Status check_constants_known(const Module& module) {
  for (const Instruction* constant : constants_not_written(module)) {
    if (constant->constant_value == ConstantValue::kElided)
      return invalid_argument(str_cat("constant %", constant->name(), " ", constant->shape().to_string(false),
                                      " has its value left out ({...}); insitu does not invent values: re-dump the "
                                      "module with XLA_FLAGS=--xla_dump_large_constants"),
                              constant->location());
    return invalid_argument(str_cat("constant %", constant->name(), " ", constant->shape().to_string(false),
                                    " is written as one scalar for ", constant->shape().element_count(),
                                    " elements; XLA's meaning of that (the scalar, then zeros) is not a value insitu "
                                    "will guess at: write every element"),
                            constant->location());
  }
  return ok_status();
}

namespace {

// The first field of `fields` (a layout's other_fields, e.g. "D(D,C)E(4)") that changes how
// elements are stored, or "" when all of them are dense (D with only D levels), split
// configurations (SC, which place memory, not values) or E(n) on an n-bit type narrower than a
// byte (XLA:CPU packs s4 two to a byte; insitu stores one per byte, a storage choice that no
// value shows: bitcast-convert works on bits).
std::string first_non_dense_field(std::string_view fields, int64_t element_bits) {
  while (!fields.empty()) {
    const size_t open = fields.find('(');
    if (open == std::string_view::npos) return std::string(fields);
    size_t close = open;
    for (int depth = 0; close < fields.size(); ++close) {
      if (fields[close] == '(') ++depth;
      if (fields[close] == ')' && --depth == 0) break;
    }
    const std::string_view name = fields.substr(0, open);
    const std::string_view field = fields.substr(0, close + 1);
    const std::string_view content = fields.substr(open + 1, close - open - 1);
    const bool dense = name == "D" && content.find_first_of("CSH") == std::string_view::npos;
    const bool own_width = name == "E" && element_bits < 8 && content == std::to_string(element_bits);
    if (!dense && !own_width && name != "SC") return std::string(field);
    fields.remove_prefix(std::min(fields.size(), close + 1));
  }
  return "";
}

Status check_shape_dense(const Shape& shape, const Instruction& instruction) {
  if (shape.is_tuple()) {
    for (int64_t i = 0; i < shape.tuple_size(); ++i)
      INSITU_RETURN_IF_ERROR(check_shape_dense(shape.tuple_shape(i), instruction));
    return ok_status();
  }
  if (!shape.is_array()) return ok_status();
  const std::string field = first_non_dense_field(shape.layout().other_fields, bit_width(shape.element_type()));
  if (field.empty()) return ok_status();
  return invalid_argument(str_cat("%", instruction.name(), ": layout field ", field, " of ", shape.to_string(),
                                  " stores elements other than densely (packed, sparse or with metadata); insitu "
                                  "runs dense arrays only and will not misread these bytes"),
                          instruction.location());
}

}  // namespace

Status check_layouts_dense(const Module& module) {
  for (const Computation* computation : module.computations())
    for (const Instruction* instruction : computation->instructions())
      INSITU_RETURN_IF_ERROR(check_shape_dense(instruction->shape(), *instruction));
  return ok_status();
}

}  // namespace insitu
