// fft (op family kFft), as XLA's operation semantics define it:
//   fft(x), fft_type=FFT|IFFT|RFFT|IRFFT, fft_length={n1[,n2[,n3]]}
// transforms the last len(fft_length) dimensions: FFT and IFFT complex to complex (IFFT scaled
// by 1/N), RFFT real to complex (the last dimension keeps n/2+1 frequencies), IRFFT complex to
// real (the inverse of RFFT: the missing frequencies are the conjugates of the given ones, the
// imaginary parts of the DC and Nyquist terms do not contribute). f32 <-> c64, f64 <-> c128.
//
// One dimension at a time, in double: radix-2 when its length is a power of two, else a direct
// DFT with exact twiddles (k*j mod n). The evaluator (fft.cc) and the runtime's kernel
// (runtime/fft_kernels.cc) run it per batch element, so the two agree bit for bit; XLA:CPU's
// library differs in the last bits.
#pragma once

#include <cstdint>
#include <vector>

#include "insitu/ir/instruction.h"

namespace insitu::eval {

enum class FftType : uint8_t { kFft, kIfft, kRfft, kIrfft };

struct FftPlan {
  FftType type = FftType::kFft;
  bool f64 = false;                  // f64/c128 rather than f32/c64
  std::vector<int64_t> lengths;      // fft_length: the transformed (logical) sizes
  int64_t batch = 1;                 // product of the leading dimensions
  int64_t in_elements = 0;           // per batch element, in the operand and the result
  int64_t out_elements = 0;
};

// Checks the attributes and the operand and result shapes; a located error otherwise.
StatusOr<FftPlan> plan_fft(const Instruction& instruction, const Shape& operand);

// Batch element `index`: operand bytes `in`, result bytes `out` (whole arrays; may not overlap).
void run_fft(const FftPlan& plan, int64_t index, const uint8_t* in, uint8_t* out);

}  // namespace insitu::eval
