// Internal to the elementwise kernel family: the parts of select_elementwise in convert_kernels.cc
// and compare_select_kernels.cc.
#pragma once

#include "insitu/runtime/kernels.h"

namespace insitu::kernels {

// The convert kernel from the operand's element type to the output's; nullptr when either is
// complex (the fallback converts those). The caller has checked that the shapes agree.
KernelFn choose_convert(const ArrayView& operand, const ArrayView& out);
KernelFn choose_stochastic_convert(const ArrayView& operand, const ArrayView& random, const ArrayView& out);
// real and imag of c64/c128 (convert_kernels.cc).
KernelFn choose_complex_part(Opcode opcode, const ArrayView& operand, const ArrayView& out);
// compare_select_kernels.cc: compare (of any comparison type), select, clamp, and a
// bitcast-convert between types of one width; nullptr where there is no native path.
KernelFn choose_compare(const Instruction& instruction, const ArrayView& a, const ArrayView& b, const ArrayView& out);
KernelFn choose_select(std::span<const ArrayView> operands, const ArrayView& out);
KernelFn choose_clamp(std::span<const ArrayView> operands, const ArrayView& out);
KernelFn choose_bitcast_convert(const ArrayView& a, const ArrayView& out);

}  // namespace insitu::kernels
