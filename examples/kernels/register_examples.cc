// Registers the example kernels at static initialization (in the plugin, or in a test binary).
#include "examples/kernels/example_kernels.h"
#include "insitu/kernel/registry.h"

namespace insitu::examples {

INSITU_REGISTER_KERNEL(plus_one_kernel);
INSITU_REGISTER_KERNEL(tiled_axpy_kernel);
INSITU_REGISTER_KERNEL(adam_step_kernel);

}  // namespace insitu::examples
