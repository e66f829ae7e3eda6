// MLIR's text syntax for the StableHLO text reader (text.h, text_internal.h): the cursor, the
// generic op form, regions, functions and the module (types in text_types.cc, attributes in
// text_attributes.cc, the ops' printed forms in text_ops.cc).
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
