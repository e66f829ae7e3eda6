// MLIR's text syntax for the StableHLO text reader (text.h, text_internal.h): the cursor, types,
// attributes, the generic op form, regions, functions and the module.
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
namespace {

constexpr int kMaxNesting = 64;  // regions, attributes and types inside one another

bool is_word_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '$'; }

// Guards the depth of recursive constructs (a hostile text of 10^6 '[' stays an error).
struct Nest {
  explicit Nest(int& depth) : depth_(depth) { ++depth_; }
  ~Nest() { --depth_; }
  int& depth_;
};

}  // namespace

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

// ---- the cursor ----

Status Parser::error_at(size_t position, std::string message) const {
  int line = 1, column = 1;
  for (size_t i = 0; i < position && i < text_.size(); ++i) {
    if (text_[i] == '\n') ++line, column = 1;
    else ++column;
  }
  return invalid_argument(std::move(message), SourceLocation{line, column});
}

void Parser::skip_space() {
  while (position_ < text_.size()) {
    const char c = text_[position_];
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
      ++position_;
    } else if (c == '/' && position_ + 1 < text_.size() && text_[position_ + 1] == '/') {
      while (position_ < text_.size() && text_[position_] != '\n') ++position_;
    } else {
      break;
    }
  }
}

bool Parser::peek(std::string_view token) {
  skip_space();
  if (!text_.substr(position_).starts_with(token)) return false;
  // a word must end where the token does ("dim" is not the start of "dims")
  const bool word = is_word_char(token.back());
  const size_t end = position_ + token.size();
  return !(word && end < text_.size() && is_word_char(text_[end]));
}

bool Parser::consume(std::string_view token) {
  if (!peek(token)) return false;
  position_ += token.size();
  return true;
}

Status Parser::expect(std::string_view token) {
  if (consume(token)) return ok_status();
  skip_space();
  const std::string_view found = text_.substr(position_, std::min<size_t>(24, text_.size() - position_));
  return error(str_cat("expected '", token, "'", found.empty() ? " before the end" : str_cat(" at '", found.substr(0, found.find('\n')), "'")));
}

std::string_view Parser::word() {
  skip_space();
  const size_t start = position_;
  while (position_ < text_.size() && is_word_char(text_[position_])) ++position_;
  return text_.substr(start, position_ - start);
}

StatusOr<std::string> Parser::string_literal() {
  skip_space();
  if (position_ >= text_.size() || text_[position_] != '"') return error("expected a string");
  const size_t start = position_++;
  std::string out;
  while (true) {
    if (position_ >= text_.size() || text_[position_] == '\n') return error_at(start, "a string that does not end");
    const char c = text_[position_++];
    if (c == '"') break;
    if (c != '\\') {
      out += c;
      continue;
    }
    if (position_ >= text_.size()) return error_at(start, "a string that does not end");
    const char e = text_[position_++];
    if (e == '"' || e == '\\') out += e;
    else if (e == 'n') out += '\n';
    else if (e == 't') out += '\t';
    else if (std::isxdigit(static_cast<unsigned char>(e)) && position_ < text_.size() &&
             std::isxdigit(static_cast<unsigned char>(text_[position_])))
      out += static_cast<char>(std::stoi(std::string{e, text_[position_++]}, nullptr, 16));
    else
      return error_at(position_ - 2, str_cat("an escape \\", std::string(1, e), " that MLIR does not write"));
  }
  return out;
}

StatusOr<int64_t> Parser::integer() {
  skip_space();
  const size_t start = position_;
  const bool negative = position_ < text_.size() && text_[position_] == '-';
  if (negative) ++position_;
  size_t end = position_;
  while (end < text_.size() && std::isdigit(static_cast<unsigned char>(text_[end]))) ++end;
  if (end == position_) return error_at(start, "expected an integer");
  errno = 0;
  const std::string digits(text_.substr(start, end - start));
  const long long value = std::strtoll(digits.c_str(), nullptr, 10);
  if (errno == ERANGE) return error_at(start, str_cat("integer ", digits, " out of range"));
  position_ = end;
  return static_cast<int64_t>(value);
}

// ---- types ----

uint64_t Parser::add_type(Type type, std::string key) {
  auto [found, inserted] = type_keys_.try_emplace(std::move(key), parsed_.types.size());
  if (inserted) {
    parsed_.types.push_back(std::move(type));
    parsed_.type_offsets.push_back(position_);
  }
  return found->second;
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
    type.kind = Type::Kind::kElement;
    if (part == "f32") type.element = PrimitiveType::kC64;
    else if (part == "f64") type.element = PrimitiveType::kC128;
    else return error_at(at, str_cat("complex<", part, "> is not a type insitu reads"));
    return add_type(type, str_cat("complex<", part, ">"));
  }
  if (name == "none") {
    type.kind = Type::Kind::kNone;
    return add_type(type, "none");
  }
  std::optional<PrimitiveType> element = element_type(name);
  if (!element) return error_at(at, str_cat("'", name, "' is not a type insitu reads"));
  type.kind = Type::Kind::kElement;
  type.element = *element;
  return add_type(type, std::string(name));
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
    if (d > 0 && (elements *= d) > Symbols::kMaxElements) return error_at(at, "a tensor of too many elements");
  return add_type(std::move(tensor), key + ">");
}

// ---- attributes ----

