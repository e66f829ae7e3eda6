// Native dot kernel of the CPU runtime: f32 x f32 -> f32 with general dimension numbers,
// reading the operand slices in place; other operand types into an f32, s32 or s64 result are
// converted first (as the evaluator does) and run through the same f32 loop or an integer one.
//
// Products of at least kLibraryGemmMinimumWork multiply-adds into an f32 result (f32, bf16 or
// f16 operands, the narrow ones converted to f32 first) whose operands the library can read in
// place (each operand's free and contracting dimensions collapse to one stride each, one of
// them unit) run on the GEMM library (library_gemm.h, with its stated tolerance). A dot the
// library cannot read in place runs the loop below; nothing is copied to make it fit.
//
// The loop is bit-for-bit the reference evaluator (src/insitu/evaluator/dot.cc): every result
// element is one f32 chain `sum = 0.0f; sum += lhs * rhs` over the contracting indices in
// row-major order of lhs_contracting_dimensions. Only the order in which result elements are
// visited changes: when rhs's contraction is strided (e.g. [M,K] x [K,N]), a row of results is
// accumulated together, step k for all elements before step k + 1, so the inner loop reads
// rhs contiguously; when it is contiguous (e.g. [M,K] x [N,K], attention scores), eight
// elements are accumulated side by side, so eight independent chains are in flight instead of
// one. Each element still sees the same additions in the same order. Work is split
// over (result row, column block) tasks, each element computed by one thread, so the result
// does not depend on the thread count.
#include <algorithm>
#include <cstring>
#include <vector>

#include "insitu/evaluator/index_util.h"
#include "insitu/ir/computation.h"
#include "insitu/runtime/index_read.h"
#include "insitu/runtime/kernels.h"
#include "insitu/runtime/library_gemm.h"

