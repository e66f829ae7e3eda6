// HLO text printer: modules, computations and instructions in XLA's text format.
//
// The layout of an instruction line follows XLA's HloInstruction::PrintWithCanonicalNameMap:
//
//   %name = shape opcode(operands), <opcode attributes>, <called computations>, sharding=,
//           frontend_attributes=, control-predecessors=, metadata={...}, backend_config=...
//
// Long form (XLA's default dump) prefixes names with '%', prints operand shapes, a program shape
// on each computation and "/*index=5*/" markers in long operand lists. Short form (XLA's
// ShortParsable) prints bare names and no shapes besides the result. Unlike XLA's short form,
// metadata and control predecessors are kept in both forms so that every form parses back to
// an equal module. Attributes insitu does not model (extra_attributes) print verbatim after
// the opcode attributes, where XLA prints most of them; the few XLA prints late (origin,
// statistics, result_accuracy, is_composite) print after control-predecessors.
#include "insitu/ir/printer.h"

#include <cstring>
#include <string_view>

#include "insitu/ir/printer_text.h"
#include "insitu/support/str.h"

namespace insitu {
namespace {

constexpr int64_t kMaxInlineOperandLeaves = 64;

// A tuple element the text wrote as `%t#i` prints that way again, without a line of its own,
// unless it has become something a name must refer to (the root, a control edge).
bool is_written_as_operand_suffix(const Instruction& instruction) {
  return instruction.opcode() == Opcode::kGetTupleElement && instruction.written_as_operand_suffix &&
         instruction.parent() != nullptr && instruction.parent()->root() != &instruction &&
         instruction.control_predecessors().empty() && instruction.control_successors().empty();
}

class InstructionPrinter {
 public:
  InstructionPrinter(const Instruction& instruction, const PrintOptions& options)
      : instruction_(instruction), options_(options) {}

  std::string print() {
    const Instruction& i = instruction_;
    out_ = name(i.name()) + " = " + i.shape().to_string() + " " + std::string(opcode_name(i.opcode())) + "(";
    print_operands();
    out_ += ")";
    print_opcode_attributes();
    print_extra_attributes(/*late=*/false);
    print_called_computations();
    if (!i.sharding.empty()) next("sharding=" + i.sharding);
    if (!i.frontend_attributes.empty())
      next("frontend_attributes=" + frontend_attributes_to_string(i.frontend_attributes));
    if (!i.control_predecessors().empty()) {
      next("control-predecessors={" +
           str_join(i.control_predecessors(), ", ", [&](const Instruction* p) { return name(p->name()); }) + "}");
    }
    print_extra_attributes(/*late=*/true);
    if (options_.print_metadata && (i.has_metadata || !i.metadata.empty())) {
      next("metadata={" + str_join(i.metadata, " ", [](const RawAttribute& a) { return a.key + "=" + a.value; }) +
           "}");
    }
    if (options_.print_backend_config && !i.backend_config.empty()) next("backend_config=" + i.backend_config);
    return std::move(out_);
  }

 private:
  std::string name(std::string_view text) const {
    return options_.long_form ? "%" + std::string(text) : std::string(text);
  }
  void next(const std::string& attribute) {
    out_ += ", ";
    out_ += attribute;
  }

  void print_operands() {
    const Instruction& i = instruction_;
    if (i.opcode() == Opcode::kParameter) {
      out_ += std::to_string(i.parameter_number);
      return;
    }
    if (i.opcode() == Opcode::kConstant) {
      out_ += constant_value_text(i);
      return;
    }
    for (int64_t k = 0; k < i.operand_count(); ++k) {
      if (k > 0) out_ += (options_.long_form && k % 5 == 0) ? str_cat(", /*index=", k, "*/") : std::string(", ");
      const Instruction* operand = i.operand(k);
      // A wide tuple's shape is written once, where it is defined: inline before every reader
      // it would make the text grow with readers x leaves (XLA's parser takes operands without
      // shapes).
      const Shape& shape = operand->shape();
      if (options_.long_form && (!shape.is_tuple() || (shape.tuple_size() <= kMaxInlineOperandLeaves &&
                                                       shape.leaf_count() <= kMaxInlineOperandLeaves)))
        out_ += shape.to_string() + " ";
      out_ += operand_text(*operand);
    }
  }

  // `%t#i` for a tuple element the text wrote that way, else the operand's name.
  std::string operand_text(const Instruction& operand) const {
    if (is_written_as_operand_suffix(operand))
      return str_cat(operand_text(*operand.operand(0)), "#", operand.tuple_index);
    return name(operand.name());
  }

  static std::string constant_value_text(const Instruction& constant) {
    switch (constant.constant_value) {
      case ConstantValue::kElided: return "{...}";
      case ConstantValue::kScalarForArray: {
        Literal first(Shape::array(constant.literal.shape().element_type(), {}));
        std::memcpy(first.untyped_data(), constant.literal.untyped_data(), first.size_bytes());
        return first.values_to_string();
      }
      case ConstantValue::kWritten: break;
    }
    return constant.literal.valid() ? constant.literal.values_to_string() : "{...}";
  }

