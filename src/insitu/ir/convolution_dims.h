// A convolution's dimension numbers and result dimensions, as XLA's shape inference computes
// them: read once here for the parser (which infers a result shape left out of the text), the
// verifier (which checks a written one) and the evaluator and runtime (evaluator/convolution.h,
// which plan the loop on them).
//
//   convolution(lhs, rhs), window={size=.. stride=.. pad=.. lhs_dilate=.. rhs_dilate=..},
//       dim_labels=b01f_01io->b01f[, feature_group_count=G][, batch_group_count=B]
//
// dim_labels names, per operand and for the result, where the batch (b) / input feature (i)
// and feature (f) / output feature (o) dimensions sit and where each spatial dimension (0, 1,
// ...) does. Result: batch = lhs batch / B, feature = kernel output features, spatial s = the
// number of window positions along the padded, lhs-dilated input.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "insitu/ir/instruction.h"
#include "insitu/support/status.h"

namespace insitu {

// One part of dim_labels ("b01f"): where the two named dimensions and each spatial one sit.
struct ConvolutionLabels {
  int64_t first = -1, second = -1;  // b and f (operand, result) or i and o (kernel)
  std::vector<int64_t> spatial;     // operand dimension of spatial dimension s
};

struct ConvolutionDims {
  ConvolutionLabels lhs, kernel, out;
  int64_t feature_groups = 1, batch_groups = 1;
  std::vector<int64_t> dimensions;  // the result's
};

// Reads dim_labels, the group counts and the window against the operand shapes and computes the
// result dimensions. An error's message says what is wrong, without the instruction's name or
// location (callers add theirs).
StatusOr<ConvolutionDims> convolution_dims(const Instruction& instruction, const Shape& lhs, const Shape& rhs);

}  // namespace insitu
