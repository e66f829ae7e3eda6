// convolution natively, for operands of the result's element type (a mix runs the fallback,
// which converts them first), one of three ways chosen at create:
//
// - On the library's own convolution primitive (library_gemm.h's LibraryConvolution), for the
//   f32 convolutions below that are ungrouped, with windows of at most 11 positions per
//   dimension and no lhs dilation, reversal or negative padding, when the library has an
//   optimized kernel for them (within library_gemm.h's tolerance, like the GEMMs).
// - On the GEMM library (library_gemm.h), for f32 convolutions of at least
//   kLibraryGemmMinimumWork multiply-adds whose output feature dimension is the result's minor
//   one: per group (feature or batch group), a block of output positions gathers its patches
//   (window positions x the group's input features, zeros where the window falls in padding or
//   between dilated inputs) into a per-thread scratch matrix (transposed when lhs's batch is its
//   minor dimension), and library calls multiply it by the kernel's group, writing the result
//   rows in place: one call when the kernel is one matrix the library reads in place, else one
//   per window position, accumulated. Any dim_labels, stride, padding, dilation and reversal take this
//   path: they only change where a patch reads. Results are within library_gemm.h's tolerance
//   of the evaluator's, with one difference stated here: padding contributes 0 x w products,
//   so a NaN or infinite kernel weight that meets padding gives NaN where the evaluator (which
//   skips padding, as XLA's reference evaluator does) gives a number. XLA:CPU's library
//   convolutions pad with zeros the same way.
// - Otherwise convolution.h's loop over the step's slices, output elements split over the
//   pool, bit for bit the evaluator's.
#include <algorithm>

#include "insitu/evaluator/convolution.h"
#include "insitu/runtime/element_compute.h"
#include "insitu/runtime/kernels.h"
#include "insitu/runtime/library_gemm.h"

