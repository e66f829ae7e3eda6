#include "insitu/passes/donor_matching.h"
#include "insitu/support/enum_names.h"

#include <algorithm>
#include <charconv>
#include <deque>
#include <map>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "insitu/analysis/buffer_facts.h"
#include "insitu/analysis/dataflow.h"
#include "insitu/support/str.h"

namespace insitu {
namespace {

struct Output {
  ShapeIndex index;
  ValueId value = -1;
  const Shape* interface_shape = nullptr;  // the caller's view (entry_computation_layout)
  bool taken = false;                      // aliased already, or paired here
};

std::string parameter_text(int64_t number, const ShapeIndex& index) {
  return index.empty() ? str_cat("parameter ", number) : str_cat("parameter ", number, " ", shape_index_to_string(index));
}

class DonorMatcher {
 public:
  DonorMatcher(Module& module, const Dataflow& dataflow) : module_(module), dataflow_(dataflow) {
    for (const MustShareLink& link : dataflow_.links()) {
      if (link.kind == LinkKind::kInputOutputAlias) continue;  // those are pairings, not flows
      linked_[link.a].push_back(link.b);
      linked_[link.b].push_back(link.a);
    }
    interface_ = module_.entry_layout();
    const Instruction* root = module_.entry()->root();
    for (const auto& [index, value] : dataflow_.leaf_values(root)) {
      if (!dataflow_.value(value).shape.is_array()) continue;
      Output output{index, value, interface_.result_shape.subshape(index)};
      for (const InputOutputAlias& alias : module_.config().input_output_alias)
        output.taken |= alias.output_index == index;
      outputs_.push_back(std::move(output));
    }
  }

  // The output the donor's buffer becomes in place, if any is free.
  Output* in_place_output(const BufferDonor& donor, const Shape& donor_shape) {
    ValueId start = donor_value(donor);
    std::unordered_set<ValueId> group = {start};
    std::deque<ValueId> queue = {start};
    while (!queue.empty()) {
      ValueId value = queue.front();
      queue.pop_front();
      auto it = linked_.find(value);
      if (it == linked_.end()) continue;
      for (ValueId other : it->second)
        if (group.insert(other).second) queue.push_back(other);
    }
    for (Output& output : outputs_)
      if (!output.taken && group.count(output.value) && fits(donor_shape, output)) return &output;
    return nullptr;
  }

  // An equal-size output the donor's buffer can hold without a copy; otherwise why not.
  Output* copy_free_output(const BufferDonor& donor, const Shape& donor_shape, UnusedDonor& report) {
    std::vector<Output*> candidates;
    bool any_same_size = false;
    for (Output& output : outputs_) {
      if (!fits(donor_shape, output)) continue;
      any_same_size = true;
      if (!output.taken) candidates.push_back(&output);
    }
    std::string what = parameter_text(donor.parameter_number, donor.parameter_index);
    std::string size = str_cat(donor_shape.byte_size(), " bytes in memory space S(", donor_shape.layout().memory_space, ")");
    if (!any_same_size) {
      report.reason = DonorReason::kNoMatchingOutput;
      report.detail = str_cat("no output of the entry result has ", what, "'s size (", size, "); the outputs are ",
                              outputs_text(), ". Returning a value of that size (e.g. an updated ", what,
                              ") would make the donor usable.");
      return nullptr;
    }
    if (candidates.empty()) {
      report.reason = DonorReason::kOutputAlreadyAliased;
      report.detail = str_cat("every output of ", what, "'s size (", size,
                              ") is already aliased to another parameter (input_output_alias or an earlier donor). "
                              "Returning one more value of that size would make the donor usable.");
      return nullptr;
    }
    std::string first_reason;
    for (Output* output : candidates) {
      std::string why = why_not_copy_free(donor, donor_shape, *output);
      if (why.empty()) return output;
      if (first_reason.empty()) first_reason = why;
    }
    report.reason = DonorReason::kOutputNeedsCopy;
    report.detail = first_reason;
    return nullptr;
  }