  // XLA's per-opcode PrintExtraAttributesImpl.
  void print_opcode_attributes() {
    const Instruction& i = instruction_;
    switch (i.opcode()) {
      case Opcode::kGetTupleElement: next(str_cat("index=", i.tuple_index)); break;
      case Opcode::kIota: next(str_cat("iota_dimension=", i.iota_dimension)); break;
      case Opcode::kBroadcast: case Opcode::kTranspose: case Opcode::kReduce: case Opcode::kReverse:
      case Opcode::kConcatenate: case Opcode::kMap:
        next("dimensions=" + int_list_to_string(i.dimensions));
        break;
      case Opcode::kSort:
        next("dimensions=" + int_list_to_string(i.dimensions));
        if (i.is_stable) next("is_stable=true");
        break;
      case Opcode::kSlice: next("slice=" + slice_to_string(i.slice)); break;
      case Opcode::kDynamicSlice: next("dynamic_slice_sizes=" + int_list_to_string(i.dynamic_slice_sizes)); break;
      case Opcode::kPad: next("padding=" + padding_to_string(i.padding)); break;
      case Opcode::kReduceWindow: case Opcode::kSelectAndScatter: case Opcode::kConvolution:
        if (!i.window.empty()) next("window={" + window_to_string(i.window) + "}");
        break;
      case Opcode::kCompare:
        next("direction=" + std::string(comparison_direction_name(i.comparison_direction)));
        if (!i.comparison_order.empty())
          next("order=" + i.comparison_order);
        else if (i.comparison_type != ComparisonType::kDefault)
          next("type=" + std::string(comparison_type_name(i.comparison_type)));
        break;
      case Opcode::kDot:
        next(dot_dimension_numbers_to_string(i.dot_dimension_numbers));
        if (!i.operand_precision.empty()) next("operand_precision={" + str_join(i.operand_precision, ",") + "}");
        break;
      case Opcode::kGather:
        next(gather_dimension_numbers_to_string(i.gather_dimension_numbers));
        next("slice_sizes=" + int_list_to_string(i.dynamic_slice_sizes));
        if (i.indices_are_sorted) next("indices_are_sorted=true");
        break;
      case Opcode::kScatter:
        next(scatter_dimension_numbers_to_string(i.scatter_dimension_numbers));
        if (i.indices_are_sorted) next("indices_are_sorted=true");
        if (i.unique_indices) next("unique_indices=true");
        break;
      case Opcode::kFusion:
        next("kind=" + i.fusion_kind);
        if (!i.fusion_output_to_operand_aliasing.empty())
          next("output_to_operand_aliasing=" + output_operand_aliasing_to_string(i.fusion_output_to_operand_aliasing));
        break;
      case Opcode::kReducePrecision:
        next(str_cat("exponent_bits=", i.exponent_bits));
        next(str_cat("mantissa_bits=", i.mantissa_bits));
        break;
      case Opcode::kCustomCall: print_custom_call_attributes(); break;
      default:
        // Collectives and other unmodelled opcodes may still carry dimensions={..}.
        if (!i.dimensions.empty()) next("dimensions=" + int_list_to_string(i.dimensions));
        break;
    }
  }

  void print_custom_call_attributes() {
    const Instruction& i = instruction_;
    const CustomCallAttributes& call = i.custom_call;
    if (!i.window.empty()) next("window={" + window_to_string(i.window) + "}");
    next("custom_call_target=\"" + c_escape(call.target) + "\"");
    if (call.operand_layout_constraints) {
      next("operand_layout_constraints={" +
           str_join(*call.operand_layout_constraints, ", ", [](const Shape& s) { return s.to_string(); }) + "}");
    }
    if (call.has_side_effect) next("custom_call_has_side_effect=true");
    if (!call.output_to_operand_aliasing.empty())
      next("output_to_operand_aliasing=" + output_operand_aliasing_to_string(call.output_to_operand_aliasing));
    if (!call.schedule.empty()) next("schedule=" + call.schedule);
    if (!call.api_version.empty()) next("api_version=" + call.api_version);
  }

  // XLA's PrintExtraAttributes in kNameOnly mode.
  void print_called_computations() {
    const Instruction& i = instruction_;
    const auto& called = i.called_computations();
    if (called.empty()) return;
    auto names = [&](const std::vector<Computation*>& list) {
      return str_join(list, ", ", [&](const Computation* c) { return name(c->name()); });
    };
    switch (i.opcode()) {
      case Opcode::kWhile:
        next("condition=" + name(called.at(0)->name()));
        if (called.size() > 1) next("body=" + name(called[1]->name()));
        return;
      case Opcode::kSelectAndScatter:
        next("select=" + name(called.at(0)->name()));
        if (called.size() > 1) next("scatter=" + name(called[1]->name()));
        return;
      case Opcode::kConditional:
        if (i.operand_count() > 0 && i.operand(0)->shape().element_type() == PrimitiveType::kPred &&
            called.size() == 2) {
          next("true_computation=" + name(called[0]->name()));
          next("false_computation=" + name(called[1]->name()));
        } else {
          next("branch_computations={" + names(called) + "}");
        }
        return;
      case Opcode::kCall: case Opcode::kMap: case Opcode::kReduceWindow: case Opcode::kReduce:
      case Opcode::kAllReduce: case Opcode::kReduceScatter: case Opcode::kAllReduceStart:
      case Opcode::kScatter: case Opcode::kSort: case Opcode::kScan:
        next("to_apply=" + name(called[0]->name()));
        return;
      case Opcode::kCustomCall:
        next("called_computations={" + names(called) + "}");
        return;
      default:
        next("calls=" + names(called));
        return;
    }
  }

