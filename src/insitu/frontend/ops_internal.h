// Helpers shared by the frontend's op files: building one instruction from Tensors.
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "insitu/frontend/tracer.h"
#include "insitu/support/str.h"

namespace insitu::frontend_internal {

// The tracer the operands belong to (the active one when there are none); nullptr after
// recording an error when an operand is empty or no function is being traced.
inline Tracer* tracer_for(std::string_view op, const std::vector<Tensor>& operands) {
  Tracer* tracer = Tracer::active();
  INSITU_CHECK(tracer != nullptr) << op << " called outside of a traced function (no active Tracer)";
  for (const Tensor& operand : operands) {
    if (!operand.valid()) {
      tracer->record_error(invalid_argument(str_cat(op, ": an operand is an empty Tensor (from a failed op?)")));
      return nullptr;
    }
  }
  return tracer;
}

// Emits `opcode` over `operands`; `configure` sets attributes; the shape is inferred unless
// `shape` is given (then it is checked by inference where the op has a rule).
inline Tensor make_op(std::string_view name, Opcode opcode, const std::vector<Tensor>& operands,
                      const std::function<void(Instruction&)>& configure = {}, const Shape* shape = nullptr) {
  Tracer* tracer = tracer_for(name, operands);
  if (tracer == nullptr) return Tensor();
  Shape provisional = shape ? *shape : (operands.empty() ? Shape::scalar(PrimitiveType::kF32) : operands[0].shape());
  auto instruction = std::make_unique<Instruction>(opcode, tracer->unique_name(name), provisional);
  for (const Tensor& operand : operands) instruction->append_operand(operand.value());
  if (configure) configure(*instruction);
  Instruction* raw = tracer->emit(std::move(instruction), /*infer=*/true);
  if (shape != nullptr && tracer->status().ok()) raw->set_shape(*shape);
  return Tensor::from_instruction(tracer, raw);
}

}  // namespace insitu::frontend_internal
