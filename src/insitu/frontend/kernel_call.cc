// call_kernel and call_kernel_mutating (kernel_call.h).
#include "insitu/frontend/kernel_call.h"

#include <algorithm>

#include "insitu/frontend/ops_internal.h"

namespace insitu {
namespace {

using frontend_internal::tracer_for;

// The signature of `name` in the tracer's table; an absent target or one without a
// signature is recorded as the trace's error.
std::optional<CustomCallSignature> find_signature(Tracer* tracer, std::string_view name) {
  const CustomCallTarget* target = tracer->custom_calls() ? tracer->custom_calls()->find(name) : nullptr;
  if (target == nullptr || !target->signature) {
    tracer->record_error(not_found(str_cat("call_kernel: no kernel named \"", name, "\" is ",
                                           target ? "registered with a signature" : "registered",
                                           " (register_kernel, a plugin, or a CustomCallTable entry with a "
                                           "signature, passed in JitOptions::custom_calls)")));
    return std::nullopt;
  }
  return *target->signature;
}

}  // namespace

std::vector<Tensor> call_kernel(std::string_view name, const std::vector<Tensor>& inputs,
                                const std::vector<Shape>& out_shapes) {
  Tracer* tracer = tracer_for(name, inputs);
  if (tracer == nullptr) return {};
  std::optional<CustomCallSignature> signature = find_signature(tracer, name);
  if (!signature) return {};
  std::vector<Shape> shapes = !out_shapes.empty() ? out_shapes : signature->out_shapes;
  if (shapes.empty()) {
    shapes.resize(signature->output_count);
    std::vector<bool> known(shapes.size(), false);
    for (const auto& [input, output] : signature->input_output_aliases) {
      if (input < static_cast<int64_t>(inputs.size()) && output < static_cast<int64_t>(shapes.size())) {
        shapes[output] = inputs[input].shape();
        known[output] = true;
      }
    }
    for (size_t o = 0; o < shapes.size(); ++o) {
      if (!known[o]) {
        tracer->record_error(invalid_argument(str_cat("call_kernel(\"", name, "\"): output ", o,
                                                      " is not aliased to an input and the kernel declares no out_shapes; "
                                                      "pass out_shapes at the call")));
        return {};
      }
    }
  }
  const bool single = shapes.size() == 1;
  auto call = std::make_unique<Instruction>(Opcode::kCustomCall, tracer->unique_name("custom-call"),
                                            single ? shapes[0] : Shape::tuple(shapes));
  call->custom_call.target = std::string(name);
  for (const Tensor& input : inputs) call->append_operand(input.value());
  for (const auto& [input, output] : signature->input_output_aliases) {
    if (input >= static_cast<int64_t>(inputs.size()) || output >= static_cast<int64_t>(shapes.size())) {
      tracer->record_error(invalid_argument(str_cat("call_kernel(\"", name, "\"): the kernel aliases input ", input,
                                                    " to output ", output, " but the call has ", inputs.size(),
                                                    " inputs and ", shapes.size(), " outputs")));
      return {};
    }
    if (!inputs[input].shape().compatible(shapes[output])) {
      tracer->record_error(invalid_argument(str_cat("call_kernel(\"", name, "\"): input ", input, " ",
                                                    inputs[input].shape().to_string(false), " is aliased to output ",
                                                    output, " ", shapes[output].to_string(false),
                                                    "; an aliased pair must have one shape and dtype")));
      return {};
    }
    call->custom_call.output_to_operand_aliasing.push_back(
        {single ? ShapeIndex{} : ShapeIndex{output}, input, ShapeIndex{}});
  }
  Instruction* raw = tracer->emit(std::move(call));
  if (single) return {Tensor::from_instruction(tracer, raw)};
  std::vector<Tensor> outputs;
  for (int64_t o = 0; o < static_cast<int64_t>(shapes.size()); ++o) {
    auto element = std::make_unique<Instruction>(Opcode::kGetTupleElement, tracer->unique_name("get-tuple-element"), shapes[o]);
    element->append_operand(raw);
    element->tuple_index = o;
    outputs.push_back(Tensor::from_instruction(tracer, tracer->emit(std::move(element))));
  }
  return outputs;
}

std::vector<Tensor> call_kernel_mutating(std::string_view name, const std::vector<Tensor>& inputs,
                                         std::optional<std::vector<int64_t>> mutates_args) {
  Tracer* tracer = tracer_for(name, inputs);
  if (tracer == nullptr) return {};
  std::optional<CustomCallSignature> signature = find_signature(tracer, name);
  if (!signature) return {};
  if (mutates_args) {
    for (int64_t argument : *mutates_args) {
      bool aliased = std::any_of(signature->input_output_aliases.begin(), signature->input_output_aliases.end(),
                                 [&](const auto& alias) { return alias.first == argument; });
      if (!aliased) {
        tracer->record_error(invalid_argument(str_cat(
            "call_kernel_mutating(\"", name, "\"): input ", argument, " is declared mutated but the kernel does not alias it "
            "to an output (input_output_aliases), so its writes would be lost; add the alias to the kernel")));
        return {};
      }
    }
    for (const auto& alias : signature->input_output_aliases) {
      if (std::find(mutates_args->begin(), mutates_args->end(), alias.first) == mutates_args->end()) {
        tracer->record_error(invalid_argument(str_cat(
            "call_kernel_mutating(\"", name, "\"): the kernel writes input ", alias.first,
            " in place (input_output_aliases) but mutates_args does not declare it; declare every mutated input")));
        return {};
      }
    }
  }
  std::vector<Tensor> outputs = call_kernel(name, inputs);
  if (outputs.empty() || !signature) return {};
  std::vector<bool> aliased_output(outputs.size(), false);
  for (const auto& [input, output] : signature->input_output_aliases) {
    inputs[input].rebind(outputs[output].value());  // the mutation, as a new SSA value
    aliased_output[output] = true;
  }
  std::vector<Tensor> rest;
  for (size_t o = 0; o < outputs.size(); ++o)
    if (!aliased_output[o]) rest.push_back(outputs[o]);
  return rest;
}

void Tensor::mutate_with(std::string_view kernel) { call_kernel_mutating(kernel, {*this}); }

}  // namespace insitu