  ValueId donor_value(const BufferDonor& donor) const {
    return dataflow_.value_at(module_.entry()->parameter(donor.parameter_number), donor.parameter_index);
  }

 private:
  static bool fits(const Shape& donor_shape, const Output& output) {
    const Shape* shape = output.interface_shape;
    return shape != nullptr && shape->is_array() && shape->byte_size() == donor_shape.byte_size() &&
           shape->layout().memory_space == donor_shape.layout().memory_space;
  }

  std::string outputs_text() const {
    return str_join(outputs_, ", ", [](const Output& output) {
      return str_cat(shape_index_to_string(output.index), " ", output.interface_shape->to_string(), " (",
                     output.interface_shape->byte_size(), " bytes)");
    });
  }

  bool has_links(ValueId value) const { return linked_.count(value) != 0; }

  // Everything `instruction` depends on (operands and control predecessors, transitively).
  static std::unordered_set<const Instruction*> ancestors(const Instruction* instruction) {
    std::unordered_set<const Instruction*> seen;
    std::vector<const Instruction*> stack = {instruction};
    while (!stack.empty()) {
      const Instruction* current = stack.back();
      stack.pop_back();
      auto visit = [&](const Instruction* next) {
        if (seen.insert(next).second) stack.push_back(next);
      };
      for (const Instruction* operand : current->operands()) visit(operand);
      for (const Instruction* predecessor : current->control_predecessors()) visit(predecessor);
    }
    return seen;
  }

  // "" when the donor's buffer can hold `output` with no copy; otherwise a sentence saying
  // what still reads the donor after the output is written and what would make it usable.
  std::string why_not_copy_free(const BufferDonor& donor, const Shape& donor_shape, const Output& output) const {
    const Value& donated = dataflow_.value(donor_value(donor));
    const Value& result = dataflow_.value(output.value);
    const Instruction* writer = result.defining.instruction;
    std::string what = parameter_text(donor.parameter_number, donor.parameter_index);
    std::string out = str_cat("output ", shape_index_to_string(output.index));
    std::string xla_note =
        str_cat(" XLA would alias the donor to ", out, " by size and then copy ", what,
                " before the writer; insitu reports it instead of paying that hidden copy.");

    for (const Position& position : donated.positions)
      if (position.instruction == module_.entry()->root())
        return str_cat(what, " is itself returned as output ", shape_index_to_string(position.index),
                       ", so its buffer must keep the old value and cannot also hold ", out,
                       "; returning it at ", out, " instead would make the donor usable.");
    if (has_links(donated.id))
      return str_cat(what, " is updated in place by another instruction whose result is not an output, so its "
                           "buffer cannot also hold ", out, "; returning that updated value would make the donor usable.");
    if (writer->parent() != module_.entry() || writer->opcode() == Opcode::kParameter ||
        writer->opcode() == Opcode::kConstant || has_links(result.id))
      return str_cat(out, " (%", writer->name(), ") is not computed by an instruction of the entry computation that "
                     "could write into ", what, "'s buffer; returning a value computed from ", what,
                     " would make the donor usable.");
    int count = 0;
    for (const Position& position : result.positions) count += position.instruction == module_.entry()->root();
    if (count != 1)
      return str_cat(out, " (%", writer->name(), ") is returned more than once, so it cannot live in ", what,
                     "'s buffer alone.");

    std::unordered_set<const Instruction*> before_writer = ancestors(writer);
    for (const Use& use : donated.uses) {
      if (before_writer.count(use.instruction)) continue;  // ordered before the output is written
      if (use.instruction == writer) {
        if (writer->opcode() == Opcode::kCustomCall) {
          bool aliased = false;
          for (const OutputOperandAlias& alias : writer->custom_call.output_to_operand_aliasing)
            aliased |= alias.operand_number == use.operand_number;
          std::string written = str_cat("output_to_operand_aliasing={", shape_index_to_string(result.defining.index),
                                        ": (", use.operand_number, ", ", shape_index_to_string(use.operand_index), ")}");
          if (!aliased)
            return str_cat("custom-call %", writer->name(), " (target \"", writer->custom_call.target,
                           "\") declares no output_to_operand_aliasing, so its output (", out,
                           ") cannot be written into ", what, "'s buffer while it still reads ", what,
                           " (operand ", use.operand_number, "). Writing ", written,
                           " on the custom-call (with a kernel that writes in place) would make the donor usable.",
                           xla_note);
        }
        bool same_index = writes_elementwise_at(*writer, result.defining.index) && donor_shape.layout().minor_to_major ==
                              result.shape.layout().minor_to_major &&
                          byte_width(donor_shape.element_type()) == byte_width(result.shape.element_type());
        if (same_index) continue;  // reads each element only where it writes it
        return str_cat("%", writer->name(), " (", opcode_name(writer->opcode()), ") reads ", what,
                       " while writing ", out, ", and not element by element at the same position, so writing into ",
                       what, "'s buffer would overwrite elements it still reads. Computing ", out,
                       " elementwise from ", what, ", or in place (e.g. dynamic-update-slice), would make the donor "
                       "usable.", xla_note);
      }
      return str_cat("%", use.instruction->name(), " still reads ", what, " and is not ordered before %",
                     writer->name(), ", which writes ", out, "; making %", writer->name(), " depend on %",
                     use.instruction->name(), " (reading the donor before the output is computed) would make "
                     "the donor usable.", xla_note);
    }
    return "";
  }

