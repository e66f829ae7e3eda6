// Attributes for the StableHLO text reader (text.h, text_internal.h): dense<...> constants,
// array<...>, lists, dictionaries, strings, numbers, symbols, StableHLO's enums and dimension
// numbers, aliases; an attribute of another dialect (Shardy's) is kept opaque with its text.
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

// Whether an integer literal (its bits, and whether it was written negative) is a value of
// `type`: MLIR refuses `300 : i8`; insitu does not wrap it.
bool fits_integer(uint64_t bits, bool negative, PrimitiveType type) {
  const int64_t width = bit_width(type);
  const bool is_unsigned = type == PrimitiveType::kU8 || type == PrimitiveType::kU16 || type == PrimitiveType::kU32 ||
                           type == PrimitiveType::kU64 || type == PrimitiveType::kU1 || type == PrimitiveType::kU2 ||
                           type == PrimitiveType::kU4;
  if (width >= 64) return !(is_unsigned && negative);
  const auto value = static_cast<int64_t>(bits);
  if (is_unsigned) return !negative && bits < (uint64_t{1} << width);
  return value >= -(int64_t{1} << (width - 1)) && value < (int64_t{1} << (width - 1));
}

}  // namespace


uint64_t Parser::add_attribute(Attribute attribute, size_t at) {
  parsed_.attributes.push_back(std::move(attribute));
  parsed_.attribute_offsets.push_back(at);
  return parsed_.attributes.size() - 1;
}

uint64_t Parser::integer_attribute(int64_t value, PrimitiveType type, size_t at) {
  Attribute attribute;
  attribute.kind = Attribute::Kind::kInteger;
  attribute.integer = value;
  attribute.type = element_type_index(type);
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
    attribute.type = element_type_index(type);
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
  if (!is_integral(type)) return error_at(at, str_cat("'", token, "' is not a ", primitive_type_name(type)));
  if (!hex && !fits_integer(static_cast<uint64_t>(value), value < 0, type))
    return error_at(at, str_cat("'", token, "' does not fit ", primitive_type_name(type)));
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
  bool complex_pairs = false, plain = false;  // (re, im) pairs; single numbers
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
        plain = true;
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
  if ((is_complex != complex_pairs || (complex_pairs && plain)) && !scalars.empty())
    return error_at(at, "dense<...> whose values do not fit its element type");
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
      if (errno != ERANGE && !fits_integer(bits, s.starts_with("-"), part))
        return error_at(at, str_cat("'", s, "' does not fit ", primitive_type_name(part)));
    } else {
      const double value = std::strtod(s.c_str(), &stop);
      if (std::isfinite(value) && part != PrimitiveType::kF64 &&
          !std::isfinite(part == PrimitiveType::kF32 ? static_cast<double>(static_cast<float>(value))
                         : part == PrimitiveType::kF16 ? static_cast<double>(Half::from_float(static_cast<float>(value)).to_float())
                                                       : static_cast<double>(BFloat16::from_float(static_cast<float>(value)).to_float())))
        return error_at(at, str_cat("'", s, "' is out of ", primitive_type_name(part), "'s range"));
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
  return opaque(at, str_cat("#", name, " (", name.substr(0, name.find('.')), " attribute)"));
}

StatusOr<uint64_t> Parser::opaque(size_t at, std::string description) {
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
    if (open != 0) return error_at(at, str_cat(description, ": <...> that does not end"));
  }
  Attribute opaque;
  opaque.kind = Attribute::Kind::kOpaque;
  opaque.description = std::move(description);
  opaque.text = std::string(text_.substr(at, position_ - at));
  return add_attribute(std::move(opaque), at);
}

}  // namespace insitu::stablehlo::text_internal