uint64_t Parser::add_attribute(Attribute attribute, size_t at) {
  parsed_.attributes.push_back(std::move(attribute));
  parsed_.attribute_offsets.push_back(at);
  return parsed_.attributes.size() - 1;
}

uint64_t Parser::integer_attribute(int64_t value, PrimitiveType type, size_t at) {
  Attribute attribute;
  attribute.kind = Attribute::Kind::kInteger;
  attribute.integer = value;
  Type element;
  element.kind = Type::Kind::kElement;
  element.element = type;
  attribute.type = add_type(element, std::string(primitive_type_name(type)) + "#element");
  return add_attribute(std::move(attribute), at);
}

uint64_t Parser::boolean_attribute(bool value, size_t at) {
  Attribute attribute;
  attribute.kind = Attribute::Kind::kBoolean;
  attribute.integer = value;
  return add_attribute(std::move(attribute), at);
}

uint64_t Parser::string_attribute(std::string text, size_t at) {
  Attribute attribute;
  attribute.kind = Attribute::Kind::kString;
  attribute.text = std::move(text);
  return add_attribute(std::move(attribute), at);
}

uint64_t Parser::enum_attribute(VhloEnum code, int64_t value, size_t at) {
  Attribute attribute;
  attribute.kind = Attribute::Kind::kEnum;
  attribute.code = code;
  attribute.integer = value;
  return add_attribute(std::move(attribute), at);
}

uint64_t Parser::integers_attribute(const std::vector<int64_t>& values, size_t at) {
  Attribute attribute;
  attribute.kind = Attribute::Kind::kTensor;
  attribute.type = tensor_type(PrimitiveType::kS64, {static_cast<int64_t>(values.size())});
  std::vector<uint8_t>& bytes = parsed_.storage.emplace_back(values.size() * 8);
  if (!values.empty()) std::memcpy(bytes.data(), values.data(), bytes.size());
  attribute.data = bytes;
  return add_attribute(std::move(attribute), at);
}

uint64_t Parser::array_attribute(std::vector<uint64_t> elements, size_t at) {
  Attribute attribute;
  attribute.kind = Attribute::Kind::kArray;
  attribute.elements = std::move(elements);
  return add_attribute(std::move(attribute), at);
}

uint64_t Parser::type_attribute(uint64_t type, size_t at) {
  Attribute attribute;
  attribute.kind = Attribute::Kind::kType;
  attribute.type = type;
  return add_attribute(std::move(attribute), at);
}

uint64_t Parser::none_attribute(size_t at) {
  Type none;
  none.kind = Type::Kind::kNone;
  return type_attribute(add_type(none, "none"), at);
}

StatusOr<std::vector<int64_t>> Parser::integer_list() {
  INSITU_RETURN_IF_ERROR(expect("["));
  std::vector<int64_t> values;
  if (consume("]")) return values;
  do {
    INSITU_ASSIGN_OR_RETURN(int64_t value, integer());
    values.push_back(value);
  } while (consume(","));
  INSITU_RETURN_IF_ERROR(expect("]"));
  return values;
}

StatusOr<uint64_t> Parser::dictionary_attribute() {
  const size_t at = position_;
  INSITU_RETURN_IF_ERROR(expect("{"));
  Attribute dictionary;
  dictionary.kind = Attribute::Kind::kDictionary;
  if (!consume("}")) {
    do {
      skip_space();
      const size_t key_at = position_;
      std::string key;
      if (peek("\"")) {
        INSITU_ASSIGN_OR_RETURN(key, string_literal());
      } else {
        key = std::string(word());
      }
      if (key.empty()) return error("expected an attribute name");
      uint64_t value = 0;
      if (consume("=")) {
        INSITU_ASSIGN_OR_RETURN(value, attribute());
      } else {
        Attribute unit;
        unit.kind = Attribute::Kind::kUnit;
        value = add_attribute(std::move(unit), key_at);
      }
      dictionary.elements.push_back(string_attribute(std::move(key), key_at));
      dictionary.elements.push_back(value);
    } while (consume(","));
    INSITU_RETURN_IF_ERROR(expect("}"));
  }
  return add_attribute(std::move(dictionary), at);
}

