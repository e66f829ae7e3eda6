// Internal to the runtime: an analyzed computation compiled into steps over buffer slices.
//
// Every array leaf an instruction reads or writes is resolved once, at Executable::create, to
// a slice (allocation, offset, size) of buffer assignment. A leaf without a slice is an
// unmaterialized scalar broadcast: it resolves to the scalar's slice, marked `scalar`.
#pragma once

#include <vector>

#include "insitu/ir/instruction.h"
#include "insitu/runtime/kernels.h"

namespace insitu::runtime_internal {

struct Leaf {
  ShapeIndex index;             // within the instruction's shape
  const Shape* shape = nullptr; // the leaf's shape (the broadcast's, for a scalar leaf)
  int64_t allocation = -1;      // -1: no memory (token)
  int64_t offset = 0;
  int64_t size = 0;
  bool scalar = false;          // reads one element for every position
  bool same_memory(const Leaf& other) const {
    return allocation == other.allocation && offset == other.offset && size == other.size && scalar == other.scalar;
  }
};

enum class StepKind : uint8_t {
  kNothing,       // parameter, tuple, get-tuple-element, bitcast, constants kept in constant buffers, ...
  kConstant,      // writes the literal into its slice
  kCopy,          // copy instruction (counted in stats)
  kCopyStart,     // copy-start: source -> destination {0}
  kKernel,        // builtin kernel, else the evaluator fallback
  kFallback,      // evaluator fallback (fusion, reduce, dot, ...)
  kCustomCall,
  kWhile,
  kConditional,
  kCall,
};

struct Program;

struct Step {
  const Instruction* instruction = nullptr;
  StepKind kind = StepKind::kNothing;
  std::vector<std::vector<Leaf>> operands;  // per operand, its array leaves in leaf order
  std::vector<Leaf> outputs;                // the instruction's array leaves in leaf order
  std::vector<const Program*> callees;      // while: {condition, body}; conditional: branches; call
  KernelPlanPtr plan;  // planned once: a loop fusion, a sort/reduce program, a dot's tables
};

struct Program {
  const Computation* computation = nullptr;
  std::vector<Step> steps;
  std::vector<std::vector<Leaf>> parameters;  // per parameter number, its leaves
  std::vector<Leaf> root;
};

}  // namespace insitu::runtime_internal
