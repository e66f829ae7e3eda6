// convolution (runtime family kConvolution), as XLA's operation semantics define it: every
// dimension-number layout (dim_labels=), window stride, padding (negative too), lhs (base) and
// rhs (window) dilation, window reversal, feature_group_count and batch_group_count.
//
//   convolution(lhs, rhs), window={...}, dim_labels=b01f_01io->b01f[, feature_group_count=G]
//       [, batch_group_count=B]
// Operands of another element type than the result's are converted to it first (as XLA's
// evaluator does); products are summed in AccumulatorOf<T> (element_arithmetic.h) over the
// window positions in row-major order, then the input features of the group, as XLA's reference
// evaluator orders them. With batch_group_count = B the lhs batch is B blocks and the output
// features B blocks: output feature block g reads lhs batch block g (what jax's grouped-kernel
// gradients mean; checked against JAX in the conv_gradients corpus program). The runtime's kernel (runtime/convolution_kernels.cc) runs
// the same loop, so the two agree bit for bit. pred and complex results are refused.
#pragma once

#include <cstdint>
#include <vector>

#include "insitu/evaluator/element_arithmetic.h"
#include "insitu/ir/instruction.h"

namespace insitu::eval {

// Where each output element reads: computed once per instruction from its shapes.
struct ConvolutionPlan {
  std::vector<int64_t> out_dimensions;  // the result's
  int64_t out_batch = 0, out_feature = 0;
  std::vector<int64_t> out_spatial;      // result dimension of spatial dimension s
  std::vector<int64_t> lhs_strides, rhs_strides;  // row-major element strides
  int64_t lhs_batch = 0, lhs_feature = 0, rhs_input = 0, rhs_output = 0;
  std::vector<int64_t> lhs_spatial, rhs_spatial;  // operand dimension of spatial dimension s
  std::vector<int64_t> lhs_sizes;                 // lhs size along spatial dimension s
  std::vector<WindowDimension> window;            // one per spatial dimension
  int64_t input_feature_group_size = 0;
  int64_t output_feature_group_size = 0;
  int64_t batch_group_size = 0;
  int64_t batch_group_features = 1;  // output features per batch group
  int64_t window_positions = 1;
};

// Checks the instruction (attributes, operand shapes, its result shape) and plans it; a located
// error otherwise.
StatusOr<ConvolutionPlan> plan_convolution(const Instruction& instruction, const Shape& lhs, const Shape& rhs);

// Output elements [begin, end) (row-major over the result) of T operands into `out`.
template <typename T>
void convolve(const ConvolutionPlan& plan, const T* lhs, const T* rhs, T* out, int64_t begin, int64_t end) {
  using Accumulator = AccumulatorOf<T>;
  const size_t spatial = plan.window.size();
  const size_t rank = plan.out_dimensions.size();
  std::vector<int64_t> index(rank), position(spatial);
  for (int64_t e = begin; e < end; ++e) {
    for (int64_t rest = e, d = static_cast<int64_t>(rank) - 1; d >= 0; --d) {
      index[d] = rest % plan.out_dimensions[d];
      rest /= plan.out_dimensions[d];
    }
    const int64_t o = index[plan.out_feature];
    const int64_t group = o / plan.output_feature_group_size;
    // batch group g (the g-th block of batch_group_features output features) reads the g-th
    // block of batch_group_size lhs batch elements
    const int64_t batch_group = o / plan.batch_group_features;
    const int64_t lhs_base = (batch_group * plan.batch_group_size + index[plan.out_batch]) * plan.lhs_strides[plan.lhs_batch] +
                             group * plan.input_feature_group_size * plan.lhs_strides[plan.lhs_feature];
    const int64_t rhs_base = o * plan.rhs_strides[plan.rhs_output];
    Accumulator sum = Accumulator(0);
    std::fill(position.begin(), position.end(), 0);
    for (int64_t w = 0; w < plan.window_positions; ++w) {
      if (w > 0)  // the next window position, last spatial dimension fastest
        for (int64_t s = static_cast<int64_t>(spatial) - 1; s >= 0; --s) {
          if (++position[s] < plan.window[s].size) break;
          position[s] = 0;
        }
      int64_t lhs_offset = lhs_base, rhs_offset = rhs_base;
      bool inside = true;
      for (size_t s = 0; s < spatial && inside; ++s) {
        const WindowDimension& window = plan.window[s];
        const int64_t undilated =
            index[plan.out_spatial[s]] * window.stride - window.padding_low + position[s] * window.window_dilation;
        if (undilated % window.base_dilation != 0) inside = false;
        const int64_t at = undilated / window.base_dilation;
        if (at < 0 || at >= plan.lhs_sizes[s]) inside = false;
        lhs_offset += at * plan.lhs_strides[plan.lhs_spatial[s]];
        rhs_offset += (window.window_reversal ? window.size - 1 - position[s] : position[s]) *
                      plan.rhs_strides[plan.rhs_spatial[s]];
      }
      if (!inside) continue;
      for (int64_t z = 0; z < plan.input_feature_group_size; ++z) {
        const Accumulator a = accumulate_widen<Accumulator>(lhs[lhs_offset + z * plan.lhs_strides[plan.lhs_feature]]);
        const Accumulator b = accumulate_widen<Accumulator>(rhs[rhs_offset + z * plan.rhs_strides[plan.rhs_input]]);
        sum += a * b;
      }
    }
    out[e] = accumulate_narrow<T>(sum);
  }
}

}  // namespace insitu::eval