StatusOr<uint64_t> Parser::number(size_t at) {
  skip_space();
  size_t end = position_;
  if (end < text_.size() && (text_[end] == '-' || text_[end] == '+')) ++end;
  while (end < text_.size() && (std::isalnum(static_cast<unsigned char>(text_[end])) || text_[end] == '.' ||
                                ((text_[end] == '-' || text_[end] == '+') && (text_[end - 1] == 'e' || text_[end - 1] == 'E'))))
    ++end;
  const std::string token(text_.substr(position_, end - position_));
  position_ = end;
  const bool hex = token.find("0x") != std::string::npos;
  const bool is_float = !hex && token.find_first_of(".eEn") != std::string::npos;  // n: inf, nan
  PrimitiveType type = is_float ? PrimitiveType::kF64 : PrimitiveType::kS64;
  if (consume(":")) {
    INSITU_ASSIGN_OR_RETURN(uint64_t t, this->type());
    if (parsed_.types[t].kind != Type::Kind::kElement) return error_at(at, "a number whose type is not a number type");
    type = parsed_.types[t].element;
  }
  char* stop = nullptr;
  if (type == PrimitiveType::kF32 || type == PrimitiveType::kF64 || type == PrimitiveType::kF16 || type == PrimitiveType::kBF16) {
    Attribute attribute;
    attribute.kind = Attribute::Kind::kFloat;
    Type element;
    element.kind = Type::Kind::kElement;
    element.element = type;
    attribute.type = add_type(element, std::string(primitive_type_name(type)) + "#element");
    const double value = hex ? 0 : std::strtod(token.c_str(), &stop);
    if (hex) attribute.bits = std::strtoull(token.c_str(), &stop, 16);
    else if (type == PrimitiveType::kF64) attribute.bits = std::bit_cast<uint64_t>(value);
    else if (type == PrimitiveType::kF32) attribute.bits = std::bit_cast<uint32_t>(static_cast<float>(value));
    else if (type == PrimitiveType::kF16) attribute.bits = Half::from_float(static_cast<float>(value)).bits;
    else attribute.bits = BFloat16::from_float(static_cast<float>(value)).bits;
    if (stop == nullptr || *stop != '\0') return error_at(at, str_cat("'", token, "' is not a number"));
    return add_attribute(std::move(attribute), at);
  }
  if (is_float) return error_at(at, str_cat("'", token, "' is not an integer"));
  errno = 0;
  const int64_t value = hex ? static_cast<int64_t>(std::strtoull(token.c_str(), &stop, 16)) : std::strtoll(token.c_str(), &stop, 10);
  if (stop == nullptr || *stop != '\0' || errno == ERANGE) return error_at(at, str_cat("'", token, "' is not an integer"));
  if (type == PrimitiveType::kPred) return boolean_attribute(value != 0, at);
  return integer_attribute(value, type, at);
}

StatusOr<uint64_t> Parser::attribute() {
  Nest nest(depth_);
  if (depth_ > kMaxNesting) return error("attributes nested too deep");
  skip_space();
  const size_t at = position_;
  if (position_ >= text_.size()) return error("expected an attribute before the end");
  const char c = text_[position_];
  if (peek("dense")) return dense(at);
  if (consume("array")) {  // array<i64: 1, 2> (or of i1/i32): an i64 or i1 tensor, as VHLO has it
    INSITU_RETURN_IF_ERROR(expect("<"));
    const std::string_view element = word();
    std::vector<int64_t> values;
    if (consume(":")) {
      do {
        if (consume("true")) values.push_back(1);
        else if (consume("false")) values.push_back(0);
        else {
          INSITU_ASSIGN_OR_RETURN(int64_t value, integer());
          values.push_back(value);
        }
      } while (consume(","));
    }
    INSITU_RETURN_IF_ERROR(expect(">"));
    if (element != "i1") {
      if (element != "i64" && element != "i32") return error_at(at, str_cat("array<", element, "> is not read"));
      return integers_attribute(values, at);
    }
    Attribute booleans;
    booleans.kind = Attribute::Kind::kTensor;
    booleans.type = tensor_type(PrimitiveType::kPred, {static_cast<int64_t>(values.size())});
    std::vector<uint8_t>& bytes = parsed_.storage.emplace_back((values.size() + 7) / 8);
    for (size_t i = 0; i < values.size(); ++i) bytes[i / 8] |= static_cast<uint8_t>((values[i] != 0) << (i % 8));
    booleans.data = bytes;
    return add_attribute(std::move(booleans), at);
  }
  if (consume("[")) {
    std::vector<uint64_t> elements;
    if (!consume("]")) {
      do {
        INSITU_ASSIGN_OR_RETURN(uint64_t element, attribute());
        elements.push_back(element);
      } while (consume(","));
      INSITU_RETURN_IF_ERROR(expect("]"));
    }
    return array_attribute(std::move(elements), at);
  }
  if (c == '{') return dictionary_attribute();
  if (c == '"') {
    INSITU_ASSIGN_OR_RETURN(std::string text, string_literal());
    return string_attribute(std::move(text), at);
  }
  if (consume("@")) {
    std::string name;
    if (peek("\"")) {
      INSITU_ASSIGN_OR_RETURN(name, string_literal());
    } else {
      name = std::string(word());
    }
    if (peek("::")) return error("a nested symbol reference is not read");
    Attribute symbol;
    symbol.kind = Attribute::Kind::kSymbolRef;
    symbol.text = std::move(name);
    return add_attribute(std::move(symbol), at);
  }
  if (c == '#') return hash_attribute(at);
  if (consume("true")) return boolean_attribute(true, at);
  if (consume("false")) return boolean_attribute(false, at);
  if (consume("unit")) {
    Attribute unit;
    unit.kind = Attribute::Kind::kUnit;
    return add_attribute(std::move(unit), at);
  }
  if (std::isdigit(static_cast<unsigned char>(c)) || c == '-' || c == '+') return number(at);
  // a type as an attribute
  INSITU_ASSIGN_OR_RETURN(uint64_t t, type());
  return type_attribute(t, at);
}