namespace insitu {
namespace kernels {
namespace {

using Dimensions = std::vector<int64_t>;

// Where each group of dimensions (batch, lhs free, rhs free, contracting) reads its operands.
struct DotLayout {
  Dimensions lhs_batch, rhs_batch;  // per batch index
  Dimensions lhs_free;              // per lhs non-contracting index
  Dimensions rhs_free;              // per rhs non-contracting index
  Dimensions lhs_step, rhs_step;    // per contraction step
};

// False when the dimension numbers do not fit the shapes (the fallback then reports the error).
// Each operand's elements lie at its row-major strides, or at `lhs_at` / `rhs_at` (element
// strides per dimension: a block read where it lies in a larger array).
bool plan_layout(const Instruction& instruction, const Shape& lhs, const Shape& rhs, const Shape& out,
                 DotLayout& layout, const Dimensions* lhs_at = nullptr, const Dimensions* rhs_at = nullptr) {
  const DotDimensionNumbers& numbers = instruction.dot_dimension_numbers;
  if (numbers.lhs_batch_dimensions.size() != numbers.rhs_batch_dimensions.size() ||
      numbers.lhs_contracting_dimensions.size() != numbers.rhs_contracting_dimensions.size())
    return false;
  std::vector<bool> lhs_used(lhs.rank(), false), rhs_used(rhs.rank(), false);
  auto mark = [](const Dimensions& list, int64_t rank, std::vector<bool>& used) {
    for (int64_t d : list) {
      if (d < 0 || d >= rank || used[d]) return false;
      used[d] = true;
    }
    return true;
  };
  if (!mark(numbers.lhs_batch_dimensions, lhs.rank(), lhs_used) ||
      !mark(numbers.lhs_contracting_dimensions, lhs.rank(), lhs_used) ||
      !mark(numbers.rhs_batch_dimensions, rhs.rank(), rhs_used) ||
      !mark(numbers.rhs_contracting_dimensions, rhs.rank(), rhs_used))
    return false;
  const Dimensions lhs_strides = lhs_at != nullptr ? *lhs_at : row_major_strides(lhs.dimensions());
  const Dimensions rhs_strides = rhs_at != nullptr ? *rhs_at : row_major_strides(rhs.dimensions());
  Dimensions result_dimensions;

  Dimensions batch_sizes, lhs_batch_strides, rhs_batch_strides;
  for (size_t i = 0; i < numbers.lhs_batch_dimensions.size(); ++i) {
    const int64_t l = numbers.lhs_batch_dimensions[i], r = numbers.rhs_batch_dimensions[i];
    if (lhs.dimension(l) != rhs.dimension(r)) return false;
    batch_sizes.push_back(lhs.dimension(l));
    lhs_batch_strides.push_back(lhs_strides[l]);
    rhs_batch_strides.push_back(rhs_strides[r]);
    result_dimensions.push_back(lhs.dimension(l));
  }
  Dimensions lhs_free_sizes, lhs_free_strides;
  for (int64_t d = 0; d < lhs.rank(); ++d) {
    if (lhs_used[d]) continue;
    lhs_free_sizes.push_back(lhs.dimension(d));
    lhs_free_strides.push_back(lhs_strides[d]);
    result_dimensions.push_back(lhs.dimension(d));
  }
  Dimensions rhs_free_sizes, rhs_free_strides;
  for (int64_t d = 0; d < rhs.rank(); ++d) {
    if (rhs_used[d]) continue;
    rhs_free_sizes.push_back(rhs.dimension(d));
    rhs_free_strides.push_back(rhs_strides[d]);
    result_dimensions.push_back(rhs.dimension(d));
  }
  Dimensions contracting_sizes, lhs_step_strides, rhs_step_strides;
  for (size_t i = 0; i < numbers.lhs_contracting_dimensions.size(); ++i) {
    const int64_t l = numbers.lhs_contracting_dimensions[i], r = numbers.rhs_contracting_dimensions[i];
    if (lhs.dimension(l) != rhs.dimension(r)) return false;
    contracting_sizes.push_back(lhs.dimension(l));
    lhs_step_strides.push_back(lhs_strides[l]);
    rhs_step_strides.push_back(rhs_strides[r]);
  }
  if (result_dimensions != out.dimensions()) return false;
  layout.lhs_batch = row_major_offsets(batch_sizes, lhs_batch_strides);
  layout.rhs_batch = row_major_offsets(batch_sizes, rhs_batch_strides);
  layout.lhs_free = row_major_offsets(lhs_free_sizes, lhs_free_strides);
  layout.rhs_free = row_major_offsets(rhs_free_sizes, rhs_free_strides);
  layout.lhs_step = row_major_offsets(contracting_sizes, lhs_step_strides);
  layout.rhs_step = row_major_offsets(contracting_sizes, rhs_step_strides);
  return true;
}

bool is_unit_stride(const Dimensions& offsets) {
  for (size_t i = 0; i < offsets.size(); ++i)
    if (offsets[i] != static_cast<int64_t>(i)) return false;
  return true;
}

// Columns per task: enough work per task to amortize dispatch, small enough to split one row.
constexpr int64_t kColumnBlock = 512;
// Result elements accumulated together when each reads a contiguous run of rhs.
constexpr int64_t kLanes = 8;

void run_dot_f32(const DotLayout& layout, const ArrayView& lhs_view, const ArrayView& rhs_view, const ArrayView& out,
                 ThreadPool& pool) {
  const float* lhs = reinterpret_cast<const float*>(lhs_view.data);
  const float* rhs = reinterpret_cast<const float*>(rhs_view.data);
  float* result = reinterpret_cast<float*>(out.data);
  const int64_t batches = static_cast<int64_t>(layout.lhs_batch.size());
  const int64_t rows_per_batch = static_cast<int64_t>(layout.lhs_free.size());
  const int64_t columns = static_cast<int64_t>(layout.rhs_free.size());
  const int64_t steps = static_cast<int64_t>(layout.lhs_step.size());
  const int64_t rows = batches * rows_per_batch;
  if (rows == 0 || columns == 0) return;
  const int64_t blocks = (columns + kColumnBlock - 1) / kColumnBlock;
  // Contiguous rhs contraction: kLanes elements at a time, each reading its run of rhs in order.
  // Otherwise, with contiguous columns, step-major over a block reads rhs's columns in order.
  const bool unit_columns = is_unit_stride(layout.rhs_free);
  const bool element_major = !unit_columns || (steps > 1 && layout.rhs_step[1] == 1);
  const bool contiguous_steps = is_unit_stride(layout.rhs_step);
  const int64_t* lhs_step = layout.lhs_step.data();
  const int64_t* rhs_step = layout.rhs_step.data();
  const int64_t* rhs_free = layout.rhs_free.data();

  auto run_task = [&](int64_t task) {
    const int64_t row = task / blocks, block = task % blocks;
    const int64_t batch = row / rows_per_batch, free_row = row % rows_per_batch;
    const float* lhs_row = lhs + layout.lhs_batch[batch] + layout.lhs_free[free_row];
    const float* rhs_batch = rhs + layout.rhs_batch[batch];
    const int64_t begin = block * kColumnBlock, end = std::min(columns, begin + kColumnBlock);
    float* out_row = result + row * columns;
    if (element_major) {
      int64_t n = begin;
      if (contiguous_steps) {
        // kLanes independent sums in flight instead of one serial chain (same order per sum).
        for (; n + kLanes <= end; n += kLanes) {
          const float* columns[kLanes];
          float sums[kLanes];
          for (int64_t j = 0; j < kLanes; ++j) {
            columns[j] = rhs_batch + rhs_free[n + j];
            sums[j] = 0.0f;
          }
          for (int64_t k = 0; k < steps; ++k) {
            const float a = lhs_row[lhs_step[k]];
            for (int64_t j = 0; j < kLanes; ++j) sums[j] += a * columns[j][k];
          }
          for (int64_t j = 0; j < kLanes; ++j) out_row[n + j] = sums[j];
        }
      }
      for (; n < end; ++n) {
        const float* rhs_column = rhs_batch + rhs_free[n];
        float sum = 0.0f;
        for (int64_t k = 0; k < steps; ++k) sum += lhs_row[lhs_step[k]] * rhs_column[rhs_step[k]];
        out_row[n] = sum;
      }
      return;
    }
    for (int64_t n = begin; n < end; ++n) out_row[n] = 0.0f;
    for (int64_t k = 0; k < steps; ++k) {
      const float a = lhs_row[lhs_step[k]];
      const float* rhs_k = rhs_batch + rhs_step[k];
      if (unit_columns) {
        for (int64_t n = begin; n < end; ++n) out_row[n] += a * rhs_k[n];
      } else {
        for (int64_t n = begin; n < end; ++n) out_row[n] += a * rhs_k[rhs_free[n]];
      }
    }
  };
  const int64_t tasks = rows * blocks;
  const int64_t work_per_task = std::max<int64_t>(1, std::min(columns, kColumnBlock) * std::max<int64_t>(1, steps));
  run_range(pool, tasks, std::max<int64_t>(1, kParallelElements / work_per_task), [&](int64_t begin, int64_t end) {
    for (int64_t task = begin; task < end; ++task) run_task(task);
  });
}

// The element types convert_operand reads.
bool is_convertible_operand(PrimitiveType type) {
  switch (type) {
    case PrimitiveType::kF32:
    case PrimitiveType::kBF16:
    case PrimitiveType::kF16:
    case PrimitiveType::kS8:
    case PrimitiveType::kS16:
    case PrimitiveType::kS32:
    case PrimitiveType::kS64: return true;
    default: return is_narrow(type);  // f8/f4 (exact in f32) and s4/u4/... (exact in any integer)
  }
}

// The operand's elements converted to To (the evaluator converts mixed-type dot operands to
// the result's type first), for the types is_convertible_operand accepts.
template <typename To>
void convert_operand(const ArrayView& view, std::vector<To>& into) {
  const int64_t count = view.element_count();
  into.resize(static_cast<size_t>(count));
  auto copy = [&](auto tag) {
    using From = decltype(tag);
    const From* data = reinterpret_cast<const From*>(view.data);
    for (int64_t i = 0; i < count; ++i) {
      if constexpr (kIsSmallFloat<From>) into[i] = static_cast<To>(data[i].to_float());
      else if constexpr (kIsSubByteInt<From>) into[i] = static_cast<To>(data[i].get());
      else into[i] = static_cast<To>(data[i]);
    }
  };
  switch (view.type()) {
    case PrimitiveType::kF32: copy(float{}); break;
    case PrimitiveType::kBF16: copy(BFloat16{}); break;
    case PrimitiveType::kF16: copy(Half{}); break;
    case PrimitiveType::kS8: copy(int8_t{}); break;
    case PrimitiveType::kS16: copy(int16_t{}); break;
    case PrimitiveType::kS32: copy(int32_t{}); break;
    case PrimitiveType::kS64: copy(int64_t{}); break;
    default:
      INSITU_CHECK(is_narrow(view.type())) << "dot operand type the selector did not accept";
      dispatch_element_type(view.type(), [&](auto tag) {
        if constexpr (kIsSmallFloat<decltype(tag)> || kIsSubByteInt<decltype(tag)>) copy(tag);
      });
  }
}

// An integer dot in the evaluator's arithmetic: products summed modulo 2^64, then narrowed.
template <typename T>
void run_dot_integer(const DotLayout& layout, const T* lhs, const T* rhs, T* out) {
  const int64_t columns = static_cast<int64_t>(layout.rhs_free.size());
  const int64_t rows = static_cast<int64_t>(layout.lhs_free.size());
  int64_t e = 0;
  for (size_t b = 0; b < layout.lhs_batch.size(); ++b)
    for (int64_t m = 0; m < rows; ++m)
      for (int64_t n = 0; n < columns; ++n, ++e) {
        const T* l = lhs + layout.lhs_batch[b] + layout.lhs_free[m];
        const T* r = rhs + layout.rhs_batch[b] + layout.rhs_free[n];
        uint64_t sum = 0;
        for (size_t k = 0; k < layout.lhs_step.size(); ++k)
          sum += static_cast<uint64_t>(l[layout.lhs_step[k]]) * static_cast<uint64_t>(r[layout.rhs_step[k]]);
        out[e] = static_cast<T>(sum);
      }
}

// The layout as the library's batched problem, or nullopt when an operand is not a matrix the
// library reads in place (gemm_operand).
std::optional<GemmProblem> plan_gemm(const DotLayout& layout) {
  std::optional<GemmOperand> lhs = gemm_operand(layout.lhs_free, layout.lhs_step);
  std::optional<GemmOperand> rhs = gemm_operand(layout.rhs_step, layout.rhs_free);
  if (!lhs || !rhs) return std::nullopt;
  GemmProblem problem;
  problem.m = static_cast<int64_t>(layout.lhs_free.size());
  problem.n = static_cast<int64_t>(layout.rhs_free.size());
  problem.k = static_cast<int64_t>(layout.lhs_step.size());
  problem.lhs_layout = *lhs;
  problem.rhs_layout = *rhs;
  problem.lhs_batch = layout.lhs_batch;
  problem.rhs_batch = layout.rhs_batch;
  return problem;
}

// The dimension numbers resolved to offsets; for a mixed-type dot, the operands' shapes in
// the result's element type (what they are converted to per call); for a library dot, its
// problem.
struct DotPlan final : KernelPlan {
  DotLayout layout;
  Shape lhs, rhs;
  GemmProblem gemm;
};

const DotPlan& dot_plan(const KernelCall& call) { return static_cast<const DotPlan&>(*call.plan); }

// f32 x f32 -> f32, operands read in place.
// The library GEMM for a layout worth one (a library built, work >= kLibraryGemmMinimumWork), or
// none: the exact loops then.
std::optional<GemmProblem> worth_library_gemm(const DotLayout& layout) {
  if (!library_gemm_available()) return std::nullopt;
  const __int128 work = static_cast<__int128>(layout.lhs_batch.size()) * layout.lhs_free.size() *
                        layout.rhs_free.size() * layout.lhs_step.size();  // 128 bits: cannot overflow
  if (work < kLibraryGemmMinimumWork) return std::nullopt;
  return plan_gemm(layout);
}

Status dot_f32_kernel(const KernelCall& call) {
  run_dot_f32(dot_plan(call).layout, call.operands[0], call.operands[1], call.out(), call.pool);
  return ok_status();
}

// f32 x f32 -> f32 on the library, operands read in place.
Status dot_library_kernel(const KernelCall& call) {
  library_gemm(dot_plan(call).gemm, reinterpret_cast<const float*>(call.operands[0].data),
               reinterpret_cast<const float*>(call.operands[1].data), reinterpret_cast<float*>(call.out().data),
               call.pool);
  return ok_status();
}

// bf16/f16 (or mixed) -> f32 on the library: the operands converted to f32 (exactly), then an
// f32 product, which accumulates in f32.
Status dot_library_converted_kernel(const KernelCall& call) {
  std::vector<float> lhs, rhs;
  convert_operand(call.operands[0], lhs);
  convert_operand(call.operands[1], rhs);
  library_gemm(dot_plan(call).gemm, lhs.data(), rhs.data(), reinterpret_cast<float*>(call.out().data), call.pool);
  return ok_status();
}

// Mixed precision (bf16/f16 x bf16/f16 -> f32, s8/s16 x s8/s16 -> s32, ...): the operands
// converted to the result's type, as the evaluator does, then the same arithmetic.
template <typename T>
Status dot_converted_kernel(const KernelCall& call) {
  const DotPlan& plan = dot_plan(call);
  std::vector<T> lhs, rhs;
  convert_operand(call.operands[0], lhs);
  convert_operand(call.operands[1], rhs);
  if constexpr (std::is_same_v<T, float>) {
    const ArrayView lhs_view{reinterpret_cast<uint8_t*>(lhs.data()), &plan.lhs, false};
    const ArrayView rhs_view{reinterpret_cast<uint8_t*>(rhs.data()), &plan.rhs, false};
    run_dot_f32(plan.layout, lhs_view, rhs_view, call.out(), call.pool);
  } else {
    run_dot_integer(plan.layout, lhs.data(), rhs.data(), reinterpret_cast<T*>(call.out().data));
  }
  return ok_status();
}

// A dot fusion whose operands are blocks of larger arrays (the fusion pass's kCustom fusion of a
// dot and its strided dynamic-slices): each operand a fusion parameter read whole, or a
// dynamic-slice of one at scalar index parameters, read where it lies. With a window, the
// fusion's root writes the product into a window of an array in place (passes/fusion.h):
// dynamic-update-slice(%o, add(%w, %dot)) with %w the window's old value, or a select of it
// against zero by a scalar predicate.
struct SlicedOperand {
  int64_t source = -1;                 // the fusion parameter holding the array
  std::vector<int64_t> starts;         // per dimension: the index parameter (a slice), or none
  std::vector<int64_t> limits;         // per dimension: the largest start (dimension - slice size)
  Dimensions strides;                  // the source's row-major element strides
  int64_t fixed = 0;                   // the offset of the constant starts (clamped)