  static bool is_late_attribute(const std::string& key) {
    return key == "origin" || key == "statistics" || key == "result_accuracy" || key == "is_composite";
  }

  void print_extra_attributes(bool late) {
    for (const RawAttribute& attribute : instruction_.extra_attributes) {
      if (is_late_attribute(attribute.key) == late) next(attribute.key + "=" + attribute.value);
    }
  }

  const Instruction& instruction_;
  const PrintOptions& options_;
  std::string out_;
};

// "(p0: f32[2], p1: s32[]) -> f32[2]": XLA's program shape, without layouts.
std::string program_shape_string(const Computation& computation) {
  std::string out = "(";
  bool first = true;
  for (const Instruction* parameter : computation.parameters()) {
    if (parameter == nullptr) continue;
    if (!first) out += ", ";
    first = false;
    out += parameter->name() + ": " + parameter->shape().to_string(false);
  }
  out += ") -> ";
  out += computation.root() ? computation.root()->shape().to_string(false) : "()";
  return out;
}

void print_header(const Module& module, std::string& out) {
  const ModuleConfig& config = module.config();
  out += "HloModule " + module.name();
  if (config.is_scheduled) out += *config.is_scheduled ? ", is_scheduled=true" : ", is_scheduled=false";
  if (!config.input_output_alias.empty())
    out += ", input_output_alias={ " + input_output_alias_to_string(config.input_output_alias) + " }";
  if (!config.buffer_donors.empty()) out += ", buffer_donor={ " + buffer_donors_to_string(config.buffer_donors) + " }";
  if (config.alias_passthrough_params)
    out += str_cat(", alias_passthrough_params=", *config.alias_passthrough_params ? "true" : "false");
  if (config.entry_computation_layout)
    out += ", entry_computation_layout={" + computation_layout_to_string(*config.entry_computation_layout) + "}";
  if (!config.allow_spmd_sharding_propagation_to_parameters.empty())
    out += ", allow_spmd_sharding_propagation_to_parameters=" + config.allow_spmd_sharding_propagation_to_parameters;
  if (!config.allow_spmd_sharding_propagation_to_output.empty())
    out += ", allow_spmd_sharding_propagation_to_output=" + config.allow_spmd_sharding_propagation_to_output;
  if (config.replica_count) out += str_cat(", replica_count=", *config.replica_count);
  if (config.num_partitions) out += str_cat(", num_partitions=", *config.num_partitions);
  if (!config.frontend_attributes.empty())
    out += ", frontend_attributes=" + frontend_attributes_to_string(config.frontend_attributes);
  for (const RawAttribute& attribute : config.extra_attributes) out += ", " + attribute.key + "=" + attribute.value;
  out += "\n";
}

}  // namespace

std::string print_instruction(const Instruction& instruction, const PrintOptions& options) {
  return InstructionPrinter(instruction, options).print();
}

std::string print_computation(const Computation& computation, const PrintOptions& options) {
  std::string out;
  const Module* module = computation.parent();
  if (module != nullptr && module->entry() == &computation) out += "ENTRY ";
  out += options.long_form ? "%" + computation.name() : computation.name();
  out += " ";
  if (options.long_form) out += program_shape_string(computation) + " ";
  out += "{\n";
  for (const Instruction* instruction : computation.instructions()) {
    if (is_written_as_operand_suffix(*instruction)) continue;
    out += "  ";
    if (instruction == computation.root()) out += "ROOT ";
    out += print_instruction(*instruction, options);
    out += "\n";
  }
  out += "}";
  if (!computation.execution_thread().empty())
    out += ", execution_thread=\"" + c_escape(computation.execution_thread()) + "\"";
  return out;
}

std::string print_module(const Module& module, const PrintOptions& options) {
  std::string out;
  print_header(module, out);
  // The stack-frame sections (FileNames, FunctionNames, FileLocations, StackFrames) verbatim,
  // between the header and the computations, where XLA prints them.
  std::string_view sections = module.stack_frame_sections();
  while (!sections.empty() && (sections.back() == '\n' || sections.back() == ' ')) sections.remove_suffix(1);
  while (!sections.empty() && sections.front() == '\n') sections.remove_prefix(1);
  if (!sections.empty() && options.print_metadata) {
    out += "\n";
    out += sections;
    out += "\n";
  }
  for (const Computation* computation : module.computations()) {
    out += "\n";
    out += print_computation(*computation, options);
    out += "\n";
  }
  return out;
}

std::string Instruction::to_string() const { return print_instruction(*this); }

}  // namespace insitu
