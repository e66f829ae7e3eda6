// Internal to the CUDA code generators (cuda/*_codegen.cc): what they share.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "insitu/ir/instruction.h"
#include "insitu/support/status.h"

namespace insitu::cuda::detail {

// "no CUDA kernel for %name (op): why", located at the instruction.
Status refuse(const Instruction& instruction, std::string_view why);
// The CUDA type of an element type the generators handle (f32, f64, s32, s64, u32, pred).
StatusOr<std::string> cuda_type(const Instruction& instruction, PrimitiveType type);
// Row-major strides of `dims`.
std::vector<int64_t> strides_of(const std::vector<int64_t>& dims);

}  // namespace insitu::cuda::detail
