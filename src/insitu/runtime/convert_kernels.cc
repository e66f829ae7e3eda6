// Native convert between real element types (pred, integers, f16, bf16, f32, f64), with the
// reference evaluator's semantics (elementwise_convert.cc, XLA's Literal::Convert):
// float -> integer truncates toward zero, saturates, NaN -> 0; x -> pred is x != 0;
// -> f16/bf16 rounds through f32 to nearest even. Complex conversions use the fallback.
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
  const int64_t stride = operand.scalar ? 0 : 1;
  run_range(call.pool, out.element_count(), kParallelElements, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) o[i] = convert_value<To>(x[i * stride]);
  });
  return ok_status();
}

}  // namespace

KernelFn choose_convert(const ArrayView& operand, const ArrayView& out) {
  if (is_complex(operand.type()) || is_complex(out.type())) return nullptr;
  KernelFn chosen = nullptr;
  dispatch_element_type(operand.type(), [&](auto from_tag) {
    using From = decltype(from_tag);
    dispatch_element_type(out.type(), [&](auto to_tag) {
      using To = decltype(to_tag);
      if constexpr (!kIsComplex<From> && !kIsComplex<To>) chosen = &convert_kernel<From, To>;
    });
  });
  return chosen;
}

}  // namespace kernels
}  // namespace insitu
