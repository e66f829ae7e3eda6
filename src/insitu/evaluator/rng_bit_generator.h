// rng-bit-generator (op family kRngBitGenerator): random bits from a counter-based
// generator, bit for bit as XLA's RngBitGeneratorExpander builds them (xla/client/lib/prng):
//   (state', bits) = rng-bit-generator(state), algorithm=rng_default|rng_three_fry|rng_philox
// state is u64[2] (key, counter) or, for philox, u64[3] (key, 128-bit counter); rng_default is
// philox, as on XLA:CPU. Threefry-2x32 (20 rounds) numbers the elements of half the shape (split
// along the first even dimension, else the largest) and interleaves its two outputs along it;
// philox-4x32 (10 rounds) numbers blocks of four u32 and takes
// them round-robin. u8 and u16 are the low bits of the u32 stream; u64 joins two words
// (threefry: its two outputs; philox: consecutive words). The counter advances by the number of
// blocks used. Other element types are a located error. Checked against jax 0.12 in the
// rng_bits corpus program.
#pragma once

#include <cstdint>

#include "insitu/ir/instruction.h"

namespace insitu::eval {

enum class RngAlgorithm : uint8_t { kThreeFry, kPhilox };

struct RngPlan {
  RngAlgorithm algorithm = RngAlgorithm::kPhilox;
  int64_t state_size = 2;           // u64 words of state
  PrimitiveType type = PrimitiveType::kU32;
  std::vector<int64_t> dimensions;  // of the bits
};

StatusOr<RngPlan> plan_rng_bit_generator(const Instruction& instruction, const Shape& state);

// state: state_size u64; out_state: the same; bits: the data array (row-major).
void generate_random_bits(const RngPlan& plan, const uint64_t* state, uint64_t* out_state, uint8_t* bits);

}  // namespace insitu::eval
