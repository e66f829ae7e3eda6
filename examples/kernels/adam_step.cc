// adam_step: params, m, v updated in place from grads (example_kernels.h).
#include <cmath>

#include "examples/kernels/example_kernels.h"
#include "examples/kernels/row_blocks.h"

namespace insitu::examples {

KernelSpec adam_step_kernel() {
  KernelSpec spec;
  spec.name = "adam_step";
  spec.in_specs.resize(4);   // params, grads, m, v
  spec.out_specs.resize(3);  // params, m, v
  spec.input_output_aliases = {{0, 0}, {2, 1}, {3, 2}};
  spec.specialize = [](std::span<const Shape> operands, std::span<const Shape> results, KernelSpec& spec) {
    if (!operands.empty()) use_row_blocks(operands[0], spec, 1 << 14);
  };
  spec.body = [](const KernelContext&, KernelRefs& refs) {
    BlockRef<float> params = refs.output<float>(0), grads = refs.input<float>(1), m = refs.output<float>(1),
                    v = refs.output<float>(2);
    const float correction1 = 1.0f - kAdamBeta1, correction2 = 1.0f - kAdamBeta2;  // step 1
    params.for_each_index([&](std::span<const int64_t> index) {
      const float g = grads.load(index);
      const float m_new = kAdamBeta1 * m.load(index) + (1.0f - kAdamBeta1) * g;
      const float v_new = kAdamBeta2 * v.load(index) + (1.0f - kAdamBeta2) * g * g;
      m.store(index, m_new);
      v.store(index, v_new);
      const float m_hat = m_new / correction1, v_hat = v_new / correction2;
      params.store(index, params.load(index) - kAdamLearningRate * m_hat / (std::sqrt(v_hat) + kAdamEpsilon));
    });
  };
  return spec;
}

}  // namespace insitu::examples
