// Shared helpers of the shape-inference files (shape_inference_*.cc); not a public API.
//
// Every rule returns the shape XLA's ShapeInference would compute for the instruction, or an
// error located at the instruction that names it (%name) and says what is wrong.
#pragma once

#include <initializer_list>
#include <optional>

#include <string>

#include "insitu/ir/computation.h"
#include "insitu/ir/instruction.h"
#include "insitu/support/str.h"

namespace insitu::shape_inference_internal {

// "%name: message", located at the instruction.
Status error_at(const Instruction& instruction, const std::string& message);

// Sizes computed from attributes the text gave (padding, dilations) are checked: every step
// of `terms` summed (each a product of two factors) in order; nullopt when any overflows.
std::optional<int64_t> checked_sum_of_products(std::initializer_list<std::pair<int64_t, int64_t>> terms);
// "OPCODE needs N operands, %name has M".
Status check_operand_count(const Instruction& instruction, int64_t count);
Status check_min_operand_count(const Instruction& instruction, int64_t count);
// Operand `i` is an array (not a tuple or token).
Status check_array_operand(const Instruction& instruction, int64_t i);
// The called computation `i` exists (the verifier's structural pass checks they are in the
// module).
StatusOr<const Computation*> called_computation(const Instruction& instruction, int64_t i,
                                                std::string_view role);
// Checks a called computation takes exactly `parameters` (compatible shapes) and returns the
// root shape; `role` names it in messages ("to_apply", "condition", "branch 1", ...).
Status check_computation_parameters(const Instruction& instruction, const Computation& computation,
                                    std::string_view role, const std::vector<Shape>& parameters);
// "f32[4]" without layout.
inline std::string text(const Shape& shape) { return shape.to_string(/*with_layout=*/false); }
inline std::string_view type_text(PrimitiveType type) { return primitive_type_name(type); }
std::string dims_text(const std::vector<int64_t>& dims);  // "{0,1}"
// The shape with another element type (dimensions and layout kept).
Shape with_element_type(const Shape& shape, PrimitiveType type);

// Opcode groups, one file each.
StatusOr<Shape> infer_elementwise_shape(const Instruction& instruction);     // shape_inference_elementwise.cc
StatusOr<Shape> infer_data_movement_shape(const Instruction& instruction);   // shape_inference_data_movement.cc
StatusOr<Shape> infer_dot_shape(const Instruction& instruction);             // shape_inference_indexing.cc
StatusOr<Shape> infer_convolution_shape(const Instruction& instruction);
StatusOr<Shape> infer_gather_shape(const Instruction& instruction);
StatusOr<Shape> infer_scatter_shape(const Instruction& instruction);
StatusOr<Shape> infer_called_computation_shape(const Instruction& instruction);  // shape_inference_calls.cc

}  // namespace insitu::shape_inference_internal
