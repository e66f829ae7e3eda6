// HLO text parser: instruction attributes (`, name=value` after the operands).
//
// Attributes insitu models go into the typed Instruction fields; everything else
// (statistics=, origin=, channel_id=, dim_labels=, ...) is kept as its exact source text in
// Instruction::extra_attributes, so newer dumps still load and print back unchanged.
#include <cctype>
#include <regex>

#include "insitu/ir/attribute_table.h"
#include "insitu/ir/parser_impl.h"
#include "insitu/support/str.h"

namespace insitu::parser_internal {
namespace {

bool is_opener(TokenKind kind) {
  return kind == TokenKind::kLbrace || kind == TokenKind::kLparen || kind == TokenKind::kLsquare;
}
bool is_closer(TokenKind kind) {
  return kind == TokenKind::kRbrace || kind == TokenKind::kRparen || kind == TokenKind::kRsquare;
}

std::vector<std::string_view> split(std::string_view text, char separator) {
  std::vector<std::string_view> parts;
  size_t start = 0;
  while (true) {
    size_t at = text.find(separator, start);
    parts.push_back(text.substr(start, at == std::string_view::npos ? std::string_view::npos : at - start));
    if (at == std::string_view::npos) return parts;
    start = at + 1;
  }
}

}  // namespace

// XLA's ResultAccuracy in text: {mode=default|highest} or {tolerance={atol=X,rtol=X,ulps=N}}
// (any of the three fields); kept as metadata, but a value XLA refuses is refused here too.
namespace {
bool is_result_accuracy(std::string_view text) {
  std::string compact;
  for (char c : text)
    if (!std::isspace(static_cast<unsigned char>(c))) compact.push_back(static_cast<char>(std::tolower(c)));
  static const std::regex mode(R"(\{mode=(default|highest)\})");
  static const std::regex tolerance(
      R"(\{tolerance=\{((atol|rtol)=[-+0-9.e]+|ulps=[0-9]+)(,((atol|rtol)=[-+0-9.e]+|ulps=[0-9]+))*\}\})");
  return std::regex_match(compact, mode) || std::regex_match(compact, tolerance);
}
}  // namespace

StatusOr<std::string> Parser::parse_raw_value(std::string_view attribute) {
  const size_t first = position();
  if (at(TokenKind::kEof) || at(TokenKind::kComma) || is_closer(peek().kind))
    return error_expected(str_cat("a value for ", attribute));
  std::vector<const Token*> open;
  while (true) {
    const Token& token = peek();
    if (token.kind == TokenKind::kError && open.empty()) return error_at(token, token.text);
    if (token.kind == TokenKind::kEof) {
      if (open.empty()) break;
      return error_at(token, str_cat("truncated input: expected a closing bracket for the value of ", attribute,
                                     " (opened at ", open.back()->location.line, ":", open.back()->location.column,
                                     ") at end of file"));
    }
    if (open.empty() && position() > first) {
      bool adjacent = token.begin == peek_previous_end();
      if (!adjacent || token.kind == TokenKind::kComma || is_closer(token.kind)) break;
    }
    if (is_opener(token.kind)) {
      if (open.size() >= static_cast<size_t>(kMaxNesting))
        return error_at(token, str_cat("value of ", attribute, " is nested too deeply"));
      open.push_back(&token);
    } else if (is_closer(token.kind)) {
      open.pop_back();
    }
    next();
  }
  return source_text(first, position());
}

size_t Parser::peek_previous_end() const { return pos_ == 0 ? 0 : tokens_[pos_ - 1].end; }

StatusOr<std::vector<NameRef>> Parser::parse_name_list() {
  INSITU_RETURN_IF_ERROR(expect(TokenKind::kLbrace, "'{' to start a list of names"));
  std::vector<NameRef> names;
  if (accept(TokenKind::kRbrace)) return names;
  do {
    INSITU_ASSIGN_OR_RETURN(NameRef name, parse_name("a name"));
    names.push_back(std::move(name));
  } while (accept(TokenKind::kComma));
  INSITU_RETURN_IF_ERROR(expect(TokenKind::kRbrace, "'}' to close the list of names"));
  return names;
}

Status Parser::parse_frontend_attributes(std::vector<std::pair<std::string, std::string>>& out) {
  INSITU_RETURN_IF_ERROR(expect(TokenKind::kLbrace, "'{' to start frontend_attributes"));
  if (accept(TokenKind::kRbrace)) return ok_status();
  do {
    if (!(at(TokenKind::kIdent) || at(TokenKind::kString)) || !at(TokenKind::kEqual, 1))
      return error_expected("a frontend attribute (key=\"value\")");
    std::string key = next().text;
    next();  // '='
    std::string value;
    if (at(TokenKind::kString)) {
      value = next().text;
    } else {
      INSITU_ASSIGN_OR_RETURN(value, parse_raw_value(str_cat("frontend attribute ", key)));
    }
    out.emplace_back(std::move(key), std::move(value));
  } while (accept(TokenKind::kComma));
  return expect(TokenKind::kRbrace, "'}' to close frontend_attributes");
}

Status Parser::parse_metadata(Instruction& instruction) {
  INSITU_RETURN_IF_ERROR(expect(TokenKind::kLbrace, "'{' to start metadata"));
  instruction.has_metadata = true;
  while (!accept(TokenKind::kRbrace)) {
    if (!at(TokenKind::kIdent) || !at(TokenKind::kEqual, 1))
      return error_expected("a metadata entry (key=value) or '}' to close metadata");
    std::string key = next().text;
    next();  // '='
    INSITU_ASSIGN_OR_RETURN(std::string value, parse_raw_value(str_cat("metadata ", key)));
    instruction.metadata.push_back({std::move(key), std::move(value)});
    accept(TokenKind::kComma);  // entries are space separated; commas are optional
  }
  return ok_status();
}

Status Parser::parse_output_operand_aliasing(std::vector<OutputOperandAlias>& out) {
  INSITU_RETURN_IF_ERROR(expect(TokenKind::kLbrace, "'{' to start output_to_operand_aliasing"));
  if (accept(TokenKind::kRbrace)) return ok_status();
  do {
    OutputOperandAlias alias;
    INSITU_ASSIGN_OR_RETURN(alias.output_index, parse_shape_index());
    INSITU_RETURN_IF_ERROR(expect(TokenKind::kColon, "':' after the output index"));
    INSITU_RETURN_IF_ERROR(expect(TokenKind::kLparen, "'(' to start (operand, {index})"));
    INSITU_ASSIGN_OR_RETURN(alias.operand_number, parse_int64());
    INSITU_RETURN_IF_ERROR(expect(TokenKind::kComma, "',' after the operand number"));
    INSITU_ASSIGN_OR_RETURN(alias.operand_index, parse_shape_index());
    INSITU_RETURN_IF_ERROR(expect(TokenKind::kRparen, "')' to close (operand, {index})"));
    out.push_back(std::move(alias));
  } while (accept(TokenKind::kComma));
  return expect(TokenKind::kRbrace, "'}' to close output_to_operand_aliasing");
}

// window={size=3x3 stride=2x2 pad=0_0x1_1 lhs_dilate=1x1 rhs_dilate=1x1 rhs_reversal=0x0}
Status Parser::parse_window(Instruction& instruction) {
  const Token open = peek();
  INSITU_RETURN_IF_ERROR(expect(TokenKind::kLbrace, "'{' to start window"));
  std::vector<WindowDimension> window;
  bool sized = false;
  while (!accept(TokenKind::kRbrace)) {
    if (!at(TokenKind::kIdent) || !at(TokenKind::kEqual, 1))
      return error_expected("a window field (size=, stride=, pad=, lhs_dilate=, rhs_dilate=, rhs_reversal=) or '}'");
    const Token key = next();
    next();  // '='
    const Token value_token = peek();
    INSITU_ASSIGN_OR_RETURN(std::string value, parse_raw_value(str_cat("window ", key.text)));
    std::vector<std::string_view> parts = split(value, 'x');
    if (!sized) {
      window.resize(parts.size());
      sized = true;
    }
    if (parts.size() != window.size())
      return error_at(value_token, str_cat("window ", key.text, "=", value, " has ", parts.size(),
                                           " dimensions but the window has ", window.size()));
    for (size_t i = 0; i < parts.size(); ++i) {
      WindowDimension& dim = window[i];
      if (key.text == "pad") {
        std::vector<std::string_view> low_high = split(parts[i], '_');
        std::optional<int64_t> low = low_high.size() == 2 ? parse_integer_text(low_high[0]) : std::nullopt;
        std::optional<int64_t> high = low_high.size() == 2 ? parse_integer_text(low_high[1]) : std::nullopt;
        if (!low || !high)
          return error_at(value_token, str_cat("bad window pad '", parts[i], "'; expected low_high, e.g. 0_1"));
        dim.padding_low = *low;
        dim.padding_high = *high;
        continue;
      }
      std::optional<int64_t> number = parse_integer_text(parts[i]);
      if (!number) return error_at(value_token, str_cat("bad window ", key.text, " '", parts[i], "'"));
      if (key.text == "size") dim.size = *number;
      else if (key.text == "stride") dim.stride = *number;
      else if (key.text == "lhs_dilate") dim.base_dilation = *number;
      else if (key.text == "rhs_dilate") dim.window_dilation = *number;
      else if (key.text == "rhs_reversal") dim.window_reversal = *number != 0;
      else return error_at(key, str_cat("unknown window field '", key.text, "'"));
    }
  }
  (void)open;
  instruction.window = std::move(window);
  return ok_status();
}

Status Parser::parse_instruction_attribute(Instruction& instruction, PendingCalls& calls,
                                           std::vector<NameRef>& control_predecessors) {
  if (!at(TokenKind::kIdent) || !at(TokenKind::kEqual, 1)) return error_expected("an attribute (name=value)");
  const Token name_token = next();
  const std::string& name = name_token.text;
  next();  // '='
  const Opcode opcode = instruction.opcode();
  auto single_name = [&](std::vector<NameRef>& into) -> Status {
    if (at_inline_computation()) {
      INSITU_ASSIGN_OR_RETURN(NameRef ref, parse_inline_computation(str_cat(instruction.name(), ".", name)));
      into.push_back(std::move(ref));
      return ok_status();
    }
    if (at(TokenKind::kLbrace)) {
      INSITU_ASSIGN_OR_RETURN(into, parse_name_list());
      return ok_status();
    }
    INSITU_ASSIGN_OR_RETURN(NameRef ref, parse_name(str_cat("a computation name for ", name)));
    into.push_back(std::move(ref));
    return ok_status();
  };
  auto int_into = [&](int64_t& into) -> Status {
    INSITU_ASSIGN_OR_RETURN(into, parse_int64());
    return ok_status();
  };
  auto list_into = [&](std::vector<int64_t>& into) -> Status {
    INSITU_ASSIGN_OR_RETURN(into, parse_int_list());
    return ok_status();
  };
  auto bool_into = [&](bool& into) -> Status {
    INSITU_ASSIGN_OR_RETURN(into, parse_bool());
    return ok_status();
  };
  auto ident_into = [&](std::string& into) -> Status {
    if (!at(TokenKind::kIdent)) return error_expected(str_cat("a value for ", name));
    into = next().text;
    return ok_status();
  };
  // Only what the attribute table allows on this opcode (attribute_table.h): nothing is read
  // and then ignored.
  const AttributeRule* rule = find_attribute_rule(opcode, name);
  if (rule == nullptr) {
    std::vector<std::string> takers;
    for (Opcode taker : opcodes_taking_attribute(name)) takers.push_back(std::string(opcode_name(taker)));
    return error_at(name_token, takers.empty()
                                    ? str_cat("unknown attribute ", name, " on ", opcode_name(opcode), " %",
                                              instruction.name(), " (insitu never ignores an attribute silently)")
                                    : str_cat(opcode_name(opcode), " %", instruction.name(), " has no attribute ", name,
                                              " (it is an attribute of ", str_join(takers, ", "), ")"));
  }
  // Kept verbatim: an opcode's own attributes, and a custom-call kernel's inputs.
  const bool calls_computation = name == "to_apply" || name == "calls" || name == "select" || name == "scatter";
  const bool verbatim = (rule->use == AttributeUse::kOwn && !calls_computation) ||
                        (rule->use == AttributeUse::kKernelInput && name != "called_computations" &&
                         name != "to_apply" && name != "api_version" && name != "literal");
  if (verbatim && name == "replica_groups" && at(TokenKind::kIdent) &&
      (peek().text == "mesh" || peek().text == "maximal_mesh")) {
    // Shardy's mesh['x'=2,'y'=2] {'y'}: the mesh, a space, then the axes the groups span.
    const size_t first = position();
    INSITU_RETURN_IF_ERROR(parse_raw_value(name).status());
    if (at(TokenKind::kLbrace)) INSITU_RETURN_IF_ERROR(parse_raw_value(name).status());
    instruction.extra_attributes.push_back({name, source_text(first, position())});
    return ok_status();
  }
  if (verbatim) {
    INSITU_ASSIGN_OR_RETURN(std::string value, parse_raw_value(name));
    instruction.extra_attributes.push_back({name, std::move(value)});
    return ok_status();
  }
  if (name == "convolution_kind") {  // kept to print back; the value names a role, not arithmetic
    const Token token = peek();
    if (!at(TokenKind::kIdent)) return error_expected("a value for convolution_kind");
    std::string text = next().text;
    if (text != "fprop" && text != "dgrad" && text != "wgrad")
      return error_at(token, str_cat("convolution %", instruction.name(), ": unknown convolution_kind=", text,
                                     " (XLA's are fprop, dgrad and wgrad)"));
    instruction.extra_attributes.push_back({name, std::move(text)});
    return ok_status();
  }
  if (name == "algorithm") {  // dot: evaluator/dot.cc computes every algorithm XLA defines
    const Token token = peek();
    std::string text;
    if (!at(TokenKind::kIdent)) return error_expected("a value for algorithm");
    text = next().text;
    if (!parse_dot_algorithm(text))
      return error_at(token, str_cat("dot %", instruction.name(), ": unknown algorithm=", text,
                                     " (XLA's are dot_<in>_<in>_<acc>[_xN], e.g. dot_bf16_bf16_f32, and unset)"));
    instruction.extra_attributes.push_back({name, text});
    return ok_status();
  }
  GatherDimensionNumbers& gather = instruction.gather_dimension_numbers;
  ScatterDimensionNumbers& scatter = instruction.scatter_dimension_numbers;
  DotDimensionNumbers& dot = instruction.dot_dimension_numbers;

  if (name == "index") return int_into(instruction.tuple_index);
  if (name == "iota_dimension") return int_into(instruction.iota_dimension);
  if (name == "dimensions") return list_into(instruction.dimensions);
  if (name == "dynamic_slice_sizes" || name == "slice_sizes") return list_into(instruction.dynamic_slice_sizes);
  if (name == "lhs_batch_dims") return list_into(dot.lhs_batch_dimensions);
  if (name == "lhs_contracting_dims") return list_into(dot.lhs_contracting_dimensions);
  if (name == "rhs_batch_dims") return list_into(dot.rhs_batch_dimensions);
  if (name == "rhs_contracting_dims") return list_into(dot.rhs_contracting_dimensions);
  if (name == "offset_dims") return list_into(gather.offset_dims);
  if (name == "collapsed_slice_dims") return list_into(gather.collapsed_slice_dims);
  if (name == "start_index_map") return list_into(gather.start_index_map);
  if (name == "operand_batching_dims") return list_into(gather.operand_batching_dims);
  if (name == "start_indices_batching_dims") return list_into(gather.start_indices_batching_dims);
  if (name == "update_window_dims") return list_into(scatter.update_window_dims);
  if (name == "inserted_window_dims") return list_into(scatter.inserted_window_dims);
  if (name == "scatter_dims_to_operand_dims") return list_into(scatter.scatter_dims_to_operand_dims);
  if (name == "input_batching_dims") return list_into(scatter.input_batching_dims);
  if (name == "scatter_indices_batching_dims") return list_into(scatter.scatter_indices_batching_dims);
  if (name == "index_vector_dim") {
    INSITU_RETURN_IF_ERROR(int_into(gather.index_vector_dim));
    scatter.index_vector_dim = gather.index_vector_dim;
    return ok_status();
  }
  if (name == "indices_are_sorted") return bool_into(instruction.indices_are_sorted);
  if (name == "unique_indices") return bool_into(instruction.unique_indices);
  if (name == "is_stable") return bool_into(instruction.is_stable);
  if (name == "exponent_bits") return int_into(instruction.exponent_bits);
  if (name == "mantissa_bits") return int_into(instruction.mantissa_bits);
  if (name == "kind" && opcode == Opcode::kFusion) return ident_into(instruction.fusion_kind);
  if (name == "direction") {
    const Token token = peek();
    std::string text;
    INSITU_RETURN_IF_ERROR(ident_into(text));
    std::optional<ComparisonDirection> direction = parse_comparison_direction(text);
    if (!direction) return error_at(token, str_cat("unknown comparison direction '", text, "'; expected EQ, NE, GE, GT, LE or LT"));
    instruction.comparison_direction = *direction;
    return ok_status();
  }
  if (name == "type" && opcode == Opcode::kCompare) {
    const Token token = peek();
    std::string text;
    INSITU_RETURN_IF_ERROR(ident_into(text));
    std::optional<ComparisonType> type = parse_comparison_type(text);
    if (!type)
      return error_at(token, str_cat("unknown comparison type '", text, "'; expected FLOAT, TOTALORDER, SIGNED or UNSIGNED"));
    instruction.comparison_type = *type;
    return ok_status();
  }
  if (name == "order" && opcode == Opcode::kCompare) {
    // order=TOTAL|PARTIAL (current XLA's spelling): for floats TOTAL is type=TOTALORDER and
    // PARTIAL is type=FLOAT; integers are always totally ordered.
    const Token token = peek();
    std::string text;
    INSITU_RETURN_IF_ERROR(ident_into(text));
    if (text != "TOTAL" && text != "PARTIAL")
      return error_at(token, str_cat("unknown comparison order '", text, "'; expected TOTAL or PARTIAL"));
    instruction.comparison_order = text;
    comparison_orders_.push_back(&instruction);
    return ok_status();  // resolved by resolve_comparison_orders, once every operand's shape is known
  }
  if (name == "operand_precision") {
    INSITU_RETURN_IF_ERROR(expect(TokenKind::kLbrace, "'{' to start operand_precision"));
    instruction.operand_precision.clear();
    if (accept(TokenKind::kRbrace)) return ok_status();
    do {
      std::string precision;
      INSITU_RETURN_IF_ERROR(ident_into(precision));
      instruction.operand_precision.push_back(std::move(precision));
    } while (accept(TokenKind::kComma));
    return expect(TokenKind::kRbrace, "'}' to close operand_precision");
  }
  if (name == "slice") {
    INSITU_RETURN_IF_ERROR(expect(TokenKind::kLbrace, "'{' to start slice"));
    instruction.slice.clear();
    if (accept(TokenKind::kRbrace)) return ok_status();
    do {
      SliceDimension dim;
      INSITU_RETURN_IF_ERROR(expect(TokenKind::kLsquare, "'[' to start a slice dimension [start:limit:stride]"));
      INSITU_RETURN_IF_ERROR(int_into(dim.start));
      INSITU_RETURN_IF_ERROR(expect(TokenKind::kColon, "':' after the slice start"));
      INSITU_RETURN_IF_ERROR(int_into(dim.limit));
      if (accept(TokenKind::kColon)) INSITU_RETURN_IF_ERROR(int_into(dim.stride));
      INSITU_RETURN_IF_ERROR(expect(TokenKind::kRsquare, "']' to close the slice dimension"));
      instruction.slice.push_back(dim);
    } while (accept(TokenKind::kComma));
    return expect(TokenKind::kRbrace, "'}' to close slice");
  }
  if (name == "padding" && opcode == Opcode::kPad) {
    const Token token = peek();
    INSITU_ASSIGN_OR_RETURN(std::string value, parse_raw_value(name));
    instruction.padding.clear();
    for (std::string_view part : split(value, 'x')) {
      std::vector<std::string_view> fields = split(part, '_');
      PaddingDimension dim;
      std::optional<int64_t> values[3] = {std::nullopt, std::nullopt, int64_t{0}};
      for (size_t i = 0; i < fields.size() && i < 3; ++i) values[i] = parse_integer_text(fields[i]);
      if ((fields.size() != 2 && fields.size() != 3) || !values[0] || !values[1] || !values[2])
        return error_at(token, str_cat("bad padding '", part, "'; expected low_high or low_high_interior, e.g. 0_1_0"));
      dim.low = *values[0];
      dim.high = *values[1];
      dim.interior = *values[2];
      instruction.padding.push_back(dim);
    }
    return ok_status();
  }
  if (name == "window") return parse_window(instruction);
  if (name == "to_apply") return single_name(calls.to_apply);
  if (name == "calls") return single_name(calls.calls);
  if (name == "condition") return single_name(calls.condition);
  if (name == "body") return single_name(calls.body);
  if (name == "select" && opcode == Opcode::kSelectAndScatter) return single_name(calls.select);
  if (name == "scatter" && opcode == Opcode::kSelectAndScatter) return single_name(calls.scatter);
  if (name == "true_computation") return single_name(calls.true_computation);
  if (name == "false_computation") return single_name(calls.false_computation);
  if (name == "branch_computations") {
    INSITU_ASSIGN_OR_RETURN(calls.branches, parse_name_list());
    return ok_status();
  }
  if (name == "called_computations") {
    INSITU_ASSIGN_OR_RETURN(calls.called, parse_name_list());
    return ok_status();
  }
  if (name == "control-predecessors") {
    INSITU_ASSIGN_OR_RETURN(control_predecessors, parse_name_list());
    return ok_status();
  }
  if (name == "custom_call_target") {
    if (!at(TokenKind::kString)) return error_expected("a quoted custom_call_target");
    instruction.custom_call.target = next().text;
    if (instruction.custom_call.target.empty()) return error_at(name_token, "custom_call_target is empty");
    return ok_status();
  }
  if (name == "api_version") {
    // XLA's CustomCallApiVersion values; UNSPECIFIED is not one a call may have
    const Token value = peek();
    INSITU_RETURN_IF_ERROR(ident_into(instruction.custom_call.api_version));
    const std::string& version = instruction.custom_call.api_version;
    if (version != "API_VERSION_ORIGINAL" && version != "API_VERSION_STATUS_RETURNING" &&
        version != "API_VERSION_STATUS_RETURNING_UNIFIED" && version != "API_VERSION_TYPED_FFI")
      return error_at(value, str_cat("invalid custom-call api_version ", version,
                                     " (expected API_VERSION_ORIGINAL, API_VERSION_STATUS_RETURNING, "
                                     "API_VERSION_STATUS_RETURNING_UNIFIED or API_VERSION_TYPED_FFI)"));
    return ok_status();
  }
  if (name == "schedule") return ident_into(instruction.custom_call.schedule);
  if (name == "custom_call_has_side_effect") return bool_into(instruction.custom_call.has_side_effect);
  if (name == "output_to_operand_aliasing" && (opcode == Opcode::kCustomCall || opcode == Opcode::kFusion)) {
    return parse_output_operand_aliasing(opcode == Opcode::kFusion ? instruction.fusion_output_to_operand_aliasing
                                                                   : instruction.custom_call.output_to_operand_aliasing);
  }
  if (name == "operand_layout_constraints") {
    INSITU_RETURN_IF_ERROR(expect(TokenKind::kLbrace, "'{' to start operand_layout_constraints"));
    std::vector<Shape> shapes;
    if (!accept(TokenKind::kRbrace)) {
      do {
        INSITU_ASSIGN_OR_RETURN(Shape shape, parse_shape());
        shapes.push_back(std::move(shape));
      } while (accept(TokenKind::kComma));
      INSITU_RETURN_IF_ERROR(expect(TokenKind::kRbrace, "'}' to close operand_layout_constraints"));
    }
    if (static_cast<int64_t>(shapes.size()) != instruction.operand_count())
      return error_at(name_token, str_cat("operand_layout_constraints has ", shapes.size(), " shapes but %",
                                          instruction.name(), " has ", instruction.operand_count(), " operands"));
    instruction.custom_call.operand_layout_constraints = std::move(shapes);
    return ok_status();
  }
  if (name == "metadata") return parse_metadata(instruction);
  if (name == "frontend_attributes") return parse_frontend_attributes(instruction.frontend_attributes);
  if (name == "backend_config") {
    INSITU_ASSIGN_OR_RETURN(instruction.backend_config, parse_raw_value(name));
    return ok_status();
  }
  if (name == "sharding") {
    INSITU_ASSIGN_OR_RETURN(instruction.sharding, parse_raw_value(name));
    return ok_status();
  }
  if (name == "literal" && !at(TokenKind::kLparen)) {
    // custom-call's literal=s32[2]{0} {1, 2}: a shape then a value, kept verbatim.
    const size_t first = position();
    INSITU_ASSIGN_OR_RETURN(Shape shape, parse_shape());
    INSITU_RETURN_IF_ERROR(parse_literal(shape).status());
    instruction.extra_attributes.push_back({name, source_text(first, position())});
    return ok_status();
  }
  const Token value_token = peek();
  INSITU_ASSIGN_OR_RETURN(std::string value, parse_raw_value(name));
  if (name == "result_accuracy" && !is_result_accuracy(value))
    return error_at(value_token, str_cat("bad result_accuracy=", value,
                                         "; expected {mode=default}, {mode=highest} or "
                                         "{tolerance={atol=X,rtol=X,ulps=N}} (XLA's ResultAccuracy)"));
  instruction.extra_attributes.push_back({name, std::move(value)});
  return ok_status();
}

}  // namespace insitu::parser_internal
