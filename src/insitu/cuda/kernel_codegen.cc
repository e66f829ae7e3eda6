// Registered kernels (kernel/kernel.h) on the device: the kernel's CUDA body behind a generated
// __global__ wrapper (codegen.h: generate_custom_kernel).
#include <algorithm>

#include "insitu/cuda/codegen.h"
#include "insitu/cuda/codegen_internal.h"
#include "insitu/support/str.h"

namespace insitu::cuda {

using detail::cuda_type;
using detail::refuse;

std::string custom_kernel_prelude() {
  return R"(// Blocks and teams of registered kernels (insitu's kernel.h: cuda_source).
struct insitu_team {
  long long lane, lanes;  // this thread's place in the grid step's team
};
template <typename T>
struct insitu_block {  // a strided view of one block of an array, clipped at its edges
  T* data;
  int rank;
  long long shape[6], stride[6];
  __device__ long long size() const {
    long long n = 1;
    for (int d = 0; d < rank; ++d) n *= shape[d];
    return n;
  }
  __device__ long long dim(int d) const { return shape[d]; }
  // Whether the block's elements are data[0, size()) in row-major order (whole rows of an array).
  __device__ bool contiguous() const {
    long long expected = 1;
    for (int d = rank - 1; d >= 0; --d) {
      if (shape[d] != 1 && stride[d] != expected) return false;
      expected *= shape[d];
    }
    return true;
  }
  __device__ T& operator()(long long i) const { return data[i * stride[0]]; }
  __device__ T& operator()(long long i, long long j) const { return data[i * stride[0] + j * stride[1]]; }
  __device__ T& operator()(long long i, long long j, long long k) const {
    return data[i * stride[0] + j * stride[1] + k * stride[2]];
  }
  // Element k of the block in row-major order.
  __device__ T& flat(long long k) const {
    long long offset = 0;
    for (int d = rank - 1; d >= 0; --d) {
      offset += (k % shape[d]) * stride[d];
      k /= shape[d];
    }
    return data[offset];
  }
};
// The block described at `entry` (offset, rank, shape[6], stride[6]) of the array at `base`.
template <typename T>
static __device__ __forceinline__ insitu_block<T> insitu_make_block(T* base, const long long* entry) {
  insitu_block<T> block;
  block.data = base + entry[0];
  block.rank = (int)entry[1];
  for (int d = 0; d < 6; ++d) {
    block.shape[d] = entry[2 + d];
    block.stride[d] = entry[8 + d];
  }
  return block;
}
)";
}

StatusOr<CustomKernelLaunch> generate_custom_kernel(const Instruction& call, const KernelGridLayout& grid,
                                                    const std::string& name) {
  const int64_t operands = call.operand_count();
  const int64_t refs = static_cast<int64_t>(grid.dimensions.size());
  const int64_t outputs = refs - operands;
  const bool tuple = call.shape().is_tuple();
  if (outputs < 1 || outputs != (tuple ? call.shape().tuple_size() : 1) ||
      static_cast<int64_t>(grid.blocks.size()) != grid.steps * refs)
    return refuse(call, "the kernel's device layout does not match the call's operands and results");
  for (const auto& dimensions : grid.dimensions)
    if (dimensions.size() > static_cast<size_t>(kMaxBlockRank))
      return refuse(call, str_cat("an array of rank ", dimensions.size(), " (blocks of rank up to ", kMaxBlockRank,
                                  " are generated)"));
  CustomKernelLaunch launch;
  launch.threads = grid.steps * kTeamLanes;
  // The table: per step, per operand then output, offset, rank, shape[6], stride[6].
  launch.table.reserve(static_cast<size_t>(grid.steps * refs * kBlockEntry));
  for (int64_t step = 0; step < grid.steps; ++step) {
    for (int64_t r = 0; r < refs; ++r) {
      const KernelGridBlock& block = grid.blocks[static_cast<size_t>(step * refs + r)];
      const std::vector<int64_t>& dimensions = grid.dimensions[static_cast<size_t>(r)];
      const std::vector<int64_t> strides = detail::strides_of(dimensions);
      int64_t offset = 0;
      for (size_t d = 0; d < dimensions.size(); ++d) offset += block.start[d] * strides[d];
      launch.table.push_back(offset);
      launch.table.push_back(static_cast<int64_t>(dimensions.size()));
      for (int64_t d = 0; d < kMaxBlockRank; ++d)
        launch.table.push_back(d < static_cast<int64_t>(dimensions.size()) ? block.extent[d] : 1);
      for (int64_t d = 0; d < kMaxBlockRank; ++d)
        launch.table.push_back(d < static_cast<int64_t>(dimensions.size()) ? strides[d] : 0);
    }
  }
  // One pointer per operand, then per output; an aliased pair is one pointer, so none is
  // __restrict__.
  std::string parameters = "const long long* __restrict__ table, ", blocks;
  for (int64_t r = 0; r < refs; ++r) {
    const bool input = r < operands;
    const Shape& shape = input ? call.operand(r)->shape() : (tuple ? call.shape().tuple_shape(r - operands) : call.shape());
    if (!shape.is_array()) return refuse(call, "an operand or result that is not an array");
    INSITU_ASSIGN_OR_RETURN(std::string type, cuda_type(call, shape.element_type()));
    if (input) type = "const " + type;
    parameters += str_cat(type, "* a", r, ", ");
    blocks += str_cat(", insitu_make_block<", type, ">(a", r, ", entry + ", r * kBlockEntry, ")");
  }
  launch.kernel.name = name;
  launch.kernel.source = str_cat(
      "extern \"C\" __global__ void ", name, "(", parameters, "long long n) {\n",
      "  const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;\n", "  if (i >= n) return;\n",
      "  const long long* entry = table + (i / ", kTeamLanes, ") * ", refs * kBlockEntry, ";\n", "  ",
      grid.cuda_function, "(insitu_team{i % ", kTeamLanes, ", ", kTeamLanes, "}", blocks, ");\n}\n");
  return launch;
}

}  // namespace insitu::cuda
