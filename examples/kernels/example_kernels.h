// The example kernels (Pallas-style, over insitu/kernel/kernel.h):
//   plus_one    x + 1 in place (output 0 aliased to input 0), any shape, s32 or f32 (and the
//               other integer and float types); 1-D parallel grid over row blocks of dim 0.
//   tiled_axpy  2 * x + y over f32[M, N] with a 2-D parallel grid of 32x32 tiles (ragged
//               edges clipped); no aliasing.
//   adam_step   one Adam update of f32 params with grads: params, first and second moments
//               updated in place (aliases (0,0), (2,1), (3,2)); lr 1e-3, betas 0.9/0.999,
//               eps 1e-8, bias correction for step 1.
// plus_one and tiled_axpy also have a CUDA body (KernelSpec::cuda_source) for the CUDA device.
// register_examples.cc registers them (INSITU_REGISTER_KERNEL) into the plugin
// libinsitu_examples.so; tests link the sources directly.
#pragma once

#include "insitu/kernel/kernel.h"

namespace insitu::examples {

KernelSpec plus_one_kernel();
KernelSpec tiled_axpy_kernel();
KernelSpec adam_step_kernel();

// Adam's constants, for tests that compute the expected values.
inline constexpr float kAdamLearningRate = 1e-3f;
inline constexpr float kAdamBeta1 = 0.9f;
inline constexpr float kAdamBeta2 = 0.999f;
inline constexpr float kAdamEpsilon = 1e-8f;

}  // namespace insitu::examples
