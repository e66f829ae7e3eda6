// plus_one: x + 1, in place (example_kernels.h).
#include "examples/kernels/example_kernels.h"
#include "examples/kernels/row_blocks.h"

namespace insitu::examples {
namespace {

template <typename T>
void add_one(const BlockRef<T>& in, const BlockRef<T>& out) {
  if (in.is_contiguous() && out.is_contiguous()) {
    const T* source = in.data();
    T* target = out.data();
    for (int64_t k = 0, n = out.size(); k < n; ++k) target[k] = static_cast<T>(source[k] + T(1));
    return;
  }
  out.for_each_index([&](std::span<const int64_t> index) { out.store(index, static_cast<T>(in.load(index) + T(1))); });
}

}  // namespace

KernelSpec plus_one_kernel() {
  KernelSpec spec;
  spec.name = "plus_one";
  spec.in_specs.resize(1);
  spec.out_specs.resize(1);
  spec.input_output_aliases = {{0, 0}};
  spec.specialize = [](std::span<const Shape> operands, std::span<const Shape> results, KernelSpec& spec) {
    if (!operands.empty()) use_row_blocks(operands[0], spec);
  };
  // On a CUDA device (the f32, f64, s32, s64 and u32 arrays it takes there): each grid step's
  // team of threads strides over its row block.
  spec.cuda_function = "plus_one_cuda";
  spec.cuda_source = R"(template <typename T>
__device__ void plus_one_cuda(insitu_team team, insitu_block<const T> in, insitu_block<T> out) {
  const long long n = out.size();
  if (in.contiguous() && out.contiguous()) {
    for (long long k = team.lane; k < n; k += team.lanes) out.data[k] = (T)(in.data[k] + (T)1);
    return;
  }
  for (long long k = team.lane; k < n; k += team.lanes) out.flat(k) = (T)(in.flat(k) + (T)1);
}
)";
  spec.body = [](const KernelContext&, KernelRefs& refs) {
    switch (refs.input_type(0)) {
      case PrimitiveType::kS8: return add_one(refs.input<int8_t>(0), refs.output<int8_t>(0));
      case PrimitiveType::kS16: return add_one(refs.input<int16_t>(0), refs.output<int16_t>(0));
      case PrimitiveType::kS32: return add_one(refs.input<int32_t>(0), refs.output<int32_t>(0));
      case PrimitiveType::kS64: return add_one(refs.input<int64_t>(0), refs.output<int64_t>(0));
      case PrimitiveType::kU8: return add_one(refs.input<uint8_t>(0), refs.output<uint8_t>(0));
      case PrimitiveType::kU32: return add_one(refs.input<uint32_t>(0), refs.output<uint32_t>(0));
      case PrimitiveType::kF32: return add_one(refs.input<float>(0), refs.output<float>(0));
      case PrimitiveType::kF64: return add_one(refs.input<double>(0), refs.output<double>(0));
      default: INSITU_UNREACHABLE("plus_one: unsupported element type " << primitive_type_name(refs.input_type(0)));
    }
  };
  return spec;
}

}  // namespace insitu::examples
