// Shape inference: the shape an instruction must have, given its operands and attributes,
// with XLA's rules. The verifier compares it with the written shape (ignoring layouts).
#pragma once

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

}  // namespace insitu
