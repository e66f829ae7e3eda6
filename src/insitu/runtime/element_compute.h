// Internal to the runtime's elementwise kernels: the compute type of each storage type and
// the round trip through it, mirroring the reference evaluator (f16/bf16 computed in f32 and
// rounded to nearest even after every op; integers wrap through their unsigned type), plus the
// dispatch over the element types that have native kernels.
#pragma once

#include <cstring>
#include <limits>
#include <type_traits>

#include "insitu/evaluator/element_arithmetic.h"
#include "insitu/ir/dtype.h"

namespace insitu::kernels {


// Calls fn(T{}) for the numeric types with native kernels (f32, f64, s32, s64, u32, u64 (jax's
// random bits), bf16, f16) and
// returns true; false for any other type.
template <typename Fn>
bool dispatch_native_numeric(PrimitiveType type, Fn&& fn) {
  switch (type) {
    case PrimitiveType::kF32: fn(float{}); return true;
    case PrimitiveType::kF64: fn(double{}); return true;
    case PrimitiveType::kS32: fn(int32_t{}); return true;
    case PrimitiveType::kS64: fn(int64_t{}); return true;
    case PrimitiveType::kU32: fn(uint32_t{}); return true;
    case PrimitiveType::kU64: fn(uint64_t{}); return true;
    case PrimitiveType::kBF16: fn(BFloat16{}); return true;
    case PrimitiveType::kF16: fn(Half{}); return true;
    default: return false;
  }
}

}  // namespace insitu::kernels
