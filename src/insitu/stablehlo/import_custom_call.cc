// Custom calls (import.h, import_internal.h): their target, API version, backend config (a
// string, or the typed-FFI dictionary JAX writes as mhlo.backend_config), layouts, aliasing and
// frontend attributes as HLO's custom-call writes them.
#include <cctype>

#include "insitu/stablehlo/import_internal.h"

namespace insitu::stablehlo::import_internal {

StatusOr<std::string> Importer::ffi_attribute(uint64_t index, int depth) {
  INSITU_ASSIGN_OR_RETURN(const Attribute* attribute, symbols_.attribute(index));
  switch (attribute->kind) {
    case Attribute::Kind::kBoolean: return std::string(attribute->integer ? "true" : "false");
    case Attribute::Kind::kString: return ffi_quote(attribute->text);
    case Attribute::Kind::kInteger: {
      INSITU_ASSIGN_OR_RETURN(const Type* type, symbols_.type(attribute->type));
      if (type->kind != Type::Kind::kElement || !is_integral(type->element))
        return symbols_.attribute_error(index, "an FFI integer attribute of another type");
      const std::string_view name = primitive_type_name(type->element);  // s32, u8
      return str_cat(attribute->integer, " : ", name[0] == 'u' ? "ui" : "i", name.substr(1));
    }
    case Attribute::Kind::kDictionary: {
      if (depth > 8) return symbols_.attribute_error(index, "FFI attributes nested too deep");
      std::vector<std::string> entries;
      for (size_t i = 0; i + 1 < attribute->elements.size(); i += 2) {
        INSITU_ASSIGN_OR_RETURN(std::string key, symbols_.string(attribute->elements[i], "an FFI attribute's name"));
        if (!is_identifier(key)) return symbols_.attribute_error(attribute->elements[i], "an FFI attribute's name that is not an identifier");
        INSITU_ASSIGN_OR_RETURN(std::string value, ffi_attribute(attribute->elements[i + 1], depth + 1));
        entries.push_back(str_cat(key, " = ", value));
      }
      return str_cat("{", str_join(entries, ", "), "}");
    }
    default:
      return symbols_.attribute_error(index, "an FFI attribute of a kind insitu does not read (integers, booleans, "
                                             "strings and dictionaries are read)");
  }
}

StatusOr<std::optional<uint64_t>> Importer::discardable(const Operation& op, std::string_view key) {
  if (!op.attributes) return std::optional<uint64_t>();
  INSITU_ASSIGN_OR_RETURN(const Attribute* dictionary, symbols_.attribute(*op.attributes));
  if (dictionary->kind != Attribute::Kind::kDictionary) return error(op, "an op whose attributes are not a dictionary");
  for (size_t i = 0; i + 1 < dictionary->elements.size(); i += 2) {
    StatusOr<std::string> name = symbols_.string(dictionary->elements[i], "an attribute's name");
    if (name.ok() && *name == key) return std::optional<uint64_t>(dictionary->elements[i + 1]);
  }
  return std::optional<uint64_t>();
}

StatusOr<std::string> Importer::frontend_attributes(const Operation& op) {
  INSITU_ASSIGN_OR_RETURN(std::optional<uint64_t> attributes, discardable(op, "mhlo.frontend_attributes"));
  if (!attributes) return std::string();
  INSITU_ASSIGN_OR_RETURN(const Attribute* dictionary, symbols_.attribute(*attributes));
  if (dictionary->kind != Attribute::Kind::kDictionary) return error(op, "mhlo.frontend_attributes is not a dictionary");
  std::vector<std::string> entries;
  for (size_t i = 0; i + 1 < dictionary->elements.size(); i += 2) {
    INSITU_ASSIGN_OR_RETURN(std::string key, symbols_.string(dictionary->elements[i], "a frontend attribute's name"));
    if (!is_identifier(key)) return error(op, str_cat("a frontend attribute's name that is not an identifier"));
    INSITU_ASSIGN_OR_RETURN(std::string value, symbols_.string(dictionary->elements[i + 1], "a frontend attribute"));
    entries.push_back(str_cat(key, "=", ffi_quote(value)));
  }
  return str_cat(", frontend_attributes={", str_join(entries, ","), "}");
}

bool Importer::is_identifier(const std::string& text) {
  if (text.empty()) return false;
  for (char c : text)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '.' && c != '-') return false;
  return true;
}

std::string Importer::ffi_quote(const std::string& text) {
  std::string quoted = "\"";
  for (char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte < 0x20 || byte == 0x7F) {  // control characters as \xNN: one line stays one line
      static const char* kHex = "0123456789abcdef";
      quoted += str_cat("\\x", kHex[byte >> 4], kHex[byte & 15]);
      continue;
    }
    if (c == '"' || c == '\\') quoted += '\\';
    quoted += c;
  }
  return quoted + "\"";
}

StatusOr<std::string> Importer::shape_with_layout(uint64_t type, const std::vector<int64_t>& minor_to_major, const Operation& op) {
  StatusOr<Shape> shape = symbols_.shape(type, name(op));
  if (!shape.ok()) return error(op, shape.status().message());
  if (!shape->is_array() || minor_to_major.size() != static_cast<size_t>(shape->rank()))
    return error(op, "a custom call layout of another rank than its value");
  std::string text = shape->to_string();
  const size_t brace = text.find('{');
  if (brace != std::string::npos) text.resize(brace);
  return str_cat(text, "{", str_join(minor_to_major, ","), "}");
}