StatusOr<uint64_t> Parser::dense(size_t at) {
  INSITU_RETURN_IF_ERROR(expect("dense"));
  INSITU_RETURN_IF_ERROR(expect("<"));
  std::vector<std::string> scalars;
  std::optional<std::string> hex;
  bool complex_pairs = false;
  if (peek("\"")) {
    INSITU_ASSIGN_OR_RETURN(std::string text, string_literal());
    hex = std::move(text);
  } else if (!peek(">")) {
    // nested lists of scalars, read in row-major order; the nesting is checked by the count
    int open = 0;
    do {
      while (consume("[")) ++open;
      skip_space();
      if (consume("(")) {  // a complex (re, im)
        complex_pairs = true;
        for (int part = 0; part < 2; ++part) {
          skip_space();
          const size_t start = position_;
          while (position_ < text_.size() && text_[position_] != ',' && text_[position_] != ')') ++position_;
          scalars.emplace_back(text_.substr(start, position_ - start));
          if (part == 0) INSITU_RETURN_IF_ERROR(expect(","));
        }
        INSITU_RETURN_IF_ERROR(expect(")"));
      } else {
        const size_t start = position_;
        while (position_ < text_.size() && text_[position_] != ',' && text_[position_] != ']' && text_[position_] != '>' &&
               !std::isspace(static_cast<unsigned char>(text_[position_])))
          ++position_;
        if (position_ == start) return error("expected a value in dense<...>");
        scalars.emplace_back(text_.substr(start, position_ - start));
      }
      while (open > 0 && consume("]")) --open;
      if (open < 0) return error("unbalanced ']' in dense<...>");
    } while (consume(","));
    if (open != 0) return error("unbalanced '[' in dense<...>");
  }
  INSITU_RETURN_IF_ERROR(expect(">"));
  INSITU_RETURN_IF_ERROR(expect(":"));
  const size_t type_at = position_;
  INSITU_ASSIGN_OR_RETURN(uint64_t t, type());
  const Type& tensor = parsed_.types[t];
  if (tensor.kind != Type::Kind::kTensor) return error_at(type_at, "dense<...> of a type that is not a tensor");
  int64_t count = 1;
  for (int64_t d : tensor.dimensions) {
    if (d < 0) return error_at(type_at, "dense<...> of a dynamic shape");
    count *= d;
  }
  const PrimitiveType element = tensor.element;
  const int64_t width = byte_width(element);
  Attribute attribute;
  attribute.kind = Attribute::Kind::kTensor;
  attribute.type = t;
  std::vector<uint8_t>& bytes = parsed_.storage.emplace_back();
  if (hex) {
    if (hex->size() < 2 || hex->substr(0, 2) != "0x" || hex->size() % 2 != 0) return error_at(at, "dense<\"...\"> that is not 0x and hex digits");
    bytes.reserve(hex->size() / 2 - 1);
    for (size_t i = 2; i < hex->size(); i += 2) {
      const char digits[3] = {(*hex)[i], (*hex)[i + 1], 0};
      char* stop = nullptr;
      bytes.push_back(static_cast<uint8_t>(std::strtoul(digits, &stop, 16)));
      if (*stop != '\0') return error_at(at, "dense<\"...\"> that is not 0x and hex digits");
    }
    attribute.data = bytes;
    return add_attribute(std::move(attribute), at);
  }
  const bool is_complex = element == PrimitiveType::kC64 || element == PrimitiveType::kC128;
  if (is_complex != complex_pairs && !scalars.empty()) return error_at(at, "dense<...> whose values do not fit its element type");
  const size_t per_element = is_complex ? 2 : 1;
  const size_t values = scalars.size() / per_element;
  if (!scalars.empty() && values != 1 && static_cast<int64_t>(values) != count)
    return error_at(at, str_cat("dense<...> of ", values, " values for ", count, " elements"));
  if (scalars.empty() && count != 0) return error_at(at, str_cat("dense<> for ", count, " elements"));
  if (element == PrimitiveType::kPred) {
    std::vector<bool> bits;
    for (const std::string& s : scalars) {
      if (s != "true" && s != "false" && s != "1" && s != "0") return error_at(at, str_cat("'", s, "' is not a boolean"));
      bits.push_back(s == "true" || s == "1");
    }
    if (bits.size() == 1 && count > 1) {
      bytes.push_back(bits[0] ? 0xFF : 0x00);  // a splat byte
    } else {
      bytes.assign((bits.size() + 7) / 8, 0);
      for (size_t i = 0; i < bits.size(); ++i) bytes[i / 8] |= static_cast<uint8_t>(bits[i] << (i % 8));
    }
    attribute.data = bytes;
    return add_attribute(std::move(attribute), at);
  }
  if (is_narrow(element)) return error_at(at, str_cat("a dense constant of ", primitive_type_name(element), " is not read"));
  const PrimitiveType part = element == PrimitiveType::kC64 ? PrimitiveType::kF32 : element == PrimitiveType::kC128 ? PrimitiveType::kF64 : element;
  const int64_t part_width = is_complex ? width / 2 : width;
  bytes.resize(scalars.size() * part_width);
  for (size_t i = 0; i < scalars.size(); ++i) {
    const std::string& s = scalars[i];
    uint8_t* out = bytes.data() + i * part_width;
    char* stop = nullptr;
    uint64_t bits = 0;
    errno = 0;
    if (s.starts_with("0x") || s.starts_with("0X")) {
      bits = std::strtoull(s.c_str(), &stop, 16);
    } else if (is_integral(part)) {
      bits = s.starts_with("-") ? static_cast<uint64_t>(std::strtoll(s.c_str(), &stop, 10)) : std::strtoull(s.c_str(), &stop, 10);
    } else {
      const double value = std::strtod(s.c_str(), &stop);
      if (part == PrimitiveType::kF64) bits = std::bit_cast<uint64_t>(value);
      else if (part == PrimitiveType::kF32) bits = std::bit_cast<uint32_t>(static_cast<float>(value));
      else if (part == PrimitiveType::kF16) bits = Half::from_float(static_cast<float>(value)).bits;
      else if (part == PrimitiveType::kBF16) bits = BFloat16::from_float(static_cast<float>(value)).bits;
      else return error_at(at, str_cat("a dense constant of ", primitive_type_name(part), " is not read"));
    }
    if (stop == nullptr || *stop != '\0' || errno == ERANGE) return error_at(at, str_cat("'", s, "' is not a ", primitive_type_name(part)));
    for (int64_t b = 0; b < part_width; ++b) out[b] = static_cast<uint8_t>(bits >> (8 * b));
  }
  attribute.data = bytes;
  return add_attribute(std::move(attribute), at);
}

