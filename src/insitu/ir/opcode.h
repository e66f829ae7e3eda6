// HLO opcodes (every opcode XLA's text format names; see opcode.def) and their properties.
//
// The IR can hold any of them so that real dumps parse; which ones the evaluator and runtime
// execute is their business, and an unsupported one is a located error there.
#pragma once

#include <optional>
#include <string_view>

namespace insitu {

enum class Opcode : uint8_t {
#define INSITU_OPCODE(name, text) name,
#include "insitu/ir/opcode.def"
#undef INSITU_OPCODE
};

std::string_view opcode_name(Opcode opcode);  // "dynamic-update-slice"
std::optional<Opcode> parse_opcode(std::string_view name);

// Elementwise ops with one array operand (abs, negate, exponential, convert is not one).
bool is_elementwise_unary(Opcode opcode);
// Elementwise ops with two array operands of one shape (add, compare, shift-left, ...).
bool is_elementwise_binary(Opcode opcode);
// Every elementwise op: the unary and binary ones plus select, clamp, convert,
// complex, real, imag, is-finite, reduce-precision, map (not bitcast-convert: its width may change).
bool is_elementwise(Opcode opcode);

}  // namespace insitu
