// The HLO text parser's internal class, shared by parser*.cc (one file per part of the
// grammar: module/computations/instructions, shapes and layouts, literals, attributes).
// Not part of the public API; include insitu/ir/parser.h instead.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "insitu/ir/lexer.h"
#include "insitu/ir/module.h"

namespace insitu::parser_internal {

// Nesting limit for tuples, literals and braces: deep enough for any real dump, shallow
// enough that hostile input cannot exhaust the stack.
inline constexpr int kMaxNesting = 200;

// A name written in the text, with where it was written.
struct NameRef {
  std::string name;
  SourceLocation location;
};

// Computation references of one instruction, resolved once every computation is parsed.
struct PendingCalls {
  Instruction* instruction = nullptr;
  std::vector<NameRef> condition, body, true_computation, false_computation, branches, to_apply,
      calls, called, select, scatter;
};

// Decimal (or 0x hex) integer text with an optional '-'; nullopt on junk or overflow.
std::optional<int64_t> parse_integer_text(std::string_view text);

class Parser {
 public:
  explicit Parser(std::string_view text);

  StatusOr<std::unique_ptr<Module>> parse_module();
  StatusOr<Shape> parse_shape_text();
  StatusOr<Literal> parse_literal_text(const Shape& shape);

  // --- tokens (parser.cc) ---
  const Token& peek(size_t ahead = 0) const;
  const Token& next();
  bool at(TokenKind kind, size_t ahead = 0) const { return peek(ahead).kind == kind; }
  bool at_ident(std::string_view text, size_t ahead = 0) const {
    return peek(ahead).kind == TokenKind::kIdent && peek(ahead).text == text;
  }
  bool accept(TokenKind kind);
  // Consumes a token of `kind` or fails with "expected <what>". A `what` that costs a str_cat
  // is built on failure only: `if (!accept(kind)) return error_expected(str_cat(...))`.
  Status expect(TokenKind kind, std::string_view what);
  Status error_at(const Token& token, std::string message) const;
  // "expected X, found Y" at the current token; "truncated input: expected X at end of file"
  // at the end.
  Status error_expected(std::string_view what) const;
  // The exact source text from token `first` up to (excluding) token `last`.
  std::string source_text(size_t first, size_t last) const;
  size_t position() const { return pos_; }
  // Byte offset where the previous token ended (adjacency test for raw values).
  size_t peek_previous_end() const;

  // --- numbers and simple values (parser_shape.cc) ---
  StatusOr<int64_t> parse_int64();
  StatusOr<bool> parse_bool();
  StatusOr<std::vector<int64_t>> parse_int_list();  // {1,2,3} (also {})
  StatusOr<ShapeIndex> parse_shape_index() { return parse_int_list(); }
  // A name: %foo or foo.
  StatusOr<NameRef> parse_name(std::string_view what);

  // --- shapes (parser_shape.cc) ---
  bool at_shape() const;
  StatusOr<Shape> parse_shape(int depth = 0);
  Status parse_layout(Shape& shape);

  // --- literals (parser_literal.cc) ---
  StatusOr<Literal> parse_literal(const Shape& shape, int depth = 0);
  // constant(...)'s value, also the spellings that leave it unknown (`{...}`, one scalar for an
  // array): they set Instruction::constant_value.
  Status parse_constant_value(Instruction& instruction);
  Status parse_dense_into(Literal& literal, int64_t dimension, int64_t& linear);
  Status parse_scalar_into(Literal& literal, int64_t linear);
  StatusOr<double> parse_float_value(std::string_view type_name);

  // --- raw values (parser_attributes.cc) ---
  // The exact source text of one attribute value: a string, a balanced {..}/(..)/[..] group
  // or a run of adjacent tokens, ending before a ',' or an unmatched closer or whitespace.
  StatusOr<std::string> parse_raw_value(std::string_view attribute);

  // --- header (parser_header.cc) ---
  Status parse_header_attribute(Module& module);
  Status parse_stack_frame_sections(Module& module);
  bool is_stack_frame_section_start() const;

  // --- instruction attributes (parser_attributes.cc) ---
  Status parse_instruction_attribute(Instruction& instruction, PendingCalls& calls,
                                     std::vector<NameRef>& control_predecessors);
  Status parse_window(Instruction& instruction);
  Status parse_output_operand_aliasing(std::vector<OutputOperandAlias>& out);
  Status parse_metadata(Instruction& instruction);
  Status parse_frontend_attributes(std::vector<std::pair<std::string, std::string>>& out);
  StatusOr<std::vector<NameRef>> parse_name_list();  // {%a, %b}

