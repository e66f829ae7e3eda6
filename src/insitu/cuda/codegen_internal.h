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
// The CUDA type of an element type the generators handle (f32, f64, bf16, f16, s32, s64, u32, u64,
// pred).
StatusOr<std::string> cuda_type(const Instruction& instruction, PrimitiveType type);
// The type a value of storage type `type` is computed in: float for bf16 and f16 (stored as
// the prelude's insitu_bf16 / insitu_f16), else the type itself.
std::string compute_type(const std::string& type);
// convert_codegen.cc: the expression of a convert or stochastic-convert of `x` (and `random`),
// already in their compute types, to `type` (the result's CUDA type); a located refusal for the
// pairs it does not generate.
StatusOr<std::string> convert_expression(const Instruction& convert, const std::string& x, const std::string& type);
StatusOr<std::string> stochastic_convert_expression(const Instruction& op, const std::string& x,
                                                    const std::string& random, const std::string& type);
// Row-major strides of `dims`.
std::vector<int64_t> strides_of(const std::vector<int64_t>& dims);
// Element i's coordinate along each dimension of a row-major array of `dims`, as expressions of
// `i` ("(i / 12ll % 4ll)").
std::vector<std::string> coordinates_of(const std::vector<int64_t>& dims);

}  // namespace insitu::cuda::detail
