// Shape inference: the shape an instruction must have, given its operands and attributes,
// with XLA's rules. The verifier compares it with the written shape (ignoring layouts).
#pragma once

#include "insitu/ir/instruction.h"

namespace insitu {

// The expected shape (layouts are default), or a located error saying which operand or
// attribute is wrong. Opcodes without rules return the instruction's own shape.
StatusOr<Shape> infer_shape(const Instruction& instruction);

}  // namespace insitu
