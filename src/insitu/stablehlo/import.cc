// VHLO ops into HLO (import.h): the module, its functions, regions and control flow, and the
// reading of the HLO written (import_ops.cc writes each op).
#include "insitu/stablehlo/import.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <set>

#include "insitu/ir/parser.h"
#include "insitu/stablehlo/exported.h"
#include "insitu/stablehlo/import_internal.h"

namespace insitu::stablehlo {
namespace import_internal {

StatusOr<HloText> Importer::run() {
  if (file_.top.operations.size() != 1 || name(file_.top.operations[0]) != "builtin.module")
    return invalid_argument("the artifact's top level is not one builtin.module");
  const Operation& module = file_.top.operations[0];
  std::string module_name = "module";
  if (module.properties) {  // sym_name, sym_visibility (optional attributes: index << 1 | present)
    bytecode::Reader reader(file_.properties[*module.properties], file_.property_offsets[*module.properties]);
    INSITU_ASSIGN_OR_RETURN(uint64_t sym_name, reader.varint());
    if (sym_name & 1) {
      INSITU_ASSIGN_OR_RETURN(module_name, symbols_.string(sym_name >> 1, "the module's name"));
    }
  }
  int64_t partitions = 1, replicas = 1;
  if (module.attributes) {
    INSITU_ASSIGN_OR_RETURN(const Attribute* dictionary, symbols_.attribute(*module.attributes));
    for (size_t i = 0; i + 1 < dictionary->elements.size(); i += 2) {
      INSITU_ASSIGN_OR_RETURN(std::string key, symbols_.string(dictionary->elements[i], "a module attribute's name"));
      if (key == "mhlo.num_partitions") {
        INSITU_ASSIGN_OR_RETURN(partitions, symbols_.integer(dictionary->elements[i + 1], key));
      }
      if (key == "mhlo.num_replicas") {
        INSITU_ASSIGN_OR_RETURN(replicas, symbols_.integer(dictionary->elements[i + 1], key));
      }
    }
  }
  const Block* body = module.regions.empty() || module.regions[0].blocks.empty() ? nullptr : &module.regions[0].blocks[0];
  if (body == nullptr) return error(module, "a module without a body");
  // every function's name first: calls may name a function defined after them
  for (const Operation& op : body->operations) {
    if (name(op) != "vhlo.func_v1") continue;
    INSITU_ASSIGN_OR_RETURN(std::vector<uint64_t> properties, this->properties(op, 5));
    INSITU_ASSIGN_OR_RETURN(std::string symbol, symbols_.string(properties[3], "a function's name"));
    functions_[symbol] = fresh(symbol);
  }
  for (const Operation& op : body->operations) {
    const std::string op_name = name(op);
    if (op_name == "vhlo.func_v1") {
      INSITU_RETURN_IF_ERROR(function(op));
    } else if (op_name.starts_with("sdy.")) {
      continue;  // a Shardy mesh: sharding metadata, nothing to run on one device
    } else {
      return error(op, str_cat(op_name, " at the module's top level is not read"));
    }
  }
  if (entry_.empty()) return error(module, "the artifact has no public function \"main\"");
  std::string header = str_cat("HloModule ", sanitize(module_name));
  if (!aliases_.empty()) header += str_cat(", input_output_alias={ ", str_join(aliases_, ", "), " }");
  if (!donors_.empty()) header += str_cat(", buffer_donor={ ", str_join(donors_, ", "), " }");
  if (replicas != 1) header += str_cat(", replica_count=", replicas);
  if (partitions != 1) header += str_cat(", num_partitions=", partitions);
  HloText result;
  result.text = header + "\n\n" + str_join(computations_, "\n");
  result.constants = std::move(constants_);
  return result;
}

std::string Importer::name(const Operation& op) const { return bytecode::operation_name(file_, op); }

Status Importer::error(const Operation& op, std::string message) {
  const std::string where = symbols_.source_location(op.location);
  if (!file_.text.empty()) return bytecode::located(file_, op.offset, std::move(message));
  return invalid_argument(str_cat("byte ", op.offset, where.empty() ? "" : str_cat(" (", where, ")"), ": ", message));
}

std::string Importer::fresh(std::string_view base) { return str_cat(sanitize(base), ".", next_++); }

std::string Importer::sanitize(std::string_view text) {
  std::string out;
  for (char c : text) out += std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-' ? c : '_';
  return out.empty() ? "x" : out;
}

StatusOr<std::vector<uint64_t>> Importer::properties(const Operation& op, size_t count) {
  std::vector<uint64_t> indices;
  if (op.properties) {
    bytecode::Reader reader(file_.properties[*op.properties], file_.property_offsets[*op.properties]);
    while (!reader.done()) {
      INSITU_ASSIGN_OR_RETURN(uint64_t index, reader.varint());
      indices.push_back(index);
    }
  }
  if (indices.size() != count)
    return error(op, str_cat(name(op), " has ", indices.size(), " properties where ", count, " are read"));
  return indices;
}

StatusOr<std::string> Importer::shape_text(uint64_t type, const Operation& op) {
  StatusOr<Shape> shape = symbols_.shape(type, name(op));
  if (!shape.ok()) return error(op, shape.status().message());
  return shape->to_string();
}

StatusOr<std::string> Importer::value(Scope& scope, const Operation& op, const ValueRef& operand) {
  auto found = scope.names.find(Scope::key(operand));
  if (found != scope.names.end()) return found->second;
  // a constant defined outside the region (shared by CSE): the computation gets its own copy
  if (operand.operation != nullptr && name(*operand.operation) == "vhlo.constant_v1") {
    // (a constant has no operands: one that names some would recurse here, through itself)
    if (!operand.operation->operands.empty()) return error(*operand.operation, "a constant with operands");
    INSITU_RETURN_IF_ERROR(emit(scope, *operand.operation));
    return scope.names.at(Scope::key(operand));
  }
  return error(op, str_cat(name(op), " reads a value from outside its region where HLO cannot (an applied computation)"));
}

StatusOr<std::vector<std::string>> Importer::operands(Scope& scope, const Operation& op, size_t from, size_t to) {
  std::vector<std::string> names;
  for (size_t i = from; i < std::min(to, op.operands.size()); ++i) {
    INSITU_ASSIGN_OR_RETURN(std::string operand, value(scope, op, op.operands[i]));
    names.push_back(std::move(operand));
  }
  return names;
}

Status Importer::define(Scope& scope, const Operation& op, const std::string& expression,
              std::vector<std::string> shapes) {
  if (shapes.empty()) {
    for (uint64_t type : op.result_types) {
      INSITU_ASSIGN_OR_RETURN(std::string shape, shape_text(type, op));
      shapes.push_back(std::move(shape));
    }
  }
  // instructions are named after the op without its VHLO version ("add_v1" -> "add"), so a
  // module read as text and as bytecode of either version names them alike
  std::string base = name(op).substr(name(op).find('.') + 1);
  if (const size_t v = base.rfind("_v"); v != std::string::npos && v + 2 < base.size() &&
      base.find_first_not_of("0123456789", v + 2) == std::string::npos)
    base.resize(v);
  if (shapes.size() == 1) {
    const std::string result = fresh(base);
    scope.lines.push_back(str_cat(result, " = ", shapes[0], " ", expression));
    scope.names[{&op, 0}] = result;
    return ok_status();
  }
  const std::string tuple = fresh(base);
  scope.lines.push_back(str_cat(tuple, " = (", str_join(shapes, ", "), ") ", expression));
  for (size_t i = 0; i < shapes.size(); ++i) {
    const std::string element = fresh(base);
    scope.lines.push_back(str_cat(element, " = ", shapes[i], " get-tuple-element(", tuple, "), index=", i));
    scope.names[{&op, i}] = element;
  }
  return ok_status();
}

StatusOr<std::string> Importer::applier(const Operation& op, const Region& region, std::string_view base) {
  if (region.blocks.size() != 1) return error(op, str_cat(name(op), ": a region of ", region.blocks.size(), " blocks"));
  const Block& block = region.blocks[0];
  Scope scope;
  for (uint64_t i = 0; i < block.argument_types.size(); ++i) {
    INSITU_ASSIGN_OR_RETURN(std::string shape, shape_text(block.argument_types[i], op));
    const std::string parameter = fresh("p");
    scope.lines.push_back(str_cat(parameter, " = ", shape, " parameter(", i, ")"));
    scope.names[{&block, i}] = parameter;
  }
  return finish(scope, block, base, /*tuple_result=*/false);
}

StatusOr<std::string> Importer::finish(Scope& scope, const Block& block, std::string_view base, bool tuple_result,
                             const std::vector<std::string>& extra_results) {
  if (block.operations.empty() || name(block.operations.back()) != "vhlo.return_v1")
    return invalid_argument(str_cat("a region that does not end in vhlo.return_v1 (", base, ")"));
  for (size_t i = 0; i + 1 < block.operations.size(); ++i) INSITU_RETURN_IF_ERROR(emit(scope, block.operations[i]));
  const Operation& ret = block.operations.back();
  INSITU_ASSIGN_OR_RETURN(std::vector<std::string> results, operands(scope, ret));
  results.insert(results.end(), extra_results.begin(), extra_results.end());
  std::string root;
  if (results.size() == 1 && !tuple_result) {
    root = results[0];  // its line becomes the ROOT (a parameter's too)
  } else {
    root = fresh("tuple");
    scope.lines.push_back(str_cat(root, " = tuple(", str_join(results, ", "), ")"));
  }
  const std::string computation = fresh(base);
  std::string text = str_cat(computation, " {\n");
  for (const std::string& line : scope.lines)
    text += str_cat("  ", line.starts_with(root + " = ") ? "ROOT " : "", line, "\n");
  text += "}\n";
  computations_.push_back(std::move(text));
  return computation;
}

void Importer::captures(const Region& region, std::vector<ValueRef>& out) {
  std::set<const void*> inside;
  std::vector<const Region*> stack = {&region};
  while (!stack.empty()) {
    const Region* current = stack.back();
    stack.pop_back();
    for (const Block& block : current->blocks) {
      inside.insert(&block);
      for (const Operation& op : block.operations) {
        inside.insert(&op);
        for (const Region& nested : op.regions) stack.push_back(&nested);
      }
    }
  }
  std::set<std::pair<const void*, uint64_t>> seen;
  stack = {&region};
  while (!stack.empty()) {
    const Region* current = stack.back();
    stack.pop_back();
    for (const Block& block : current->blocks) {
      for (const Operation& op : block.operations) {
        for (const ValueRef& operand : op.operands) {
          const void* definer = operand.operation != nullptr ? static_cast<const void*>(operand.operation)
                                                             : static_cast<const void*>(operand.block);
          // a constant is cloned into the computation (value()), not passed in
          const bool constant = operand.operation != nullptr && name(*operand.operation) == "vhlo.constant_v1";
          if (!inside.count(definer) && !constant && seen.insert(Scope::key(operand)).second) out.push_back(operand);
        }
        for (const Region& nested : op.regions) stack.push_back(&nested);
      }
    }
  }
}

StatusOr<std::string> Importer::tuple_region(const Operation& op, const Region& region, std::string_view base,
                                   const std::vector<std::string>& parameter_shapes, const std::vector<ValueRef>& captured,
                                   bool tuple_result, bool pass_captures_through) {
  if (region.blocks.size() != 1) return error(op, str_cat(name(op), ": a region of ", region.blocks.size(), " blocks"));
  const Block& block = region.blocks[0];
  if (block.argument_types.size() + captured.size() != parameter_shapes.size())
    return error(op, str_cat(name(op), ": a region of ", block.argument_types.size(), " block arguments for ",
                             parameter_shapes.size() - captured.size(), " values"));
  Scope scope;
  const std::string parameter = fresh("state");
  scope.lines.push_back(str_cat(parameter, " = (", str_join(parameter_shapes, ", "), ") parameter(0)"));
  const size_t arguments = block.argument_types.size();
  std::vector<std::string> passed;
  for (size_t i = 0; i < parameter_shapes.size(); ++i) {
    const std::string element = fresh("element");
    scope.lines.push_back(str_cat(element, " = ", parameter_shapes[i], " get-tuple-element(", parameter, "), index=", i));
    if (i < arguments) scope.names[{&block, i}] = element;
    else scope.names[Scope::key(captured[i - arguments])] = element, passed.push_back(element);
  }
  return finish(scope, block, base, tuple_result, pass_captures_through ? passed : std::vector<std::string>{});
}

Status Importer::function(const Operation& op) {
  INSITU_ASSIGN_OR_RETURN(std::vector<uint64_t> properties, this->properties(op, 5));
  INSITU_ASSIGN_OR_RETURN(std::string symbol, symbols_.string(properties[3], "a function's name"));
  INSITU_ASSIGN_OR_RETURN(std::string visibility, symbols_.string(properties[4], "a function's visibility"));
  if (op.regions.size() != 1 || op.regions[0].blocks.size() != 1) return error(op, "a function body of other than one block");
  const Block& block = op.regions[0].blocks[0];
  const bool entry = symbol == "main" && visibility != "private";
  Scope scope;
  for (uint64_t i = 0; i < block.argument_types.size(); ++i) {
    INSITU_ASSIGN_OR_RETURN(std::string shape, shape_text(block.argument_types[i], op));
    const std::string parameter = fresh(str_cat("arg", i));
    scope.lines.push_back(str_cat(parameter, " = ", shape, " parameter(", i, ")"));
    scope.names[{&block, i}] = parameter;
  }
  if (entry) {
    size_t results = 0;
    INSITU_ASSIGN_OR_RETURN(const Attribute* type, symbols_.attribute(properties[1]));
    if (type->kind == Attribute::Kind::kType) {
      INSITU_ASSIGN_OR_RETURN(const Type* function_type, symbols_.type(type->type));
      results = function_type->outputs.size();
    }
    INSITU_RETURN_IF_ERROR(donation(op, properties[0], results));
  }
  INSITU_ASSIGN_OR_RETURN(std::string computation, finish(scope, block, symbol, false));
  // the function's computation carries its symbol's name (calls refer to it)
  std::string& text = computations_.back();
  const std::string wanted = functions_.at(symbol);
  text.replace(0, computation.size(), (entry ? "ENTRY " : "") + wanted);
  if (entry) entry_ = wanted;
  return ok_status();
}

Status Importer::donation(const Operation& op, uint64_t arg_attrs, size_t results) {
  INSITU_ASSIGN_OR_RETURN(const Attribute* list, symbols_.attribute(arg_attrs));
  if (list->kind != Attribute::Kind::kArray) return error(op, "arg_attrs is not an array");
  for (size_t argument = 0; argument < list->elements.size(); ++argument) {
    INSITU_ASSIGN_OR_RETURN(const Attribute* dictionary, symbols_.attribute(list->elements[argument]));
    if (dictionary->kind != Attribute::Kind::kDictionary) continue;
    for (size_t i = 0; i + 1 < dictionary->elements.size(); i += 2) {
      StatusOr<std::string> key = symbols_.string(dictionary->elements[i], "an argument attribute's name");
      if (!key.ok()) continue;
      if (*key == "tf.aliasing_output") {
        INSITU_ASSIGN_OR_RETURN(int64_t output, symbols_.integer(dictionary->elements[i + 1], *key));
        if (output < 0 || static_cast<size_t>(output) >= std::max<size_t>(results, 1))
          return error(op, str_cat("argument ", argument, " aliases output ", output, " of ", results));
        aliases_.push_back(str_cat(results == 1 ? "{}" : str_cat("{", output, "}"), ": (", argument, ", {}, may-alias)"));
      } else if (*key == "jax.buffer_donor") {
        INSITU_ASSIGN_OR_RETURN(int64_t donor, symbols_.integer(dictionary->elements[i + 1], *key));
        if (donor != 0) donors_.push_back(str_cat("(", argument, ", {})"));
      }
    }
  }
  return ok_status();
}

uint64_t Importer::type_of(const ValueRef& value) {
  return value.operation != nullptr ? value.operation->result_types.at(value.index)
                                    : value.block->argument_types.at(value.index);
}

Status Importer::while_loop(Scope& scope, const Operation& op, const std::vector<std::string>& names) {
  if (op.regions.size() != 2) return error(op, "a while without its condition and body");
  std::vector<ValueRef> captured;
  captures(op.regions[0], captured);
  captures(op.regions[1], captured);
  // a value both regions read is passed once
  std::set<std::pair<const void*, uint64_t>> seen;
  std::erase_if(captured, [&](const ValueRef& value) { return !seen.insert(Scope::key(value)).second; });
  std::vector<std::string> shapes, state = names;
  for (uint64_t type : op.result_types) {
    INSITU_ASSIGN_OR_RETURN(std::string shape, shape_text(type, op));
    shapes.push_back(std::move(shape));
  }
  for (const ValueRef& value : captured) {
    INSITU_ASSIGN_OR_RETURN(std::string name, this->value(scope, op, value));
    state.push_back(name);
    INSITU_ASSIGN_OR_RETURN(std::string shape, shape_text(type_of(value), op));
    shapes.push_back(std::move(shape));
  }
  INSITU_ASSIGN_OR_RETURN(std::string condition, tuple_region(op, op.regions[0], "condition", shapes, captured, false, false));
  INSITU_ASSIGN_OR_RETURN(std::string body, tuple_region(op, op.regions[1], "body", shapes, captured, true, true));
  const std::string initial = fresh("while_state");
  const std::string tuple_shape = str_cat("(", str_join(shapes, ", "), ")");
  scope.lines.push_back(str_cat(initial, " = ", tuple_shape, " tuple(", str_join(state, ", "), ")"));
  const std::string loop = fresh("while");
  scope.lines.push_back(str_cat(loop, " = ", tuple_shape, " while(", initial, "), condition=", condition, ", body=", body));
  for (size_t i = 0; i < op.result_types.size(); ++i) {
    const std::string element = fresh("while_result");
    scope.lines.push_back(str_cat(element, " = ", shapes[i], " get-tuple-element(", loop, "), index=", i));
    scope.names[{&op, i}] = element;
  }
  return ok_status();
}

Status Importer::branches(Scope& scope, const Operation& op, const std::vector<std::string>& names) {
  if (names.size() != 1 || op.regions.empty()) return error(op, "a branch op without its selector or branches");
  std::vector<std::string> computations, operands;
  for (size_t b = 0; b < op.regions.size(); ++b) {
    std::vector<ValueRef> captured;
    captures(op.regions[b], captured);
    std::vector<std::string> shapes, values;
    for (const ValueRef& value : captured) {
      INSITU_ASSIGN_OR_RETURN(std::string name, this->value(scope, op, value));
      values.push_back(name);
      INSITU_ASSIGN_OR_RETURN(std::string shape, shape_text(type_of(value), op));
      shapes.push_back(std::move(shape));
    }
    INSITU_ASSIGN_OR_RETURN(std::string computation,
                            tuple_region(op, op.regions[b], "branch", shapes, captured, op.result_types.size() != 1, false));
    computations.push_back(computation);
    const std::string operand = fresh("branch_operand");
    scope.lines.push_back(str_cat(operand, " = (", str_join(shapes, ", "), ") tuple(", str_join(values, ", "), ")"));
    operands.push_back(operand);
  }
  const std::string selector = names[0];
  if (name(op) == "vhlo.if_v1") {
    if (op.regions.size() != 2) return error(op, "an if without two branches");
    return define(scope, op, str_cat("conditional(", selector, ", ", operands[0], ", ", operands[1],
                                     "), true_computation=", computations[0], ", false_computation=", computations[1]));
  }
  return define(scope, op, str_cat("conditional(", selector, ", ", str_join(operands, ", "), "), branch_computations={",
                                   str_join(computations, ", "), "}"));
}

}  // namespace import_internal


StatusOr<HloText> to_hlo_text(const bytecode::File& file) { return import_internal::Importer(file).run(); }

bool is_stablehlo(std::span<const uint8_t> bytes) {
  return bytecode::is_bytecode(bytes) || is_exported(bytes) || is_stablehlo_text(bytes);
}

namespace {

// Each computation's instructions in the order XLA prints HLO (what the HLO path reads): from
// each instruction no one reads (the root, dead code), in order, its operands depth first, then
// it. StableHLO keeps the jaxpr's order, where a backward pass's `1 - t` sits right beside the
// forward's `t`; passes that measure distances in program order (fusion's recompute of a value
// read far away) then see the program as they see it from HLO.
void order_as_xla_prints(Computation& computation) {
  std::vector<Instruction*> order;
  std::set<const Instruction*> placed;
  for (Instruction* sink : computation.instructions()) {
    if (!sink->users().empty() || !sink->control_successors().empty() || placed.count(sink)) continue;
    std::vector<std::pair<Instruction*, size_t>> stack = {{sink, 0}};
    placed.insert(sink);
    while (!stack.empty()) {
      auto& [instruction, next] = stack.back();
      const size_t operands = static_cast<size_t>(instruction->operand_count());
      if (next < operands + instruction->control_predecessors().size()) {
        Instruction* before = next < operands ? instruction->operand(static_cast<int64_t>(next))
                                              : instruction->control_predecessors()[next - operands];
        ++next;
        if (before->parent() == &computation && placed.insert(before).second) stack.emplace_back(before, 0);
        continue;
      }
      order.push_back(instruction);
      stack.pop_back();
    }
  }
  // (a parameter no one reads is a sink too; every instruction is reached from one)
  if (order.size() == static_cast<size_t>(computation.instruction_count())) computation.set_instruction_order(order);
}

// The HLO written parsed into a module, the constants' bytes copied in.
StatusOr<std::unique_ptr<Module>> module_of(const HloText& hlo) {
  StatusOr<std::unique_ptr<Module>> module = parse_module(hlo.text);
  if (!module.ok()) {
    // the ops' types and attributes do not fit together (a hostile or corrupt file, or an op the
    // reader maps wrongly): name the HLO line they became
    std::string line;
    const SourceLocation location = module.status().location();
    if (location.valid()) {
      size_t start = 0;
      for (int i = 1; i < location.line && start < hlo.text.size(); ++i) {
        const size_t end = hlo.text.find('\n', start);
        start = end == std::string::npos ? hlo.text.size() : end + 1;
      }
      if (start < hlo.text.size()) line = hlo.text.substr(start, hlo.text.find('\n', start) - start);
    }
    return invalid_argument(str_cat("the artifact's ops do not form a valid module: ", module.status().message(),
                                    line.empty() ? "" : str_cat(" (in the HLO they become: ", line, ")")));
  }
  std::map<std::string, const HloText::Constant*> constants;
  for (const HloText::Constant& constant : hlo.constants) constants[constant.name] = &constant;
  for (Computation* computation : (*module)->computations()) {
    for (Instruction* instruction : computation->instructions()) {
      // the parser's line:col point into the HLO written here, not into the file: errors name
      // the instruction instead
      instruction->set_location({});
      auto found = constants.find(instruction->name());
      if (found == constants.end()) continue;
      // the parser made the placeholder's storage (constant(0): zeros of the shape); fill it
      const std::span<const uint8_t> bytes = found->second->bytes();
      Literal& literal = instruction->literal;
      if (instruction->opcode() != Opcode::kConstant || static_cast<size_t>(literal.size_bytes()) != bytes.size())
        return invalid_argument(str_cat("constant ", instruction->name(), " does not hold its ", bytes.size(), " bytes"));
      if (!bytes.empty()) std::memcpy(literal.untyped_data(), bytes.data(), bytes.size());
      instruction->constant_value = ConstantValue::kWritten;
    }
  }
  for (Computation* computation : (*module)->computations()) order_as_xla_prints(*computation);
  return module;
}

}  // namespace

StatusOr<std::unique_ptr<Module>> read_vhlo(std::span<const uint8_t> bytes) {
  if (!bytecode::is_bytecode(bytes) && is_stablehlo_text(bytes)) {
    const std::string_view text(reinterpret_cast<const char*>(bytes.data()), bytes.size());
    INSITU_ASSIGN_OR_RETURN(std::unique_ptr<TextFile> file, read_text(text));
    INSITU_ASSIGN_OR_RETURN(HloText hlo, import_internal::Importer(*file).run());
    return module_of(hlo);
  }
  if (!bytecode::is_bytecode(bytes) && is_exported(bytes)) {
    INSITU_ASSIGN_OR_RETURN(std::span<const uint8_t> module, read_exported(bytes));
    return read_vhlo(module);  // (offsets in errors are then the module's own)
  }
  INSITU_ASSIGN_OR_RETURN(bytecode::File file, bytecode::read_file(bytes));
  INSITU_ASSIGN_OR_RETURN(HloText hlo, to_hlo_text(file));
  return module_of(hlo);
}

}  // namespace insitu::stablehlo

