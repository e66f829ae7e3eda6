// Native convert between real element types (pred, integers, f16, bf16, f32, f64), with the
// reference evaluator's semantics (elementwise_convert.cc, XLA's Literal::Convert):
// float -> integer truncates toward zero, saturates, NaN -> 0; x -> pred is x != 0;
// -> f16/bf16 rounds through f32 to nearest even; real -> complex has imaginary part 0 (complex
// -> real is refused by the evaluator, so it runs the fallback's error). real and imag of a
// complex array take one part. stochastic-convert rounds a float to a signed integer by a random
// operand (the evaluator's stochastic_convert_value).
#include <cmath>
#include <limits>

#include "insitu/runtime/element_compute.h"
#include "insitu/runtime/elementwise_internal.h"

namespace insitu {
namespace kernels {
namespace {

template <typename From, typename To>
Status convert_kernel(const KernelCall& call) {
  const ArrayView& operand = call.operands[0];
  const ArrayView& out = call.out();
  const From* x = reinterpret_cast<const From*>(operand.data);
  To* o = reinterpret_cast<To*>(out.data);
  const bool scalar = operand.scalar;
  run_range(call.pool, out.element_count(), kParallelElements, [&](int64_t begin, int64_t end) {
    if (scalar) {  // a unit-stride loop when not (a runtime stride keeps the loop scalar)
      const To value = convert_value<To>(x[0]);
      for (int64_t i = begin; i < end; ++i) o[i] = value;
    } else {
      for (int64_t i = begin; i < end; ++i) o[i] = convert_value<To>(x[i]);
    }
  });
  return ok_status();
}

// stochastic-convert: the evaluator's stochastic_convert_value per element; either operand may
// be a scalar view (an unmaterialized broadcast).
template <typename From, typename Random, typename To>
Status stochastic_convert_kernel(const KernelCall& call) {
  const From* x = reinterpret_cast<const From*>(call.operands[0].data);
  const Random* random = reinterpret_cast<const Random*>(call.operands[1].data);
  To* o = reinterpret_cast<To*>(call.out().data);
  const int64_t x_stride = call.operands[0].scalar ? 0 : 1, random_stride = call.operands[1].scalar ? 0 : 1;
  run_range(call.pool, call.out().element_count(), kParallelElements, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) o[i] = stochastic_convert_value<To>(x[i * x_stride], random[i * random_stride]);
  });
  return ok_status();
}

template <typename C, bool kImaginary>
Status complex_part_kernel(const KernelCall& call) {
  const ArrayView& operand = call.operands[0];
  const C* x = reinterpret_cast<const C*>(operand.data);
  auto* o = reinterpret_cast<typename C::value_type*>(call.out().data);
  const int64_t stride = operand.scalar ? 0 : 1;
  run_range(call.pool, call.out().element_count(), kParallelElements, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) o[i] = kImaginary ? x[i * stride].imag() : x[i * stride].real();
  });
  return ok_status();
}

}  // namespace

KernelFn choose_stochastic_convert(const ArrayView& operand, const ArrayView& random, const ArrayView& out) {
  const PrimitiveType bits = random.type();
  if (!is_unsigned_integral(bits) || bit_width(bits) != bit_width(operand.type())) return nullptr;
  KernelFn chosen = nullptr;
  dispatch_stochastic_convert(operand.type(), out.type(), [&](auto from_tag, auto random_tag, auto to_tag) {
    chosen = &stochastic_convert_kernel<decltype(from_tag), decltype(random_tag), decltype(to_tag)>;
  });
  return chosen;  // null: the fallback reports the evaluator's error
}

KernelFn choose_complex_part(Opcode opcode, const ArrayView& operand, const ArrayView& out) {
  const bool imaginary = opcode == Opcode::kImag;
  if (operand.type() == PrimitiveType::kC64 && out.type() == PrimitiveType::kF32)
    return imaginary ? &complex_part_kernel<std::complex<float>, true> : &complex_part_kernel<std::complex<float>, false>;
  if (operand.type() == PrimitiveType::kC128 && out.type() == PrimitiveType::kF64)
    return imaginary ? &complex_part_kernel<std::complex<double>, true>
                     : &complex_part_kernel<std::complex<double>, false>;
  return nullptr;
}

KernelFn choose_convert(const ArrayView& operand, const ArrayView& out) {
  if (is_complex(operand.type()) && !is_complex(out.type())) return nullptr;
  KernelFn chosen = nullptr;
  dispatch_element_type(operand.type(), [&](auto from_tag) {
    using From = decltype(from_tag);
    dispatch_element_type(out.type(), [&](auto to_tag) {
      using To = decltype(to_tag);
      if constexpr (!kIsComplex<From> || kIsComplex<To>) chosen = &convert_kernel<From, To>;
    });
  });
  return chosen;
}

}  // namespace kernels
}  // namespace insitu
