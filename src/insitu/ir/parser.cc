// HLO text parser: module structure (header, computations, instructions, operands) and the
// public entry points. Shapes, literals, header attributes and instruction attributes live in
// parser_shape.cc, parser_literal.cc, parser_header.cc and parser_attributes.cc.
#include "insitu/ir/parser.h"

#include <algorithm>

#include "insitu/ir/parser_impl.h"
#include "insitu/support/str.h"

namespace insitu {
namespace parser_internal {
namespace {

std::string location_string(SourceLocation location) {
  return str_cat(location.line, ":", location.column);
}

// Largest parameter number accepted: keeps a hostile `parameter(4000000000)` from making the
// computation allocate a parameter table of that size.
constexpr int64_t kMaxParameterNumber = 1 << 20;

// The attributes XLA's parser requires, per opcode (conditional's alternatives are checked
// separately). Without them an instruction has no meaning and would not print back.
std::vector<std::string_view> required_attributes(Opcode opcode) {
  switch (opcode) {
    case Opcode::kBroadcast:
    case Opcode::kConcatenate:
    case Opcode::kTranspose:
    case Opcode::kReverse: return {"dimensions"};
    case Opcode::kReduce:
    case Opcode::kSort: return {"dimensions", "to_apply"};
    case Opcode::kMap:
    case Opcode::kCall: return {"to_apply"};
    case Opcode::kSlice: return {"slice"};
    case Opcode::kDynamicSlice: return {"dynamic_slice_sizes"};
    case Opcode::kPad: return {"padding"};
    case Opcode::kIota: return {"iota_dimension"};
    case Opcode::kGetTupleElement: return {"index"};
    case Opcode::kCompare: return {"direction"};
    case Opcode::kWhile: return {"condition", "body"};
    case Opcode::kFusion: return {"kind", "calls"};
    case Opcode::kReduceWindow: return {"window", "to_apply"};
    case Opcode::kReducePrecision: return {"exponent_bits", "mantissa_bits"};
    case Opcode::kGather:
      return {"offset_dims", "collapsed_slice_dims", "start_index_map", "index_vector_dim", "slice_sizes"};
    case Opcode::kScatter:
      return {"update_window_dims", "inserted_window_dims", "scatter_dims_to_operand_dims", "index_vector_dim",
              "to_apply"};
    default: return {};
  }
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
  if (!at_ident("HloModule")) return error_expected("'HloModule' at the start of the module");
  const SourceLocation module_location = next().location;
  INSITU_ASSIGN_OR_RETURN(NameRef module_name, parse_name("a module name"));
  auto module = std::make_unique<Module>(module_name.name);
  module->set_location(module_location);
  while (accept(TokenKind::kComma)) INSITU_RETURN_IF_ERROR(parse_header_attribute(*module));

  std::vector<PendingCalls> pending;
  bool saw_entry = false;
  while (!at(TokenKind::kEof)) {
    if (is_stack_frame_section_start()) {
      INSITU_RETURN_IF_ERROR(parse_stack_frame_sections(*module));
      continue;
    }
    INSITU_RETURN_IF_ERROR(parse_computation(*module, pending, saw_entry));
  }
  if (module->computations().empty()) return error_expected("a computation");
  if (!saw_entry) module->set_entry(module->computations().back());
  INSITU_RETURN_IF_ERROR(resolve_calls(*module, pending));
  return module;
}

Status Parser::parse_computation(Module& module, std::vector<PendingCalls>& pending, bool& saw_entry) {
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
  // the signature is checked for syntax only, as XLA does.
  if (accept(TokenKind::kLparen)) {
    if (!accept(TokenKind::kRparen)) {
      do {
        INSITU_ASSIGN_OR_RETURN(NameRef parameter, parse_name("a parameter name"));
        (void)parameter;
        INSITU_RETURN_IF_ERROR(expect(TokenKind::kColon, "':' after the parameter name"));
        INSITU_ASSIGN_OR_RETURN(Shape shape, parse_shape());
        (void)shape;
      } while (accept(TokenKind::kComma));
      INSITU_RETURN_IF_ERROR(expect(TokenKind::kRparen, "')' to close the parameter list"));
    }
    INSITU_RETURN_IF_ERROR(expect(TokenKind::kArrow, "'->' before the result shape"));
    INSITU_ASSIGN_OR_RETURN(Shape result, parse_shape());
    (void)result;
  }
  INSITU_RETURN_IF_ERROR(expect(TokenKind::kLbrace, str_cat("'{' to start computation %", name.name)));

  auto owned = std::make_unique<Computation>(name.name);
  owned->set_location(start.location);
  Computation* computation = module.add_computation(std::move(owned));
  if (is_entry) {
    module.set_entry(computation);
    saw_entry = true;
  }

  std::unordered_map<std::string, Instruction*> scope;
  std::vector<std::pair<Instruction*, std::vector<NameRef>>> control;
  bool saw_root = false;
  const std::string close_message =
      str_cat("'}' to close the computation started at ", location_string(start.location));
  while (!accept(TokenKind::kRbrace)) {
    bool instruction_start = at_ident("ROOT") ? (at(TokenKind::kIdent, 1) || at(TokenKind::kName, 1))
                                              : ((at(TokenKind::kIdent) || at(TokenKind::kName)) &&
                                                 at(TokenKind::kEqual, 1));
    if (!instruction_start) return error_expected(close_message);
    INSITU_RETURN_IF_ERROR(parse_instruction(*computation, pending, scope, control, saw_root));
  }
  if (computation->instruction_count() == 0)
    return error_at(name_token, str_cat("computation %", name.name, " has no instructions"));
  if (!saw_root) computation->set_root(computation->instructions().back());

  for (auto& [instruction, names] : control) {
    for (const NameRef& ref : names) {
      auto it = scope.find(ref.name);
      if (it == scope.end())
        return invalid_argument(str_cat("unknown instruction %", ref.name, " in control-predecessors of %",
                                        instruction->name()),
                                ref.location);
      instruction->add_control_predecessor(it->second);
    }
  }

  if (accept(TokenKind::kComma)) {
    if (!at_ident("execution_thread")) return error_expected("'execution_thread=' after the computation");
    next();
    INSITU_RETURN_IF_ERROR(expect(TokenKind::kEqual, "'=' after execution_thread"));
    if (!at(TokenKind::kString)) return error_expected("a quoted execution thread name");
    computation->set_execution_thread(next().text);
  }
  return ok_status();
}

Status Parser::parse_instruction(Computation& computation, std::vector<PendingCalls>& pending,
                                 std::unordered_map<std::string, Instruction*>& scope,
                                 std::vector<std::pair<Instruction*, std::vector<NameRef>>>& control,
                                 bool& saw_root) {
  const Token root_token = peek();
  bool is_root = false;
  if (at_ident("ROOT")) {
    next();
    is_root = true;
  }
  const Token name_token = peek();
  INSITU_ASSIGN_OR_RETURN(NameRef name, parse_name("an instruction name"));
  if (scope.count(name.name) != 0)
    return error_at(name_token, str_cat("duplicate instruction name %", name.name, " in computation %",
                                        computation.name()));
  INSITU_RETURN_IF_ERROR(expect(TokenKind::kEqual, str_cat("'=' after %", name.name)));
  INSITU_ASSIGN_OR_RETURN(Shape shape, parse_shape());
  const Token opcode_token = peek();
  if (!at(TokenKind::kIdent)) return error_expected("an opcode");
  std::optional<Opcode> opcode = parse_opcode(opcode_token.text);
  if (!opcode) return error_at(opcode_token, str_cat("unknown opcode '", opcode_token.text, "'"));
  next();

  auto owned = std::make_unique<Instruction>(*opcode, name.name, std::move(shape));
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
    INSITU_ASSIGN_OR_RETURN(instruction.literal, parse_literal(instruction.shape()));
    INSITU_RETURN_IF_ERROR(expect(TokenKind::kRparen, "')' after the constant's value"));
  } else {
    INSITU_RETURN_IF_ERROR(parse_operands(instruction, scope));
  }
  INSITU_RETURN_IF_ERROR(check_operand_count(instruction, name_token));

