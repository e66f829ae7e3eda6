// Types for the StableHLO text reader (text.h, text_internal.h): tensors, tuples, tokens,
// function types and element types, each added once to the table (equal types, equal index).
#include <bit>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>

#include "insitu/stablehlo/text_internal.h"
#include "insitu/support/float16.h"
#include "insitu/support/str.h"

namespace insitu::stablehlo::text_internal {

std::optional<PrimitiveType> element_type(std::string_view name) {
  static const std::map<std::string, PrimitiveType, std::less<>> kTypes = {
      {"i1", PrimitiveType::kPred}, {"i2", PrimitiveType::kS2}, {"i4", PrimitiveType::kS4}, {"i8", PrimitiveType::kS8},
      {"i16", PrimitiveType::kS16}, {"i32", PrimitiveType::kS32}, {"i64", PrimitiveType::kS64},
      {"si8", PrimitiveType::kS8}, {"si16", PrimitiveType::kS16}, {"si32", PrimitiveType::kS32}, {"si64", PrimitiveType::kS64},
      {"ui2", PrimitiveType::kU2}, {"ui4", PrimitiveType::kU4}, {"ui8", PrimitiveType::kU8}, {"ui16", PrimitiveType::kU16},
      {"ui32", PrimitiveType::kU32}, {"ui64", PrimitiveType::kU64}, {"f16", PrimitiveType::kF16},
      {"bf16", PrimitiveType::kBF16}, {"f32", PrimitiveType::kF32}, {"f64", PrimitiveType::kF64},
      {"f4E2M1FN", PrimitiveType::kF4E2M1FN}, {"f8E3M4", PrimitiveType::kF8E3M4}, {"f8E4M3", PrimitiveType::kF8E4M3},
      {"f8E4M3FN", PrimitiveType::kF8E4M3FN}, {"f8E4M3B11FNUZ", PrimitiveType::kF8E4M3B11FNUZ},
      {"f8E4M3FNUZ", PrimitiveType::kF8E4M3FNUZ}, {"f8E5M2", PrimitiveType::kF8E5M2},
      {"f8E5M2FNUZ", PrimitiveType::kF8E5M2FNUZ}, {"f8E8M0FNU", PrimitiveType::kF8E8M0FNU},
      {"index", PrimitiveType::kS64},  // layouts and other index lists: read as i64, as VHLO writes them
  };
  auto found = kTypes.find(name);
  if (found == kTypes.end()) return std::nullopt;
  return found->second;
}


uint64_t Parser::add_type(Type type, std::string key) {
  auto [found, inserted] = type_keys_.try_emplace(std::move(key), parsed_.types.size());
  if (inserted) {
    parsed_.types.push_back(std::move(type));
    parsed_.type_offsets.push_back(position_);
  }
  return found->second;
}

uint64_t Parser::element_type_index(PrimitiveType element) {
  Type type;
  type.kind = Type::Kind::kElement;
  type.element = element;
  return add_type(type, str_cat("element ", primitive_type_name(element)));
}

uint64_t Parser::tensor_type(PrimitiveType element, std::vector<int64_t> dimensions) {
  Type type;
  type.kind = Type::Kind::kTensor;
  type.element = element;
  type.dimensions = std::move(dimensions);
  std::string key = "tensor<";
  for (int64_t d : type.dimensions) key += str_cat(d, "x");
  key += str_cat(primitive_type_name(element), ">");
  return add_type(std::move(type), std::move(key));
}

StatusOr<std::vector<uint64_t>> Parser::type_list_until(std::string_view close) {
  std::vector<uint64_t> types;
  if (consume(close)) return types;
  do {
    INSITU_ASSIGN_OR_RETURN(uint64_t t, type());
    types.push_back(t);
  } while (consume(","));
  INSITU_RETURN_IF_ERROR(expect(close));
  return types;
}

StatusOr<uint64_t> Parser::element_or_tensor(std::string_view name, size_t at) {
  Type type;
  if (name == "complex") {
    INSITU_RETURN_IF_ERROR(expect("<"));
    const std::string_view part = word();
    INSITU_RETURN_IF_ERROR(expect(">"));
    if (part == "f32") return element_type_index(PrimitiveType::kC64);
    if (part == "f64") return element_type_index(PrimitiveType::kC128);
    return error_at(at, str_cat("complex<", part, "> is not a type insitu reads"));
  }
  if (name == "none") {
    type.kind = Type::Kind::kNone;
    return add_type(type, "none");
  }
  std::optional<PrimitiveType> element = element_type(name);
  if (!element) return error_at(at, str_cat("'", name, "' is not a type insitu reads"));
  return element_type_index(*element);
}

StatusOr<uint64_t> Parser::type() {
  Nest nest(depth_);
  if (depth_ > kMaxNesting) return error("types nested too deep");
  skip_space();
  const size_t at = position_;
  if (consume("(")) {  // a function type
    Type function;
    function.kind = Type::Kind::kFunction;
    INSITU_ASSIGN_OR_RETURN(function.inputs, type_list_until(")"));
    INSITU_RETURN_IF_ERROR(expect("->"));
    if (consume("(")) {
      INSITU_ASSIGN_OR_RETURN(function.outputs, type_list_until(")"));
    } else {
      INSITU_ASSIGN_OR_RETURN(uint64_t output, type());
      function.outputs.push_back(output);
    }
    return add_type(std::move(function), str_cat("function ", str_join(function.inputs, ","), " -> ", str_join(function.outputs, ",")));
  }
  if (consume("!")) {
    const std::string_view name = word();
    Type token;
    token.kind = Type::Kind::kToken;
    if (name == "stablehlo.token") return add_type(token, "!stablehlo.token");
    return error_at(at, str_cat("type !", name, " is not read"));
  }
  const std::string_view name = word();
  if (name.empty()) return error("expected a type");
  if (name == "tuple") {
    Type tuple;
    tuple.kind = Type::Kind::kTuple;
    INSITU_RETURN_IF_ERROR(expect("<"));
    INSITU_ASSIGN_OR_RETURN(tuple.inputs, type_list_until(">"));
    return add_type(std::move(tuple), str_cat("tuple<", str_join(tuple.inputs, ","), ">"));
  }
  if (name != "tensor") return element_or_tensor(name, at);
  INSITU_RETURN_IF_ERROR(expect("<"));
  std::vector<int64_t> dimensions;
  skip_space();
  if (position_ < text_.size() && text_[position_] == '*') return error_at(at, "an unranked tensor (insitu needs static shapes)");
  while (position_ < text_.size() && (std::isdigit(static_cast<unsigned char>(text_[position_])) || text_[position_] == '?')) {
    if (text_[position_] == '?') {
      ++position_;
      dimensions.push_back(Type::kDynamic);
    } else {
      size_t end = position_;
      while (end < text_.size() && std::isdigit(static_cast<unsigned char>(text_[end]))) ++end;
      const std::string digits(text_.substr(position_, end - position_));
      if (digits.size() > 12) return error_at(position_, "a dimension too large");
      dimensions.push_back(std::stoll(digits));
      position_ = end;
    }
    if (position_ >= text_.size() || text_[position_] != 'x') return error("expected 'x' after a dimension");
    ++position_;
  }
  const size_t element_at = position_;
  INSITU_ASSIGN_OR_RETURN(uint64_t element, type());
  const Type& element_type = parsed_.types[element];
  if (element_type.kind != Type::Kind::kElement) return error_at(element_at, "a tensor of something other than numbers");
  Type tensor;
  tensor.kind = Type::Kind::kTensor;
  tensor.element = element_type.element;
  tensor.dimensions = dimensions;
  std::string key = str_cat("tensor<", str_join(dimensions, "x"), "x", primitive_type_name(tensor.element));
  if (consume(",")) {  // an encoding: bounds of dynamic dimensions
    INSITU_ASSIGN_OR_RETURN(uint64_t encoding, attribute());
    tensor.encoding = encoding;
    key += str_cat(",#", encoding);
  }
  INSITU_RETURN_IF_ERROR(expect(">"));
  int64_t elements = 1;
  for (int64_t d : dimensions)
    if (d > 0 && (__builtin_mul_overflow(elements, d, &elements) || elements > Symbols::kMaxElements))
      return error_at(at, "a tensor of too many elements");
  return add_type(std::move(tensor), key + ">");
}

// ---- attributes ----
}  // namespace insitu::stablehlo::text_internal
