// convolution (op family kConvolution), as XLA's operation semantics define it: every
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

// Output elements [begin, end) (row-major over the result) of T operands into `out`. For each
// output, each spatial dimension's window positions that land on an input element (not padding,
// not a base-dilation hole) are listed first with their offsets; the loop then walks only those,
// in the same row-major order (last spatial dimension fastest) as the full window, so the sum
// is the same, element for element.
template <typename T>
void convolve(const ConvolutionPlan& plan, const T* lhs, const T* rhs, T* out, int64_t begin, int64_t end) {
  using Accumulator = AccumulatorOf<T>;
  const size_t spatial = plan.window.size();
  const size_t rank = plan.out_dimensions.size();
  std::vector<int64_t> index(rank);
  // Per spatial dimension: the valid positions' lhs and rhs offsets, and where each starts.
  std::vector<std::vector<int64_t>> lhs_steps(spatial), rhs_steps(spatial);
  std::vector<size_t> at(spatial);
  for (int64_t rest = begin, d = static_cast<int64_t>(rank) - 1; d >= 0; --d) {
    index[d] = rest % plan.out_dimensions[d];
    rest /= plan.out_dimensions[d];
  }
  const int64_t lhs_feature_stride = plan.lhs_strides[plan.lhs_feature];
  const int64_t rhs_input_stride = plan.rhs_strides[plan.rhs_input];
  for (int64_t e = begin; e < end; ++e) {
    if (e > begin)  // the next output index, row-major
      for (int64_t d = static_cast<int64_t>(rank) - 1; d >= 0; --d) {
        if (++index[d] < plan.out_dimensions[d]) break;
        index[d] = 0;
      }
    const int64_t o = index[plan.out_feature];
    const int64_t group = o / plan.output_feature_group_size;
    // batch group g (the g-th block of batch_group_features output features) reads the g-th
    // block of batch_group_size lhs batch elements
    const int64_t batch_group = o / plan.batch_group_features;
    const int64_t lhs_base = (batch_group * plan.batch_group_size + index[plan.out_batch]) * plan.lhs_strides[plan.lhs_batch] +
                             group * plan.input_feature_group_size * lhs_feature_stride;
    const int64_t rhs_base = o * plan.rhs_strides[plan.rhs_output];
    bool empty = false;
    for (size_t s = 0; s < spatial; ++s) {
      const WindowDimension& window = plan.window[s];
      lhs_steps[s].clear();
      rhs_steps[s].clear();
      const int64_t start = index[plan.out_spatial[s]] * window.stride - window.padding_low;
      for (int64_t p = 0; p < window.size; ++p) {
        const int64_t undilated = start + p * window.window_dilation;
        if (undilated % window.base_dilation != 0) continue;
        const int64_t position = undilated / window.base_dilation;
        if (position < 0 || position >= plan.lhs_sizes[s]) continue;
        lhs_steps[s].push_back(position * plan.lhs_strides[plan.lhs_spatial[s]]);
        rhs_steps[s].push_back((window.window_reversal ? window.size - 1 - p : p) * plan.rhs_strides[plan.rhs_spatial[s]]);
      }
      empty = empty || lhs_steps[s].empty();
      at[s] = 0;
    }
    Accumulator sum = Accumulator(0);
    while (!empty) {
      int64_t lhs_offset = lhs_base, rhs_offset = rhs_base;
      for (size_t s = 0; s < spatial; ++s) {
        lhs_offset += lhs_steps[s][at[s]];
        rhs_offset += rhs_steps[s][at[s]];
      }
      for (int64_t z = 0; z < plan.input_feature_group_size; ++z) {
        const Accumulator a = accumulate_widen<Accumulator>(lhs[lhs_offset + z * lhs_feature_stride]);
        const Accumulator b = accumulate_widen<Accumulator>(rhs[rhs_offset + z * rhs_input_stride]);
        sum += a * b;
      }
      // the next valid window position, last spatial dimension fastest
      int64_t s = static_cast<int64_t>(spatial) - 1;
      for (; s >= 0; --s) {
        if (++at[s] < lhs_steps[s].size()) break;
        at[s] = 0;
      }
      if (s < 0) break;
    }
    out[e] = accumulate_narrow<T>(sum);
  }
}

}  // namespace insitu::eval
