// Internal to the runtime's elementwise kernels: the dispatch over the element types that have
// native kernels (defined in evaluator/element_arithmetic.h, with the compute types and the
// round trip through them that mirror the reference evaluator).
#pragma once

#include <cstring>
#include <limits>
#include <type_traits>

#include "insitu/evaluator/element_arithmetic.h"
#include "insitu/ir/dtype.h"

namespace insitu::kernels {

// The dispatch over the types with native kernels lives beside the arithmetic it selects
// (element_arithmetic.h), so that the evaluator's communicator uses the same one.
using insitu::dispatch_native_numeric;

// Calls fn(T{}) for pred and the integer types (the operands of and/or/xor/not).
template <typename Fn>
bool dispatch_bitwise(PrimitiveType type, Fn&& fn) {
  switch (type) {
    case PrimitiveType::kPred: fn(bool{}); return true;
    case PrimitiveType::kS8: fn(int8_t{}); return true;
    case PrimitiveType::kS16: fn(int16_t{}); return true;
    case PrimitiveType::kS32: fn(int32_t{}); return true;
    case PrimitiveType::kS64: fn(int64_t{}); return true;
    case PrimitiveType::kU8: fn(uint8_t{}); return true;
    case PrimitiveType::kU16: fn(uint16_t{}); return true;
    case PrimitiveType::kU32: fn(uint32_t{}); return true;
    case PrimitiveType::kU64: fn(uint64_t{}); return true;
    default: return false;
  }
}

}  // namespace insitu::kernels