  int64_t offset(std::span<const ArrayView> operands) const {  // of the block's first element
    int64_t offset = fixed;
    for (size_t d = 0; d < starts.size(); ++d)
      if (starts[d] >= 0)  // clamped as dynamic-slice clamps: the block stays inside
        offset += std::clamp<int64_t>(read_index(operands[starts[d]], 0), 0, limits[d]) * strides[d];
    return offset;
  }
};

struct SlicedDotPlan final : KernelPlan {
  SlicedOperand operands[2];
  DotPlan dot;                         // planned at the sources' strides
  KernelFn run = nullptr;              // the dot's kernel on operand views of the blocks' first elements
  // The window form: the array written (the fusion's aliased operand, rank 2) and where.
  bool window = false;
  SlicedOperand target;
  int64_t predicate = -1;              // the pred[] parameter choosing the old value, or -1: always
  bool old_when = true;                // the old value is added when the predicate is this
  float zero = 0.0f;                   // what is added otherwise (+0 or -0)
  Shape product;                       // the dot's result (the exact loops' scratch)
};

Status sliced_dot_kernel(const KernelCall& call) {
  const SlicedDotPlan& plan = static_cast<const SlicedDotPlan&>(*call.plan);
  ArrayView views[2];
  for (int k = 0; k < 2; ++k) {
    views[k] = call.operands[plan.operands[k].source];
    views[k].data += plan.operands[k].offset(call.operands) * byte_width(views[k].type());
  }
  if (!plan.window) {
    const KernelCall dot{call.instruction, &plan.dot, std::span<const ArrayView>(views, 2), call.outputs, call.pool};
    return plan.run(dot);
  }
  const ArrayView& array = call.operands[plan.target.source];
  if (call.out().data != array.data) copy_bytes_parallel(call.pool, call.out().data, array.data, array.byte_size());
  float* window = reinterpret_cast<float*>(call.out().data) + plan.target.offset(call.operands);
  const bool old = plan.predicate < 0 || (call.operands[plan.predicate].data[0] != 0) == plan.old_when;
  const int64_t ldc = plan.target.strides[0], m = plan.product.dimension(0), n = plan.product.dimension(1);
  if (plan.run == &dot_library_kernel) {  // beta 1 or 0: the old value is read or never read
    library_gemm(plan.dot.gemm, reinterpret_cast<const float*>(views[0].data),
                 reinterpret_cast<const float*>(views[1].data), window, call.pool, ldc, old);
    return ok_status();
  }
  thread_local std::vector<float> product;  // the exact loops: the dot, then the add, as written
  product.resize(static_cast<size_t>(m * n));
  const ArrayView out{reinterpret_cast<uint8_t*>(product.data()), &plan.product, false};
  const KernelCall dot{call.instruction, &plan.dot, std::span<const ArrayView>(views, 2),
                       std::span<const ArrayView>(&out, 1), call.pool};
  if (Status status = plan.run(dot); !status.ok()) return status;
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j)
      window[i * ldc + j] = (old ? window[i * ldc + j] : plan.zero) + product[i * n + j];
  return ok_status();
}

}  // namespace
}  // namespace kernels