Status Parser::struct_fields(Attribute& out, size_t at) {
  out.kind = Attribute::Kind::kDictionary;
  if (consume(">")) return ok_status();
  do {
    const size_t key_at = position_;
    const std::string key(word());
    if (key.empty()) return error("expected a field name");
    INSITU_RETURN_IF_ERROR(expect("="));
    uint64_t value = 0;
    if (peek("[")) {
      const size_t list_at = position_;
      INSITU_ASSIGN_OR_RETURN(std::vector<int64_t> values, integer_list());
      value = integers_attribute(values, list_at);
    } else {
      INSITU_ASSIGN_OR_RETURN(value, attribute());
    }
    out.elements.push_back(string_attribute(key, key_at));
    out.elements.push_back(value);
  } while (consume(","));
  (void)at;
  return expect(">");
}

StatusOr<uint64_t> Parser::hash_attribute(size_t at) {
  INSITU_RETURN_IF_ERROR(expect("#"));
  const std::string name(word());
  if (name == "stablehlo" && consume("<")) {  // an enum: #stablehlo<precision DEFAULT>
    const std::string kind(word()), value(word());
    INSITU_RETURN_IF_ERROR(expect(">"));
    struct Enum { VhloEnum code; std::vector<std::string_view> values; };
    static const std::map<std::string, Enum, std::less<>> kEnums = {
        {"comparison_direction", {kComparisonDirection, {"EQ", "NE", "GE", "GT", "LE", "LT"}}},
        {"comparison_type", {kComparisonType, {"NOTYPE", "FLOAT", "TOTALORDER", "SIGNED", "UNSIGNED"}}},
        {"precision", {kPrecision, {"DEFAULT", "HIGH", "HIGHEST"}}},
        {"fft_type", {kFftType, {"FFT", "IFFT", "RFFT", "IRFFT"}}},
        {"rng_algorithm", {kRngAlgorithm, {"DEFAULT", "THREE_FRY", "PHILOX"}}},
        {"rng_distribution", {kRngDistribution, {"UNIFORM", "NORMAL"}}},
        {"transpose", {kTranspose, {"TRANSPOSE_INVALID", "NO_TRANSPOSE", "TRANSPOSE", "ADJOINT"}}},
    };
    auto found = kEnums.find(kind);
    if (found == kEnums.end()) return error_at(at, str_cat("#stablehlo<", kind, " ...> is not read"));
    for (size_t i = 0; i < found->second.values.size(); ++i)
      if (found->second.values[i] == value) return enum_attribute(found->second.code, static_cast<int64_t>(i), at);
    return error_at(at, str_cat("'", value, "' is not a ", kind));
  }
  if (name == "stablehlo.gather" || name == "stablehlo.scatter" || name == "stablehlo.dot" ||
      name == "stablehlo.output_operand_alias" || name == "stablehlo.dot_algorithm" || name == "stablehlo.result_accuracy") {
    INSITU_RETURN_IF_ERROR(expect("<"));
    Attribute fields;
    INSITU_RETURN_IF_ERROR(struct_fields(fields, at));
    fields.description = name;
    if (name != "stablehlo.output_operand_alias") return add_attribute(std::move(fields), at);
    Attribute alias;
    alias.kind = Attribute::Kind::kOutputOperandAlias;
    for (size_t i = 0; i + 1 < fields.elements.size(); i += 2) {
      const std::string& key = parsed_.attributes[fields.elements[i]].text;
      const Attribute& value = parsed_.attributes[fields.elements[i + 1]];
      std::vector<int64_t> list;
      for (size_t b = 0; value.kind == Attribute::Kind::kTensor && b + 8 <= value.data.size(); b += 8) {
        int64_t element = 0;
        std::memcpy(&element, value.data.data() + b, 8);
        list.push_back(element);
      }
      if (key == "output_tuple_indices") alias.output_index = list;
      else if (key == "operand_tuple_indices") alias.operand_index = list;
      else if (key == "operand_index" && value.kind == Attribute::Kind::kInteger) alias.integer = value.integer;
      else return error_at(at, str_cat("output_operand_alias field ", key, " is not read"));
    }
    return add_attribute(std::move(alias), at);
  }
  if (name == "stablehlo.conv") {
    INSITU_RETURN_IF_ERROR(expect("<"));
    Attribute fields;
    if (consume("raw")) {
      INSITU_RETURN_IF_ERROR(struct_fields(fields, at));
    } else {
      INSITU_RETURN_IF_ERROR(convolution_dimensions(fields));
      INSITU_RETURN_IF_ERROR(expect(">"));
    }
    fields.description = name;
    return add_attribute(std::move(fields), at);
  }
  if (!peek("<") && !name.empty() && name.find('.') == std::string::npos) {  // an alias
    auto found = aliases_.find(name);
    if (found == aliases_.end()) return error_at(at, str_cat("#", name, " is not defined"));
    return found->second;
  }
  // an attribute of a dialect insitu does not read (Shardy's): kept, opaque, with its text
  if (consume("<")) {
    int open = 1;
    while (position_ < text_.size() && open > 0) {
      const char c = text_[position_];
      if (c == '"') {
        INSITU_RETURN_IF_ERROR(string_literal().status());
        continue;
      }
      open += c == '<' ? 1 : c == '>' && text_[position_ - 1] != '-' ? -1 : 0;
      ++position_;
    }
    if (open != 0) return error_at(at, str_cat("#", name, "<...> that does not end"));
  }
  Attribute opaque;
  opaque.kind = Attribute::Kind::kOpaque;
  opaque.description = str_cat("#", name, " (", name.substr(0, name.find('.')), " attribute)");
  opaque.text = std::string(text_.substr(at, position_ - at));
  return add_attribute(std::move(opaque), at);
}

