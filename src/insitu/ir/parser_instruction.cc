// HLO text parser: one instruction, `ROOT? name = shape? opcode(operands), attributes`. Its
// name (a name the parser made up for a nested instruction or a `%t#i` element yields to one
// written later), its operands (names, `%t#i` elements, nested instructions), and the checks
// XLA's parser makes of it once read: the operand count each opcode takes and the attributes it
// requires. The attributes themselves are read in parser_attributes.cc; XLA's async shorthand
// (`op-start`) is recognised here and desugared in parser_async.cc.
#include <algorithm>

#include "insitu/ir/parser_impl.h"
#include "insitu/ir/shape_inference.h"
#include "insitu/support/str.h"

namespace insitu::parser_internal {
namespace {

// Largest parameter number accepted: keeps a hostile `parameter(4000000000)` from making the
// computation allocate a parameter table of that size.
constexpr int64_t kMaxParameterNumber = 1 << 20;

}  // namespace

Status Parser::parse_instruction(Scope& scope, bool& saw_root) {
  Computation& computation = *scope.computation;
  const Token root_token = peek();
  bool is_root = false;
  if (at_ident("ROOT")) {
    next();
    is_root = true;
  }
  const Token name_token = peek();
  INSITU_ASSIGN_OR_RETURN(NameRef name, parse_name("an instruction name"));
  if (auto made_up = scope.made_up.find(name.name); made_up != scope.made_up.end()) {
    // A name the parser made up earlier yields to the one written here.
    Instruction* renamed = made_up->second;
    scope.made_up.erase(made_up);
    scope.names.erase(name.name);
    std::string new_name = made_up_name(scope, name.name);
    renamed->set_name(new_name);
    scope.names[new_name] = renamed;
    scope.made_up[new_name] = renamed;
  }
  if (scope.names.count(name.name) != 0)
    return error_at(name_token, str_cat("duplicate instruction name %", name.name, " in computation %",
                                        computation.name()));
  if (!accept(TokenKind::kEqual)) return error_expected(str_cat("'=' after %", name.name));
  INSITU_ASSIGN_OR_RETURN(Instruction * added,
                          parse_instruction_rhs(scope, name.name, name_token, /*allow_attributes=*/true));
  scope.names[name.name] = added;
  if (is_root) {
    if (saw_root) return error_at(root_token, str_cat("second ROOT in computation %", computation.name()));
    saw_root = true;
    computation.set_root(added);
  }
  return ok_status();
}

bool Parser::at_nested_instruction() const {
  return at(TokenKind::kIdent) && at(TokenKind::kLparen, 1) && parse_opcode(peek().text).has_value();
}

StatusOr<Instruction*> Parser::parse_instruction_rhs(Scope& scope, std::string name, const Token& name_token,
                                                     bool allow_attributes, std::optional<Shape> shape) {
  Computation& computation = *scope.computation;
  // The result shape may be left out where XLA's parser infers it (`%t = tuple(%a, %b)`).
  if (!shape && !at_nested_instruction()) {
    INSITU_ASSIGN_OR_RETURN(shape, parse_shape());
  }
  const Token opcode_token = peek();
  if (!at(TokenKind::kIdent)) return error_expected("an opcode");
  std::optional<Opcode> opcode = parse_opcode(opcode_token.text);
  // XLA's async shorthand for an op without async opcodes of its own: `op-start(operands),
  // op's attributes` is an async-start calling a computation that holds just `op`;
  // `op-update(x)` and `op-done(x)` are async-update and async-done on that computation.
  std::optional<Opcode> async_of;
  Opcode async_part = Opcode::kAsyncStart;
  if (!opcode) {
    const std::string_view text = opcode_token.text;
    for (const auto& [suffix, part] : {std::pair<std::string_view, Opcode>{"-start", Opcode::kAsyncStart},
                                       {"-update", Opcode::kAsyncUpdate}, {"-done", Opcode::kAsyncDone}}) {
      if (text.size() <= suffix.size() || !text.ends_with(suffix)) continue;
      async_of = parse_opcode(text.substr(0, text.size() - suffix.size()));
      if (!async_of) break;
      async_part = part;
      opcode = part == Opcode::kAsyncStart ? *async_of : part;
    }
  }
  if (!opcode) return error_at(opcode_token, str_cat("unknown opcode '", opcode_token.text, "'"));
  next();
  std::optional<Shape> async_shape;  // op-start: the async-start's written shape
  std::vector<RawAttribute> async_attributes;  // and its own attributes
  if (async_of && async_part == Opcode::kAsyncStart) {
    if (!shape || !shape->is_tuple() || shape->tuple_size() < 2)
      return error_at(name_token, str_cat("%", name, " = ", opcode_token.text, "(...) needs its written shape ",
                                          "((operands), result, context...)"));
    async_shape = std::move(shape);
    shape = async_shape->tuple_shape(1);
    // A result written `()` is bound later (late binding): the op's own shape is inferred.
    if (shape->is_tuple() && shape->tuple_size() == 0 && can_infer_shape(*opcode)) shape.reset();
  }
  if (!shape && !can_infer_shape(*opcode))
    return error_at(opcode_token, str_cat("%", name, " needs a result shape: insitu cannot infer the shape of ",
                                          opcode_name(*opcode), " (write it before the opcode)"));

  auto owned = std::make_unique<Instruction>(*opcode, name, shape ? std::move(*shape) : Shape());
  Instruction& instruction = *owned;
  instruction.set_location(name_token.location);

  if (*opcode == Opcode::kParameter) {
    INSITU_RETURN_IF_ERROR(expect(TokenKind::kLparen, "'(' after parameter"));
    const Token number_token = peek();
    INSITU_ASSIGN_OR_RETURN(int64_t number, parse_int64());
    if (number < 0 || number > kMaxParameterNumber)
      return error_at(number_token, str_cat("parameter number ", number, " is out of range [0, ",
                                            kMaxParameterNumber, "]"));
    if (number < computation.parameter_count() && computation.parameter(number) != nullptr)
      return error_at(number_token, str_cat("parameter number ", number, " is already used by %",
                                            computation.parameter(number)->name()));
    instruction.parameter_number = number;
    INSITU_RETURN_IF_ERROR(expect(TokenKind::kRparen, "')' after the parameter number"));
  } else if (*opcode == Opcode::kConstant) {
    INSITU_RETURN_IF_ERROR(expect(TokenKind::kLparen, "'(' after constant"));
    INSITU_RETURN_IF_ERROR(parse_constant_value(instruction));
    INSITU_RETURN_IF_ERROR(expect(TokenKind::kRparen, "')' after the constant's value"));
  } else {
    INSITU_RETURN_IF_ERROR(parse_operands(instruction, scope));
  }
  INSITU_RETURN_IF_ERROR(check_operand_count(instruction, name_token));

  PendingCalls calls;
  calls.instruction = &instruction;
  std::vector<NameRef> predecessors;
  std::vector<std::string> seen_attributes;
  // A nested instruction takes no attributes: its ',' separates operands (as in XLA).
  while (allow_attributes && accept(TokenKind::kComma)) {
    const Token attribute_token = peek();
    if (attribute_token.kind == TokenKind::kIdent && at(TokenKind::kEqual, 1)) {
      for (const std::string& seen : seen_attributes)
        if (seen == attribute_token.text)
          return error_at(attribute_token, str_cat("attribute ", seen, " is written twice on %", name));
      seen_attributes.push_back(attribute_token.text);
    }
    // On an `op-start` line, async_execution_thread is the async-start's, not the op's.
    if (async_shape && attribute_token.text == "async_execution_thread" && at(TokenKind::kEqual, 1)) {
      next();
      next();
      INSITU_ASSIGN_OR_RETURN(std::string value, parse_raw_value(attribute_token.text));
      async_attributes.push_back(RawAttribute{attribute_token.text, std::move(value)});
      continue;
    }
    INSITU_RETURN_IF_ERROR(parse_instruction_attribute(instruction, calls, predecessors));
  }
  if (*opcode == Opcode::kCustomCall && instruction.custom_call.target.empty())
    return error_at(name_token, str_cat("custom-call %", name, " needs custom_call_target=\"...\""));
  for (std::string_view required : required_attributes(*opcode)) {  // opcode.def's column
    if (std::find(seen_attributes.begin(), seen_attributes.end(), required) != seen_attributes.end()) continue;
    // A broadcast of a scalar may leave out dimensions={} (XLA accepts it).
    if (*opcode == Opcode::kBroadcast && required == "dimensions" && instruction.operand_count() == 1 &&
        instruction.operand(0)->shape().is_array() && instruction.operand(0)->shape().rank() == 0)
      continue;
    // So may a reduce-window of scalars leave out its (empty) window.
    if (*opcode == Opcode::kReduceWindow && required == "window" && instruction.operand_count() > 0 &&
        instruction.operand(0)->shape().is_array() && instruction.operand(0)->shape().rank() == 0)
      continue;
    return error_at(name_token, str_cat(opcode_name(*opcode), " %", name, " needs the attribute ", required, "=..."));
  }
  if (*opcode == Opcode::kConditional && !calls.branches.empty() && instruction.operand_count() > 0 &&
      instruction.operand(0)->shape().element_type() == PrimitiveType::kPred)
    return error_at(name_token, str_cat("conditional %", name, " has a pred selector, which takes true_computation= and "
                                        "false_computation=; branch_computations={...} needs an s32 index (as in XLA)"));
  if (*opcode == Opcode::kConditional && calls.branches.empty() &&
      (calls.true_computation.empty() || calls.false_computation.empty()))
    return error_at(name_token, str_cat("conditional %", name,
                                        " needs branch_computations={...} or true_computation= and "
                                        "false_computation="));

  Instruction* added = nullptr;
  if (async_shape) {
    if (!shape) shapes_to_infer_.push_back(&instruction);
    added = wrap_in_async_start(computation, std::move(owned), std::move(*async_shape), name_token);
    for (auto& attribute : async_attributes) added->extra_attributes.push_back(std::move(attribute));
  } else {
    added = computation.add_instruction(std::move(owned));
    if (async_of) async_links_.push_back({added, *async_of, opcode_token});
    else if ((*opcode == Opcode::kAsyncUpdate || *opcode == Opcode::kAsyncDone) && calls.calls.empty())
      async_links_.push_back({added, std::nullopt, opcode_token});
  }
  if (!shape && !async_shape) shapes_to_infer_.push_back(added);
  if (!predecessors.empty()) scope.control.emplace_back(added, std::move(predecessors));
  if (!calls.condition.empty() || !calls.body.empty() || !calls.true_computation.empty() ||
      !calls.false_computation.empty() || !calls.branches.empty() || !calls.to_apply.empty() ||
      !calls.calls.empty() || !calls.called.empty() || !calls.select.empty() || !calls.scatter.empty())
    pending_.push_back(std::move(calls));
  return added;
}

std::string Parser::made_up_name(Scope& scope, const std::string& base) {
  std::string name = base;
  for (int64_t suffix = 1; scope.names.count(name) != 0; ++suffix) name = str_cat(base, ".", suffix);
  return name;
}

StatusOr<Instruction*> Parser::tuple_element_operand(Scope& scope, Instruction* tuple, const Token& hash_token) {
  const Token index_token = peek();
  INSITU_ASSIGN_OR_RETURN(int64_t index, parse_int64());
  const Shape& shape = tuple->shape();
  const bool shape_known = shape.element_type() != PrimitiveType::kInvalid;
  if (shape_known && (!shape.is_tuple() || index < 0 || index >= shape.tuple_size()))
    return error_at(index_token, str_cat("%", tuple->name(), "#", index, ": %", tuple->name(), " has shape ",
                                         shape.to_string(false), ", which has no tuple element ", index));
  Instruction*& element = scope.tuple_elements[{tuple, index}];
  if (element != nullptr) return element;
  const std::string name = made_up_name(scope, str_cat(tuple->name(), "_", index));
  auto gte = std::make_unique<Instruction>(Opcode::kGetTupleElement, name,
                                           shape_known ? shape.tuple_shape(index) : Shape());
  gte->set_location(hash_token.location);
  gte->tuple_index = index;
  gte->written_as_operand_suffix = true;
  gte->append_operand(tuple);
  element = scope.computation->add_instruction(std::move(gte));
  if (!shape_known) shapes_to_infer_.push_back(element);
  scope.names[name] = element;
  scope.made_up[name] = element;
  return element;
}

Status Parser::parse_operands(Instruction& instruction, Scope& scope) {
  if (!accept(TokenKind::kLparen))
    return error_expected(str_cat("'(' to start the operands of ", opcode_name(instruction.opcode())));
  if (accept(TokenKind::kRparen)) return ok_status();
  do {
    // operand ::= shape? name ('#' index)*  |  shape? opcode(operands)   (a nested instruction)
    std::optional<Shape> declared;
    const Token shape_token = peek();
    if (at_shape()) {
      INSITU_ASSIGN_OR_RETURN(declared, parse_shape());
    }
    const Token name_token = peek();
    Instruction* operand = nullptr;
    if (at_nested_instruction()) {
      const std::string name = made_up_name(scope, str_cat(name_token.text, ".anon"));
      scope.names[name] = nullptr;  // taken now: an instruction nested in this one makes up another name
      INSITU_ASSIGN_OR_RETURN(operand, parse_instruction_rhs(scope, name, name_token, /*allow_attributes=*/false,
                                                             std::move(declared)));
      declared.reset();
      scope.names[name] = operand;
      scope.made_up[name] = operand;
    } else {
      INSITU_ASSIGN_OR_RETURN(NameRef name, parse_name("an operand name"));
      auto it = scope.names.find(name.name);
      if (it == scope.names.end() || it->second == nullptr)  // (nullptr: a nested name still being parsed)
        return error_at(name_token, str_cat("unknown instruction %", name.name,
                                            " used as an operand (operands must be defined before use)"));
      operand = it->second;
      while (at(TokenKind::kHash)) {
        const Token hash = next();
        INSITU_ASSIGN_OR_RETURN(operand, tuple_element_operand(scope, operand, hash));
      }
    }
    const bool operand_shape_known = operand->shape().element_type() != PrimitiveType::kInvalid;
    if (declared && operand_shape_known && !declared->compatible(operand->shape()))
      return error_at(shape_token, str_cat("operand %", operand->name(), " is declared as ",
                                           declared->to_string(false), " but its shape is ",
                                           operand->shape().to_string(false)));
    instruction.append_operand(operand);
  } while (accept(TokenKind::kComma));
  return expect(TokenKind::kRparen, "')' to close the operand list");
}

Status Parser::check_operand_count(const Instruction& instruction, const Token& name_token) const {
  const Opcode opcode = instruction.opcode();
  const OperandCount needs = operand_count(opcode);  // opcode.def's column
  const int64_t count = instruction.operand_count();
  auto operands = [](int64_t n) { return str_cat(n, n == 1 ? " operand" : " operands"); };
  if (needs.at_least == needs.at_most && count != needs.at_most)
    return error_at(name_token, str_cat("instruction %", instruction.name(), " has ", operands(count), " but ",
                                        opcode_name(opcode), " needs ", needs.at_most));
  if (count < needs.at_least)
    return error_at(name_token, str_cat("instruction %", instruction.name(), " has ", operands(count), " but ",
                                        opcode_name(opcode), " needs at least ", needs.at_least));
  if (needs.at_most >= 0 && count > needs.at_most)
    return error_at(name_token, str_cat("instruction %", instruction.name(), " has ", operands(count), " but ",
                                        opcode_name(opcode), " takes at most ", needs.at_most));
  return ok_status();
}

}  // namespace insitu::parser_internal
