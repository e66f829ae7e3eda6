// HLO text parser: literal values as constant(...) writes them.
//
//   7   -2.5   inf   -nan   0x1p-3   true   (1, 2) for complex
//   {1, 2, 3}   { {1, 2}, {3, 4} }   {...} (elided: filled with zeros)   (1, {2, 3}) for tuples
#include <bit>
#include <cmath>
#include <cstdlib>
#include <limits>

#include "insitu/ir/parser_impl.h"
#include "insitu/support/str.h"

namespace insitu::parser_internal {
namespace {

// Constants larger than this are rejected rather than allocated (hostile shapes such as
// f32[100000000000] with an elided value).
constexpr int64_t kMaxLiteralBytes = int64_t{1} << 30;

// A signed 128-bit integer from decimal or 0x hex text; nullopt on junk or overflow.
std::optional<__int128> to_int128(std::string_view text) {
  bool negative = false;
  if (!text.empty() && (text[0] == '-' || text[0] == '+')) {
    negative = text[0] == '-';
    text.remove_prefix(1);
  }
  int base = 10;
  if (text.size() > 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X')) {
    base = 16;
    text.remove_prefix(2);
  }
  if (text.empty() || text.size() > 24) return std::nullopt;
  __int128 value = 0;
  for (char c : text) {
    int digit;
    if (c >= '0' && c <= '9') digit = c - '0';
    else if (base == 16 && c >= 'a' && c <= 'f') digit = c - 'a' + 10;
    else if (base == 16 && c >= 'A' && c <= 'F') digit = c - 'A' + 10;
    else return std::nullopt;
    value = value * base + digit;
  }
  return negative ? -value : value;
}

std::optional<double> to_double(const std::string& text) {
  if (text.empty()) return std::nullopt;
  const char* begin = text.c_str();
  char* end = nullptr;
  double value = std::strtod(begin, &end);
  if (end != begin + text.size()) return std::nullopt;
  return value;
}

}  // namespace

StatusOr<Literal> Parser::parse_literal(const Shape& shape, int depth) {
  if (depth > kMaxNesting) return error_at(peek(), "literal is nested too deeply");
  if (shape.is_tuple()) {
    Literal literal(shape);
    INSITU_RETURN_IF_ERROR(expect(TokenKind::kLparen, str_cat("'(' to start a tuple literal of ", shape.to_string())));
    for (int64_t i = 0; i < shape.tuple_size(); ++i) {
      if (i > 0) INSITU_RETURN_IF_ERROR(expect(TokenKind::kComma, "',' between tuple literal elements"));
      INSITU_ASSIGN_OR_RETURN(literal.element(i), parse_literal(shape.tuple_shape(i), depth + 1));
    }
    INSITU_RETURN_IF_ERROR(expect(TokenKind::kRparen, str_cat("')' to close the tuple literal of ", shape.to_string())));
    return literal;
  }
  if (!shape.is_array()) return error_at(peek(), str_cat("a constant cannot have shape ", shape.to_string()));
  if (shape.byte_size() > kMaxLiteralBytes)
    return error_at(peek(), str_cat("constant of shape ", shape.to_string(), " is too large (", shape.byte_size(),
                                    " bytes; the limit is ", kMaxLiteralBytes, ")"));
  if (shape.rank() == 0) {
    Literal literal(shape);
    INSITU_RETURN_IF_ERROR(parse_scalar_into(literal, 0));
    return literal;
  }
  // Elided value "{...}" outside a constant (custom-call literal=): kept as text, never run.
  if (at(TokenKind::kLbrace) && at(TokenKind::kDots, 1) && at(TokenKind::kRbrace, 2)) {
    Literal literal(shape);
    next();
    next();
    next();
    return literal;
  }
  // Every element is at least one token: a text too short for the shape is an error before
  // the value is allocated (reading costs in proportion to the text).
  const int64_t tokens_left = static_cast<int64_t>(tokens_.size() - pos_);
  if (shape.element_count() > tokens_left)
    return error_at(peek(), str_cat("a ", shape.to_string(false), " literal needs ", shape.element_count(),
                                    " elements but the text has only ", tokens_left, " tokens left"));
  Literal literal(shape);
  int64_t linear = 0;
  INSITU_RETURN_IF_ERROR(parse_dense_into(literal, 0, linear));
  return literal;
}

Status Parser::parse_constant_value(Instruction& instruction) {
  const Shape& shape = instruction.shape();
  if (shape.is_array() && shape.rank() > 0 && !at(TokenKind::kLbrace)) {
    // One scalar for an array: XLA's parser sets element 0 and zeros the rest.
    if (shape.byte_size() > kMaxLiteralBytes)
      return error_at(peek(), str_cat("constant of shape ", shape.to_string(), " is too large"));
    if (shape.element_count() == 0) {  // no element to set: the scalar is read and checked, then dropped
      Literal scalar(Shape::scalar(shape.element_type()));
      INSITU_RETURN_IF_ERROR(parse_scalar_into(scalar, 0));
      instruction.literal = Literal(shape);
      return ok_status();
    }
    Literal literal(shape);
    INSITU_RETURN_IF_ERROR(parse_scalar_into(literal, 0));
    instruction.literal = std::move(literal);
    if (shape.element_count() != 1) instruction.constant_value = ConstantValue::kScalarForArray;
    return ok_status();
  }
  if (shape.is_array() && at(TokenKind::kLbrace) && at(TokenKind::kDots, 1) && at(TokenKind::kRbrace, 2)) {
    // `{...}`: XLA left the value out of the dump. No value is made up: the literal stays empty.
    next();
    next();
    next();
    instruction.constant_value = ConstantValue::kElided;
    return ok_status();
  }
  INSITU_ASSIGN_OR_RETURN(instruction.literal, parse_literal(shape));
  return ok_status();
}

Status Parser::parse_dense_into(Literal& literal, int64_t dimension, int64_t& linear) {
  const Shape& shape = literal.shape();
  const Token open = peek();
  INSITU_RETURN_IF_ERROR(expect(TokenKind::kLbrace, str_cat("'{' to start dimension ", dimension, " of a ",
                                                             shape.to_string(false), " literal")));
  const int64_t size = shape.dimension(dimension);
  int64_t count = 0;
  // Commas between elements are optional, as in XLA's literal parser (which skips them):
  // dumps and tests write `{ {0, 0} {0, 0} }` and XLA reads it.
  while (true) {
    while (accept(TokenKind::kComma)) {
    }
    if (at(TokenKind::kRbrace) || at(TokenKind::kEof)) break;
    if (count == size)
      return error_at(peek(), str_cat("too many elements in dimension ", dimension, " of a ", shape.to_string(false),
                                      " literal (expected ", size, ")"));
    if (dimension + 1 == shape.rank()) {
      INSITU_RETURN_IF_ERROR(parse_scalar_into(literal, linear));
      ++linear;
    } else {
      INSITU_RETURN_IF_ERROR(parse_dense_into(literal, dimension + 1, linear));
    }
    ++count;
  }
  if (!at(TokenKind::kRbrace)) return error_expected(str_cat("'}' to close dimension ", dimension, " of the literal"));
  if (count != size)
    return error_at(peek(), str_cat("dimension ", dimension, " of a ", shape.to_string(false), " literal has ", count,
                                    " elements, expected ", size, " (it starts at ", open.location.line, ":",
                                    open.location.column, ")"));
  next();
  return ok_status();
}

Status Parser::parse_scalar_into(Literal& literal, int64_t linear) {
  const PrimitiveType type = literal.shape().element_type();
  const Token token = peek();
  std::string type_name(primitive_type_name(type));

  if (type == PrimitiveType::kPred) {
    bool value;
    if (at_ident("true") || at_ident("false")) {
      value = token.text == "true";
    } else if (at(TokenKind::kNumber) && (token.text == "0" || token.text == "1")) {
      value = token.text == "1";
    } else {
      return error_expected("a pred value (true or false)");
    }
    next();
    literal.data<bool>()[linear] = value;
    return ok_status();
  }

  if (is_complex(type)) {
    const Token start = peek();
    INSITU_RETURN_IF_ERROR(expect(TokenKind::kLparen, str_cat("'(' to start a ", type_name, " value (real, imag)")));
    double parts[2];
    for (int i = 0; i < 2; ++i) {
      if (i == 1) INSITU_RETURN_IF_ERROR(expect(TokenKind::kComma, "',' between the real and imaginary parts"));
      INSITU_ASSIGN_OR_RETURN(parts[i], parse_float_value(type_name));
    }
    INSITU_RETURN_IF_ERROR(expect(TokenKind::kRparen, str_cat("')' to close the ", type_name, " value")));
    if (type == PrimitiveType::kC64) {
      const std::complex<float> value{static_cast<float>(parts[0]), static_cast<float>(parts[1])};
      if ((std::isfinite(parts[0]) && !std::isfinite(value.real())) ||
          (std::isfinite(parts[1]) && !std::isfinite(value.imag())))
        return error_at(start, str_cat("value is out of range for ", type_name, " (a part would round to infinity)"));
      literal.data<std::complex<float>>()[linear] = value;
    } else {
      literal.data<std::complex<double>>()[linear] = {parts[0], parts[1]};
    }
    return ok_status();
  }

  if (is_floating(type)) {
    const Token value_token = peek();
    INSITU_ASSIGN_OR_RETURN(double value, parse_float_value(type_name));
    // nan(0x...): a NaN with that mantissa payload, as XLA prints one that is not the plain
    // quiet NaN; the payload must be nonzero and fit the type's mantissa.
    if (std::isnan(value) && at(TokenKind::kLparen)) {
      next();
      const Token payload_token = peek();
      const std::optional<__int128> written = at(TokenKind::kNumber) ? to_int128(payload_token.text) : std::nullopt;
      const __int128 payload = written.value_or(0);
      int mantissa = type == PrimitiveType::kF16 ? 10 : type == PrimitiveType::kBF16 ? 7
                     : type == PrimitiveType::kF32 ? 23 : 52;
      std::optional<NarrowFloatFormat> narrow;
      dispatch_element_type(type, [&](auto tag) {
        if constexpr (kIsNarrowFloat<decltype(tag)>) narrow = decltype(tag)::kFormat;
      });
      if (narrow) {
        // Only the IEEE-style narrow floats have NaN payloads (f8e4m3fn's one NaN has none).
        if (narrow->kind != NarrowFloatKind::kIeee)
          return error_at(peek(), str_cat(type_name, " has a single NaN, without a payload"));
        mantissa = narrow->mantissa_bits;
      }
      if (payload <= 0 || payload >= (static_cast<__int128>(1) << mantissa))
        return error_at(payload_token, str_cat("expected a NaN payload in 1 .. 2^", mantissa, "-1 (the mantissa of ",
                                               type_name, "), found ", payload_token.text));
      next();
      INSITU_RETURN_IF_ERROR(expect(TokenKind::kRparen, "')' to close the NaN payload"));
      const uint64_t sign = std::signbit(value) ? 1 : 0;
      const uint64_t bits = static_cast<uint64_t>(payload);
      if (narrow) {
        literal.untyped_data()[linear] =
            static_cast<uint8_t>(sign << (narrow->exponent_bits + narrow->mantissa_bits) |
                                 ((1u << narrow->exponent_bits) - 1) << narrow->mantissa_bits | bits);
        return ok_status();
      }
      switch (type) {
        case PrimitiveType::kF16: literal.data<Half>()[linear].bits = static_cast<uint16_t>(sign << 15 | 0x1fu << 10 | bits); break;
        case PrimitiveType::kBF16: literal.data<BFloat16>()[linear].bits = static_cast<uint16_t>(sign << 15 | 0xffu << 7 | bits); break;
        case PrimitiveType::kF32: literal.data<float>()[linear] = std::bit_cast<float>(static_cast<uint32_t>(sign << 31 | 0xffu << 23 | bits)); break;
        default: literal.data<double>()[linear] = std::bit_cast<double>(sign << 63 | uint64_t{0x7ff} << 52 | bits); break;
      }
      return ok_status();
    }
    double stored = value;
    switch (type) {
      case PrimitiveType::kF16:
        literal.data<Half>()[linear] = Half::from_float(static_cast<float>(value));
        stored = literal.data<Half>()[linear].to_float();
        break;
      case PrimitiveType::kBF16:
        literal.data<BFloat16>()[linear] = BFloat16::from_float(static_cast<float>(value));
        stored = literal.data<BFloat16>()[linear].to_float();
        break;
      case PrimitiveType::kF32:
        literal.data<float>()[linear] = static_cast<float>(value);
        stored = literal.data<float>()[linear];
        break;
      case PrimitiveType::kF64: literal.data<double>()[linear] = value; break;
      default:
        dispatch_element_type(type, [&](auto tag) {
          using T = decltype(tag);
          if constexpr (kIsNarrowFloat<T>) {
            literal.data<T>()[linear] = T::from_double(value);
            stored = literal.data<T>()[linear].to_float();
          }
        });
        break;
    }
    // A finite value that rounds to infinity (or to NaN, in the formats without infinity) is
    // out of range (as XLA's parser says), not inf or NaN.
    if (std::isfinite(value) && !std::isfinite(stored))
      return error_at(value_token, str_cat("value ", value_token.text, " is out of range for ", type_name,
                                           " (it would round to ", std::isnan(stored) ? "NaN" : "infinity", ")"));
    // A written inf or NaN the format cannot hold is refused, never replaced by another value.
    if (!std::isfinite(value) && (std::isnan(value) != std::isnan(stored) || std::isinf(value) != std::isinf(stored)))
      return error_at(value_token, str_cat(type_name, " has no ", std::isnan(value) ? "NaN" : "infinity"));
    return ok_status();
  }

  // Integers.
  if (!at(TokenKind::kNumber)) return error_expected(str_cat("a ", type_name, " value"));
  std::optional<__int128> value = to_int128(token.text);
  if (!value) return error_at(token, str_cat("expected a ", type_name, " integer, found ", token.text));
  return dispatch_element_type(type, [&](auto tag) -> Status {
    using T = decltype(tag);
    if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
      // XLA's parser reads a u64 through int64, so a negative u64 is its two's complement
      // (`u64[] constant(-1)` is 2^64 - 1 there, and XLA:CPU returns that); the narrower
      // unsigned types refuse negatives, as XLA does.
      if constexpr (std::is_same_v<T, uint64_t>)
        if (*value < 0 && *value >= static_cast<__int128>(std::numeric_limits<int64_t>::min())) {
          next();
          literal.data<T>()[linear] = static_cast<uint64_t>(static_cast<int64_t>(*value));
          return ok_status();
        }
      if (*value < static_cast<__int128>(std::numeric_limits<T>::min()) ||
          *value > static_cast<__int128>(std::numeric_limits<T>::max()))
        return error_at(token, str_cat("value ", token.text, " does not fit in ", type_name));
      next();
      literal.data<T>()[linear] = static_cast<T>(*value);
      return ok_status();
    } else if constexpr (kIsSubByteInt<T>) {
      if (*value < T::kMin || *value > T::kMax)
        return error_at(token, str_cat("value ", token.text, " does not fit in ", type_name, " (", T::kMin, " .. ",
                                       T::kMax, ")"));
      next();
      literal.data<T>()[linear] = T::wrap(static_cast<uint64_t>(static_cast<int64_t>(*value)));
      return ok_status();
    } else {
      return error_at(token, str_cat("internal: unexpected element type ", type_name));
    }
  });
}

StatusOr<double> Parser::parse_float_value(std::string_view type_name) {
  const Token token = peek();
  if (token.kind != TokenKind::kNumber && !at_ident("inf") && !at_ident("nan"))
    return error_expected(str_cat("a ", type_name, " value"));
  std::optional<double> value = to_double(token.text);
  if (!value) return error_at(token, str_cat("expected a ", type_name, " value, found ", token.text));
  // A written number beyond f64's range (strtod gives inf) is out of range, as XLA's parser says.
  if (token.kind == TokenKind::kNumber && !std::isfinite(*value) && token.text.find("inf") == std::string::npos &&
      token.text.find("nan") == std::string::npos)
    return error_at(token, str_cat("value ", token.text, " is out of range for ", type_name,
                                   " (it would round to infinity)"));
  next();
  return *value;
}

}  // namespace insitu::parser_internal