Status Importer::custom_call(Scope& scope, const Operation& op, const std::string& args) {
  const bool v2 = name(op) == "vhlo.custom_call_v2";
  INSITU_ASSIGN_OR_RETURN(std::vector<uint64_t> p, properties(op, v2 ? 9 : 8));
  INSITU_ASSIGN_OR_RETURN(int64_t api_version, symbols_.integer(p[0], "api_version"));
  INSITU_ASSIGN_OR_RETURN(std::string target, symbols_.string(p[2], "call_target_name"));
  INSITU_ASSIGN_OR_RETURN(int64_t side_effect, symbols_.integer(p[4], "has_side_effect"));
  static const char* kApis[] = {"API_VERSION_UNSPECIFIED", "API_VERSION_ORIGINAL", "API_VERSION_STATUS_RETURNING",
                                "API_VERSION_STATUS_RETURNING_UNIFIED", "API_VERSION_TYPED_FFI"};
  if (api_version < 0 || api_version > 4) return error(op, str_cat("a custom call of unknown api_version ", api_version));
  for (size_t i : {size_t{3}, size_t{8}}) {  // called_computations, result_tilings: none read yet
    if (i >= p.size()) continue;
    INSITU_ASSIGN_OR_RETURN(const Attribute* list, symbols_.attribute(p[i]));
    if (list->kind != Attribute::Kind::kArray || !list->elements.empty())
      return error(op, str_cat("custom call ", target, i == 3 ? " with called computations" : " with result tilings",
                               " is not read"));
  }
  // JAX writes a typed-FFI call's attributes as mhlo.backend_config (a dictionary) beside an
  // empty backend_config, which XLA's import makes API_VERSION_TYPED_FFI: the same here
  INSITU_ASSIGN_OR_RETURN(std::optional<uint64_t> mhlo_config, discardable(op, "mhlo.backend_config"));
  uint64_t config_index = p[1];
  if (mhlo_config) {
    INSITU_ASSIGN_OR_RETURN(const Attribute* mhlo, symbols_.attribute(*mhlo_config));
    INSITU_ASSIGN_OR_RETURN(const Attribute* plain, symbols_.attribute(p[1]));
    if (mhlo->kind != Attribute::Kind::kDictionary || plain->kind != Attribute::Kind::kString || !plain->text.empty())
      return error(op, "a custom call with both backend_config and mhlo.backend_config, or a non-dictionary mhlo.backend_config");
    config_index = *mhlo_config;
    api_version = 4;
  }
  std::string text = str_cat("custom-call(", args, "), custom_call_target=", ffi_quote(target), ", api_version=", kApis[api_version]);
  INSITU_ASSIGN_OR_RETURN(const Attribute* config, symbols_.attribute(config_index));
  if (config->kind == Attribute::Kind::kDictionary) {
    INSITU_ASSIGN_OR_RETURN(std::string dictionary, ffi_attribute(config_index));
    text += str_cat(", backend_config=", dictionary);
  } else if (config->kind == Attribute::Kind::kString) {
    if (!config->text.empty()) text += str_cat(", backend_config=", ffi_quote(config->text));
  } else {
    return error(op, "a custom call whose backend_config is neither a string nor a dictionary");
  }
  if (side_effect) text += ", custom_call_has_side_effect=true";
  // layouts: operand constraints, and the results' layouts in their shapes
  INSITU_ASSIGN_OR_RETURN(const Attribute* operand_layouts, symbols_.attribute(p[5]));
  INSITU_ASSIGN_OR_RETURN(const Attribute* result_layouts, symbols_.attribute(p[7]));
  std::vector<std::string> result_shapes;
  if (operand_layouts->kind == Attribute::Kind::kArray && !operand_layouts->elements.empty()) {
    if (operand_layouts->elements.size() != op.operands.size()) return error(op, "operand_layouts of another count than the operands");
    std::vector<std::string> constraints;
    for (size_t i = 0; i < op.operands.size(); ++i) {
      INSITU_ASSIGN_OR_RETURN(std::vector<int64_t> layout, symbols_.integers(operand_layouts->elements[i], "an operand layout"));
      INSITU_ASSIGN_OR_RETURN(std::string shape, shape_with_layout(type_of(op.operands[i]), layout, op));
      constraints.push_back(std::move(shape));
    }
    text += str_cat(", operand_layout_constraints={", str_join(constraints, ", "), "}");
  }
  if (result_layouts->kind == Attribute::Kind::kArray && !result_layouts->elements.empty()) {
    if (result_layouts->elements.size() != op.result_types.size()) return error(op, "result_layouts of another count than the results");
    for (size_t i = 0; i < op.result_types.size(); ++i) {
      INSITU_ASSIGN_OR_RETURN(std::vector<int64_t> layout, symbols_.integers(result_layouts->elements[i], "a result layout"));
      INSITU_ASSIGN_OR_RETURN(std::string shape, shape_with_layout(op.result_types[i], layout, op));
      result_shapes.push_back(std::move(shape));
    }
  }
  INSITU_ASSIGN_OR_RETURN(const Attribute* aliases, symbols_.attribute(p[6]));
  if (aliases->kind == Attribute::Kind::kArray && !aliases->elements.empty()) {
    std::vector<std::string> entries;
    for (uint64_t element : aliases->elements) {
      INSITU_ASSIGN_OR_RETURN(const Attribute* alias, symbols_.attribute(element));
      if (alias->kind != Attribute::Kind::kOutputOperandAlias) return error(op, "an output_operand_alias that is not one");
      entries.push_back(str_cat(braces(alias->output_index), ": (", alias->integer, ", ", braces(alias->operand_index), ")"));
    }
    text += str_cat(", output_to_operand_aliasing={", str_join(entries, ", "), "}");
  }
  INSITU_ASSIGN_OR_RETURN(std::string frontend, frontend_attributes(op));
  return define(scope, op, text + frontend, result_shapes);
}

}  // namespace insitu::stablehlo::import_internal
