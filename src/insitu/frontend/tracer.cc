// Tracer and Tensor (tracer.h).
#include "insitu/frontend/tracer.h"

#include <algorithm>

#include "insitu/ir/shape_inference.h"
#include "insitu/ir/verifier.h"
#include "insitu/support/str.h"

namespace insitu {
namespace {

thread_local Tracer* active_tracer = nullptr;

std::string quote(std::string_view text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

}  // namespace

// --- Tensor ---

Instruction* Tensor::value() const {
  INSITU_CHECK(valid()) << "use of an empty Tensor (default-constructed, or produced by a failed op)";
  return slot_->value;
}

Tensor Tensor::from_instruction(Tracer* tracer, Instruction* value, int64_t parameter) {
  Tensor tensor;
  tensor.slot_ = std::make_shared<Slot>(Slot{tracer, value, parameter});
  return tensor;
}

void Tensor::rebind(Instruction* new_value) const {
  INSITU_CHECK(slot_ != nullptr) << "rebinding an empty Tensor";
  slot_->value = new_value;
}

Tensor Tensor::clone() const {
  if (!valid()) return Tensor();
  return from_instruction(slot_->tracer, slot_->value);
}

void Tensor::assign(const Tensor& new_value) {
  if (!valid() || !new_value.valid()) {
    if (Tracer* tracer = Tracer::active()) tracer->record_error(invalid_argument("assign on an empty Tensor"));
    return;
  }
  if (!shape().compatible(new_value.shape())) {
    tracer()->record_error(invalid_argument(str_cat("assign: the new value ", new_value.shape().to_string(false),
                                                    " does not match the tensor ", shape().to_string(false),
                                                    " (%", value()->name(), "); an in-place update keeps the shape")));
    return;
  }
  rebind(new_value.value());
}

// --- Tracer ---

Tracer::Tracer(std::string function_name, const CustomCallTable* custom_calls)
    : function_name_(std::move(function_name)), custom_calls_(custom_calls) {
  module_ = std::make_unique<Module>(str_cat("jit_", function_name_));
  pending_.push_back(std::make_unique<Computation>(str_cat("main.", function_name_)));
  stack_.push_back({pending_.back().get(), str_cat("jit(", function_name_, ")")});
  previous_active_ = active_tracer;
  active_tracer = this;
}

Tracer::~Tracer() { active_tracer = previous_active_; }

Tracer* Tracer::active() { return active_tracer; }

std::string Tracer::unique_name(std::string_view base) { return names_.unique(std::string(base)); }

Tensor Tracer::add_parameter(const Shape& shape, std::string name) {
  INSITU_CHECK(stack_.size() == 1) << "entry parameters are added before tracing nested computations";
  const int64_t number = static_cast<int64_t>(parameters_.size());
  auto parameter = std::make_unique<Instruction>(Opcode::kParameter,
                                                 unique_name(name.empty() ? str_cat("p", number) : name), shape);
  parameter->parameter_number = number;
  Instruction* raw = emit(std::move(parameter), /*infer=*/false);
  parameters_.push_back(Tensor::from_instruction(this, raw, number));
  return parameters_.back();
}

Instruction* Tracer::emit(std::unique_ptr<Instruction> instruction, bool infer) {
  Computation* computation = current_computation();
  for (Instruction* operand : instruction->operands()) {
    if (operand->parent() != computation) {
      record_error(invalid_argument(str_cat(
          "%", operand->name(), " (computed in ", operand->parent()->name(), ") is used by ",
          opcode_name(instruction->opcode()), " inside ", computation->name(),
          "; a loop body or branch sees only its own arguments: pass the value through the carry or operands")));
    }
  }
  if (instruction->opcode() != Opcode::kParameter) {
    instruction->metadata.push_back({"op_name", quote(str_cat(stack_.back().scope, "/", opcode_name(instruction->opcode())))});
    instruction->has_metadata = true;
  }
  if (infer && status_.ok()) {
    StatusOr<Shape> shape = infer_shape(*instruction);
    if (shape.ok()) {
      instruction->set_shape(*shape);
    } else {
      record_error(shape.status().with_context(str_cat("tracing ", opcode_name(instruction->opcode()), " in ",
                                                       stack_.back().scope)));
    }
  }
  return computation->add_instruction(std::move(instruction));
}

Computation* Tracer::begin_computation(std::string_view base_name, std::string_view scope) {
  pending_.push_back(std::make_unique<Computation>(unique_name(base_name)));
  stack_.push_back({pending_.back().get(), str_cat(stack_.back().scope, "/", scope)});
  return pending_.back().get();
}

Computation* Tracer::end_computation(Instruction* root) {
  INSITU_CHECK(stack_.size() > 1) << "end_computation without begin_computation";
  Computation* computation = stack_.back().computation;
  INSITU_CHECK(pending_.back().get() == computation) << "nested computations end in order";
  computation->set_root(root);
  stack_.pop_back();
  module_->add_computation(std::move(pending_.back()));
  pending_.pop_back();
  return computation;
}

Computation* Tracer::scalar_reducer(Opcode opcode, PrimitiveType type) {
  for (const auto& [key, computation] : reducers_)
    if (key.first == opcode && key.second == type) return computation;
  const std::string_view name = opcode_name(opcode);
  begin_computation(str_cat(name, "_", primitive_type_name(type)), name);
  const Shape scalar = Shape::scalar(type);
  auto lhs = std::make_unique<Instruction>(Opcode::kParameter, unique_name("lhs"), scalar);
  lhs->parameter_number = 0;
  auto rhs = std::make_unique<Instruction>(Opcode::kParameter, unique_name("rhs"), scalar);
  rhs->parameter_number = 1;
  Instruction* a = emit(std::move(lhs), false);
  Instruction* b = emit(std::move(rhs), false);
  auto combine = std::make_unique<Instruction>(opcode, unique_name(name), scalar);
  combine->append_operand(a);
  combine->append_operand(b);
  Computation* computation = end_computation(emit(std::move(combine)));
  reducers_.push_back({{opcode, type}, computation});
  return computation;
}

void Tracer::record_error(Status status) {
  if (status_.ok() && !status.ok()) status_ = std::move(status);
}

StatusOr<TracedFunction> Tracer::finish(const std::vector<Tensor>& outputs) {
  INSITU_CHECK(stack_.size() == 1) << "finish() inside a nested computation";
  if (!status_.ok()) return status_;
  std::vector<Instruction*> results;
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (!outputs[i].valid()) return invalid_argument(str_cat("output ", i, " of ", function_name_, " is an empty Tensor"));
    if (!outputs[i].shape().is_array())
      return invalid_argument(str_cat("output ", i, " of ", function_name_, " is not an array"));
    results.push_back(outputs[i].value());
  }
  TracedFunction traced;
  traced.output_count = static_cast<int64_t>(results.size());
  std::vector<InputOutputAlias> write_backs;
  for (const Tensor& parameter : parameters_) {
    Instruction* original = current_computation()->parameter(parameter.parameter_number());
    if (parameter.value() == original) continue;
    // The function mutated this argument: its final value is written back into it.
    write_backs.push_back({{static_cast<int64_t>(results.size())}, parameter.parameter_number(), {}, AliasKind::kMayAlias});
    traced.mutated_parameters.push_back(parameter.parameter_number());
    results.push_back(parameter.value());
  }
  std::vector<Shape> shapes;
  for (Instruction* result : results) shapes.push_back(result->shape());
  auto tuple = std::make_unique<Instruction>(Opcode::kTuple, unique_name("tuple"), Shape::tuple(shapes));
  for (Instruction* result : results) tuple->append_operand(result);
  Instruction* root = emit(std::move(tuple));
  if (!status_.ok()) return status_;
  Computation* entry = pending_.back().get();
  entry->set_root(root);
  module_->add_computation(std::move(pending_.back()));
  pending_.pop_back();
  module_->set_entry(entry);
  module_->config().input_output_alias = std::move(write_backs);
  INSITU_RETURN_IF_ERROR(verify_module(*module_).with_context(str_cat("the module traced from ", function_name_)));
  traced.module = std::move(module_);
  return traced;
}

}  // namespace insitu