namespace {

// The parameter number of a fusion parameter, or -1.
int64_t parameter_number(const Instruction* instruction, size_t parameters) {
  if (instruction->opcode() != Opcode::kParameter || instruction->parameter_number < 0 ||
      instruction->parameter_number >= static_cast<int64_t>(parameters))
    return -1;
  return instruction->parameter_number;
}

// `sliced` for `value`: a parameter read whole, or a dynamic-slice of one at scalar integer
// parameters or constants (what the fusion copied in). False when it is neither, or not f32 of
// the value's rank.
bool plan_sliced(const Instruction& value, std::span<const ArrayView> operands, kernels::SlicedOperand& sliced) {
  const Instruction* source = value.opcode() == Opcode::kDynamicSlice ? value.operand(0) : &value;
  sliced.source = parameter_number(source, operands.size());
  if (sliced.source < 0) return false;
  const ArrayView& array = operands[sliced.source];
  if (array.scalar || !array.shape->is_array() || array.type() != PrimitiveType::kF32 ||
      array.shape->dimensions() != source->shape().dimensions())
    return false;
  const int64_t rank = array.shape->rank();
  sliced.strides = row_major_strides(array.shape->dimensions());
  sliced.starts.assign(static_cast<size_t>(rank), -1);
  sliced.limits.assign(static_cast<size_t>(rank), 0);
  if (value.opcode() != Opcode::kDynamicSlice) return true;
  if (value.operand_count() != rank + 1 || value.shape().rank() != rank) return false;
  for (int64_t d = 0; d < rank; ++d) {
    const Instruction& start = *value.operand(d + 1);
    sliced.limits[d] = array.shape->dimension(d) - value.shape().dimension(d);
    if (start.opcode() == Opcode::kConstant && start.shape().is_array() && start.shape().rank() == 0 &&
        is_integral(start.shape().element_type())) {
      sliced.fixed += std::clamp<int64_t>(start.literal.get_integer(0), 0, sliced.limits[d]) * sliced.strides[d];
      continue;
    }
    const int64_t index = parameter_number(&start, operands.size());
    if (index < 0 || !operands[index].shape->is_array() || operands[index].shape->rank() != 0 ||
        !is_integral(operands[index].type()))
      return false;
    sliced.starts[d] = index;
  }
  return true;
}

// The window form's fields of `plan` from the fusion's root `write` (passes/fusion_dots.cc's
// shape of it), and the dot it accumulates; null when the root is not that.
const Instruction* plan_window(const Instruction& fusion, const Instruction& write, std::span<const ArrayView> operands,
                               const ArrayView& out, kernels::SlicedDotPlan& plan) {
  if (write.operand_count() != 4 || write.operand(1)->opcode() != Opcode::kAdd) return nullptr;
  const Instruction& add = *write.operand(1);
  const bool dot_first = add.operand(0)->opcode() == Opcode::kDot;
  const Instruction* dot = add.operand(dot_first ? 0 : 1);
  const Instruction* old = add.operand(dot_first ? 1 : 0);
  if (dot->opcode() != Opcode::kDot || dot->shape().rank() != 2 || !dot->dot_dimension_numbers.lhs_batch_dimensions.empty())
    return nullptr;
  if (old->opcode() == Opcode::kSelect) {
    const Instruction* predicate = old->operand(0);
    plan.old_when = old->operand(2)->opcode() == Opcode::kBroadcast && old->operand(2)->operand(0)->opcode() == Opcode::kConstant;
    const Instruction* zero = old->operand(plan.old_when ? 2 : 1);
    if (predicate->opcode() != Opcode::kBroadcast || zero->opcode() != Opcode::kBroadcast ||
        zero->operand(0)->opcode() != Opcode::kConstant || !zero->operand(0)->shape().is_array() ||
        zero->operand(0)->shape().rank() != 0 || zero->operand(0)->shape().element_type() != PrimitiveType::kF32)
      return nullptr;
    plan.zero = zero->operand(0)->literal.data<float>()[0];
    plan.predicate = parameter_number(predicate->operand(0), operands.size());
    if (plan.zero != 0.0f || plan.predicate < 0 || operands[plan.predicate].type() != PrimitiveType::kPred ||
        operands[plan.predicate].shape->rank() != 0)
      return nullptr;
    old = old->operand(plan.old_when ? 1 : 2);
  }
  if (old->opcode() != Opcode::kDynamicSlice || old->operand(0) != write.operand(0) ||
      old->operand(1) != write.operand(2) || old->operand(2) != write.operand(3) || !plan_sliced(*old, operands, plan.target))
    return nullptr;
  const std::vector<OutputOperandAlias> in_place = {{{}, plan.target.source, {}}};
  if (fusion.fusion_output_to_operand_aliasing != in_place || plan.target.strides.size() != 2 || out.scalar ||
      out.type() != PrimitiveType::kF32 || out.shape->dimensions() != operands[plan.target.source].shape->dimensions())
    return nullptr;
  plan.window = true;
  plan.product = dot->shape();
  return dot;
}

}  // namespace

