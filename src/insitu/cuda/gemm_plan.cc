// A dot as a GEMM call, and that call as cuBLAS takes it (device_plan.h's plan_gemm,
// cublas_gemm, cublas_gemv; codegen.h's gemm_offsets): the layout arithmetic, apart from the
// plan's steps.
#include <algorithm>
#include <optional>

#include "insitu/cuda/codegen_internal.h"
#include "insitu/cuda/device_plan.h"
#include "insitu/evaluator/apply_util.h"

namespace insitu::cuda {
namespace {

using detail::refuse;
using detail::strides_of;

// The free (neither batch nor contracting) dimensions of a dot operand, when they are
// consecutive: one row-major block of `size` elements per batch and contracted index, starting
// at dimension `first` and ending at `last` (-1: none). `consecutive` is false when another
// dimension splits them.
struct FreeDimensions {
  int64_t first = -1, last = -1, size = 1;
  bool consecutive = true;
};
FreeDimensions free_dimensions(const Shape& operand, const std::vector<int64_t>& batch,
                               const std::vector<int64_t>& contracting) {
  FreeDimensions free;
  for (int64_t d = 0; d < operand.rank(); ++d) {
    if (std::count(batch.begin(), batch.end(), d) || std::count(contracting.begin(), contracting.end(), d)) continue;
    if (free.first < 0) free.first = d;
    else if (d != free.last + 1) free.consecutive = false;
    free.last = d;
    free.size *= operand.dimension(d);
  }
  return free;
}

}  // namespace

namespace {

// A matrix rows x cols inside an operand, element (r, c) at r * row_stride + c * col_stride, as
// a GEMM takes it: row-major with leading dimension `ld`, or stored transposed (cols x rows);
// nullopt where neither dimension has unit stride.
struct StoredMatrix {
  bool transposed = false;
  int64_t ld = 1;
};
std::optional<StoredMatrix> stored_matrix(int64_t rows, int64_t row_stride, int64_t cols, int64_t col_stride) {
  if (cols == 1 || col_stride == 1) return StoredMatrix{false, rows == 1 ? cols : row_stride};
  if (rows == 1 || row_stride == 1) return StoredMatrix{true, col_stride};
  return std::nullopt;
}

}  // namespace

StatusOr<GemmCall> plan_gemm(const Instruction& dot) {
  const Shape& lhs = dot.operand(0)->shape();
  const Shape& rhs = dot.operand(1)->shape();
  const Shape& out = dot.shape();
  if (lhs.element_type() != out.element_type() || rhs.element_type() != out.element_type() ||
      (out.element_type() != PrimitiveType::kF32 && out.element_type() != PrimitiveType::kF64))
    return refuse(dot, "a GEMM of other types than f32 x f32 -> f32 or f64 is not planned yet");
  if (eval::find_own_attribute(dot, "algorithm") != nullptr)  // the evaluator rounds the operands first
    return refuse(dot, "a dot with algorithm= (operands rounded to another precision) is not planned yet");
  const DotDimensionNumbers& numbers = dot.dot_dimension_numbers;
  // Several contracting dimensions side by side in both operands, paired in the same order,
  // are one of their product (a weight gradient's [B, T, D] x [B, T, F] contracting B and T).
  const std::vector<int64_t>& lhs_contracting = numbers.lhs_contracting_dimensions;
  const std::vector<int64_t>& rhs_contracting = numbers.rhs_contracting_dimensions;
  if (lhs_contracting.empty()) return refuse(dot, "a dot contracting no dimension (an outer product) is not planned yet");
  for (size_t i = 1; i < lhs_contracting.size(); ++i)
    if (lhs_contracting[i] != lhs_contracting[i - 1] + 1 || rhs_contracting[i] != rhs_contracting[i - 1] + 1)
      return refuse(dot, "contracting dimensions that are not side by side, in the same order in both operands, are "
                         "not planned yet");
  // Several free dimensions side by side are one, of their product (a dense layer's [B, T, D]
  // x [D, F] is an M = B * T GEMM): row-major, they are one block, and the result lists them
  // in order after the batch dimensions.
  const FreeDimensions lhs_free =
      free_dimensions(lhs, numbers.lhs_batch_dimensions, numbers.lhs_contracting_dimensions);
  const FreeDimensions rhs_free =
      free_dimensions(rhs, numbers.rhs_batch_dimensions, numbers.rhs_contracting_dimensions);
  if (!lhs_free.consecutive || !rhs_free.consecutive)
    return refuse(dot, "an operand whose free dimensions a batch or contracting dimension splits is not planned yet");
  const std::vector<int64_t> lhs_strides = strides_of(lhs.dimensions()), rhs_strides = strides_of(rhs.dimensions());
  const std::vector<int64_t> out_strides = strides_of(out.dimensions());
  const int64_t lhs_k = lhs_contracting.back(), rhs_k = rhs_contracting.back();  // the innermost: its stride
  GemmCall call;
  call.type = out.element_type();
  for (int64_t d : lhs_contracting) call.k *= lhs.dimension(d);
  call.m = lhs_free.size;
  call.n = rhs_free.size;
  // A free block's row stride is its innermost dimension's (its dimensions are side by side).
  auto block_stride = [](const FreeDimensions& free, const std::vector<int64_t>& strides) {
    return free.last < 0 ? int64_t{1} : strides[free.last];
  };
  const std::optional<StoredMatrix> a =
      stored_matrix(call.m, block_stride(lhs_free, lhs_strides), call.k, lhs_strides[lhs_k]);
  const std::optional<StoredMatrix> b =
      stored_matrix(call.k, rhs_strides[rhs_k], call.n, block_stride(rhs_free, rhs_strides));
  if (!a || !b) return refuse(dot, "an operand whose matrix has no dimension of unit stride is not planned yet");
  call.transpose_a = a->transposed;
  call.lda = a->ld;
  call.transpose_b = b->transposed;
  call.ldb = b->ld;
  call.ldc = call.n;  // the result is [batch..., m block, n block], row-major
  // Batch dimensions, in the result's order, folded where each one's strides are the next one's
  // times its extent (in A, B and C alike); the innermost group is the GEMM's batch, the others
  // are calls of their own (GemmCall::outer).
  call.stride_a = call.m * call.k;
  call.stride_b = call.k * call.n;
  call.stride_c = call.m * call.n;
  std::vector<GemmCall::Outer> groups;
  for (size_t i = 0; i < numbers.lhs_batch_dimensions.size(); ++i) {
    const int64_t extent = out.dimension(static_cast<int64_t>(i));
    if (extent == 1) continue;
    const GemmCall::Outer next{extent, lhs_strides[numbers.lhs_batch_dimensions[i]],
                               rhs_strides[numbers.rhs_batch_dimensions[i]], out_strides[i]};
    if (!groups.empty()) {
      GemmCall::Outer& group = groups.back();
      if (group.stride_a == next.stride_a * extent && group.stride_b == next.stride_b * extent &&
          group.stride_c == next.stride_c * extent) {
        group = {group.count * extent, next.stride_a, next.stride_b, next.stride_c};
        continue;
      }
    }
    groups.push_back(next);
  }
  if (!groups.empty()) {
    call.batch = groups.back().count;
    call.stride_a = groups.back().stride_a;
    call.stride_b = groups.back().stride_b;
    call.stride_c = groups.back().stride_c;
    groups.pop_back();
    call.outer = std::move(groups);
  }
  return call;
}

std::vector<GemmOffsets> gemm_offsets(const GemmCall& call) {
  std::vector<GemmOffsets> offsets = {GemmOffsets{}};
  for (const GemmCall::Outer& outer : call.outer) {
    std::vector<GemmOffsets> next;
    for (const GemmOffsets& base : offsets)
      for (int64_t i = 0; i < outer.count; ++i)
        next.push_back({base.a + i * outer.stride_a, base.b + i * outer.stride_b, base.c + i * outer.stride_c});
    offsets = std::move(next);
  }
  return offsets;
}

CublasGemm cublas_gemm(const GemmCall& g) {
  CublasGemm c;
  c.transpose_first = g.transpose_b;  // B stored k x n row-major is B^T column-major: no op
  c.transpose_second = g.transpose_a;
  c.m = g.n;
  c.n = g.m;
  c.k = g.k;
  c.ld_first = g.ldb;
  c.ld_second = g.lda;
  c.ld_out = g.ldc;
  c.stride_first = g.stride_b;
  c.stride_second = g.stride_a;
  c.stride_out = g.stride_c;
  c.batch = g.batch;
  return c;
}

std::optional<CublasGemv> cublas_gemv(const GemmCall& call) {
  const CublasGemm g = cublas_gemm(call);
  if (g.n != 1) return std::nullopt;
  CublasGemv v;
  // op(first) is m x k: stored m x k (no transpose) or k x m (transposed), ld_first apart.
  v.transpose = g.transpose_first;
  v.rows = g.transpose_first ? g.k : g.m;
  v.cols = g.transpose_first ? g.m : g.k;
  v.ld = g.ld_first;
  // op(second) is the k x 1 column: stored as a column (consecutive) or as a row, ld_second apart.
  v.incx = g.transpose_second ? g.ld_second : 1;
  v.stride_matrix = g.stride_first;
  v.stride_x = g.stride_second;
  v.stride_y = g.stride_out;
  v.batch = g.batch;
  return v;
}

}  // namespace insitu::cuda
