// The tree of text ops as the bytecode::File the VHLO importer reads (text.h, text_internal.h):
// each StableHLO op its VHLO op, its attributes the op's properties in name order with the
// defaults its printed form leaves out, the rest (dialect-prefixed: mhlo.*, jax.*, sdy.*) its
// discardable attributes. An attribute an op does not have, or a property it needs and lacks,
// is an error at the op.
#include <algorithm>
#include <map>

#include "insitu/stablehlo/text_internal.h"
#include "insitu/support/str.h"

namespace insitu::stablehlo {
namespace text_internal {
namespace {

// How a property the text leaves out is filled.
enum class Fill {
  kRequired,        // an error
  kEmptyList,       // an empty i64 list
  kEmptyArray,      // []
  kFalse,
  kZero,
  kOne,
  kMinusOne,
  kNone,            // a `none` type: an unset optional field
  kEmptyString,
  kEmptyDictionary,
  kNoType,          // comparison_type NOTYPE
  kRngDefault,      // rng_algorithm DEFAULT
  kApiOriginal,     // custom call API_VERSION_ORIGINAL
  kWindowOnes,      // 1 per window dimension
  kWindowPadding,   // [0, 0] per window dimension
};

struct Property {
  const char* name;
  Fill fill;
};

struct VhloOp {
  const char* name;                  // without "vhlo."
  std::vector<Property> properties;  // in name order, as VHLO writes them
};

// The StableHLO ops with properties (by name without "stablehlo."); the others are "<name>_v1"
// with none.
const std::map<std::string, VhloOp, std::less<>>& vhlo_ops() {
  using F = Fill;
  static const auto* table = new std::map<std::string, VhloOp, std::less<>>{
      {"constant", {"constant_v1", {{"value", F::kRequired}}}},
      {"broadcast_in_dim", {"broadcast_in_dim_v1", {{"broadcast_dimensions", F::kRequired}}}},
      {"transpose", {"transpose_v1", {{"permutation", F::kRequired}}}},
      {"reverse", {"reverse_v1", {{"dimensions", F::kRequired}}}},
      {"iota", {"iota_v1", {{"iota_dimension", F::kRequired}}}},
      {"concatenate", {"concatenate_v1", {{"dimension", F::kRequired}}}},
      {"get_tuple_element", {"get_tuple_element_v1", {{"index", F::kRequired}}}},
      {"compare", {"compare_v1", {{"compare_type", F::kNoType}, {"comparison_direction", F::kRequired}}}},
      {"slice", {"slice_v1", {{"limit_indices", F::kRequired}, {"start_indices", F::kRequired}, {"strides", F::kRequired}}}},
      {"dynamic_slice", {"dynamic_slice_v1", {{"slice_sizes", F::kRequired}}}},
      {"pad", {"pad_v1", {{"edge_padding_high", F::kRequired}, {"edge_padding_low", F::kRequired}, {"interior_padding", F::kRequired}}}},
      {"dot_general", {"dot_general_v2", {{"accumulation_type", F::kNone}, {"allow_imprecise_accumulation", F::kNone},
                                          {"lhs_batching_dimensions", F::kEmptyList}, {"lhs_component_count", F::kNone},
                                          {"lhs_contracting_dimensions", F::kEmptyList}, {"lhs_precision_type", F::kNone},
                                          {"num_primitive_operations", F::kNone}, {"precision_config", F::kEmptyArray},
                                          {"rhs_batching_dimensions", F::kEmptyList}, {"rhs_component_count", F::kNone},
                                          {"rhs_contracting_dimensions", F::kEmptyList}, {"rhs_precision_type", F::kNone}}}},
      {"reduce", {"reduce_v1", {{"dimensions", F::kRequired}}}},
      {"reduce_window", {"reduce_window_v1", {{"base_dilations", F::kWindowOnes}, {"padding", F::kWindowPadding},
                                              {"window_dilations", F::kWindowOnes}, {"window_dimensions", F::kRequired},
                                              {"window_strides", F::kWindowOnes}}}},
      {"scatter", {"scatter_v2", {{"index_vector_dim", F::kZero}, {"indices_are_sorted", F::kFalse},
                                  {"input_batching_dims", F::kEmptyList}, {"inserted_window_dims", F::kEmptyList},
                                  {"scatter_dims_to_operand_dims", F::kEmptyList}, {"scatter_indices_batching_dims", F::kEmptyList},
                                  {"unique_indices", F::kFalse}, {"update_window_dims", F::kEmptyList}}}},
      {"gather", {"gather_v2", {{"collapsed_slice_dims", F::kEmptyList}, {"index_vector_dim", F::kZero},
                                {"indices_are_sorted", F::kFalse}, {"offset_dims", F::kEmptyList},
                                {"operand_batching_dims", F::kEmptyList}, {"slice_sizes", F::kRequired},
                                {"start_index_map", F::kEmptyList}, {"start_indices_batching_dims", F::kEmptyList}}}},
      {"sort", {"sort_v1", {{"dimension", F::kMinusOne}, {"is_stable", F::kFalse}}}},
      {"reduce_precision", {"reduce_precision_v1", {{"exponent_bits", F::kRequired}, {"mantissa_bits", F::kRequired}}}},
      {"convolution", {"convolution_v1", {{"batch_group_count", F::kOne}, {"feature_group_count", F::kOne},
                                          {"input_batch_dimension", F::kRequired}, {"input_feature_dimension", F::kRequired},
                                          {"input_spatial_dimensions", F::kRequired}, {"kernel_input_feature_dimension", F::kRequired},
                                          {"kernel_output_feature_dimension", F::kRequired}, {"kernel_spatial_dimensions", F::kRequired},
                                          {"lhs_dilation", F::kWindowOnes}, {"output_batch_dimension", F::kRequired},
                                          {"output_feature_dimension", F::kRequired}, {"output_spatial_dimensions", F::kRequired},
                                          {"padding", F::kWindowPadding}, {"precision_config", F::kEmptyArray},
                                          {"rhs_dilation", F::kWindowOnes}, {"window_reversal", F::kEmptyList},
                                          {"window_strides", F::kWindowOnes}}}},
      {"rng_bit_generator", {"rng_bit_generator_v1", {{"rng_algorithm", F::kRngDefault}}}},
      {"composite", {"composite_v1", {{"composite_attributes", F::kEmptyDictionary}, {"decomposition", F::kRequired},
                                      {"name", F::kRequired}, {"version", F::kZero}}}},
      {"select_and_scatter", {"select_and_scatter_v1", {{"padding", F::kWindowPadding}, {"window_dimensions", F::kRequired},
                                                        {"window_strides", F::kWindowOnes}}}},
      {"fft", {"fft_v1", {{"fft_length", F::kRequired}, {"fft_type", F::kRequired}}}},
      {"custom_call", {"custom_call_v1", {{"api_version", F::kApiOriginal}, {"backend_config", F::kEmptyString},
                                          {"call_target_name", F::kRequired}, {"called_computations", F::kEmptyArray},
                                          {"has_side_effect", F::kFalse}, {"operand_layouts", F::kEmptyArray},
                                          {"output_operand_aliases", F::kEmptyArray}, {"result_layouts", F::kEmptyArray}}}},
  };
  return *table;
}

void put_varint(std::vector<uint8_t>& out, uint64_t value) {  // MLIR's PrefixVarInt
  for (int n = 1; n <= 8; ++n) {
    if (n < 8 ? value >= (uint64_t{1} << (7 * n)) : value >= (uint64_t{1} << 56)) continue;
    const uint64_t encoded = (value << n) | (uint64_t{1} << (n - 1));
    for (int i = 0; i < n; ++i) out.push_back(static_cast<uint8_t>(encoded >> (8 * i)));
    return;
  }
  out.push_back(0);
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<uint8_t>(value >> (8 * i)));
}

}  // namespace

struct Parser::Built {
  bytecode::File& file;
  std::map<std::string, uint64_t> names, dialects;
  std::map<const TextOp*, const bytecode::Operation*> ops;
  std::map<const TextBlock*, const bytecode::Block*> blocks;
  uint64_t no_location = 0;
  uint64_t name(const std::string& full) {
    auto [found, inserted] = names.try_emplace(full, file.operation_names.size());
    if (inserted) {
      const std::string dialect = full.substr(0, full.find('.'));
      auto [d, new_dialect] = dialects.try_emplace(dialect, file.dialects.size());
      if (new_dialect) file.dialects.push_back(bytecode::Dialect{dialect, std::nullopt});
      file.operation_names.push_back(bytecode::OperationName{d->second, full.substr(full.find('.') + 1), true});
    }
    return found->second;
  }
};

Status Parser::legalize(const TextOp& op, std::string& name, std::vector<uint64_t>& properties,
                        std::vector<std::pair<std::string, uint64_t>>& discardable) {
  const size_t at = op.offset;
  // the attributes by name, struct attributes (dimension numbers, a dot algorithm) as their fields
  std::map<std::string, uint64_t, std::less<>> given;
  for (const auto& [key, value] : op.attributes) {
    const Attribute& attribute = parsed_.attributes[value];
    const bool fields = attribute.kind == Attribute::Kind::kDictionary && attribute.description.starts_with("stablehlo.") &&
                        attribute.description != "stablehlo.result_accuracy";
    if (fields) {
      for (size_t i = 0; i + 1 < attribute.elements.size(); i += 2)
        if (!given.emplace(parsed_.attributes[attribute.elements[i]].text, attribute.elements[i + 1]).second)
          return error_at(at, str_cat(op.name, " names '", parsed_.attributes[attribute.elements[i]].text, "' twice"));
    } else if (key.find('.') != std::string::npos) {
      discardable.emplace_back(key, value);
    } else if (!given.emplace(key, value).second) {
      return error_at(at, str_cat(op.name, " names '", key, "' twice"));
    }
  }
  auto unknown = [&](const std::string& op_name) -> Status {
    if (given.empty()) return ok_status();
    return error_at(at, str_cat("'", given.begin()->first, "' is not an attribute of ", op_name, " insitu reads"));
  };
  if (op.name == "builtin.module" || op.name == "func.func") {
    name = op.name == "func.func" ? "vhlo.func_v1" : "builtin.module";
    for (const char* key : {"arg_attrs", "function_type", "res_attrs", "sym_name", "sym_visibility"}) {
      auto found = given.find(key);
      if (found == given.end()) continue;
      properties.push_back(found->second);
      given.erase(found);
    }
    return unknown(op.name);
  }
  if (op.name == "func.return" || op.name == "stablehlo.return") {
    name = "vhlo.return_v1";
    return unknown(op.name);
  }
  if (op.name == "func.call") {
    name = "vhlo.call_v1";
    const uint64_t* callee = op.attribute("callee");
    if (callee == nullptr) return error_at(at, "a call without its callee");
    properties.push_back(*callee);
    given.erase("callee");
    return unknown(op.name);
  }
  if (op.name.starts_with("sdy.")) {  // a mesh, a sharding constraint: placement (import.h)
    name = op.name;
    return unknown(op.name);
  }
  if (op.name.starts_with("chlo.")) {
    name = op.name;
    if (op.name == "chlo.top_k") {
      auto k = given.find("k");
      if (k == given.end()) return error_at(at, "chlo.top_k without its k");
      properties.push_back(k->second);
      given.erase(k);
    }
    return unknown(op.name);
  }
  if (!op.name.starts_with("stablehlo.")) return error_at(at, str_cat("'", op.name, "' is not an op insitu reads"));
  const std::string base = op.name.substr(10);
  if (auto accuracy = given.find("result_accuracy"); accuracy != given.end()) {
    // only the default (mode DEFAULT, no tolerances) is read, as from bytecode
    const Attribute& fields = parsed_.attributes[accuracy->second];
    bool default_mode = false, zero = true;
    for (size_t i = 0; fields.kind == Attribute::Kind::kDictionary && i + 1 < fields.elements.size(); i += 2) {
      const std::string& key = parsed_.attributes[fields.elements[i]].text;
      const Attribute& value = parsed_.attributes[fields.elements[i + 1]];
      if (key == "mode") default_mode = value.text.find("<DEFAULT>") != std::string::npos;
      else zero = zero && (value.kind == Attribute::Kind::kInteger || value.kind == Attribute::Kind::kFloat) && value.integer == 0 && value.bits == 0;
    }
    if (!default_mode || !zero) return error_at(at, str_cat(op.name, " with a result_accuracy other than the default is not read"));
    given.erase(accuracy);
  }
  auto found = vhlo_ops().find(base);
  if (found == vhlo_ops().end()) {
    name = str_cat("vhlo.", base, "_v1");
    return unknown(op.name);
  }
  name = str_cat("vhlo.", found->second.name);
  // the window's rank, for the defaults of window fields
  auto list_size = [&](std::string_view key) -> int64_t {
    auto it = given.find(key);
    if (it == given.end()) return -1;
    const Attribute& list = parsed_.attributes[it->second];
    if (list.kind == Attribute::Kind::kArray) return static_cast<int64_t>(list.elements.size());
    if (list.kind != Attribute::Kind::kTensor) return -1;
    const Type& type = parsed_.types[list.type];
    return type.dimensions.empty() ? 1 : type.dimensions[0];
  };
  const int64_t window = base == "convolution" ? list_size("input_spatial_dimensions") : list_size("window_dimensions");
  for (const Property& property : found->second.properties) {
    auto value = given.find(property.name);
    if (value != given.end()) {
      uint64_t index = value->second;
      const Attribute& attribute = parsed_.attributes[index];
      if (attribute.kind == Attribute::Kind::kSymbolRef) index = string_attribute(attribute.text, at);  // callee, decomposition
      if (base == "sort" && std::string_view(property.name) == "dimension" && attribute.kind == Attribute::Kind::kInteger &&
          attribute.integer < 0 && !op.operands.empty())  // -1: the last dimension
        index = integer_attribute(attribute.integer + static_cast<int64_t>(parsed_.types[type_of(op.operands[0])].dimensions.size()),
                                  PrimitiveType::kS64, at);
      properties.push_back(index);
      given.erase(value);
      continue;
    }
    switch (property.fill) {
      case Fill::kRequired: return error_at(at, str_cat(op.name, " without its ", property.name));
      case Fill::kEmptyList: properties.push_back(integers_attribute({}, at)); break;
      case Fill::kEmptyArray: properties.push_back(array_attribute({}, at)); break;
      case Fill::kFalse: properties.push_back(boolean_attribute(false, at)); break;
      case Fill::kZero: properties.push_back(integer_attribute(0, PrimitiveType::kS64, at)); break;
      case Fill::kOne: properties.push_back(integer_attribute(1, PrimitiveType::kS64, at)); break;
      case Fill::kMinusOne: {
        const int64_t rank = op.operands.empty() ? 0 : static_cast<int64_t>(parsed_.types[type_of(op.operands[0])].dimensions.size());
        properties.push_back(integer_attribute(rank - 1, PrimitiveType::kS64, at));
        break;
      }
      case Fill::kNone: properties.push_back(none_attribute(at)); break;
      case Fill::kEmptyString: properties.push_back(string_attribute("", at)); break;
      case Fill::kEmptyDictionary: {
        Attribute empty;
        empty.kind = Attribute::Kind::kDictionary;
        properties.push_back(add_attribute(std::move(empty), at));
        break;
      }
      case Fill::kNoType: properties.push_back(enum_attribute(kComparisonType, 0, at)); break;
      case Fill::kRngDefault: properties.push_back(enum_attribute(kRngAlgorithm, 0, at)); break;
      case Fill::kApiOriginal: properties.push_back(integer_attribute(1, PrimitiveType::kS32, at)); break;
      case Fill::kWindowOnes:
      case Fill::kWindowPadding: {
        if (window < 0) return error_at(at, str_cat(op.name, " without the window its ", property.name, " is sized by"));
        const int64_t rank = op.operands.empty() ? 0 : static_cast<int64_t>(parsed_.types[type_of(op.operands[0])].dimensions.size());
        if (window > rank) return error_at(at, str_cat(op.name, ": a window of ", window, " dimensions for an operand of ", rank));
        properties.push_back(integers_attribute(std::vector<int64_t>(static_cast<size_t>(window) * (property.fill == Fill::kWindowOnes ? 1 : 2),
                                                                     property.fill == Fill::kWindowOnes ? 1 : 0), at));
        break;
      }
    }
  }
  return unknown(op.name);
}

Status Parser::convert(const TextOp& op, bytecode::Operation& out, Built& built) {
  std::string name;
  std::vector<uint64_t> properties;
  std::vector<std::pair<std::string, uint64_t>> discardable;
  INSITU_RETURN_IF_ERROR(legalize(op, name, properties, discardable));
  out.name = built.name(name);
  out.offset = op.offset;
  out.location = built.no_location;
  out.result_types = op.result_types;
  for (const TextValue& value : op.operands) {
    bytecode::ValueRef ref;
    ref.index = value.index;
    if (value.op != nullptr) ref.operation = built.ops.at(value.op);
    else ref.block = built.blocks.at(value.block);
    out.operands.push_back(ref);
  }
  if (name == "builtin.module" || !properties.empty()) {
    std::vector<uint8_t>& blob = parsed_.storage.emplace_back();
    if (name == "builtin.module") {  // optional sym_name: (index << 1) | present
      put_varint(blob, properties.empty() ? 0 : (properties[0] << 1) | 1);
    } else {
      for (uint64_t index : properties) put_varint(blob, index);
    }
    out.properties = built.file.properties.size();
    built.file.properties.push_back(blob);
    built.file.property_offsets.push_back(op.offset);
  }
  if (!discardable.empty()) {
    Attribute dictionary;
    dictionary.kind = Attribute::Kind::kDictionary;
    for (const auto& [key, value] : discardable) {
      dictionary.elements.push_back(string_attribute(key, op.offset));
      dictionary.elements.push_back(value);
    }
    out.attributes = add_attribute(std::move(dictionary), op.offset);
  }
  out.regions.reserve(op.regions.size());
  for (const TextRegion& region : op.regions) {
    bytecode::Region& converted = out.regions.emplace_back();
    converted.blocks.reserve(region.blocks.size());
    for (const auto& block : region.blocks) {
      bytecode::Block& target = converted.blocks.emplace_back();
      built.blocks[block.get()] = &target;
      target.argument_types = block->argument_types;
      target.argument_locations.assign(block->argument_types.size(), built.no_location);
      target.operations.reserve(block->ops.size());
      for (const auto& inner : block->ops) {
        bytecode::Operation& converted_op = target.operations.emplace_back();
        INSITU_RETURN_IF_ERROR(convert(*inner, converted_op, built));
        built.ops[inner.get()] = &converted_op;
      }
    }
  }
  return ok_status();
}

StatusOr<std::unique_ptr<TextFile>> Parser::build() {
  auto out = std::make_unique<TextFile>();
  Built built{out->file};
  Attribute unit;  // the location of every op: none (errors name the text's line and column)
  unit.kind = Attribute::Kind::kUnit;
  built.no_location = add_attribute(std::move(unit), 0);
  out->file.text = text_;
  out->file.producer = "StableHLO text";
  out->file.top.operations.reserve(1);
  bytecode::Operation& module = out->file.top.operations.emplace_back();
  INSITU_RETURN_IF_ERROR(convert(*parsed_.module, module, built));
  for (size_t i = 0; i < parsed_.attributes.size(); ++i)
    out->file.attributes.push_back(bytecode::Entry{0, {}, true, parsed_.attribute_offsets[i]});
  for (size_t i = 0; i < parsed_.types.size(); ++i)
    out->file.types.push_back(bytecode::Entry{0, {}, true, parsed_.type_offsets[i]});
  out->attributes = std::move(parsed_.attributes);
  out->types = std::move(parsed_.types);
  out->storage = std::move(parsed_.storage);
  return out;
}

}  // namespace text_internal

bool is_stablehlo_text(std::span<const uint8_t> bytes) {
  const std::string_view text(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  size_t at = 0;
  while (at < text.size()) {
    const char c = text[at];
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
      ++at;
    } else if (text.substr(at).starts_with("//") || c == '#') {  // a comment, an attribute alias
      const size_t end = text.find('\n', at);
      at = end == std::string_view::npos ? text.size() : end + 1;
    } else {
      const std::string_view rest = text.substr(at);
      return rest.starts_with("module") || rest.starts_with("builtin.module") || rest.starts_with("func.func") ||
             rest.starts_with("\"builtin.module\"");
    }
  }
  return false;
}

StatusOr<std::unique_ptr<TextFile>> read_text(std::string_view text) {
  text_internal::Parser parser(text);
  INSITU_RETURN_IF_ERROR(parser.run());
  return parser.build();
}

}  // namespace insitu::stablehlo