namespace insitu {
namespace {

struct ConvolutionKernelPlan final : KernelPlan {
  eval::ConvolutionPlan plan;
  // The library path's (gemm_kernel's) plan.
  int64_t groups = 1;          // feature or batch groups (at most one of the counts is above 1)
  int64_t rows = 0;            // output positions: the result's elements / its output features
  int64_t columns = 0;         // output features per group
  int64_t depth = 0;           // patch length: window positions x input features of a group
  int64_t block_rows = 0;      // output positions per task
  bool batch_grouped = false;  // the groups are batch groups (else feature groups)
  bool feature_major = false;  // patch order: (input feature, window position) when true
  // The kernel as one depth x columns matrix, or (per_window) one input-features x columns
  // matrix per window position at window_offsets[w], each product added to the last.
  bool per_window = false;
  kernels::GemmOperand kernel;
  std::vector<int64_t> window_offsets;  // kernel element offset of each window position
  // Patches stored transposed (depth x block_rows): when the lhs batch dimension is the minor
  // one of both the lhs and the rows (a kernel gradient's f01b_i01o->01bf), a patch column's
  // run of batch elements is contiguous in lhs.
  bool transposed_patches = false;
  int64_t batch_run = 1;  // rows per contiguous batch run (transposed patches)
  std::vector<int64_t> row_dimensions;  // the result's dimensions but the (minor) feature one
  // The library's own convolution primitive, when it has an optimized one for this problem.
  std::shared_ptr<const kernels::LibraryConvolution> library;
};

// The lhs offset of the window position `position` from output index `index`, or -1 when
// the window falls in padding or between dilated inputs. `base` covers batch and group.
int64_t window_offset(const eval::ConvolutionPlan& plan, std::span<const int64_t> index,
                      std::span<const int64_t> position, int64_t base) {
  int64_t offset = base;
  for (size_t s = 0; s < plan.window.size(); ++s) {
    const WindowDimension& window = plan.window[s];
    // Patch column w pairs with kernel position w: under reversal it reads the mirrored input.
    const int64_t at_window = window.window_reversal ? window.size - 1 - position[s] : position[s];
    const int64_t undilated = index[plan.out_spatial[s]] * window.stride - window.padding_low + at_window * window.window_dilation;
    const int64_t at = undilated / window.base_dilation;
    if (undilated % window.base_dilation != 0 || at < 0 || at >= plan.lhs_sizes[s]) return -1;
    offset += at * plan.lhs_strides[plan.lhs_spatial[s]];
  }
  return offset;
}

// The next window position, last spatial dimension fastest.
void next_position(const eval::ConvolutionPlan& plan, std::vector<int64_t>& position) {
  for (int64_t s = static_cast<int64_t>(position.size()) - 1; s >= 0; --s) {
    if (++position[s] < plan.window[s].size) return;
    position[s] = 0;
  }
}

// Output positions [first, first + count) as result indices (feature dimension left 0).
void row_index(const ConvolutionKernelPlan& p, int64_t row, std::vector<int64_t>& index) {
  for (int64_t rest = row, d = static_cast<int64_t>(p.row_dimensions.size()) - 1; d >= 0; --d) {
    index[d] = rest % p.row_dimensions[d];
    rest /= p.row_dimensions[d];
  }
}

// lhs offset of output row `index`'s batch element and group (the feature dimension is the
// result's last, so the others keep their numbers).
int64_t row_base(const ConvolutionKernelPlan& p, std::span<const int64_t> index, int64_t group) {
  const eval::ConvolutionPlan& plan = p.plan;
  const int64_t batch = index[plan.out_batch] + (p.batch_grouped ? group * plan.batch_group_size : 0);
  return batch * plan.lhs_strides[plan.lhs_batch] +
         (p.batch_grouped ? 0 : group * plan.input_feature_group_size * plan.lhs_strides[plan.lhs_feature]);
}

// Patches of output positions [first, first + count) for group `group` into `patches`
// (count x depth, row-major), in the plan's patch order.
void gather_patches(const ConvolutionKernelPlan& p, const float* lhs, int64_t group, int64_t first, int64_t count,
                    float* patches) {
  const eval::ConvolutionPlan& plan = p.plan;
  const int64_t features = plan.input_feature_group_size, windows = plan.window_positions;
  const int64_t feature_stride = plan.lhs_strides[plan.lhs_feature];
  std::vector<int64_t> index(p.row_dimensions.size()), position(plan.window.size());
  for (int64_t r = 0; r < count; ++r) {
    row_index(p, first + r, index);
    const int64_t base = row_base(p, index, group);
    float* row = patches + r * p.depth;
    std::fill(position.begin(), position.end(), 0);
    for (int64_t w = 0; w < windows; ++w, next_position(plan, position)) {
      const int64_t offset = window_offset(plan, index, position, base);
      if (p.feature_major) {
        for (int64_t z = 0; z < features; ++z) row[z * windows + w] = offset < 0 ? 0.0f : lhs[offset + z * feature_stride];
      } else if (offset < 0) {
        std::fill(row + w * features, row + (w + 1) * features, 0.0f);
      } else if (feature_stride == 1) {
        std::copy(lhs + offset, lhs + offset + features, row + w * features);
      } else {
        for (int64_t z = 0; z < features; ++z) row[w * features + z] = lhs[offset + z * feature_stride];
      }
    }
  }
}

// The same patches transposed (depth x count, row kk at kk * p.block_rows): rows come in runs
// of p.batch_run batch elements at one spatial position, each run contiguous in lhs.
void gather_patches_transposed(const ConvolutionKernelPlan& p, const float* lhs, int64_t group, int64_t first,
                               int64_t count, float* patches) {
  const eval::ConvolutionPlan& plan = p.plan;
  const int64_t features = plan.input_feature_group_size, windows = plan.window_positions;
  const int64_t feature_stride = plan.lhs_strides[plan.lhs_feature];
  std::vector<int64_t> index(p.row_dimensions.size()), position(plan.window.size());
  for (int64_t r = 0; r < count; r += p.batch_run) {
    row_index(p, first + r, index);  // the run's first batch element
    const int64_t base = row_base(p, index, group);
    const int64_t run = std::min(p.batch_run, count - r);
    std::fill(position.begin(), position.end(), 0);
    for (int64_t w = 0; w < windows; ++w, next_position(plan, position)) {
      const int64_t offset = window_offset(plan, index, position, base);
      for (int64_t z = 0; z < features; ++z) {
        const int64_t kk = p.feature_major ? z * windows + w : w * features + z;
        float* to = patches + kk * p.block_rows + r;
        if (offset < 0) std::fill(to, to + run, 0.0f);
        else std::copy(lhs + offset + z * feature_stride, lhs + offset + z * feature_stride + run, to);
      }
    }
  }
}

// The library path: tasks are (group, block of output positions).
Status gemm_kernel(const KernelCall& call) {
  const auto& p = static_cast<const ConvolutionKernelPlan&>(*call.plan);
  const float* lhs = reinterpret_cast<const float*>(call.operands[0].data);
  const float* rhs = reinterpret_cast<const float*>(call.operands[1].data);
  float* out = reinterpret_cast<float*>(call.out().data);
  const int64_t blocks = (p.rows + p.block_rows - 1) / p.block_rows;
  const int64_t out_features = p.columns * p.groups;
  const int64_t kernel_feature_stride = p.plan.rhs_strides[p.plan.rhs_output];
  const int64_t features = p.plan.input_feature_group_size;
  run_range(call.pool, p.groups * blocks, 2, [&](int64_t begin, int64_t end) {
    // Scratch of this thread, kept across calls (at most block_rows x depth floats).
    thread_local std::vector<float> patches;
    if (patches.size() < static_cast<size_t>(p.block_rows * p.depth)) patches.resize(p.block_rows * p.depth);
    for (int64_t task = begin; task < end; ++task) {
      const int64_t group = task / blocks, first = (task % blocks) * p.block_rows;
      const int64_t count = std::min(p.block_rows, p.rows - first);
      if (p.transposed_patches) gather_patches_transposed(p, lhs, group, first, count, patches.data());
      else gather_patches(p, lhs, group, first, count, patches.data());
      // Patch column kk starts at kk (row-major) or kk * block_rows (transposed).
      const int64_t column_step = p.transposed_patches ? p.block_rows : 1;
      const kernels::GemmOperand patch_layout = p.transposed_patches
                                                    ? kernels::GemmOperand{true, p.block_rows, 1, p.block_rows}
                                                    : kernels::GemmOperand{false, p.depth, p.depth, 1};
      const float* kernel = rhs + group * p.columns * kernel_feature_stride;
      float* result = out + first * out_features + group * p.columns;
      if (!p.per_window) {
        kernels::gemm_on_this_thread(count, p.columns, p.depth, patches.data(), patch_layout, kernel, p.kernel, result,
                                     out_features);
        continue;
      }
      for (int64_t w = 0; w < p.plan.window_positions; ++w)  // (w, z) patch order: w's columns are contiguous
        kernels::gemm_on_this_thread(count, p.columns, features, patches.data() + w * features * column_step,
                                     patch_layout, kernel + p.window_offsets[w], p.kernel, result, out_features,
                                     /*accumulate=*/w > 0);
    }
  });
  return ok_status();
}

// On the library's convolution primitive.
Status library_convolution_kernel(const KernelCall& call) {
  const auto& p = static_cast<const ConvolutionKernelPlan&>(*call.plan);
  p.library->run(reinterpret_cast<const float*>(call.operands[0].data),
                 reinterpret_cast<const float*>(call.operands[1].data), reinterpret_cast<float*>(call.out().data),
                 call.pool);
  return ok_status();
}

// The library's primitive for an ungrouped convolution without lhs dilation, reversal or
// negative padding (what its forward convolution means), any layout; or null.
std::shared_ptr<const kernels::LibraryConvolution> plan_library_convolution(const ConvolutionKernelPlan& p) {
  const eval::ConvolutionPlan& plan = p.plan;
  if (p.groups != 1) return nullptr;
  // Windows of a few positions per dimension (what its kernels are made for; a kernel gradient's
  // window over the whole image runs faster as patches).
  for (const WindowDimension& window : plan.window)
    if (window.base_dilation != 1 || window.window_reversal || window.padding_low < 0 || window.padding_high < 0 ||
        window.size > 11)
      return nullptr;
  std::vector<int64_t> out_strides(plan.out_dimensions.size(), 1);
  for (int64_t d = static_cast<int64_t>(out_strides.size()) - 2; d >= 0; --d)
    out_strides[d] = out_strides[d + 1] * plan.out_dimensions[d + 1];
  kernels::LibraryConvolutionSpec spec;
  const int64_t batch = plan.out_dimensions[plan.out_batch], features = plan.input_feature_group_size;
  const int64_t kernel_output = plan.out_dimensions[plan.out_feature];
  spec.input_dims = {batch, features};
  spec.input_strides = {plan.lhs_strides[plan.lhs_batch], plan.lhs_strides[plan.lhs_feature]};
  spec.kernel_dims = {kernel_output, features};
  spec.kernel_strides = {plan.rhs_strides[plan.rhs_output], plan.rhs_strides[plan.rhs_input]};
  spec.output_dims = {batch, kernel_output};
  spec.output_strides = {out_strides[plan.out_batch], out_strides[plan.out_feature]};
  for (size_t s = 0; s < plan.window.size(); ++s) {
    const WindowDimension& window = plan.window[s];
    spec.input_dims.push_back(plan.lhs_sizes[s]);
    spec.input_strides.push_back(plan.lhs_strides[plan.lhs_spatial[s]]);
    spec.kernel_dims.push_back(window.size);
    spec.kernel_strides.push_back(plan.rhs_strides[plan.rhs_spatial[s]]);
    spec.output_dims.push_back(plan.out_dimensions[plan.out_spatial[s]]);
    spec.output_strides.push_back(out_strides[plan.out_spatial[s]]);
    spec.window_strides.push_back(window.stride);
    spec.dilations.push_back(window.window_dilation);
    spec.padding_low.push_back(window.padding_low);
    spec.padding_high.push_back(window.padding_high);
  }
  spec.batch_chunks = ThreadPool::hardware_threads();  // fixed here: results never depend on a call's threads
  return kernels::LibraryConvolution::create(spec);
}

// Plans the library path into `p`, or returns false (the direct loop runs).
bool plan_gemm_path(ConvolutionKernelPlan& p, const Shape& out) {
  const eval::ConvolutionPlan& plan = p.plan;
  if (!kernels::library_gemm_available() || out.element_type() != PrimitiveType::kF32) return false;
  const int64_t rank = static_cast<int64_t>(plan.out_dimensions.size());
  if (plan.out_feature != rank - 1) return false;  // rows of the result must be evenly spaced
  const int64_t out_features = plan.out_dimensions[plan.out_feature];
  const int64_t feature_groups = out_features / std::max<int64_t>(plan.output_feature_group_size, 1);
  const int64_t batch_groups = out_features / std::max<int64_t>(plan.batch_group_features, 1);
  p.groups = std::max(feature_groups, batch_groups);
  p.batch_grouped = batch_groups > 1;
  p.columns = out_features / std::max<int64_t>(p.groups, 1);
  p.depth = plan.window_positions * plan.input_feature_group_size;
  p.rows = out_features == 0 ? 0 : out.element_count() / out_features;
  const __int128 work = static_cast<__int128>(p.rows) * out_features * p.depth;
  if (p.rows == 0 || p.columns == 0 || p.depth == 0 || work < kernels::kLibraryGemmMinimumWork) return false;
  p.window_offsets.assign(static_cast<size_t>(plan.window_positions), 0);
  for (int64_t w = 0; w < plan.window_positions; ++w) {
    int64_t rest = w;
    for (int64_t s = static_cast<int64_t>(plan.window.size()) - 1; s >= 0; --s) {
      p.window_offsets[w] += (rest % plan.window[s].size) * plan.rhs_strides[plan.rhs_spatial[s]];
      rest /= plan.window[s].size;
    }
  }
  std::vector<int64_t> columns(static_cast<size_t>(p.columns));
  for (int64_t o = 0; o < p.columns; ++o) columns[o] = o * plan.rhs_strides[plan.rhs_output];
  // The kernel as one matrix, in whichever patch order makes it one the library reads in place;
  // else one matrix per window position (always readable: features x columns, one stride each).
  bool planned = false;
  for (bool feature_major : {false, true}) {
    std::vector<int64_t> depth_offsets;
    for (int64_t outer = 0; outer < (feature_major ? plan.input_feature_group_size : plan.window_positions); ++outer)
      for (int64_t inner = 0; inner < (feature_major ? plan.window_positions : plan.input_feature_group_size); ++inner)
        depth_offsets.push_back(feature_major ? outer * plan.rhs_strides[plan.rhs_input] + p.window_offsets[inner]
                                              : p.window_offsets[outer] + inner * plan.rhs_strides[plan.rhs_input]);
    if (std::optional<kernels::GemmOperand> kernel = kernels::gemm_operand(depth_offsets, columns)) {
      p.kernel = *kernel;
      p.feature_major = feature_major;
      planned = true;
      break;
    }
  }
  if (!planned) {
    std::vector<int64_t> feature_offsets(static_cast<size_t>(plan.input_feature_group_size));
    for (int64_t z = 0; z < plan.input_feature_group_size; ++z) feature_offsets[z] = z * plan.rhs_strides[plan.rhs_input];
    std::optional<kernels::GemmOperand> kernel = kernels::gemm_operand(feature_offsets, columns);
    if (!kernel) return false;
    p.kernel = *kernel;
    p.per_window = true;
    p.feature_major = false;
  }
  p.row_dimensions.assign(plan.out_dimensions.begin(), plan.out_dimensions.end() - 1);
  // Blocks of about 1 MiB of patches, at least 64 rows so the kernel matrix is read few times.
  p.block_rows = std::clamp<int64_t>((int64_t{1} << 18) / p.depth, 64, 1024);
  // Transposed patches when the rows' minor dimension is the batch, contiguous in lhs while the
  // features are not: runs of whole batch extents (block_rows a multiple of them).
  const int64_t batch_extent = plan.out_dimensions[plan.out_batch];
  if (plan.out_batch == rank - 2 && plan.lhs_strides[plan.lhs_batch] == 1 && plan.lhs_strides[plan.lhs_feature] != 1 &&
      batch_extent > 1) {
    p.transposed_patches = true;
    p.batch_run = batch_extent;
    p.block_rows = std::max<int64_t>(1, p.block_rows / batch_extent) * batch_extent;
  }
  return true;
}

// The direct loop: convolution.h's, output elements split over the pool.
template <typename T>
Status convolution_kernel(const KernelCall& call) {
  const eval::ConvolutionPlan& plan = static_cast<const ConvolutionKernelPlan&>(*call.plan).plan;
  const T* lhs = reinterpret_cast<const T*>(call.operands[0].data);
  const T* rhs = reinterpret_cast<const T*>(call.operands[1].data);
  T* out = reinterpret_cast<T*>(call.out().data);
  // The work per output: the window positions that land on input (one in base_dilation per
  // dilated dimension) times the features of a group.
  int64_t holes = 1;
  for (const WindowDimension& window : plan.window) holes *= std::max<int64_t>(1, window.base_dilation);
  const int64_t per_element = std::max<int64_t>(1, plan.window_positions * plan.input_feature_group_size / holes);
  run_range(call.pool, call.out().element_count(), std::max<int64_t>(1, kParallelElements / per_element),
            [&](int64_t begin, int64_t end) { eval::convolve<T>(plan, lhs, rhs, out, begin, end); });
  return ok_status();
}

}  // namespace

SelectedKernel select_convolution(const Instruction& instruction, std::span<const ArrayView> operands,
                                  std::span<const ArrayView> outputs) {
  if (instruction.opcode() != Opcode::kConvolution || operands.size() != 2 || outputs.size() != 1) return std::nullopt;
  if (operands[0].scalar || operands[1].scalar || outputs[0].scalar) return std::nullopt;
  const PrimitiveType type = outputs[0].type();
  for (const ArrayView& operand : operands)
    if (operand.type() != type) return std::nullopt;  // converted first: the fallback does that
  // A bad instruction: the fallback reports the evaluator's located error.
  StatusOr<eval::ConvolutionPlan> plan = eval::plan_convolution(instruction, *operands[0].shape, *operands[1].shape);
  if (!plan.ok()) return std::nullopt;
  KernelFn run = nullptr;
  kernels::dispatch_native_numeric(type, [&](auto tag) { run = &convolution_kernel<decltype(tag)>; });
  if (run == nullptr) return std::nullopt;
  auto kernel_plan = std::make_unique<ConvolutionKernelPlan>();
  kernel_plan->plan = *std::move(plan);
  if (plan_gemm_path(*kernel_plan, *outputs[0].shape)) {
    if ((kernel_plan->library = plan_library_convolution(*kernel_plan)))
      return NativeKernel{&library_convolution_kernel, std::move(kernel_plan)};
    return NativeKernel{&gemm_kernel, std::move(kernel_plan)};
  }
  return NativeKernel{run, std::move(kernel_plan)};
}

}  // namespace insitu
