// convert, bitcast-convert and reduce-precision.
//
// convert follows XLA's Literal::Convert:
//   float -> integer truncates toward zero and saturates; NaN -> 0;
//   anything -> pred is x != 0 (NaN -> true); pred -> anything is 0 or 1;
//   -> f16/bf16 goes through f32 and rounds to nearest even (as Eigen's half/bfloat16 do);
//   real -> complex sets the imaginary part to 0; c64 <-> c128 converts both parts;
//   complex -> real is rejected (XLA's shape inference: "not implemented").
// stochastic-convert rounds a float to a signed integer up or down by a random operand
// (element_arithmetic.h, stochastic_convert_value).
// bitcast-convert reinterprets bits (little endian; s4 is 4 bits though stored in a byte). Equal
// widths keep the shape; a wider input gains a minor dimension of size in_bits/out_bits, a
// narrower one loses its minor dimension, which must be out_bits/in_bits.
// reduce-precision rounds the mantissa to nearest even, then flushes exponents out of range to
// zero (below) or infinity (above); NaN stays NaN (or becomes inf when no mantissa bits are
// left), as XLA's evaluator does. f16/bf16 are reduced in f32.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "insitu/evaluator/elementwise_internal.h"

namespace insitu::eval {
namespace {


template <typename Float>
Float reduce_precision(Float value, int64_t exponent_bits, int64_t mantissa_bits) {
  using Bits = std::conditional_t<sizeof(Float) == 4, uint32_t, uint64_t>;
  constexpr int64_t kMantissaBits = std::numeric_limits<Float>::digits - 1;
  constexpr int64_t kExponentBits = 8 * sizeof(Float) - kMantissaBits - 1;
  Bits bits;
  std::memcpy(&bits, &value, sizeof(bits));
  if (mantissa_bits < kMantissaBits) {
    // Round to nearest, ties to even: add 0111... (plus one when the last kept bit is 1), then
    // clear the dropped bits. A carry into the exponent is the right answer.
    const int64_t dropped = kMantissaBits - mantissa_bits;
    const Bits last_kept_bit = Bits{1} << dropped;
    const Bits bias = (last_kept_bit >> 1) - 1 + ((bits & last_kept_bit) >> dropped);
    bits = (bits + bias) & ~(last_kept_bit - 1);
  }
  if (exponent_bits < kExponentBits) {
    const Bits sign_mask = Bits{1} << (8 * sizeof(Float) - 1);
    const Bits exponent_mask = ((Bits{1} << kExponentBits) - 1) << kMantissaBits;
    const Bits exponent_bias = (Bits{1} << (kExponentBits - 1)) - 1;
    const Bits reduced_bias = (Bits{1} << (exponent_bits - 1)) - 1;
    const Bits max_exponent = exponent_bias + reduced_bias;
    const Bits min_exponent = exponent_bias - reduced_bias;
    const Bits exponent = bits & exponent_mask;
    const Bits signed_zero = bits & sign_mask;
    if (exponent > (max_exponent << kMantissaBits)) bits = signed_zero | exponent_mask;  // overflow: inf
    if (exponent <= (min_exponent << kMantissaBits)) bits = signed_zero;  // underflow (and denormals): 0
  }
  Float result;
  std::memcpy(&result, &bits, sizeof(bits));
  if (std::isnan(value)) return mantissa_bits > 0 ? value : std::numeric_limits<Float>::infinity();
  return result;
}

}  // namespace

StatusOr<Literal> evaluate_convert(const Instruction& instruction, const Literal& x) {
  const PrimitiveType from = x.shape().element_type();
  const PrimitiveType to = instruction.shape().element_type();
  if (!instruction.shape().is_array()) {
    return invalid_argument(str_cat("convert %", instruction.name(), " must produce an array, not ",
                                    instruction.shape().to_string(false)),
                            instruction.location());
  }
  if (is_complex(from) && !is_complex(to)) {
    return unimplemented(str_cat("convert %", instruction.name(), " from ", primitive_type_name(from), " to ",
                                 primitive_type_name(to),
                                 ": complex to real conversion is not defined in XLA; take real() or imag() first"),
                         instruction.location());
  }
  INSITU_RETURN_IF_ERROR(check_result_shape(instruction, to, x.shape().dimensions()));
  Literal result(instruction.shape());
  dispatch_element_type(from, [&](auto from_tag) {
    using From = decltype(from_tag);
    dispatch_element_type(to, [&](auto to_tag) {
      using To = decltype(to_tag);
      if constexpr (!(kIsComplex<From> && !kIsComplex<To>)) {
        auto in = x.data<From>();
        auto out = result.data<To>();
        for (size_t i = 0; i < in.size(); ++i) out[i] = convert_value<To>(in[i]);
      }
    });
  });
  return result;
}

StatusOr<Literal> evaluate_stochastic_convert(const Instruction& instruction, const Literal& x, const Literal& random) {
  const PrimitiveType from = x.shape().element_type(), to = instruction.shape().element_type();
  const PrimitiveType bits_type = random.shape().element_type();
  if (!is_unsigned_integral(bits_type) || bit_width(bits_type) != bit_width(from) ||
      random.shape().dimensions() != x.shape().dimensions())
    return invalid_argument(str_cat("stochastic-convert %", instruction.name(), ": the random operand ",
                                    random.shape().to_string(false), " must be unsigned of the operand's width, ",
                                    "with its dimensions (", x.shape().to_string(false), ")"),
                            instruction.location());
  INSITU_RETURN_IF_ERROR(check_result_shape(instruction, to, x.shape().dimensions()));
  Literal result(instruction.shape());
  const bool done = dispatch_stochastic_convert(from, to, [&](auto from_tag, auto random_tag, auto to_tag) {
    using From = decltype(from_tag);
    using Random = decltype(random_tag);
    using To = decltype(to_tag);
    auto in = x.data<From>();
    auto bits = random.data<Random>();
    auto out = result.data<To>();
    for (size_t i = 0; i < in.size(); ++i) out[i] = stochastic_convert_value<To>(in[i], bits[i]);
  });
  if (!done)
    return unimplemented(str_cat("stochastic-convert %", instruction.name(), " from ", primitive_type_name(from), " to ",
                                 primitive_type_name(to), ": insitu rounds f16, bf16, f32 and f64 to s8, s16, s32 ",
                                 "and s64 only (XLA's decomposer: signed integers only)"),
                         instruction.location());
  return result;
}

StatusOr<Literal> evaluate_bitcast_convert(const Instruction& instruction, const Literal& x) {
  const Shape& shape = instruction.shape();
  const PrimitiveType from = x.shape().element_type();
  if (!shape.is_array() || !x.shape().is_array()) {
    return invalid_argument(str_cat("bitcast-convert %", instruction.name(), " works on arrays only"),
                            instruction.location());
  }
  const PrimitiveType to = shape.element_type();
  if (is_complex(from) != is_complex(to)) {
    return invalid_argument(str_cat("bitcast-convert %", instruction.name(), " between complex and real types (",
                                    primitive_type_name(from), " to ", primitive_type_name(to),
                                    ") is not allowed; use real()/imag() and complex()"),
                            instruction.location());
  }
  std::vector<int64_t> expected = x.shape().dimensions();
  const int64_t from_width = bit_width(from), to_width = bit_width(to);
  if (from_width > to_width) {
    expected.push_back(from_width / to_width);
  } else if (from_width < to_width) {
    if (expected.empty() || expected.back() != to_width / from_width) {
      return invalid_argument(str_cat("bitcast-convert %", instruction.name(), " from ",
                                      x.shape().to_string(false), " to ", primitive_type_name(to),
                                      " needs a minor dimension of size ", to_width / from_width,
                                      " to combine into each wider element"),
                              instruction.location());
    }
    expected.pop_back();
  }
  INSITU_RETURN_IF_ERROR(check_result_shape(instruction, to, expected));
  Literal result(shape);
  if (from_width % 8 == 0 && to_width % 8 == 0) {  // whole bytes: the bytes are the bits
    INSITU_CHECK(result.size_bytes() == x.size_bytes()) << "bitcast-convert sizes";
    if (x.size_bytes() > 0) std::memcpy(result.untyped_data(), x.untyped_data(), static_cast<size_t>(x.size_bytes()));
    return result;
  }
  // A sub-byte type on either side (stored one per byte): the elements' bit patterns in order,
  // each wider element holding the narrower ones from its low bits up (little endian, as XLA).
  auto load = [](const uint8_t* at, PrimitiveType type) {
    uint64_t pattern = 0;
    std::memcpy(&pattern, at, static_cast<size_t>(byte_width(type)));
    return bit_width(type) < 64 ? pattern & ((uint64_t{1} << bit_width(type)) - 1) : pattern;
  };
  auto store = [](uint8_t* at, PrimitiveType type, uint64_t pattern) {
    const int64_t bits = bit_width(type);
    if (bits < 64) pattern &= (uint64_t{1} << bits) - 1;
    if (bits < 8 && is_signed_integral(type) && ((pattern >> (bits - 1)) & 1)) pattern |= ~uint64_t{0} << bits;
    std::memcpy(at, &pattern, static_cast<size_t>(byte_width(type)));  // canonical: s* sign-extended
  };
  const int64_t narrow_width = std::min(from_width, to_width);
  const int64_t per_wide = std::max(from_width, to_width) / narrow_width;
  const PrimitiveType narrow = from_width < to_width ? from : to, wide_type = from_width < to_width ? to : from;
  const uint8_t* in = x.untyped_data();
  uint8_t* out = result.untyped_data();
  const int64_t wide_count = std::min(x.element_count(), result.element_count());
  const int64_t narrow_bytes = byte_width(narrow), wide_bytes = byte_width(wide_type);
  for (int64_t wide = 0; wide < wide_count; ++wide) {
    if (from_width > to_width) {
      const uint64_t pattern = load(in + wide * wide_bytes, from);
      for (int64_t j = 0; j < per_wide; ++j)
        store(out + (wide * per_wide + j) * narrow_bytes, to, pattern >> (j * narrow_width));
    } else {
      uint64_t pattern = 0;
      for (int64_t j = 0; j < per_wide; ++j)
        pattern |= load(in + (wide * per_wide + j) * narrow_bytes, from) << (j * narrow_width);
      store(out + wide * wide_bytes, to, pattern);
    }
  }
  return result;
}

StatusOr<Literal> evaluate_reduce_precision(const Instruction& instruction, const Literal& x) {
  const int64_t exponent_bits = instruction.exponent_bits, mantissa_bits = instruction.mantissa_bits;
  if (exponent_bits < 1 || mantissa_bits < 0) {
    return invalid_argument(str_cat("reduce-precision %", instruction.name(), " needs exponent_bits >= 1 and ",
                                    "mantissa_bits >= 0, got exponent_bits=", exponent_bits,
                                    " mantissa_bits=", mantissa_bits),
                            instruction.location());
  }
  return map_unary<kFloat>(instruction, x, [&](auto v) { return reduce_precision(v, exponent_bits, mantissa_bits); });
}

}  // namespace insitu::eval
