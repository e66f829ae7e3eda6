// HLO text parser: integers, integer lists, shapes and layouts.
//
//   s32[4]{0}   f32[8,128]{1,0:T(8,128)(2,1)S(3)}   f32[]{:T(256)}   (s32[], token[])   f32[<=8]
#include <algorithm>
#include <limits>
#include <optional>
#include <string_view>

#include "insitu/ir/parser_impl.h"
#include "insitu/support/str.h"

namespace insitu::parser_internal {
namespace {

constexpr int64_t kMaxRank = 64;

}  // namespace

std::optional<int64_t> parse_integer_text(std::string_view text) {
  bool negative = false;
  if (!text.empty() && text[0] == '-') {
    negative = true;
    text.remove_prefix(1);
  }
  int base = 10;
  if (text.size() > 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X')) {
    base = 16;
    text.remove_prefix(2);
  }
  if (text.empty()) return std::nullopt;
  // Accumulate as a negative number so INT64_MIN parses.
  int64_t value = 0;
  for (char c : text) {
    int digit;
    if (c >= '0' && c <= '9') digit = c - '0';
    else if (base == 16 && c >= 'a' && c <= 'f') digit = c - 'a' + 10;
    else if (base == 16 && c >= 'A' && c <= 'F') digit = c - 'A' + 10;
    else return std::nullopt;
    if (__builtin_mul_overflow(value, base, &value) || __builtin_sub_overflow(value, digit, &value))
      return std::nullopt;
  }
  if (negative) return value;
  if (value == std::numeric_limits<int64_t>::min()) return std::nullopt;
  return -value;
}

StatusOr<int64_t> Parser::parse_int64() {
  if (!at(TokenKind::kNumber)) return error_expected("an integer");
  const Token& token = peek();
  std::optional<int64_t> value = parse_integer_text(token.text);
  if (!value) {
    bool digits_only = token.text.find_first_not_of("-0123456789") == std::string::npos;
    return error_at(token, digits_only ? str_cat("integer ", token.text, " is out of range")
                                       : str_cat("expected an integer, found ", token.text));
  }
  next();
  return *value;
}

StatusOr<bool> Parser::parse_bool() {
  if (at_ident("true")) {
    next();
    return true;
  }
  if (at_ident("false")) {
    next();
    return false;
  }
  return error_expected("true or false");
}

StatusOr<std::vector<int64_t>> Parser::parse_int_list() {
  INSITU_RETURN_IF_ERROR(expect(TokenKind::kLbrace, "'{' to start a list of integers"));
  std::vector<int64_t> values;
  if (accept(TokenKind::kRbrace)) return values;
  do {
    INSITU_ASSIGN_OR_RETURN(int64_t value, parse_int64());
    values.push_back(value);
  } while (accept(TokenKind::kComma));
  INSITU_RETURN_IF_ERROR(expect(TokenKind::kRbrace, "'}' to close the list of integers"));
  return values;
}

bool Parser::at_shape() const {
  if (at(TokenKind::kLparen)) return true;
  if (at(TokenKind::kIdent) && peek().text == "b" && at(TokenKind::kLparen, 1)) return true;  // b(f32[4])
  if (!at(TokenKind::kIdent) || !at(TokenKind::kLsquare, 1)) return false;
  const std::string& name = peek().text;
  return name == "token" || parse_primitive_type(name).has_value() || is_unsupported_type_name(name);
}

StatusOr<Shape> Parser::parse_shape(int depth) {
  if (depth > kMaxNesting) return error_at(peek(), "shape is nested too deeply");
  if (accept(TokenKind::kLparen)) {
    std::vector<Shape> elements;
    if (!accept(TokenKind::kRparen)) {
      do {
        INSITU_ASSIGN_OR_RETURN(Shape element, parse_shape(depth + 1));
        elements.push_back(std::move(element));
      } while (accept(TokenKind::kComma));
      INSITU_RETURN_IF_ERROR(expect(TokenKind::kRparen, "')' to close the tuple shape"));
    }
    return Shape::tuple(std::move(elements));
  }
  if (at(TokenKind::kIdent) && peek().text == "b" && at(TokenKind::kLparen, 1)) {  // a buffer: b(ARRAY)
    const Token buffer_token = next();
    next();
    INSITU_ASSIGN_OR_RETURN(Shape array, parse_shape(depth + 1));
    if (!array.is_array() || array.is_buffer())
      return error_at(buffer_token, str_cat("a buffer shape b(...) holds an array, not ", array.to_string()));
    INSITU_RETURN_IF_ERROR(expect(TokenKind::kRparen, "')' to close the buffer shape"));
    array.set_buffer(true);
    return array;
  }
  if (!at(TokenKind::kIdent)) return error_expected("a shape");
  const Token type_token = peek();
  if (is_unsupported_type_name(type_token.text))
    return error_at(type_token, str_cat("unsupported element type '", type_token.text, "'"));
  std::optional<PrimitiveType> type = parse_primitive_type(type_token.text);
  if (!type) {
    if (at(TokenKind::kLsquare, 1))
      return error_at(type_token, str_cat("unknown element type '", type_token.text, "'"));
    return error_expected("a shape");
  }
  next();
  if (!accept(TokenKind::kLsquare)) return error_expected(str_cat("'[' after ", type_token.text));
  if (*type == PrimitiveType::kToken) {
    INSITU_RETURN_IF_ERROR(expect(TokenKind::kRsquare, "']': token shapes have no dimensions"));
    return Shape::token();
  }
  std::vector<int64_t> dimensions;
  std::vector<int64_t> dynamic;
  int64_t element_count = 1;
  if (!at(TokenKind::kRsquare)) {
    do {
      const Token dim_token = peek();
      if (at(TokenKind::kQuestion))
        return error_at(dim_token, "unbounded dynamic dimension '?' is not supported");
      bool is_dynamic = accept(TokenKind::kLeq);
      INSITU_ASSIGN_OR_RETURN(int64_t dim, parse_int64());
      if (dim < 0) return error_at(dim_token, str_cat("dimension ", dim, " is negative"));
      if (static_cast<int64_t>(dimensions.size()) >= kMaxRank)
        return error_at(dim_token, str_cat("shape has more than ", kMaxRank, " dimensions"));
      // Keep the byte size representable too (a sub-byte element counts as a byte).
      if (__builtin_mul_overflow(element_count, dim, &element_count) ||
          element_count > std::numeric_limits<int64_t>::max() / std::max<int64_t>(1, (bit_width(*type) + 7) / 8))
        return error_at(dim_token, "shape has too many elements (its byte size overflows 64 bits)");
      if (is_dynamic) dynamic.push_back(static_cast<int64_t>(dimensions.size()));
      dimensions.push_back(dim);
    } while (accept(TokenKind::kComma));
  }
  INSITU_RETURN_IF_ERROR(expect(TokenKind::kRsquare, "']' to close the dimensions"));
  Shape shape = Shape::array(*type, std::move(dimensions));
  for (int64_t i : dynamic) shape.set_dynamic_dimension(i, true);
  // A '{' after a shape starts a layout only if a layout can follow it ("{1,0", "{:", "{}");
  // otherwise it opens a computation body ("-> f32[2] {").
  if (at(TokenKind::kLbrace) &&
      (at(TokenKind::kNumber, 1) || at(TokenKind::kColon, 1) || at(TokenKind::kRbrace, 1))) {
    INSITU_RETURN_IF_ERROR(parse_layout(shape));
  }
  return shape;
}

Status Parser::parse_layout(Shape& shape) {
  const Token open = peek();
  INSITU_RETURN_IF_ERROR(expect(TokenKind::kLbrace, "'{' to start a layout"));
  Layout layout;
  if (!at(TokenKind::kColon) && !at(TokenKind::kRbrace)) {
    do {
      INSITU_ASSIGN_OR_RETURN(int64_t dim, parse_int64());
      layout.minor_to_major.push_back(dim);
    } while (accept(TokenKind::kComma));
  }
  bool sparse = false;
  std::optional<Token> physical_shape;
  if (accept(TokenKind::kColon)) {
    while (!at(TokenKind::kRbrace)) {
      const Token field = peek();
      if (at_ident("T") && at(TokenKind::kLparen, 1)) {
        next();
        while (accept(TokenKind::kLparen)) {
          Tile tile;
          if (!at(TokenKind::kRparen)) {
            do {
              if (accept(TokenKind::kStar)) {
                tile.dimensions.push_back(kCombineDimension);
              } else {
                INSITU_ASSIGN_OR_RETURN(int64_t dim, parse_int64());
                tile.dimensions.push_back(dim);
              }
            } while (accept(TokenKind::kComma));
          }
          INSITU_RETURN_IF_ERROR(expect(TokenKind::kRparen, "')' to close the tile"));
          layout.tiles.push_back(std::move(tile));
        }
        continue;
      }
      if (at_ident("S") && at(TokenKind::kLparen, 1)) {
        next();
        next();
        INSITU_ASSIGN_OR_RETURN(layout.memory_space, parse_int64());
        INSITU_RETURN_IF_ERROR(expect(TokenKind::kRparen, "')' to close the memory space S(n)"));
        continue;
      }
      bool known = at(TokenKind::kHash) || at(TokenKind::kStar);
      if (at(TokenKind::kIdent)) {
        for (const char* name : {"D", "L", "E", "SC", "P", "M"})
          if (field.text == name) known = true;
      }
      if (!known || !at(TokenKind::kLparen, 1)) {
        if (at(TokenKind::kEof)) return error_expected("'}' to close the layout");
        return error_at(field, str_cat("unknown layout field ", describe_token(field),
                                       "; expected T(..), S(n), D(..), L(n), #(..), *(..), E(n), SC(..), "
                                       "P(..), M(n) or '}'"));
      }
      // Unmodelled field: keep its exact text, balanced parentheses included.
      size_t first = position();
      next();
      int depth = 0;
      do {
        if (at(TokenKind::kEof)) return error_expected("')' to close the layout field");
        if (at(TokenKind::kLparen)) ++depth;
        if (at(TokenKind::kRparen)) --depth;
        next();
      } while (depth > 0);
      const std::string text = source_text(first, position());
      if (field.text == "D") {  // dim-level types, as XLA spells them: D, C, S or H, maybe + or ~ after
        std::string_view levels = std::string_view(text).substr(2, text.size() - 3);
        while (true) {
          const size_t comma = levels.find(',');
          std::string_view level = levels.substr(0, comma);
          while (!level.empty() && (level.back() == '+' || level.back() == '~' || level.back() == ' '))
            level.remove_suffix(1);
          while (!level.empty() && level.front() == ' ') level.remove_prefix(1);
          if (level != "D" && level != "C" && level != "S" && level != "H")
            return error_at(field, str_cat("expected a dim-level type (D, C, S or H) in the layout field ", text));
          if (comma == std::string_view::npos) break;
          levels.remove_prefix(comma + 1);
        }
        sparse = text.find_first_of("CSH", 2) != std::string::npos;
      }
      if (field.text == "P") physical_shape = field;
      layout.other_fields += text;
    }
  }
  INSITU_RETURN_IF_ERROR(expect(TokenKind::kRbrace, "'}' to close the layout"));
  if (physical_shape && !sparse)  // as XLA's parser refuses it
    return error_at(*physical_shape, "a layout with a physical shape P(..) must be a sparse one (D(..) with C, S or H)");

  const int64_t rank = shape.rank();
  if (static_cast<int64_t>(layout.minor_to_major.size()) != rank)
    return error_at(open, str_cat("layout lists ", layout.minor_to_major.size(), " dimensions but the shape has rank ",
                                  rank));
  std::vector<bool> seen(rank, false);
  for (int64_t dim : layout.minor_to_major) {
    if (dim < 0 || dim >= rank || seen[dim])
      return error_at(open, str_cat("layout {", str_join(layout.minor_to_major, ","),
                                    "} is not a permutation of the dimensions 0..", rank - 1));
    seen[dim] = true;
  }
  shape.set_layout(std::move(layout));
  return ok_status();
}

}  // namespace insitu::parser_internal
