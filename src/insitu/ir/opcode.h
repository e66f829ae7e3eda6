// HLO opcodes (every opcode XLA's text format names; see opcode.def) and their properties.
//
// The IR can hold any of them so that real dumps parse; which ones the evaluator and runtime
// execute is their business, and an unsupported one is a located error there.
#pragma once

#include <optional>
#include <string_view>

namespace insitu {

enum class Opcode : uint8_t {
#define INSITU_OPCODE(name, text, kind, family, effect) name,
#include "insitu/ir/opcode.def"
#undef INSITU_OPCODE
};

// What sort of op an opcode is (opcode.def's third column).
enum class OpcodeKind : uint8_t {
  kUnary,         // elementwise, one array operand (abs, exponential, not)
  kBinary,        // elementwise, two array operands of one shape (add, compare, shift-left)
  kElementwise,   // other elementwise ops: select, clamp, convert, real, imag, is-finite, map, ...
  kDataMovement,  // moves or selects elements without arithmetic (slice, gather, tuple, copy)
  kComputation,   // combines many elements (reduce, dot, sort, convolution, fft)
  kControlFlow,   // runs other computations (while, conditional, call, fusion, custom-call)
  kCollective,    // communicates across replicas or partitions
  kOther,         // parameter, constant, rng, infeed, ...
};

// How the CPU runtime runs an opcode (opcode.def's fourth column): a native kernel family it
// selects from once per step at Executable::create (runtime/kernel_table.cc), a structural
// step, or kNone (the evaluator's per-op fallback, or a located "cannot run" error).
enum class RuntimeFamily : uint8_t {
  kNone,
  // structural steps
  kForward,      // moves no data (parameter, tuple, get-tuple-element, bitcast, ...)
  kConstant, kCopy, kCopyStart, kWhile, kConditional, kCall, kCustomCall,
  // native kernel families
  kElementwise, kDataMovement, kDynamicSlice, kDot, kReduce, kReduceWindow, kSelectAndScatter,
  kFusion, kSort, kTopk, kGather, kScatter, kLinalg, kConvolution, kFft, kRngBitGenerator,
};

OpcodeKind opcode_kind(Opcode opcode);
RuntimeFamily runtime_family(Opcode opcode);
// Whether every instance of the opcode has a side effect (opcode.def's fifth column).
bool opcode_has_side_effect(Opcode opcode);

std::string_view opcode_name(Opcode opcode);  // "dynamic-update-slice"
std::optional<Opcode> parse_opcode(std::string_view name);

// OpcodeKind kUnary (convert is not one).
inline bool is_elementwise_unary(Opcode opcode) { return opcode_kind(opcode) == OpcodeKind::kUnary; }
// OpcodeKind kBinary (complex is one).
inline bool is_elementwise_binary(Opcode opcode) { return opcode_kind(opcode) == OpcodeKind::kBinary; }
// Every elementwise op: the unary and binary ones plus select, clamp, convert, real, imag,
// is-finite, reduce-precision, map (not bitcast-convert: its width may change).
inline bool is_elementwise(Opcode opcode) {
  const OpcodeKind kind = opcode_kind(opcode);
  return kind == OpcodeKind::kUnary || kind == OpcodeKind::kBinary || kind == OpcodeKind::kElementwise;
}

}  // namespace insitu