  PendingCalls calls;
  calls.instruction = &instruction;
  std::vector<NameRef> predecessors;
  std::vector<std::string> seen_attributes;
  while (accept(TokenKind::kComma)) {
    const Token attribute_token = peek();
    if (attribute_token.kind == TokenKind::kIdent && at(TokenKind::kEqual, 1)) {
      for (const std::string& seen : seen_attributes)
        if (seen == attribute_token.text)
          return error_at(attribute_token, str_cat("attribute ", seen, " is written twice on %", name.name));
      seen_attributes.push_back(attribute_token.text);
    }
    INSITU_RETURN_IF_ERROR(parse_instruction_attribute(instruction, calls, predecessors));
  }
  if (*opcode == Opcode::kCustomCall && instruction.custom_call.target.empty())
    return error_at(name_token, str_cat("custom-call %", name.name, " needs custom_call_target=\"...\""));
  for (std::string_view required : required_attributes(*opcode)) {
    if (std::find(seen_attributes.begin(), seen_attributes.end(), required) == seen_attributes.end())
      return error_at(name_token, str_cat(opcode_name(*opcode), " %", name.name, " needs the attribute ", required,
                                          "=..."));
  }
  if (*opcode == Opcode::kConditional && calls.branches.empty() &&
      (calls.true_computation.empty() || calls.false_computation.empty()))
    return error_at(name_token, str_cat("conditional %", name.name,
                                        " needs branch_computations={...} or true_computation= and "
                                        "false_computation="));

