// Native gather of the CPU runtime, reading the operand in place: an embedding lookup copies
// only the rows it looks up (the evaluator fallback would first copy the whole table into a
// Literal on every call).
//
// Semantics are the reference evaluator's (src/insitu/evaluator/gather_scatter.cc): every
// output element reads operand[start + offset], `start` from the index vector at the output's
// batch position (start_index_map) plus the batch position itself for batching dimensions,
// clamped so that the whole slice stays inside the operand. A gather is a copy of elements, so
// the result is the evaluator's bit for bit. When the output's innermost dimension walks the
// operand's innermost dimension (rows of a table), each row of the output is one memcpy.
// select_gather works out the dimension tables once; a gather it does not recognise is left to
// the fallback, which reports errors.
#include <algorithm>
#include <cstring>
#include <vector>

#include "insitu/evaluator/index_util.h"
#include "insitu/runtime/index_read.h"
#include "insitu/runtime/kernels.h"

namespace insitu {
namespace {

// The gather's dimensions, sorted out from its dimension numbers and shapes.
struct GatherPlan final : KernelPlan {
  std::vector<int64_t> batch_dimensions;          // of the indices
  std::vector<int64_t> offset_operand_dimensions;  // the operand dimensions the slice keeps
  std::vector<int64_t> output_batch_dimensions;    // the output dimensions that are not offsets
  std::vector<int64_t> operand_strides, index_strides;
  int64_t vector_size = 1;  // elements of one index vector
  int64_t inner = 1;        // the innermost output dimension: one row
  int64_t rows = 0;
  bool contiguous = false;  // a row is one memcpy
};

Status gather_kernel(const KernelCall& call) {
  const GatherPlan& plan = static_cast<const GatherPlan&>(*call.plan);
  const ArrayView& operand = call.operands[0];
  const ArrayView& indices = call.operands[1];
  const ArrayView& out = call.out();
  const GatherDimensionNumbers& numbers = call.instruction.gather_dimension_numbers;
  const std::vector<int64_t>& slice_sizes = call.instruction.dynamic_slice_sizes;
  const Shape& operand_shape = *operand.shape;
  const Shape& shape = *out.shape;
  const int64_t operand_rank = operand_shape.rank();
  const int64_t indices_rank = indices.shape->rank();
  const int64_t output_rank = shape.rank();
  const int64_t vector_dim = numbers.index_vector_dim;
  const std::vector<int64_t>& batch_dimensions = plan.batch_dimensions;
  const std::vector<int64_t>& offset_operand_dimensions = plan.offset_operand_dimensions;
  const std::vector<int64_t>& output_batch_dimensions = plan.output_batch_dimensions;
  const std::vector<int64_t>& operand_strides = plan.operand_strides;
  const std::vector<int64_t>& index_strides = plan.index_strides;
  const int64_t vector_size = plan.vector_size;
  const int64_t width = byte_width(out.type());
  const int64_t inner = plan.inner;
  const bool contiguous = plan.contiguous;
  const int64_t batch_count = static_cast<int64_t>(output_batch_dimensions.size());

  // The operand offset of output element `output_index`.
  auto operand_offset = [&](const std::vector<int64_t>& output_index, std::vector<int64_t>& position,
                            std::vector<int64_t>& start) {
    for (int64_t j = 0; j < batch_count; ++j) position[batch_dimensions[j]] = output_index[output_batch_dimensions[j]];
    std::fill(start.begin(), start.end(), 0);
    for (int64_t k = 0; k < vector_size; ++k) {
      if (vector_dim < indices_rank) position[vector_dim] = k;
      int64_t linear = 0;
      for (int64_t d = 0; d < indices_rank; ++d) linear += position[d] * index_strides[d];
      start[numbers.start_index_map[k]] = read_index(indices, linear);
    }
    for (size_t i = 0; i < numbers.operand_batching_dims.size(); ++i)
      start[numbers.operand_batching_dims[i]] = position[numbers.start_indices_batching_dims[i]];
    int64_t linear = 0;
    for (int64_t d = 0; d < operand_rank; ++d)
      linear += std::clamp<int64_t>(start[d], 0, operand_shape.dimension(d) - slice_sizes[d]) * operand_strides[d];
    for (size_t k = 0; k < offset_operand_dimensions.size(); ++k)
      linear += output_index[numbers.offset_dims[k]] * operand_strides[offset_operand_dimensions[k]];
    return linear;
  };

  run_range(call.pool, plan.rows, std::max<int64_t>(1, kParallelElements / std::max<int64_t>(1, inner)),
            [&](int64_t begin, int64_t end) {
              std::vector<int64_t> output_index(static_cast<size_t>(output_rank), 0);
              std::vector<int64_t> position(static_cast<size_t>(std::max<int64_t>(indices_rank, 1)), 0);
              std::vector<int64_t> start(static_cast<size_t>(operand_rank), 0);
              for (int64_t row = begin; row < end; ++row) {
                for (int64_t d = output_rank - 2, rest = row; d >= 0; --d) {
                  output_index[d] = rest % shape.dimension(d);
                  rest /= shape.dimension(d);
                }
                uint8_t* to = out.data + row * inner * width;
                if (contiguous) {
                  output_index[output_rank - 1] = 0;
                  std::memcpy(to, operand.data + operand_offset(output_index, position, start) * width,
                              static_cast<size_t>(inner * width));
                  continue;
                }
                for (int64_t j = 0; j < inner; ++j) {
                  if (output_rank > 0) output_index[output_rank - 1] = j;
                  std::memcpy(to + j * width, operand.data + operand_offset(output_index, position, start) * width,
                              static_cast<size_t>(width));
                }
              }
            });
  return ok_status();
}

}  // namespace

SelectedKernel select_gather(const Instruction& instruction, std::span<const ArrayView> operands,
                             std::span<const ArrayView> outputs) {
  if (instruction.opcode() != Opcode::kGather || operands.size() != 2 || outputs.size() != 1 || outputs[0].scalar)
    return std::nullopt;
  const ArrayView& operand = operands[0];
  const ArrayView& indices = operands[1];
  const ArrayView& out = outputs[0];
  if (operand.scalar || indices.scalar || !operand.shape->is_array() || !indices.shape->is_array() ||
      !out.shape->is_array() || !is_integral(indices.type()) || operand.type() != out.type())
    return std::nullopt;
  const GatherDimensionNumbers& numbers = instruction.gather_dimension_numbers;
  const std::vector<int64_t>& slice_sizes = instruction.dynamic_slice_sizes;
  const Shape& operand_shape = *operand.shape;
  const Shape& indices_shape = *indices.shape;
  const Shape& shape = *out.shape;
  const int64_t operand_rank = operand_shape.rank();
  const int64_t indices_rank = indices_shape.rank();
  const int64_t vector_dim = numbers.index_vector_dim;
  if (vector_dim < 0 || vector_dim > indices_rank || static_cast<int64_t>(slice_sizes.size()) != operand_rank)
    return std::nullopt;
  auto plan = std::make_unique<GatherPlan>();
  for (int64_t d = 0; d < indices_rank; ++d)
    if (d != vector_dim) plan->batch_dimensions.push_back(d);
  plan->vector_size = vector_dim == indices_rank ? 1 : indices_shape.dimension(vector_dim);
  if (static_cast<int64_t>(numbers.start_index_map.size()) != plan->vector_size ||
      !distinct_in_range(numbers.start_index_map, operand_rank) ||
      !distinct_in_range(numbers.collapsed_slice_dims, operand_rank) ||
      !distinct_in_range(numbers.operand_batching_dims, operand_rank) ||
      numbers.operand_batching_dims.size() != numbers.start_indices_batching_dims.size())
    return std::nullopt;
  for (int64_t d : numbers.start_indices_batching_dims)
    if (d < 0 || d >= indices_rank || d == vector_dim) return std::nullopt;
  std::vector<int64_t>& offset_operand_dimensions = plan->offset_operand_dimensions;
  for (int64_t d = 0; d < operand_rank; ++d) {
    if (slice_sizes[d] < 0 || slice_sizes[d] > operand_shape.dimension(d)) return std::nullopt;
    const bool dropped = contains(numbers.collapsed_slice_dims, d) || contains(numbers.operand_batching_dims, d);
    if (dropped && slice_sizes[d] != 1) return std::nullopt;
    if (!dropped) offset_operand_dimensions.push_back(d);
  }
  const int64_t output_rank = static_cast<int64_t>(plan->batch_dimensions.size() + offset_operand_dimensions.size());
  if (shape.rank() != output_rank || numbers.offset_dims.size() != offset_operand_dimensions.size() ||
      !distinct_in_range(numbers.offset_dims, output_rank) ||
      !std::is_sorted(numbers.offset_dims.begin(), numbers.offset_dims.end()))
    return std::nullopt;
  for (int64_t d = 0, batch = 0, offset = 0; d < output_rank; ++d) {
    const bool is_offset = contains(numbers.offset_dims, d);
    const int64_t expected = is_offset ? slice_sizes[offset_operand_dimensions[offset++]]
                                       : indices_shape.dimension(plan->batch_dimensions[batch++]);
    if (!is_offset) plan->output_batch_dimensions.push_back(d);
    if (shape.dimension(d) != expected) return std::nullopt;
  }
  plan->operand_strides = row_major_strides(operand_shape.dimensions());
  plan->index_strides = row_major_strides(indices_shape.dimensions());
  // Rows of the innermost output dimension; one memcpy each when it is an offset dimension that
  // walks the operand's innermost dimension.
  const int64_t count = shape.element_count();
  plan->inner = output_rank == 0 ? 1 : shape.dimension(output_rank - 1);
  plan->contiguous = output_rank > 0 && !numbers.offset_dims.empty() && numbers.offset_dims.back() == output_rank - 1 &&
                     offset_operand_dimensions.back() == operand_rank - 1;
  plan->rows = plan->inner == 0 ? 0 : count / plan->inner;  // none for an empty output
  return NativeKernel{&gather_kernel, std::move(plan)};
}

}  // namespace insitu