// ---- ops, regions, functions, the module ----

uint64_t Parser::type_of(const TextValue& value) const {
  return value.op != nullptr ? value.op->result_types.at(value.index) : value.block->argument_types.at(value.index);
}

Status Parser::define(const std::string& name, TextValue value) {
  if (!scopes_.back().emplace(name, value).second) return error(str_cat("%", name, " is defined twice"));
  return ok_status();
}

StatusOr<TextValue> Parser::value_use() {
  skip_space();
  const size_t at = position_;
  INSITU_RETURN_IF_ERROR(expect("%"));
  std::string name(word());
  if (position_ < text_.size() && text_[position_] == '#') {
    ++position_;
    INSITU_ASSIGN_OR_RETURN(int64_t index, integer());
    name += str_cat("#", index);
  }
  for (auto scope = scopes_.rbegin(); scope != scopes_.rend(); ++scope) {
    auto found = scope->find(name);
    if (found != scope->end()) return found->second;
  }
  return error_at(at, str_cat("%", name, " is not defined here"));
}

StatusOr<std::vector<TextValue>> Parser::value_uses() {
  std::vector<TextValue> values;
  if (!peek("%")) return values;
  while (true) {
    INSITU_ASSIGN_OR_RETURN(TextValue value, value_use());
    values.push_back(value);
    const size_t before = position_;
    if (consume(",") && peek("%")) continue;
    position_ = before;
    return values;
  }
}

void Parser::skip_location() {
  const size_t before = position_;
  if (!consume("loc")) return;
  if (!consume("(")) {
    position_ = before;
    return;
  }
  int open = 1;
  while (position_ < text_.size() && open > 0) {
    const char c = text_[position_];
    if (c == '"') {
      if (!string_literal().ok()) return;
      continue;
    }
    open += c == '(' ? 1 : c == ')' ? -1 : 0;
    ++position_;
  }
}

Status Parser::attribute_dictionary(TextOp& op) {
  if (!peek("{")) return ok_status();
  INSITU_ASSIGN_OR_RETURN(uint64_t dictionary, dictionary_attribute());
  const Attribute& entries = parsed_.attributes[dictionary];
  for (size_t i = 0; i + 1 < entries.elements.size(); i += 2)
    op.attributes.emplace_back(parsed_.attributes[entries.elements[i]].text, entries.elements[i + 1]);
  return ok_status();
}

Status Parser::trailing_types(TextOp& op, uint64_t results) {
  INSITU_RETURN_IF_ERROR(expect(":"));
  skip_space();
  const size_t at = position_;
  std::vector<uint64_t> inputs, outputs;
  bool functional = false;
  if (peek("(")) {
    INSITU_ASSIGN_OR_RETURN(uint64_t t, type());
    const Type& function = parsed_.types[t];
    if (function.kind != Type::Kind::kFunction) return error_at(at, "expected a function type");
    inputs = function.inputs, outputs = function.outputs, functional = true;
  } else {
    do {
      INSITU_ASSIGN_OR_RETURN(uint64_t t, type());
      inputs.push_back(t);
    } while (consume(","));
    if (consume("->")) {  // CHLO's form: T -> T, T -> (T, U)
      functional = true;
      if (consume("(")) {
        INSITU_ASSIGN_OR_RETURN(outputs, type_list_until(")"));
      } else {
        INSITU_ASSIGN_OR_RETURN(uint64_t t, type());
        outputs.push_back(t);
      }
    }
  }
  if (!functional) {
    if (inputs.size() == results) outputs = inputs;                            // while, barrier: one type per value
    else if (results == 1 && inputs.size() == 1) outputs = inputs;             // same operand and result type
    else if (results == 1 && inputs.size() == 2) outputs = {inputs[1]};        // select: pred, value type
    else if (results == 0) outputs = {};                                       // return: the operands' types
    else return error_at(at, str_cat(op.name, ": ", inputs.size(), " types for ", results, " results"));
    if (inputs.size() == op.operands.size()) {
      // one type per operand: checked below
    } else if (inputs.size() == 1) inputs.assign(op.operands.size(), inputs[0]); // one type for all
    else if (inputs.size() == 2 && op.operands.size() == 3) inputs = {inputs[0], inputs[1], inputs[1]};
    else inputs.clear();
  }
  if (outputs.size() != results) return error_at(at, str_cat(op.name, " gives ", outputs.size(), " results where ", results, " are named"));
  if (!inputs.empty() || op.operands.empty()) {
    if (inputs.size() != op.operands.size())
      return error_at(at, str_cat(op.name, " has ", op.operands.size(), " operands where its type names ", inputs.size()));
    for (size_t i = 0; i < inputs.size(); ++i)
      if (type_of(op.operands[i]) != inputs[i])
        return error_at(at, str_cat(op.name, ": operand ", i, " is not of the type the op names"));
  }
  op.result_types = outputs;
  return ok_status();
}