  Instruction* added = computation.add_instruction(std::move(owned));
  scope[name.name] = added;
  if (is_root) {
    if (saw_root) return error_at(root_token, str_cat("second ROOT in computation %", computation.name()));
    saw_root = true;
    computation.set_root(added);
  }
  if (!predecessors.empty()) control.emplace_back(added, std::move(predecessors));
  if (!calls.condition.empty() || !calls.body.empty() || !calls.true_computation.empty() ||
      !calls.false_computation.empty() || !calls.branches.empty() || !calls.to_apply.empty() ||
      !calls.calls.empty() || !calls.called.empty() || !calls.select.empty() || !calls.scatter.empty())
    pending.push_back(std::move(calls));
  return ok_status();
}

Status Parser::parse_operands(Instruction& instruction,
                              const std::unordered_map<std::string, Instruction*>& scope) {
  INSITU_RETURN_IF_ERROR(
      expect(TokenKind::kLparen, str_cat("'(' to start the operands of ", opcode_name(instruction.opcode()))));
  if (accept(TokenKind::kRparen)) return ok_status();
  do {
    std::optional<Shape> declared;
    const Token shape_token = peek();
    if (at_shape()) {
      INSITU_ASSIGN_OR_RETURN(declared, parse_shape());
    }
    const Token name_token = peek();
    INSITU_ASSIGN_OR_RETURN(NameRef name, parse_name("an operand name"));
    auto it = scope.find(name.name);
    if (it == scope.end())
      return error_at(name_token, str_cat("unknown instruction %", name.name,
                                          " used as an operand (operands must be defined before use)"));
    if (declared && !declared->compatible(it->second->shape()))
      return error_at(shape_token, str_cat("operand %", name.name, " is declared as ", declared->to_string(false),
                                           " but its shape is ", it->second->shape().to_string(false)));
    instruction.append_operand(it->second);
  } while (accept(TokenKind::kComma));
  return expect(TokenKind::kRparen, "')' to close the operand list");
}

Status Parser::check_operand_count(const Instruction& instruction, const Token& name_token) const {
  const Opcode opcode = instruction.opcode();
  int64_t exact = -1, at_least = -1;
  switch (opcode) {
    case Opcode::kIota: case Opcode::kPartitionId: case Opcode::kReplicaId:
    case Opcode::kRngGetAndUpdateState:
      exact = 0;
      break;
    case Opcode::kCopy: case Opcode::kConvert: case Opcode::kBitcast: case Opcode::kBitcastConvert:
    case Opcode::kReshape: case Opcode::kBroadcast: case Opcode::kTranspose: case Opcode::kReverse:
    case Opcode::kSlice: case Opcode::kGetTupleElement: case Opcode::kIsFinite: case Opcode::kReal:
    case Opcode::kImag: case Opcode::kReducePrecision: case Opcode::kCopyStart: case Opcode::kCopyDone:
    case Opcode::kCholesky: case Opcode::kFft: case Opcode::kGetDimensionSize: case Opcode::kWhile:
    case Opcode::kDomain: case Opcode::kOptimizationBarrier: case Opcode::kRngBitGenerator:
      exact = 1;
      break;
    case Opcode::kPad: case Opcode::kAddDependency: case Opcode::kSetDimensionSize: case Opcode::kDot:
    case Opcode::kConvolution: case Opcode::kTriangularSolve: case Opcode::kStochasticConvert:
    case Opcode::kGather:
      exact = 2;
      break;
    case Opcode::kSelect: case Opcode::kClamp: case Opcode::kSelectAndScatter:
    case Opcode::kBatchNormTraining:
      exact = 3;
      break;
    case Opcode::kBatchNormInference: case Opcode::kBatchNormGrad:
      exact = 5;
      break;
    case Opcode::kReduce: case Opcode::kDynamicUpdateSlice:
      at_least = 2;
      break;
    case Opcode::kScatter:
      at_least = 3;
      break;
    case Opcode::kDynamicSlice: case Opcode::kConcatenate: case Opcode::kMap: case Opcode::kSort: case Opcode::kConditional:
    case Opcode::kReduceWindow:
      at_least = 1;
      break;
    default:
      if (is_elementwise_unary(opcode)) exact = 1;
      if (is_elementwise_binary(opcode)) exact = 2;
      break;
  }
  const int64_t count = instruction.operand_count();
  auto operands = [](int64_t n) { return str_cat(n, n == 1 ? " operand" : " operands"); };
  if (exact >= 0 && count != exact)
    return error_at(name_token, str_cat("instruction %", instruction.name(), " has ", operands(count), " but ",
                                        opcode_name(opcode), " needs ", exact));
  if (at_least >= 0 && count < at_least)
    return error_at(name_token, str_cat("instruction %", instruction.name(), " has ", operands(count), " but ",
                                        opcode_name(opcode), " needs at least ", at_least));
  return ok_status();
}

Status Parser::resolve_calls(Module& module, const std::vector<PendingCalls>& pending) {
  for (const PendingCalls& calls : pending) {
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
