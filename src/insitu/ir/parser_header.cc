// HLO text parser: the `HloModule name, attr=value, ...` header and the trailing
// FileNames/FunctionNames/FileLocations/StackFrames sections.
//
//   input_output_alias={ {0}: (0, {}, may-alias), {1}: (1, {1}) }     (kind defaults to may-alias)
//   buffer_donor={ (0, {}), (1, {}) }
//   entry_computation_layout={(s32[4]{0:T(128)})->(s32[4]{0:T(128)})}
#include "insitu/ir/parser_impl.h"
#include "insitu/support/str.h"

namespace insitu::parser_internal {

Status Parser::parse_header_attribute(Module& module) {
  if (!at(TokenKind::kIdent) || !at(TokenKind::kEqual, 1)) return error_expected("a module attribute (name=value)");
  const Token& name_token = next();
  const std::string name = name_token.text;
  module.set_header_attribute_location(name, name_token.location);
  next();  // '='
  ModuleConfig& config = module.config();

  if (name == "is_scheduled") {
    INSITU_ASSIGN_OR_RETURN(bool value, parse_bool());
    config.is_scheduled = value;
  } else if (name == "alias_passthrough_params") {
    INSITU_ASSIGN_OR_RETURN(bool value, parse_bool());
    config.alias_passthrough_params = value;
  } else if (name == "replica_count") {
    INSITU_ASSIGN_OR_RETURN(int64_t value, parse_int64());
    config.replica_count = value;
  } else if (name == "num_partitions") {
    INSITU_ASSIGN_OR_RETURN(int64_t value, parse_int64());
    config.num_partitions = value;
  } else if (name == "input_output_alias") {
    INSITU_RETURN_IF_ERROR(expect(TokenKind::kLbrace, "'{' to start input_output_alias"));
    if (!accept(TokenKind::kRbrace)) {
      do {
        InputOutputAlias alias;
        INSITU_ASSIGN_OR_RETURN(alias.output_index, parse_shape_index());
        INSITU_RETURN_IF_ERROR(expect(TokenKind::kColon, "':' after the output index of an input_output_alias entry"));
        INSITU_RETURN_IF_ERROR(
            expect(TokenKind::kLparen, "'(' to start an alias: (parameter, {index}[, may-alias|must-alias])"));
        INSITU_ASSIGN_OR_RETURN(alias.parameter_number, parse_int64());
        INSITU_RETURN_IF_ERROR(expect(TokenKind::kComma, "',' after the aliased parameter number"));
        INSITU_ASSIGN_OR_RETURN(alias.parameter_index, parse_shape_index());
        if (accept(TokenKind::kComma)) {
          if (at_ident("may-alias")) {
            alias.kind = AliasKind::kMayAlias;
          } else if (at_ident("must-alias")) {
            alias.kind = AliasKind::kMustAlias;
          } else {
            return error_expected("may-alias or must-alias");
          }
          next();
        }
        INSITU_RETURN_IF_ERROR(expect(TokenKind::kRparen, "')' to close the alias"));
        config.input_output_alias.push_back(std::move(alias));
      } while (accept(TokenKind::kComma));
      INSITU_RETURN_IF_ERROR(expect(TokenKind::kRbrace, "'}' to close input_output_alias"));
    }
  } else if (name == "buffer_donor") {
    INSITU_RETURN_IF_ERROR(expect(TokenKind::kLbrace, "'{' to start buffer_donor"));
    if (!accept(TokenKind::kRbrace)) {
      do {
        BufferDonor donor;
        INSITU_RETURN_IF_ERROR(expect(TokenKind::kLparen, "'(' to start a buffer donor: (parameter, {index})"));
        INSITU_ASSIGN_OR_RETURN(donor.parameter_number, parse_int64());
        INSITU_RETURN_IF_ERROR(expect(TokenKind::kComma, "',' after the donated parameter number"));
        INSITU_ASSIGN_OR_RETURN(donor.parameter_index, parse_shape_index());
        INSITU_RETURN_IF_ERROR(expect(TokenKind::kRparen, "')' to close the buffer donor"));
        config.buffer_donors.push_back(std::move(donor));
      } while (accept(TokenKind::kComma));
      INSITU_RETURN_IF_ERROR(expect(TokenKind::kRbrace, "'}' to close buffer_donor"));
    }
  } else if (name == "entry_computation_layout") {
    ComputationLayout layout;
    INSITU_RETURN_IF_ERROR(expect(TokenKind::kLbrace, "'{' to start entry_computation_layout"));
    INSITU_RETURN_IF_ERROR(expect(TokenKind::kLparen, "'(' to start the entry parameter shapes"));
    if (!accept(TokenKind::kRparen)) {
      do {
        INSITU_ASSIGN_OR_RETURN(Shape shape, parse_shape());
        layout.parameter_shapes.push_back(std::move(shape));
      } while (accept(TokenKind::kComma));
      INSITU_RETURN_IF_ERROR(expect(TokenKind::kRparen, "')' to close the entry parameter shapes"));
    }
    INSITU_RETURN_IF_ERROR(expect(TokenKind::kArrow, "'->' before the entry result shape"));
    INSITU_ASSIGN_OR_RETURN(layout.result_shape, parse_shape());
    INSITU_RETURN_IF_ERROR(expect(TokenKind::kRbrace, "'}' to close entry_computation_layout"));
    config.entry_computation_layout = std::move(layout);
  } else if (name == "allow_spmd_sharding_propagation_to_parameters") {
    INSITU_ASSIGN_OR_RETURN(config.allow_spmd_sharding_propagation_to_parameters, parse_raw_value(name));
  } else if (name == "allow_spmd_sharding_propagation_to_output") {
    INSITU_ASSIGN_OR_RETURN(config.allow_spmd_sharding_propagation_to_output, parse_raw_value(name));
  } else if (name == "frontend_attributes") {
    INSITU_RETURN_IF_ERROR(parse_frontend_attributes(config.frontend_attributes));
  } else {
    INSITU_ASSIGN_OR_RETURN(std::string value, parse_raw_value(name));
    config.extra_attributes.push_back({name, std::move(value)});
  }
  return ok_status();
}

// FileNames / FunctionNames / FileLocations / StackFrames, each followed by entries
// `ID "string"` or `ID {key=value ...}`. XLA prints them between the header and the first
// computation; they are accepted between any two computations too. Validated for shape,
// kept verbatim (several runs are joined by a newline).
Status Parser::parse_stack_frame_sections(Module& module) {
  const size_t first = position();
  while (at(TokenKind::kIdent) && is_stack_frame_section_start()) {
    const Token section = next();
    while (at(TokenKind::kNumber)) {
      INSITU_RETURN_IF_ERROR(parse_int64().status());
      if (at(TokenKind::kString)) {
        next();
      } else if (at(TokenKind::kLbrace)) {
        INSITU_RETURN_IF_ERROR(parse_raw_value(section.text).status());
      } else {
        return error_expected(str_cat("a string or {...} entry in the ", section.text, " section"));
      }
    }
  }
  std::string text = module.stack_frame_sections();
  if (!text.empty()) text += "\n";
  module.set_stack_frame_sections(text + source_text(first, position()));
  return ok_status();
}

bool Parser::is_stack_frame_section_start() const {
  const Token& token = peek();
  if (token.kind != TokenKind::kIdent) return false;
  if (token.text != "FileNames" && token.text != "FunctionNames" && token.text != "FileLocations" &&
      token.text != "StackFrames")
    return false;
  // A computation with one of these names would be followed by '{' or a signature.
  return !at(TokenKind::kLbrace, 1) && !at(TokenKind::kLparen, 1);
}

}  // namespace insitu::parser_internal
