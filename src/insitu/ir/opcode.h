// HLO opcodes (every opcode XLA's text format names; see opcode.def) and their properties.
//
// The IR can hold any of them so that real dumps parse; which ones the evaluator and runtime
// execute is their business, and an unsupported one is a located error there.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

namespace insitu {

enum class Opcode : uint8_t {
#define INSITU_OPCODE(name, text, kind, family, effect, types, count, attributes) name,
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

// An opcode's family (opcode.def's fourth column): the one dispatch key. The CPU runtime selects
// a family's native kernel once per step at Executable::create (runtime/kernel_table.cc), the
// CUDA plan asks the family's planner (cuda/device_plan.cc), the evaluator runs the family's
// function (evaluator/op_table.cc, which the runtime's fallback shares). kNone: parsed, and no
// device or evaluator runs it yet (a located "cannot run" error at create).
enum class OpFamily : uint8_t {
  kNone,
  // structural steps
  kForward,      // moves no data (parameter, tuple, get-tuple-element, bitcast, ...)
  kConstant, kCopy, kCopyStart, kWhile, kConditional, kCall, kCustomCall,
  // native kernel families
  kElementwise, kDataMovement, kDynamicSlice, kDot, kReduce, kReduceWindow, kSelectAndScatter,
  kFusion, kSort, kTopk, kGather, kScatter, kLinalg, kConvolution, kFft, kRngBitGenerator,
  // across devices: the CPU moves some natively (runtime/executable_build.cc native_collective),
  // the evaluator runs them all (evaluator/collectives.h)
  kCollective,
  // the evaluator's only, so far (the CPU runs them through its fallback; CUDA refuses them)
  kMap, kScan, kBatchNorm, kDimensionSize,
  // an async wrapper of a computation (async-start/-update/-done): the evaluator runs the
  // wrapped call; flatten-calls turns a chain that binds its operands into that call, so a
  // device sees the call (a chain it cannot turn stays, and the devices refuse it)
  kAsync,
};

// The element types an opcode's operands may have (opcode.def's sixth column): what shape
// inference checks for the elementwise ops (XLA's rules; kAnyArray for the others, whose own
// inference checks them).
enum class OperandTypes : uint8_t {
  kAnyArray,        // every array type
  kPredOrInteger,   // and, or, xor, not
  kInteger,         // shifts, clz, popcnt, mulhi
  kFloat,           // floor, ceil, rounding, is-finite, erf, reduce-precision
  kFloatOrComplex,  // exp, log, trig, sqrt, ...
  kSigned,          // abs, sign: signed integers, floats, complex
  kNumber,          // negate: integers, floats, complex
};

// How many operands an opcode takes (opcode.def's seventh column), checked by the parser.
struct OperandCount {
  int64_t at_least = 0;
  int64_t at_most = -1;  // -1: no bound
};

OpcodeKind opcode_kind(Opcode opcode);
OperandCount operand_count(Opcode opcode);
// The attributes an instruction of the opcode must write (opcode.def's eighth column), in the
// row's order; custom-call's target and conditional's branches are checked by the parser itself.
std::span<const std::string_view> required_attributes(Opcode opcode);
OperandTypes operand_types(Opcode opcode);
OpFamily op_family(Opcode opcode);
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