 private:
  // One computation being parsed: its names, and what is resolved once it is complete.
  struct Scope {
    Computation* computation = nullptr;
    std::unordered_map<std::string, Instruction*> names;
    // Names the parser made up (nested instructions, `%t#i` elements): a name written later
    // in the text wins, and the made-up one is renamed.
    std::unordered_map<std::string, Instruction*> made_up;
    std::map<std::pair<Instruction*, int64_t>, Instruction*> tuple_elements;  // %t#i, once
    std::vector<std::pair<Instruction*, std::vector<NameRef>>> control;
  };

  // --- module structure (parser.cc) ---
  Status parse_computation(Module& module, bool& saw_entry);
  Status parse_computation_body(Computation& computation, const Token& start, const Token& name_token);
  // `to_apply={ a = f32[] parameter(0) ... }`: a computation written where its name would be
  // (XLA's parser reads it), added before the one being parsed and named `base_name`.
  bool at_inline_computation() const;
  StatusOr<NameRef> parse_inline_computation(const std::string& base_name);
  Computation* add_made_up_computation(Computation& enclosing, std::string base_name, SourceLocation location);
  Computation* current_computation_ = nullptr;
  // --- one instruction line and its checks (parser_instruction.cc) ---
  Status parse_instruction(Scope& scope, bool& saw_root);
  // shape? opcode(operands), attributes: adds the instruction to the computation. `shape` is
  // the one already read in front of a nested instruction.
  StatusOr<Instruction*> parse_instruction_rhs(Scope& scope, std::string name, const Token& name_token,
                                               bool allow_attributes, std::optional<Shape> shape = std::nullopt);
  Status parse_operands(Instruction& instruction, Scope& scope);
  // An opcode followed by '(' where an operand name would be: a nested instruction.
  bool at_nested_instruction() const;
  // `%t#i`: the get-tuple-element of `tuple` (made once per tuple and index).
  StatusOr<Instruction*> tuple_element_operand(Scope& scope, Instruction* tuple, const Token& hash_token);
  std::string made_up_name(Scope& scope, const std::string& base);
  Status check_operand_count(const Instruction& instruction, const Token& name_token) const;
  // --- once every computation is parsed (parser.cc) ---
  Status resolve_calls(Module& module);
  // Result shapes left out of the text (`%t = tuple(%a, %b)`), inferred as XLA's parser does
  // once every computation is known (callees first).
  Status infer_left_out_shapes();

  std::vector<PendingCalls> pending_;
  std::vector<Instruction*> shapes_to_infer_;
  // compare's order=TOTAL|PARTIAL, turned into a comparison type once operand shapes are known.
  std::vector<Instruction*> comparison_orders_;
  Status resolve_comparison_orders();
  // A computation's written signature `(p: f32[2]) -> f32[2]`: its result is checked against
  // the root once every shape is known (XLA refuses an incompatible one).
  struct Signature {
    Computation* computation;
    Token result_token;
    Shape result;
  };
  std::vector<Signature> signatures_;
  // XLA's async shorthand (`op-start`, `op-update`, `op-done`): the start wraps `op` in a
  // computation of its own; an update or done (shorthand, or written out without calls=)
  // takes its start's computation once calls resolve.
  Instruction* wrap_in_async_start(Computation& computation, std::unique_ptr<Instruction> op, Shape shape,
                                   const Token& name_token);
  struct AsyncLink {
    Instruction* instruction;
    std::optional<Opcode> op;  // the shorthand's op (`call-done`: kCall); none for async-done
    Token token;
  };
  std::vector<AsyncLink> async_links_;
  std::vector<Instruction*> shorthand_starts_;  // the async-starts wrap_in_async_start made
  Status resolve_async_links();
  // XLA's late binding: `call-start()` may leave operands for its updates to bind
  // (`call-update(%start, %p0, %p1)`). The wrapped op takes every operand the chain binds, in
  // order, and then its callee's remaining parameters (a chain never fully bound parses as XLA's
  // does, and is refused when it runs).
  void bind_late_operands(Instruction& start);
  Status check_signatures() const;
  std::string_view text_;
  std::vector<Token> tokens_;
  size_t pos_ = 0;
};

}  // namespace insitu::parser_internal
