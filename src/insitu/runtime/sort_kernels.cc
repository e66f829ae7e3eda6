// Native sort of the CPU runtime: N operands sorted together along one dimension by a
// comparator computation planned once (select_sort) as a scalar program (fusion_kernels.cc)
// over the native elementwise kernels; a sort whose comparator does not plan runs in the
// evaluator (fallback).
//
// It is the reference evaluator's sort (src/insitu/evaluator/sort.cc) step for step: every 1-D
// slice gets the permutation std::stable_sort computes with comparator(a_0, b_0, a_1, b_1, ...)
// as "a goes before b", and every operand is permuted by it, so results are bit for bit the
// evaluator's (including for comparators that are not strict weak orders). Each slice is
// permuted through a copy, so output i may be operand i's own memory (buffer assignment lets a
// sort write over operands that die at it). Slices are split over the pool.
#include <algorithm>
#include <cstring>
#include <numeric>
#include <vector>

#include "insitu/evaluator/element_arithmetic.h"
#include "insitu/evaluator/index_util.h"
#include "insitu/evaluator/ops.h"
#include "insitu/runtime/element_compute.h"
#include "insitu/runtime/kernels.h"

namespace insitu {
namespace {

// The comparator program and where the slices lie (one shape for every operand).
struct SortPlan final : KernelPlan {
  KernelPlanPtr comparator;
  std::vector<int64_t> strides;  // row-major, of the operands
  std::vector<int64_t> widths;   // of each operand's elements
  int64_t dimension = 0;         // sorted along
};

Status sort_kernel(const KernelCall& call) {
  const SortPlan& plan = static_cast<const SortPlan&>(*call.plan);
  const KernelPlan& comparator = *plan.comparator;
  const std::span<const ArrayView> operands = call.operands;
  const std::span<const ArrayView> outputs = call.outputs;
  ThreadPool& pool = call.pool;
  const Shape& shape = *operands[0].shape;
  const int64_t rank = shape.rank();
  const int64_t dimension = plan.dimension;
  const std::vector<int64_t>& strides = plan.strides;
  const std::vector<int64_t>& widths = plan.widths;
  const int64_t length = shape.dimension(dimension);
  const int64_t step = strides[dimension];
  const int64_t count = shape.element_count();
  const int64_t slices = length == 0 ? 0 : count / length;
  const size_t n = operands.size();
  // slice s -> the offset of its first element: s walks the other dimensions in row-major order
  auto base_of = [&](int64_t slice) {
    int64_t base = 0;
    for (int64_t d = rank - 1; d >= 0; --d) {
      if (d == dimension) continue;
      base += (slice % shape.dimension(d)) * strides[d];
      slice /= shape.dimension(d);
    }
    return base;
  };
  run_range(pool, slices, std::max<int64_t>(1, kParallelElements / std::max<int64_t>(1, length * 16)),
            [&](int64_t begin, int64_t end) {
              std::vector<int64_t> permutation(static_cast<size_t>(length));
              std::vector<uint8_t> staging;
              const uint8_t* arguments[16];
              bool answer = false;
              uint8_t* results[1] = {reinterpret_cast<uint8_t*>(&answer)};
              for (int64_t slice = begin; slice < end; ++slice) {
                const int64_t base = base_of(slice);
                std::iota(permutation.begin(), permutation.end(), int64_t{0});
                std::stable_sort(permutation.begin(), permutation.end(), [&](int64_t a, int64_t b) {
                  for (size_t i = 0; i < n; ++i) {
                    arguments[2 * i] = operands[i].data + (base + a * step) * widths[i];
                    arguments[2 * i + 1] = operands[i].data + (base + b * step) * widths[i];
                  }
                  run_scalar_program(comparator, std::span<const uint8_t* const>(arguments, 2 * n), results, pool);
                  return answer;
                });
                // through a copy of the slice, so an output may be its own operand's memory
                for (size_t i = 0; i < n; ++i) {
                  const size_t width = static_cast<size_t>(widths[i]);
                  staging.resize(static_cast<size_t>(length) * width);
                  for (int64_t j = 0; j < length; ++j)
                    std::memcpy(staging.data() + j * width, operands[i].data + (base + permutation[j] * step) * width,
                                width);
                  for (int64_t j = 0; j < length; ++j)
                    std::memcpy(outputs[i].data + (base + j * step) * width, staging.data() + j * width, width);
                }
              }
            });
  return ok_status();
}

// k, the order, and the rows of the last dimension.
struct TopkPlan final : KernelPlan {
  int64_t k = 0;
  bool largest = true;
  int64_t length = 0;  // of a row (the last dimension)
  int64_t rows = 0;
};

// The evaluator's order: a stable sort by the total order (integers by value), the first k.
template <typename T>
Status topk_kernel(const KernelCall& call) {
  const TopkPlan& plan = static_cast<const TopkPlan&>(*call.plan);
  const ArrayView& values = call.outputs[0];
  const ArrayView& indices = call.outputs[1];
  const int64_t length = plan.length;
  const int64_t k = plan.k;
  const bool largest = plan.largest;
  const int64_t width = sizeof(T);
  const T* input = reinterpret_cast<const T*>(call.operands[0].data);
  run_range(call.pool, plan.rows, std::max<int64_t>(1, kParallelElements / std::max<int64_t>(1, length * 8)),
            [&](int64_t begin, int64_t end) {
              std::vector<int64_t> order(static_cast<size_t>(length)), keys(static_cast<size_t>(length));
              for (int64_t row = begin; row < end; ++row) {
                const T* from = input + row * length;
                for (int64_t i = 0; i < length; ++i) {
                  if constexpr (std::is_integral_v<T>) keys[i] = static_cast<int64_t>(from[i]);
                  else keys[i] = static_cast<int64_t>(total_order_key(from[i]));
                }
                std::iota(order.begin(), order.end(), int64_t{0});
                std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
                  return largest ? keys[a] > keys[b] : keys[a] < keys[b];
                });
                for (int64_t j = 0; j < k; ++j) {
                  std::memcpy(values.data + (row * k + j) * width, from + order[j], static_cast<size_t>(width));
                  reinterpret_cast<int32_t*>(indices.data)[row * k + j] = static_cast<int32_t>(order[j]);
                }
              }
            });
  return ok_status();
}

}  // namespace