SelectedKernel select_sliced_dot(const Instruction& fusion, std::span<const ArrayView> operands,
                                 std::span<const ArrayView> outputs) {
  const Instruction* root = fusion.called_computations()[0]->root();
  if (outputs.size() != 1 || outputs[0].scalar || !outputs[0].shape->is_array() || outputs[0].type() != PrimitiveType::kF32)
    return std::nullopt;
  auto plan = std::make_unique<kernels::SlicedDotPlan>();
  const Instruction* dot =
      root->opcode() == Opcode::kDynamicUpdateSlice ? plan_window(fusion, *root, operands, outputs[0], *plan) : root;
  if (dot == nullptr || dot->opcode() != Opcode::kDot || dot->operand_count() != 2) return std::nullopt;
  for (const RawAttribute& attribute : dot->extra_attributes)
    if (attribute.key == "algorithm") return std::nullopt;  // select_dot decides those
  for (int k = 0; k < 2; ++k)
    if (!plan_sliced(*dot->operand(k), operands, plan->operands[k])) return std::nullopt;
  kernels::DotPlan& planned = plan->dot;
  planned.lhs = dot->operand(0)->shape();
  planned.rhs = dot->operand(1)->shape();
  if (planned.lhs.element_type() != PrimitiveType::kF32 || planned.rhs.element_type() != PrimitiveType::kF32 ||
      !kernels::plan_layout(*dot, planned.lhs, planned.rhs, plan->window ? plan->product : *outputs[0].shape,
                            planned.layout, &plan->operands[0].strides, &plan->operands[1].strides))
    return std::nullopt;
  if (std::optional<kernels::GemmProblem> gemm = kernels::worth_library_gemm(planned.layout)) {
    planned.gemm = std::move(*gemm);
    plan->run = &kernels::dot_library_kernel;
  } else {
    plan->run = &kernels::dot_f32_kernel;  // the exact loops read the offsets as planned
  }
  return NativeKernel{&kernels::sliced_dot_kernel, std::move(plan)};
}

