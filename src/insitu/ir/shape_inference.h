// Shape inference: the shape an instruction must have, given its operands and attributes,
// with XLA's rules. The verifier compares it with the written shape (ignoring layouts).
#pragma once

#include <optional>

#include "insitu/ir/instruction.h"

namespace insitu {

// The expected shape (layouts are default), or a located error saying which operand or
// attribute is wrong. Opcodes without rules return the instruction's own shape.
StatusOr<Shape> infer_shape(const Instruction& instruction);

// Whether infer_shape derives the whole result shape from operands and attributes alone, so
// the parser may accept the instruction without a written shape (`%t = tuple(%a, %b)`, as
// XLA's parser does). False where the written shape is an input to the rule (broadcast,
// reshape, convert, constant, iota, parameter, custom-call, fusion, ...).
bool can_infer_shape(Opcode opcode);

// XLA's mixed precision for floating-point arithmetic (add, multiply, maximum, ...: not
// compare): operands of two float types of different widths compute in the wider one, which
// is the result type (both convert to it exactly first). nullopt when the types are the same,
// not both floating-point, or of one width (bf16 and f16: neither holds the other).
std::optional<PrimitiveType> mixed_float_type(Opcode opcode, PrimitiveType lhs, PrimitiveType rhs);

}  // namespace insitu
