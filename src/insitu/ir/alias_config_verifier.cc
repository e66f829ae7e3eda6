// Entry interface and aliasing checks (see alias_config_verifier.h).
//
// XLA's rules: an alias pairs one output leaf with one parameter leaf; both are dense arrays of
// equal byte size; a parameter leaf backs at most one output and an output has at most one
// parameter; a must-alias pair has identical shapes including layout and memory space (taken
// from the entry interface); a donor exists and is not also in input_output_alias.
#include "insitu/ir/alias_config_verifier.h"

#include <map>
#include <utility>

#include "insitu/support/str.h"

namespace insitu {
namespace {

// Errors point at the header attribute they are about (or the HloModule line).
Status header_error(const Module& module, std::string_view attribute, std::string message) {
  return invalid_argument(std::move(message), module.header_attribute_location(attribute));
}

std::string leaf_text(const Shape& shape) {
  return str_cat(shape.to_string(/*with_layout=*/false), ", ", shape.byte_size(), " bytes");
}

std::string parameter_text(int64_t number, const ShapeIndex& index) {
  return str_cat("parameter ", number, " ", shape_index_to_string(index));
}

// The parameter leaf (number, index) of the entry, or an error naming `what`.
StatusOr<const Shape*> parameter_leaf(const Module& module, std::string_view what, int64_t number,
                                      const ShapeIndex& index, const std::vector<Shape>& parameters) {
  if (number < 0 || number >= static_cast<int64_t>(parameters.size())) {
    return header_error(module, what, str_cat(what, ": parameter ", number, " does not exist; the entry computation %",
                                        module.entry()->name(), " has ", parameters.size(), " parameters"));
  }
  const Shape* leaf = parameters[number].subshape(index);
  if (leaf == nullptr) {
    return header_error(module, what, str_cat(what, ": index ", shape_index_to_string(index), " does not exist in parameter ",
                                        number, " (", parameters[number].to_string(false), ")"));
  }
  if (!leaf->is_array()) {
    return header_error(module, what, str_cat(what, ": ", parameter_text(number, index), " is ", leaf->to_string(false),
                                        "; only array leaves can be donated or aliased, name a leaf index"));
  }
  return leaf;
}

}  // namespace

Status verify_entry_computation_layout(const Module& module) {
  const auto& written = module.config().entry_computation_layout;
  if (!written) return ok_status();
  const Computation& entry = *module.entry();
  // Layouts may differ: a parameter printed with another layout than the interface is fine.
  if (static_cast<int64_t>(written->parameter_shapes.size()) != entry.parameter_count()) {
    return header_error(module, "entry_computation_layout", str_cat("entry_computation_layout has ", written->parameter_shapes.size(),
                                        " parameters but the entry computation %", entry.name(), " has ",
                                        entry.parameter_count(), "; make them agree"));
  }
  for (int64_t i = 0; i < entry.parameter_count(); ++i) {
    const Shape& shape = entry.parameter(i)->shape();
    if (!written->parameter_shapes[i].compatible(shape)) {
      return header_error(module, "entry_computation_layout", str_cat("entry_computation_layout parameter ", i, " is ",
                                          written->parameter_shapes[i].to_string(false), " but %",
                                          entry.parameter(i)->name(), " (parameter ", i, ") is ", shape.to_string(false),
                                          "; they must agree except for layouts"));
    }
  }
  const Shape& root = entry.root()->shape();
  if (!written->result_shape.compatible(root)) {
    return header_error(module, "entry_computation_layout", str_cat("entry_computation_layout result is ", written->result_shape.to_string(false),
                                        " but the entry root %", entry.root()->name(), " is ", root.to_string(false),
                                        "; they must agree except for layouts"));
  }
  return ok_status();
}

Status verify_input_output_alias(const Module& module) {
  const Computation& entry = *module.entry();
  std::vector<Shape> parameters;
  for (const Instruction* parameter : entry.parameters()) parameters.push_back(parameter->shape());
  const Shape& result = entry.root()->shape();
  const ComputationLayout interface = module.entry_layout();
  std::map<std::pair<int64_t, ShapeIndex>, ShapeIndex> parameter_users;  // parameter leaf -> output
  std::map<ShapeIndex, std::pair<int64_t, ShapeIndex>> output_sources;    // output -> parameter leaf
  for (const InputOutputAlias& alias : module.config().input_output_alias) {
    // the texts of messages, built only for one
    auto output = [&] { return shape_index_to_string(alias.output_index); };
    auto parameter = [&] { return parameter_text(alias.parameter_number, alias.parameter_index); };
    const Shape* output_leaf = result.subshape(alias.output_index);
    if (output_leaf == nullptr) {
      return header_error(module, "input_output_alias", str_cat("input_output_alias: output ", output(), " does not exist in the entry result ",
                                          result.to_string(false), "; use an index of the result"));
    }
    if (!output_leaf->is_array()) {
      return header_error(module, "input_output_alias", str_cat("input_output_alias: output ", output(), " is ", output_leaf->to_string(false),
                                          "; only array leaves can alias, name a leaf index"));
    }
    INSITU_ASSIGN_OR_RETURN(const Shape* parameter_leaf_shape,
                            parameter_leaf(module, "input_output_alias", alias.parameter_number, alias.parameter_index, parameters));
    if (output_leaf->byte_size() != parameter_leaf_shape->byte_size()) {
      return header_error(module, "input_output_alias", str_cat("input_output_alias: output ", output(), " (", leaf_text(*output_leaf),
                                          ") cannot alias ", parameter(), " (", leaf_text(*parameter_leaf_shape),
                                          "): aliased buffers must have equal byte sizes"));
    }
    auto key = std::make_pair(alias.parameter_number, alias.parameter_index);
    if (auto it = parameter_users.find(key); it != parameter_users.end()) {
      return header_error(module, "input_output_alias", str_cat("input_output_alias: ", parameter(), " is aliased to outputs ",
                                          shape_index_to_string(it->second), " and ", output(),
                                          "; a parameter buffer can back only one output, remove one alias"));
    }
    if (auto it = output_sources.find(alias.output_index); it != output_sources.end()) {
      return header_error(module, "input_output_alias", str_cat("input_output_alias: output ", output(), " is aliased twice (",
                                          parameter_text(it->second.first, it->second.second), " and ", parameter(),
                                          "); remove one alias"));
    }
    parameter_users[key] = alias.output_index;
    output_sources[alias.output_index] = key;
    if (alias.kind == AliasKind::kMustAlias) {
      // Compared on the entry interface, where layouts and memory spaces are decided.
      const Shape* interface_output = interface.result_shape.subshape(alias.output_index);
      const Shape* interface_parameter =
          alias.parameter_number < static_cast<int64_t>(interface.parameter_shapes.size())
              ? interface.parameter_shapes[alias.parameter_number].subshape(alias.parameter_index)
              : nullptr;
      if (interface_output != nullptr && interface_parameter != nullptr && !(*interface_output == *interface_parameter)) {
        return header_error(module, "input_output_alias", str_cat("input_output_alias: must-alias output ", output(), " (",
                                            interface_output->to_string(), ") and ", parameter(), " (",
                                            interface_parameter->to_string(),
                                            ") must have identical shapes, layouts and memory spaces; make them agree or use may-alias"));
      }
    }
  }
  return ok_status();
}

Status verify_buffer_donors(const Module& module) {
  const ComputationLayout interface = module.entry_layout();
  const std::vector<BufferDonor>& donors = module.config().buffer_donors;
  for (size_t d = 0; d < donors.size(); ++d) {
    const BufferDonor& donor = donors[d];
    INSITU_ASSIGN_OR_RETURN(const Shape* leaf, parameter_leaf(module, "buffer_donor", donor.parameter_number,
                                                              donor.parameter_index, interface.parameter_shapes));
    (void)leaf;
    for (size_t e = 0; e < d; ++e)
      if (donors[e].parameter_number == donor.parameter_number && donors[e].parameter_index == donor.parameter_index)
        return header_error(module, "buffer_donor",
                            str_cat("buffer_donor: ", parameter_text(donor.parameter_number, donor.parameter_index),
                                    " is listed twice; list each donated leaf once"));
    for (const InputOutputAlias& alias : module.config().input_output_alias) {
      if (alias.parameter_number == donor.parameter_number && alias.parameter_index == donor.parameter_index) {
        return header_error(module, "buffer_donor", str_cat("buffer_donor: ", parameter_text(donor.parameter_number, donor.parameter_index),
                                            " is also in input_output_alias (output ", shape_index_to_string(alias.output_index),
                                            "); a buffer is either donated or aliased, remove one of the two"));
      }
    }
  }
  return ok_status();
}

}  // namespace insitu