SelectedKernel select_dot(const Instruction& instruction, std::span<const ArrayView> operands,
                          std::span<const ArrayView> outputs) {
  if (instruction.opcode() != Opcode::kDot || operands.size() != 2 || outputs.size() != 1) return std::nullopt;
  // algorithm= that changes the arithmetic (bf16/tf32 rounding, split products) is the evaluator's.
  for (const RawAttribute& attribute : instruction.extra_attributes)
    if (attribute.key == "algorithm") {
      const std::optional<DotAlgorithm> algorithm = parse_dot_algorithm(attribute.value);
      if (!algorithm || algorithm->changes_precision()) return std::nullopt;
    }
  const ArrayView& out = outputs[0];
  if (!out.shape->is_array() || out.scalar || operands[0].scalar || operands[1].scalar) return std::nullopt;
  const PrimitiveType type = out.type();
  auto plan = std::make_unique<kernels::DotPlan>();
  plan->lhs = Shape::array(type, operands[0].shape->dimensions());
  plan->rhs = Shape::array(type, operands[1].shape->dimensions());
  if (!kernels::plan_layout(instruction, plan->lhs, plan->rhs, *out.shape, plan->layout)) return std::nullopt;
  const bool f32_operands = operands[0].type() == PrimitiveType::kF32 && operands[1].type() == PrimitiveType::kF32;
  auto float_operand = [](PrimitiveType t) {  // converted to f32 exactly
    return t == PrimitiveType::kF32 || t == PrimitiveType::kBF16 || t == PrimitiveType::kF16 ||
           (is_narrow(t) && is_floating(t));
  };
  if (type == PrimitiveType::kF32 && float_operand(operands[0].type()) && float_operand(operands[1].type())) {
    if (std::optional<kernels::GemmProblem> gemm = kernels::worth_library_gemm(plan->layout)) {
      plan->gemm = std::move(*gemm);
      return NativeKernel{f32_operands ? &kernels::dot_library_kernel : &kernels::dot_library_converted_kernel,
                          std::move(plan)};
    }
  }
  if (type == PrimitiveType::kF32 && f32_operands) return NativeKernel{&kernels::dot_f32_kernel, std::move(plan)};
  if (!kernels::is_convertible_operand(operands[0].type()) || !kernels::is_convertible_operand(operands[1].type()))
    return std::nullopt;
  switch (type) {
    case PrimitiveType::kF32: return NativeKernel{&kernels::dot_converted_kernel<float>, std::move(plan)};
    case PrimitiveType::kS32: return NativeKernel{&kernels::dot_converted_kernel<int32_t>, std::move(plan)};
    case PrimitiveType::kS64: return NativeKernel{&kernels::dot_converted_kernel<int64_t>, std::move(plan)};
    default: return std::nullopt;
  }
}

}  // namespace insitu
