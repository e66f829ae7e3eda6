// Internal to the elementwise kernel family: convert_kernels.cc's part of select_elementwise.
#pragma once

#include "insitu/runtime/kernels.h"

namespace insitu::kernels {

// The convert kernel from the operand's element type to the output's; nullptr when either is
// complex (the fallback converts those). The caller has checked that the shapes agree.
KernelFn choose_convert(const ArrayView& operand, const ArrayView& out);
// real and imag of c64/c128 (convert_kernels.cc).
KernelFn choose_complex_part(Opcode opcode, const ArrayView& operand, const ArrayView& out);

}  // namespace insitu::kernels
