// rng-bit-generator in the reference evaluator (rng_bit_generator.h).
#include "insitu/evaluator/rng_bit_generator.h"

#include <cstring>

#include "insitu/evaluator/apply_util.h"
#include "insitu/evaluator/ops.h"

namespace insitu::eval {
namespace {

uint32_t rotate_left(uint32_t v, int distance) { return (v << distance) | (v >> (32 - distance)); }

// Threefry-2x32 with 20 rounds (Salmon et al., SC 2011).
std::pair<uint32_t, uint32_t> threefry(uint32_t x0, uint32_t x1, uint32_t k0, uint32_t k1) {
  constexpr int kRotations[8] = {13, 15, 26, 6, 17, 29, 16, 24};
  const uint32_t ks[3] = {k0, k1, 0x1BD11BDAu ^ k0 ^ k1};
  x0 += ks[0];
  x1 += ks[1];
  for (int group = 0; group < 5; ++group) {
    for (int r = 0; r < 4; ++r) {
      x0 += x1;
      x1 = rotate_left(x1, kRotations[(group % 2) * 4 + r]);
      x1 ^= x0;
    }
    x0 += ks[(group + 1) % 3];
    x1 += ks[(group + 2) % 3] + static_cast<uint32_t>(group + 1);
  }
  return {x0, x1};
}

// Philox-4x32 with 10 rounds.
void philox(uint32_t x[4], uint32_t k0, uint32_t k1) {
  for (int round = 0; round < 10; ++round) {
    const uint64_t p0 = static_cast<uint64_t>(x[0]) * 0xD2511F53u;
    const uint64_t p1 = static_cast<uint64_t>(x[2]) * 0xCD9E8D57u;
    const uint32_t y[4] = {static_cast<uint32_t>(p1 >> 32) ^ x[1] ^ k0, static_cast<uint32_t>(p1),
                           static_cast<uint32_t>(p0 >> 32) ^ x[3] ^ k1, static_cast<uint32_t>(p0)};
    std::memcpy(x, y, sizeof(y));
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
}

int64_t count(const std::vector<int64_t>& dimensions) {
  int64_t n = 1;
  for (int64_t d : dimensions) n *= d;
  return n;
}

void store_bits(PrimitiveType type, uint8_t* bits, int64_t i, uint64_t value) {
  switch (type) {
    case PrimitiveType::kU8: bits[i] = static_cast<uint8_t>(value); break;
    case PrimitiveType::kU16: {
      const uint16_t narrow = static_cast<uint16_t>(value);
      std::memcpy(bits + i * 2, &narrow, 2);
      break;
    }
    case PrimitiveType::kU32: {
      const uint32_t narrow = static_cast<uint32_t>(value);
      std::memcpy(bits + i * 4, &narrow, 4);
      break;
    }
    default: std::memcpy(bits + i * 8, &value, 8); break;
  }
}

}  // namespace

StatusOr<RngPlan> plan_rng_bit_generator(const Instruction& instruction, const Shape& state) {
  RngPlan plan;
  const RawAttribute* algorithm = find_own_attribute(instruction, "algorithm");
  const std::string name = algorithm == nullptr ? "rng_default" : algorithm->value;
  if (name == "rng_default" || name == "rng_philox") plan.algorithm = RngAlgorithm::kPhilox;
  else if (name == "rng_three_fry") plan.algorithm = RngAlgorithm::kThreeFry;
  else
    return bad_instruction(instruction, str_cat("algorithm=", name,
                                                ": expected algorithm=rng_default, rng_three_fry or rng_philox"));
  const Shape& result = instruction.shape();
  plan.state_size = state.is_array() && state.rank() == 1 ? state.dimension(0) : -1;
  const bool state_ok = state.is_array() && state.element_type() == PrimitiveType::kU64 &&
                        (plan.state_size == 2 || (plan.state_size == 3 && plan.algorithm == RngAlgorithm::kPhilox));
  if (!state_ok)
    return bad_instruction(instruction, str_cat("state ", state.to_string(false), " must be u64[2]",
                                                plan.algorithm == RngAlgorithm::kPhilox ? " or u64[3]" : ""));
  if (!result.is_tuple() || result.tuple_size() != 2 || !result.tuple_shape(0).compatible(state) ||
      !result.tuple_shape(1).is_array())
    return bad_instruction(instruction, str_cat("result ", result.to_string(false), " must be (",
                                                state.to_string(false), ", bits)"));
  plan.type = result.tuple_shape(1).element_type();
  if (plan.type != PrimitiveType::kU8 && plan.type != PrimitiveType::kU16 && plan.type != PrimitiveType::kU32 &&
      plan.type != PrimitiveType::kU64)
    return unimplemented(str_cat("rng-bit-generator %", instruction.name(), ": insitu generates u8, u16, u32 and u64 "
                                 "bits, not ", primitive_type_name(plan.type)),
                         instruction.location());
  plan.dimensions = result.tuple_shape(1).dimensions();
  return plan;
}

void generate_random_bits(const RngPlan& plan, const uint64_t* state, uint64_t* out_state, uint8_t* bits) {
  const uint64_t key = state[0];
  const uint32_t k0 = static_cast<uint32_t>(key), k1 = static_cast<uint32_t>(key >> 32);
  const int64_t n = count(plan.dimensions);
  const bool wide = plan.type == PrimitiveType::kU64;
  if (plan.algorithm == RngAlgorithm::kThreeFry) {
    const uint64_t counter = state[1];
    uint64_t used = 0;
    if (wide) {
      for (int64_t i = 0; i < n; ++i) {
        const uint64_t input = counter + static_cast<uint64_t>(i);
        auto [x0, x1] = threefry(static_cast<uint32_t>(input), static_cast<uint32_t>(input >> 32), k0, k1);
        store_bits(plan.type, bits, i, static_cast<uint64_t>(x0) | (static_cast<uint64_t>(x1) << 32));
      }
      used = static_cast<uint64_t>(n);
    } else if (plan.dimensions.empty()) {
      store_bits(plan.type, bits, 0, threefry(static_cast<uint32_t>(counter), static_cast<uint32_t>(counter >> 32), k0, k1).first);
      used = 1;
    } else {
      // half the shape along `split`; element 2h + j of that dimension is output j of half index h
      const std::vector<int64_t>& d = plan.dimensions;
      size_t split = d.size();
      for (size_t i = 0; i < d.size() && split == d.size(); ++i)
        if (d[i] % 2 == 0) split = i;
      if (split == d.size()) {
        split = 0;
        for (size_t i = 1; i < d.size(); ++i)
          if (d[i] > d[split]) split = i;
      }
      std::vector<int64_t> half = d;
      half[split] = (d[split] + 1) / 2;
      int64_t inner = 1;  // elements after the split dimension
      for (size_t i = split + 1; i < d.size(); ++i) inner *= d[i];
      const int64_t halves = count(half);
      for (int64_t h = 0; h < halves; ++h) {
        const uint64_t input = counter + static_cast<uint64_t>(h);
        const auto [x0, x1] = threefry(static_cast<uint32_t>(input), static_cast<uint32_t>(input >> 32), k0, k1);
        const int64_t outer = h / (half[split] * inner), along = (h / inner) % half[split], rest = h % inner;
        for (int j = 0; j < 2; ++j) {
          const int64_t position = 2 * along + j;
          if (position >= d[split]) continue;
          store_bits(plan.type, bits, (outer * d[split] + position) * inner + rest, j == 0 ? x0 : x1);
        }
      }
      used = static_cast<uint64_t>(halves);
    }
    out_state[0] = key;
    out_state[1] = counter + used;
    return;
  }
  // philox: a 128-bit counter (low, high); with a 2-word state its high word is the key
  uint64_t low = state[1], high = plan.state_size == 3 ? state[2] : state[0];
  const int64_t words = wide ? 2 * n : n;
  const int64_t blocks = (words + 3) / 4;
  for (int64_t b = 0; b < blocks; ++b) {
    const uint64_t block_low = low + static_cast<uint64_t>(b);
    const uint64_t block_high = block_low < low ? high + 1 : high;
    uint32_t x[4] = {static_cast<uint32_t>(block_low), static_cast<uint32_t>(block_low >> 32),
                     static_cast<uint32_t>(block_high), static_cast<uint32_t>(block_high >> 32)};
    philox(x, k0, k1);
    if (wide) {
      for (int j = 0; j < 2 && 2 * b + j < n; ++j)
        store_bits(plan.type, bits, 2 * b + j, static_cast<uint64_t>(x[2 * j]) | (static_cast<uint64_t>(x[2 * j + 1]) << 32));
    } else {
      for (int j = 0; j < 4 && 4 * b + j < n; ++j) store_bits(plan.type, bits, 4 * b + j, x[j]);
    }
  }
  const uint64_t new_low = low + static_cast<uint64_t>(blocks);
  out_state[0] = key;
  out_state[1] = new_low;
  if (plan.state_size == 3) out_state[2] = new_low < low ? high + 1 : high;
}

StatusOr<Literal> evaluate_rng_bit_generator(const Instruction& instruction, Operands operands) {
  if (operands.size() != 1) return bad_instruction(instruction, "takes one operand (the state)");
  INSITU_ASSIGN_OR_RETURN(RngPlan plan, plan_rng_bit_generator(instruction, operands[0]->shape()));
  Literal result(instruction.shape());
  generate_random_bits(plan, reinterpret_cast<const uint64_t*>(operands[0]->untyped_data()),
                       reinterpret_cast<uint64_t*>(result.elements()[0].untyped_data()),
                       result.elements()[1].untyped_data());
  return result;
}

}  // namespace insitu::eval