Status Parser::generic(TextOp& op) {
  INSITU_RETURN_IF_ERROR(expect("("));
  INSITU_ASSIGN_OR_RETURN(op.operands, value_uses());
  INSITU_RETURN_IF_ERROR(expect(")"));
  if (peek("[")) return error(str_cat(op.name, " with successor blocks is not read"));
  if (consume("<")) {
    INSITU_RETURN_IF_ERROR(attribute_dictionary(op));
    INSITU_RETURN_IF_ERROR(expect(">"));
  }
  if (consume("(")) {
    do {
      INSITU_RETURN_IF_ERROR(region(op.regions.emplace_back(), {}));
    } while (consume(","));
    INSITU_RETURN_IF_ERROR(expect(")"));
  }
  INSITU_RETURN_IF_ERROR(attribute_dictionary(op));
  INSITU_RETURN_IF_ERROR(expect(":"));
  const size_t at = position_;
  INSITU_ASSIGN_OR_RETURN(uint64_t t, type());
  const Type& function = parsed_.types[t];
  if (function.kind != Type::Kind::kFunction) return error_at(at, "expected the op's function type");
  if (function.inputs.size() != op.operands.size())
    return error_at(at, str_cat(op.name, " has ", op.operands.size(), " operands where its type names ", function.inputs.size()));
  for (size_t i = 0; i < op.operands.size(); ++i)
    if (type_of(op.operands[i]) != function.inputs[i]) return error_at(at, str_cat(op.name, ": operand ", i, " is not of the type the op names"));
  op.result_types = function.outputs;
  return ok_status();
}

Status Parser::region(TextRegion& region, const std::vector<std::pair<std::string, uint64_t>>& arguments) {
  Nest nest(depth_);
  if (depth_ > kMaxNesting) return error("regions nested too deep");
  INSITU_RETURN_IF_ERROR(expect("{"));
  TextBlock& block = *region.blocks.emplace_back(std::make_unique<TextBlock>());
  scopes_.emplace_back();
  std::vector<std::pair<std::string, uint64_t>> named = arguments;
  if (consume("^")) {
    word();
    if (consume("(")) {
      if (!arguments.empty()) return error("a block label with arguments where the op names them");
      if (!consume(")")) {
        do {
          INSITU_RETURN_IF_ERROR(expect("%"));
          std::string name(word());
          INSITU_RETURN_IF_ERROR(expect(":"));
          INSITU_ASSIGN_OR_RETURN(uint64_t t, type());
          skip_location();
          named.emplace_back(std::move(name), t);
        } while (consume(","));
        INSITU_RETURN_IF_ERROR(expect(")"));
      }
    }
    INSITU_RETURN_IF_ERROR(expect(":"));
  }
  for (size_t i = 0; i < named.size(); ++i) {
    block.argument_types.push_back(named[i].second);
    INSITU_RETURN_IF_ERROR(define(named[i].first, TextValue{nullptr, &block, i}));
  }
  while (!consume("}")) {
    if (position_ >= text_.size()) return error("a region that does not end");
    if (peek("^")) return error("a region of several blocks is not read");
    INSITU_ASSIGN_OR_RETURN(std::unique_ptr<TextOp> op, operation());
    block.ops.push_back(std::move(op));
  }
  scopes_.pop_back();
  return ok_status();
}

StatusOr<std::unique_ptr<TextOp>> Parser::operation() {
  Nest nest(depth_);
  if (depth_ > kMaxNesting) return error("ops nested too deep");
  ResultNames results;
  skip_space();
  if (peek("%")) {
    do {
      INSITU_RETURN_IF_ERROR(expect("%"));
      std::string name(word());
      uint64_t count = 1;
      if (consume(":")) {
        INSITU_ASSIGN_OR_RETURN(int64_t n, integer());
        if (n < 1 || n > 1'000'000) return error("a result count out of range");
        count = static_cast<uint64_t>(n);
      }
      results.names.emplace_back(std::move(name), count);
      results.total += count;
    } while (consume(","));
    INSITU_RETURN_IF_ERROR(expect("="));
  }
  skip_space();
  auto op = std::make_unique<TextOp>();
  op->offset = position_;
  if (peek("\"")) {
    INSITU_ASSIGN_OR_RETURN(op->name, string_literal());
    INSITU_RETURN_IF_ERROR(generic(*op));
  } else {
    op->name = std::string(word());
    if (op->name.empty()) return error("expected an op");
    INSITU_RETURN_IF_ERROR(custom(*op, results));
  }
  skip_location();
  if (op->result_types.size() != results.total)
    return error_at(op->offset, str_cat(op->name, " gives ", op->result_types.size(), " results where ", results.total, " are named"));
  uint64_t index = 0;
  for (const auto& [name, count] : results.names) {
    for (uint64_t i = 0; i < count; ++i, ++index) {
      if (count == 1) INSITU_RETURN_IF_ERROR(define(name, TextValue{op.get(), nullptr, index}));
      INSITU_RETURN_IF_ERROR(define(str_cat(name, "#", i), TextValue{op.get(), nullptr, index}));
    }
  }
  return op;
}