  Module& module_;
  const Dataflow& dataflow_;
  ComputationLayout interface_;
  std::unordered_map<ValueId, std::vector<ValueId>> linked_;
  std::vector<Output> outputs_;
};

std::string unused_donor_key(int64_t number, const ShapeIndex& index) {
  return str_cat(kUnusedDonorAttributePrefix, number, ":", shape_index_to_string(index));
}

// Sets or replaces a module frontend attribute; true if it changed.
bool set_module_attribute(Module& module, std::string key, std::string value) {
  for (auto& [k, v] : module.config().frontend_attributes) {
    if (k != key) continue;
    if (v == value) return false;
    v = std::move(value);
    return true;
  }
  module.config().frontend_attributes.emplace_back(std::move(key), std::move(value));
  return true;
}

}  // namespace

StatusOr<DonorMatchingResult> match_donors(Module& module) {
  DonorMatchingResult result;
  ModuleConfig& config = module.config();
  if (config.buffer_donors.empty()) return result;
  if (module.entry() == nullptr) return failed_precondition("donor-matching needs a module with an entry computation");
  Dataflow dataflow = Dataflow::compute(module);
  DonorMatcher matcher(module, dataflow);
  ComputationLayout interface = module.entry_layout();

  std::vector<BufferDonor> donors = config.buffer_donors;
  std::map<size_t, Output*> paired;  // donor position -> output
  auto donor_shape = [&](const BufferDonor& donor) -> const Shape* {
    if (donor.parameter_number >= static_cast<int64_t>(interface.parameter_shapes.size())) return nullptr;
    const Shape* shape = interface.parameter_shapes[donor.parameter_number].subshape(donor.parameter_index);
    return shape != nullptr && shape->is_array() ? shape : nullptr;
  };
  // 1. the output each donor's value flows into in place (or that is the donor unchanged)
  for (size_t d = 0; d < donors.size(); ++d) {
    const Shape* shape = donor_shape(donors[d]);
    if (shape == nullptr) continue;
    if (Output* output = matcher.in_place_output(donors[d], *shape)) {
      output->taken = true;
      paired[d] = output;
    }
  }
  // 2. an equal-size output that costs no copy
  std::vector<UnusedDonor> unused;
  for (size_t d = 0; d < donors.size(); ++d) {
    if (paired.count(d)) continue;
    UnusedDonor report{donors[d].parameter_number, donors[d].parameter_index, DonorReason::kNoMatchingOutput, ""};
    const Shape* shape = donor_shape(donors[d]);
    if (shape == nullptr) {
      report.reason = DonorReason::kNoMatchingOutput;
      report.detail = "the donated leaf is not an array, so no output can reuse its buffer.";
    } else if (Output* output = matcher.copy_free_output(donors[d], *shape, report)) {
      output->taken = true;
      paired[d] = output;
      continue;
    }
    unused.push_back(std::move(report));
  }

  std::vector<BufferDonor> remaining;
  for (size_t d = 0; d < donors.size(); ++d) {
    auto it = paired.find(d);
    if (it == paired.end()) {
      remaining.push_back(donors[d]);
      continue;
    }
    InputOutputAlias alias{it->second->index, donors[d].parameter_number, donors[d].parameter_index,
                           AliasKind::kMayAlias};
    result.added.push_back(alias);
    config.input_output_alias.push_back(std::move(alias));
    result.changed = true;
  }
  std::stable_sort(config.input_output_alias.begin(), config.input_output_alias.end(),
                   [](const InputOutputAlias& a, const InputOutputAlias& b) { return a.output_index < b.output_index; });
  config.buffer_donors = std::move(remaining);
  for (const UnusedDonor& report : unused)
    result.changed |= set_module_attribute(module, unused_donor_key(report.parameter_number, report.parameter_index),
                                           str_cat(donor_reason_name(report.reason), ": ", report.detail));
  result.unused = std::move(unused);
  return result;
}

namespace {

constexpr std::pair<DonorReason, std::string_view> kDonorReasonNames[] = {
    {DonorReason::kNoMatchingOutput, "no-matching-output"},
    {DonorReason::kOutputNeedsCopy, "output-needs-copy"},
    {DonorReason::kOutputAlreadyAliased, "output-already-aliased"},
};

std::optional<DonorReason> parse_donor_reason(std::string_view name) {
  return enum_from_name(kDonorReasonNames, name);
}

}  // namespace

std::string_view donor_reason_name(DonorReason reason) {
  return name_of_enum(kDonorReasonNames, reason, "unknown");
}

std::vector<UnusedDonor> recorded_unused_donors(const Module& module) {
  std::vector<UnusedDonor> reports;
  for (const auto& [key, value] : module.config().frontend_attributes) {
    if (!key.starts_with(kUnusedDonorAttributePrefix)) continue;
    // "insitu_unused_donor:P:{i,j}" = "REASON: detail"
    std::string_view rest = std::string_view(key).substr(kUnusedDonorAttributePrefix.size());
    size_t colon = rest.find(':');
    if (colon == std::string_view::npos) continue;
    UnusedDonor report;
    auto parse_number = [](std::string_view text, int64_t& number) {
      auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), number);
      return error == std::errc() && end == text.data() + text.size();
    };
    if (!parse_number(rest.substr(0, colon), report.parameter_number)) continue;
    std::string_view index = rest.substr(colon + 1);
    if (index.size() < 2 || index.front() != '{' || index.back() != '}') continue;
    bool well_formed = true;
    for (index = index.substr(1, index.size() - 2); !index.empty();) {
      size_t comma = index.find(',');
      int64_t element = 0;
      well_formed &= parse_number(index.substr(0, comma), element);
      report.parameter_index.push_back(element);
      if (comma == std::string_view::npos) break;
      index = index.substr(comma + 1);
    }
    if (!well_formed) continue;
    size_t separator = value.find(": ");
    // A reason insitu does not know (a hand-edited attribute) is not guessed: the entry is skipped.
    const std::optional<DonorReason> reason = parse_donor_reason(std::string_view(value).substr(0, separator));
    if (!reason) continue;
    report.reason = *reason;
    report.detail = separator == std::string::npos ? "" : value.substr(separator + 2);
    reports.push_back(std::move(report));
  }
  return reports;
}

}  // namespace insitu
