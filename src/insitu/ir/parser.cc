// HLO text parser: the module's structure (header, computations, their bodies), what is
// resolved once every computation is parsed (called computations, left-out shapes, compare
// orders, declared signatures), and the public entry points. Instructions, shapes, literals,
// header attributes, instruction attributes and XLA's async shorthand live in
// parser_instruction.cc, parser_shape.cc, parser_literal.cc, parser_header.cc,
// parser_attributes.cc and parser_async.cc.
#include "insitu/ir/parser.h"

#include <functional>

#include "insitu/ir/parser_impl.h"
#include "insitu/ir/shape_inference.h"
#include "insitu/support/str.h"

namespace insitu {
namespace parser_internal {
namespace {

std::string location_string(SourceLocation location) {
  return str_cat(location.line, ":", location.column);
}

}  // namespace

Parser::Parser(std::string_view text) : text_(text), tokens_(lex_hlo(text)) {}

const Token& Parser::peek(size_t ahead) const {
  size_t index = pos_ + ahead;
  return index < tokens_.size() ? tokens_[index] : tokens_.back();
}

const Token& Parser::next() {
  const Token& token = peek();
  if (pos_ + 1 < tokens_.size()) ++pos_;
  return token;
}

bool Parser::accept(TokenKind kind) {
  if (!at(kind)) return false;
  next();
  return true;
}

Status Parser::expect(TokenKind kind, std::string_view what) {
  if (!at(kind)) return error_expected(what);
  next();
  return ok_status();
}

Status Parser::error_at(const Token& token, std::string message) const {
  if (token.kind == TokenKind::kError) message = token.text;
  return invalid_argument(std::move(message), token.location);
}

Status Parser::error_expected(std::string_view what) const {
  const Token& token = peek();
  if (token.kind == TokenKind::kError) return error_at(token, token.text);
  if (token.kind == TokenKind::kEof)
    return error_at(token, str_cat("truncated input: expected ", what, " at end of file"));
  return error_at(token, str_cat("expected ", what, ", found ", describe_token(token)));
}

std::string Parser::source_text(size_t first, size_t last) const {
  if (last <= first) return "";
  size_t begin = tokens_[first].begin;
  size_t end = tokens_[last - 1].end;
  return std::string(text_.substr(begin, end - begin));
}

StatusOr<std::unique_ptr<Module>> Parser::parse_module() {
  // Without the header (XLA's tests write many modules so), the text is the computations and
  // the module is named after its entry: `module_` + its name, as XLA's parser names it.
  const bool headerless = !at_ident("HloModule") &&
                          (at_ident("ENTRY") || ((at(TokenKind::kIdent) || at(TokenKind::kName)) &&
                                                 (at(TokenKind::kLbrace, 1) || at(TokenKind::kLparen, 1))));
  if (!at_ident("HloModule") && !headerless) return error_expected("'HloModule' or a computation at the start of the module");
  const SourceLocation module_location = peek().location;
  auto module = std::make_unique<Module>("");
  module->set_location(module_location);
  if (!headerless) {
    next();
    INSITU_ASSIGN_OR_RETURN(NameRef module_name, parse_name("a module name"));
    module->set_name(module_name.name);
    accept(TokenKind::kColon);  // `HloModule name:` (XLA accepts it)
    while (accept(TokenKind::kComma)) INSITU_RETURN_IF_ERROR(parse_header_attribute(*module));
  }

  bool saw_entry = false;
  while (!at(TokenKind::kEof)) {
    if (is_stack_frame_section_start()) {
      INSITU_RETURN_IF_ERROR(parse_stack_frame_sections(*module));
      continue;
    }
    INSITU_RETURN_IF_ERROR(parse_computation(*module, saw_entry));
  }
  if (module->computations().empty()) return error_expected("a computation");
  if (!saw_entry) module->set_entry(module->computations().back());
  if (headerless) module->set_name(str_cat("module_", module->entry()->name()));
  INSITU_RETURN_IF_ERROR(resolve_calls(*module));
  INSITU_RETURN_IF_ERROR(resolve_async_links());
  INSITU_RETURN_IF_ERROR(infer_left_out_shapes());
  INSITU_RETURN_IF_ERROR(resolve_comparison_orders());
  INSITU_RETURN_IF_ERROR(check_signatures());
  return module;
}

Status Parser::check_signatures() const {
  for (const Signature& signature : signatures_) {
    const Computation& computation = *signature.computation;
    if (computation.root() != nullptr && !signature.result.compatible(computation.root()->shape()))
      return error_at(signature.result_token,
                      str_cat("computation %", computation.name(), " declares the result ", signature.result.to_string(false),
                              ", but its root %", computation.root()->name(), " is ",
                              computation.root()->shape().to_string(false)));
    // Parameter shapes are not checked: XLA's parser accepts a signature whose parameters differ
    // from the parameter instructions (its own tests hold one: cpu_while_test.cc).
  }
  return ok_status();
}

Status Parser::resolve_comparison_orders() {
  for (Instruction* instruction : comparison_orders_) {
    Instruction& compare = *instruction;
    const PrimitiveType type = compare.operand_count() > 0 ? compare.operand(0)->shape().element_type()
                                                           : PrimitiveType::kInvalid;
    // Integers compare the same either way (XLA accepts both and keeps PARTIAL in its text).
    if (is_floating(type))
      compare.comparison_type = compare.comparison_order == "TOTAL" ? ComparisonType::kTotalOrder : ComparisonType::kFloat;
  }
  return ok_status();
}

// The instructions of `computation` after its '{', through the closing '}'.
Status Parser::parse_computation_body(Computation& computation, const Token& start, const Token& name_token) {
  Computation* const enclosing = current_computation_;
  current_computation_ = &computation;
  Scope scope;
  scope.computation = &computation;
  bool saw_root = false;
  const std::string close_message =
      str_cat("'}' to close the computation started at ", location_string(start.location));
  while (!accept(TokenKind::kRbrace)) {
    bool instruction_start = at_ident("ROOT") ? (at(TokenKind::kIdent, 1) || at(TokenKind::kName, 1))
                                              : ((at(TokenKind::kIdent) || at(TokenKind::kName)) &&
                                                 at(TokenKind::kEqual, 1));
    if (!instruction_start) return error_expected(close_message);
    INSITU_RETURN_IF_ERROR(parse_instruction(scope, saw_root));
  }
  current_computation_ = enclosing;
  if (computation.instruction_count() == 0)
    return error_at(name_token, str_cat("computation %", computation.name(), " has no instructions"));
  if (!saw_root) computation.set_root(computation.instructions().back());

  for (auto& [instruction, names] : scope.control) {
    for (const NameRef& ref : names) {
      auto it = scope.names.find(ref.name);
      if (it == scope.names.end() || it->second == nullptr)
        return invalid_argument(str_cat("unknown instruction %", ref.name, " in control-predecessors of %",
                                        instruction->name()),
                                ref.location);
      instruction->add_control_predecessor(it->second);
    }
  }
  return ok_status();
}

bool Parser::at_inline_computation() const {
  return at(TokenKind::kLbrace) &&
         (at_ident("ROOT", 1) || ((at(TokenKind::kIdent, 1) || at(TokenKind::kName, 1)) && at(TokenKind::kEqual, 2)));
}

// A computation the parser makes for `enclosing` (an inline one, an async wrapper): named
// `base_name` (with '_' appended until no computation has that name), placed before it.
Computation* Parser::add_made_up_computation(Computation& enclosing, std::string base_name,
                                             SourceLocation location) {
  Module& module = *enclosing.parent();
  while (module.find_computation(base_name) != nullptr) base_name += "_";
  auto owned = std::make_unique<Computation>(std::move(base_name));
  owned->set_location(location);
  return module.add_computation_before(std::move(owned), &enclosing);
}

StatusOr<NameRef> Parser::parse_inline_computation(const std::string& base_name) {
  const Token start = next();  // '{'
  Computation* computation = add_made_up_computation(*current_computation_, base_name, start.location);
  INSITU_RETURN_IF_ERROR(parse_computation_body(*computation, start, start));
  return NameRef{computation->name(), start.location};
}

Status Parser::parse_computation(Module& module, bool& saw_entry) {
  const Token start = peek();
  bool is_entry = false;
  if (at_ident("ENTRY")) {
    next();
    is_entry = true;
  }
  const Token name_token = peek();
  INSITU_ASSIGN_OR_RETURN(NameRef name, parse_name("a computation name"));
  if (module.find_computation(name.name) != nullptr)
    return error_at(name_token, str_cat("duplicate computation name %", name.name));
  if (is_entry && saw_entry)
    return error_at(start, str_cat("second ENTRY computation %", name.name, "; a module has one"));

  // Optional signature: (p0: f32[2], p1: s32[]) -> f32[2]. The instructions are the truth;
  // the declared result must be compatible with the root (check_signatures, as XLA's parser checks).
  std::optional<Signature> signature;
  if (accept(TokenKind::kLparen)) {
    signature.emplace();
    if (!accept(TokenKind::kRparen)) {
      do {
        INSITU_ASSIGN_OR_RETURN(NameRef parameter, parse_name("a parameter name"));
        (void)parameter;
        accept(TokenKind::kColon);  // `(p: f32[2])`; XLA's parser also takes `(p f32[2])`
        INSITU_ASSIGN_OR_RETURN(Shape shape, parse_shape());
        (void)shape;
      } while (accept(TokenKind::kComma));
      INSITU_RETURN_IF_ERROR(expect(TokenKind::kRparen, "')' to close the parameter list"));
    }
    INSITU_RETURN_IF_ERROR(expect(TokenKind::kArrow, "'->' before the result shape"));
    signature->result_token = peek();
    INSITU_ASSIGN_OR_RETURN(signature->result, parse_shape());
  }
  INSITU_RETURN_IF_ERROR(expect(TokenKind::kLbrace, str_cat("'{' to start computation %", name.name)));

  auto owned = std::make_unique<Computation>(name.name);
  owned->set_location(start.location);
  Computation* computation = module.add_computation(std::move(owned));
  if (signature) {
    signature->computation = computation;
    signatures_.push_back(std::move(*signature));
  }
  if (is_entry) {
    module.set_entry(computation);
    saw_entry = true;
  }

  INSITU_RETURN_IF_ERROR(parse_computation_body(*computation, start, name_token));

  if (accept(TokenKind::kComma)) {
    if (!at_ident("execution_thread")) return error_expected("'execution_thread=' after the computation");
    next();
    INSITU_RETURN_IF_ERROR(expect(TokenKind::kEqual, "'=' after execution_thread"));
    if (!at(TokenKind::kString)) return error_expected("a quoted execution thread name");
    computation->set_execution_thread(next().text);
  }
  return ok_status();
}

Status Parser::resolve_calls(Module& module) {
  for (const PendingCalls& calls : pending_) {
    std::vector<Computation*> called;
    for (const std::vector<NameRef>* group :
         {&calls.condition, &calls.body, &calls.true_computation, &calls.false_computation, &calls.branches,
          &calls.select, &calls.scatter, &calls.to_apply, &calls.calls, &calls.called}) {
      for (const NameRef& ref : *group) {
        Computation* computation = module.find_computation(ref.name);
        if (computation == nullptr)
          return invalid_argument(str_cat("unknown computation %", ref.name, " called by %",
                                          calls.instruction->name()),
                                  ref.location);
        called.push_back(computation);
      }
    }
    calls.instruction->set_called_computations(std::move(called));
  }
  return ok_status();
}

Status Parser::infer_left_out_shapes() {
  // Callees first: a computation's instructions are inferred in text order (operands come
  // first), after every computation they call.
  std::unordered_map<const Computation*, std::vector<Instruction*>> by_computation;
  for (Instruction* instruction : shapes_to_infer_) by_computation[instruction->parent()].push_back(instruction);
  std::unordered_map<const Computation*, int> state;  // 1: in progress, 2: done
  std::function<Status(const Computation*)> infer_computation = [&](const Computation* computation) -> Status {
    if (state[computation] == 2) return ok_status();
    if (state[computation] == 1)
      return invalid_argument(str_cat("computation %", computation->name(),
                                      " calls itself; the shapes left out of its instructions cannot be inferred"),
                              computation->location());
    state[computation] = 1;
    for (Instruction* instruction : by_computation[computation]) {
      for (const Computation* callee : instruction->called_computations())
        INSITU_RETURN_IF_ERROR(infer_computation(callee));
      StatusOr<Shape> inferred = infer_shape(*instruction);
      if (!inferred.ok())
        return invalid_argument(str_cat("cannot infer the result shape of %", instruction->name(), ": ",
                                        inferred.status().message()),
                                instruction->location());
      instruction->set_shape(std::move(*inferred));
    }
    state[computation] = 2;
    return ok_status();
  };
  for (const Instruction* instruction : shapes_to_infer_)
    INSITU_RETURN_IF_ERROR(infer_computation(instruction->parent()));
  return ok_status();
}

StatusOr<NameRef> Parser::parse_name(std::string_view what) {
  if (!at(TokenKind::kIdent) && !at(TokenKind::kName)) return error_expected(what);
  const Token& token = next();
  return NameRef{token.text, token.location};
}

StatusOr<Shape> Parser::parse_shape_text() {
  INSITU_ASSIGN_OR_RETURN(Shape shape, parse_shape());
  if (!at(TokenKind::kEof)) return error_expected("end of input after the shape");
  return shape;
}

StatusOr<Literal> Parser::parse_literal_text(const Shape& shape) {
  INSITU_ASSIGN_OR_RETURN(Literal literal, parse_literal(shape));
  if (!at(TokenKind::kEof)) return error_expected("end of input after the literal");
  return literal;
}

}  // namespace parser_internal

StatusOr<std::unique_ptr<Module>> parse_module(std::string_view text) {
  return parser_internal::Parser(text).parse_module();
}

StatusOr<Shape> parse_shape(std::string_view text) { return parser_internal::Parser(text).parse_shape_text(); }

StatusOr<Literal> parse_literal(std::string_view text, const Shape& shape) {
  return parser_internal::Parser(text).parse_literal_text(shape);
}

}  // namespace insitu