Status Parser::function(TextOp& op) {
  // func.func [public|private] @name(%arg: T {attrs}, ...) [-> T | -> (T {attrs}, ...)] [attributes {...}] {body}
  const size_t at = op.offset;
  std::string visibility;
  if (consume("public")) visibility = "public";
  else if (consume("private")) visibility = "private";
  else if (consume("nested")) visibility = "nested";
  INSITU_RETURN_IF_ERROR(expect("@"));
  std::string name;
  if (peek("\"")) {
    INSITU_ASSIGN_OR_RETURN(name, string_literal());
  } else {
    name = std::string(word());
  }
  INSITU_RETURN_IF_ERROR(expect("("));
  std::vector<std::pair<std::string, uint64_t>> arguments;
  std::vector<uint64_t> arg_attrs, res_attrs, results;
  auto attrs_or_empty = [&]() -> StatusOr<uint64_t> {
    if (peek("{")) return dictionary_attribute();
    Attribute empty;
    empty.kind = Attribute::Kind::kDictionary;
    return add_attribute(std::move(empty), position_);
  };
  if (!consume(")")) {
    do {
      INSITU_RETURN_IF_ERROR(expect("%"));
      std::string argument(word());
      INSITU_RETURN_IF_ERROR(expect(":"));
      INSITU_ASSIGN_OR_RETURN(uint64_t t, type());
      INSITU_ASSIGN_OR_RETURN(uint64_t attrs, attrs_or_empty());
      skip_location();
      arguments.emplace_back(std::move(argument), t);
      arg_attrs.push_back(attrs);
    } while (consume(","));
    INSITU_RETURN_IF_ERROR(expect(")"));
  }
  if (consume("->")) {
    if (consume("(")) {
      if (!consume(")")) {
        do {
          INSITU_ASSIGN_OR_RETURN(uint64_t t, type());
          INSITU_ASSIGN_OR_RETURN(uint64_t attrs, attrs_or_empty());
          results.push_back(t);
          res_attrs.push_back(attrs);
        } while (consume(","));
        INSITU_RETURN_IF_ERROR(expect(")"));
      }
    } else {
      INSITU_ASSIGN_OR_RETURN(uint64_t t, type());
      Attribute empty;  // a result without parentheses has no attributes ('{' opens the body)
      empty.kind = Attribute::Kind::kDictionary;
      results.push_back(t);
      res_attrs.push_back(add_attribute(std::move(empty), position_));
    }
  }
  if (consume("attributes")) INSITU_RETURN_IF_ERROR(attribute_dictionary(op));
  if (!peek("{")) return error(str_cat("function @", name, " has no body (a declaration is not read)"));
  Type function_type;
  function_type.kind = Type::Kind::kFunction;
  for (const auto& argument : arguments) function_type.inputs.push_back(argument.second);
  function_type.outputs = results;
  const uint64_t type = add_type(function_type, str_cat("function ", str_join(function_type.inputs, ","), " -> ", str_join(results, ",")));
  op.attributes.emplace_back("sym_name", string_attribute(name, at));
  op.attributes.emplace_back("sym_visibility", string_attribute(visibility, at));
  op.attributes.emplace_back("function_type", type_attribute(type, at));
  op.attributes.emplace_back("arg_attrs", array_attribute(arg_attrs, at));
  op.attributes.emplace_back("res_attrs", array_attribute(res_attrs, at));
  return region(op.regions.emplace_back(), arguments);
}

Status Parser::run() {
  scopes_.emplace_back();
  auto aliases = [&]() -> Status {
    while (consume("#")) {
      const size_t at = position_;
      const std::string name(word());
      INSITU_RETURN_IF_ERROR(expect("="));
      skip_space();
      if (peek("loc")) {
        skip_location();
        continue;
      }
      INSITU_ASSIGN_OR_RETURN(uint64_t value, attribute());
      if (!aliases_.emplace(name, value).second) return error_at(at, str_cat("#", name, " is defined twice"));
    }
    return ok_status();
  };
  INSITU_RETURN_IF_ERROR(aliases());
  if (peek("module") || peek("builtin.module")) {
    INSITU_ASSIGN_OR_RETURN(parsed_.module, operation());
  } else {
    // top-level functions without a module around them: MLIR wraps them in one
    parsed_.module = std::make_unique<TextOp>();
    parsed_.module->name = "builtin.module";
    parsed_.module->offset = position_;
    TextBlock& block = *parsed_.module->regions.emplace_back().blocks.emplace_back(std::make_unique<TextBlock>());
    skip_space();
    while (position_ < text_.size() && !peek("#")) {
      INSITU_ASSIGN_OR_RETURN(std::unique_ptr<TextOp> op, operation());
      block.ops.push_back(std::move(op));
    }
  }
  INSITU_RETURN_IF_ERROR(aliases());  // #loc definitions follow the module
  skip_space();
  if (position_ < text_.size()) return error("text after the module");
  return ok_status();
}

}  // namespace insitu::stablehlo::text_internal