SelectedKernel select_sort(const Instruction& sort, std::span<const ArrayView> operands,
                           std::span<const ArrayView> outputs) {
  if (sort.opcode() != Opcode::kSort || operands.empty() || operands.size() != outputs.size()) return std::nullopt;
  // the kernel passes at most 16 comparator arguments
  if (operands.size() > 8 || sort.dimensions.size() != 1) return std::nullopt;
  const Shape& shape = *operands[0].shape;
  const int64_t rank = shape.rank();
  const int64_t dimension = sort.dimensions[0];
  if (dimension < 0 || dimension >= rank) return std::nullopt;
  for (size_t i = 0; i < operands.size(); ++i) {
    if (operands[i].scalar || outputs[i].scalar || !operands[i].shape->is_array() || !outputs[i].shape->is_array())
      return std::nullopt;
    if (operands[i].shape->dimensions() != shape.dimensions() || outputs[i].shape->dimensions() != shape.dimensions() ||
        operands[i].type() != outputs[i].type())
      return std::nullopt;
  }
  if (sort.called_computations().size() != 1) return std::nullopt;
  auto plan = std::make_unique<SortPlan>();
  plan->comparator = plan_scalar_program(*sort.called_computations()[0]);
  if (plan->comparator == nullptr) return std::nullopt;
  plan->strides = row_major_strides(shape.dimensions());
  for (const ArrayView& operand : operands) plan->widths.push_back(byte_width(operand.type()));
  plan->dimension = dimension;
  return NativeKernel{&sort_kernel, std::move(plan)};
}

SelectedKernel select_topk(const Instruction& topk, std::span<const ArrayView> operands,
                           std::span<const ArrayView> outputs) {
  if (topk.opcode() != Opcode::kTopk || operands.size() != 1 || outputs.size() != 2) return std::nullopt;
  const ArrayView& operand = operands[0];
  if (operand.scalar || !operand.shape->is_array() || operand.shape->rank() == 0) return std::nullopt;
  const Shape& shape = *operand.shape;
  const int64_t length = shape.dimensions().back();
  const StatusOr<eval::TopkAttributes> attributes = eval::topk_attributes(topk, length);
  if (!attributes.ok()) return std::nullopt;
  std::vector<int64_t> dimensions = shape.dimensions();
  dimensions.back() = attributes->k;
  const ArrayView& values = outputs[0];
  const ArrayView& indices = outputs[1];
  if (values.scalar || indices.scalar || values.type() != operand.type() || indices.type() != PrimitiveType::kS32 ||
      values.shape->dimensions() != dimensions || indices.shape->dimensions() != dimensions)
    return std::nullopt;
  KernelFn run = nullptr;
  kernels::dispatch_native_numeric(operand.type(), [&](auto tag) { run = &topk_kernel<decltype(tag)>; });
  if (run == nullptr) return std::nullopt;
  auto plan = std::make_unique<TopkPlan>();
  plan->k = attributes->k;
  plan->largest = attributes->largest;
  plan->length = length;
  plan->rows = length == 0 ? 0 : shape.element_count() / length;
  return NativeKernel{run, std::move(plan)};
}

}  // namespace insitu
