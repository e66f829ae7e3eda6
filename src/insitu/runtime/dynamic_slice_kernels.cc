// Native dynamic-slice and dynamic-update-slice. Start indices are clamped into
// [0, dimension - size] as XLA does. dynamic-update-slice runs in place: the output is the
// operand's memory (buffer assignment links them), and only the update's bytes are written,
// row by row, split over the pool when the update is large.
#include <algorithm>

#include "insitu/runtime/row_walk.h"

namespace insitu {
namespace kernels {
namespace {

// The integer at position `position` of `data`, widened (the selector checked the type).
int64_t read_integer(const uint8_t* data, PrimitiveType type, int64_t position) {
  int64_t value = 0;
  dispatch_element_type(type, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>)
      value = static_cast<int64_t>(reinterpret_cast<const T*>(data)[position]);
    else if constexpr (kIsSubByteInt<T>)  // s4, u2, ... indices: their value, not their byte
      value = static_cast<int64_t>(reinterpret_cast<const T*>(data)[position].get());
  });
  return value;
}

// Whether the start indices are one index vector of the operand's rank (rather than one scalar
// per dimension).
bool is_index_vector(std::span<const ArrayView> indices, int64_t rank) {
  return indices.size() == 1 && indices[0].shape->rank() == 1 && rank != 0 && !indices[0].scalar;
}

// What both kernels need of their start-index operands: integers, one per dimension (or one
// vector of them), and sizes that fit the operand.
bool valid_starts(std::span<const ArrayView> indices, const Shape& shape, std::span<const int64_t> sizes) {
  const int64_t rank = shape.rank();
  if (static_cast<int64_t>(sizes.size()) != rank) return false;
  for (const ArrayView& index : indices)
    if (!is_integral(index.type()) || index.type() == PrimitiveType::kPred) return false;
  if (is_index_vector(indices, rank)) {
    if (indices[0].element_count() != rank) return false;
  } else {
    if (static_cast<int64_t>(indices.size()) != rank) return false;
    for (const ArrayView& index : indices)
      if (index.shape->rank() != 0 && !index.scalar) return false;
  }
  for (int64_t i = 0; i < rank; ++i)
    if (sizes[i] > shape.dimension(i) || sizes[i] < 0) return false;
  return true;
}

// The clamped start of every dimension, read from the index operands of this call.
IndexVector read_starts(std::span<const ArrayView> indices, const Shape& shape, std::span<const int64_t> sizes) {
  const int64_t rank = shape.rank();
  IndexVector starts(static_cast<size_t>(rank));
  const bool vector = is_index_vector(indices, rank);
  for (int64_t i = 0; i < rank; ++i) {
    const int64_t value = vector ? read_integer(indices[0].data, indices[0].type(), i)
                                 : read_integer(indices[i].data, indices[i].type(), 0);
    starts[i] = std::clamp<int64_t>(value, 0, shape.dimension(i) - sizes[i]);
  }
  return starts;
}

Status dynamic_slice_kernel(const KernelCall& call) {
  const ArrayView& operand = call.operands[0];
  const ArrayView& out = call.out();
  const IndexVector starts =
      read_starts(call.operands.subspan(1), *operand.shape, call.instruction.dynamic_slice_sizes);
  const int64_t width = byte_width(out.type());
  const IndexVector strides = strides_of(operand.shape->dimensions());
  const auto [rows, row_length] = rows_of(out.shape->dimensions());
  const int64_t inner_start = starts.empty() ? 0 : starts.back();
  for_each_row(call.pool, out.shape->dimensions(),
               [&, row_length = row_length](int64_t row, std::span<const int64_t> index) {
                 int64_t source = inner_start;
                 for (size_t d = 0; d < index.size(); ++d) source += (starts[d] + index[d]) * strides[d];
                 std::memcpy(out.data + row * row_length * width, operand.data + source * width,
                             static_cast<size_t>(row_length * width));
               });
  return ok_status();
}

Status dynamic_update_slice_kernel(const KernelCall& call) {
  const ArrayView& operand = call.operands[0];
  const ArrayView& update = call.operands[1];
  const ArrayView& out = call.out();
  const IndexVector starts = read_starts(call.operands.subspan(2), *operand.shape, update.shape->dimensions());
  // Not in place (buffer assignment gave distinct slices): start from the operand's value.
  if (out.data != operand.data) copy_bytes_parallel(call.pool, out.data, operand.data, out.byte_size());
  const int64_t width = byte_width(out.type());
  const IndexVector strides = strides_of(operand.shape->dimensions());
  const auto [rows, row_length] = rows_of(update.shape->dimensions());
  const int64_t inner_start = starts.empty() ? 0 : starts.back();
  const int64_t update_stride = update.scalar ? 0 : 1;
  for_each_row(call.pool, update.shape->dimensions(),
               [&, row_length = row_length](int64_t row, std::span<const int64_t> index) {
                 int64_t target = inner_start;
                 for (size_t d = 0; d < index.size(); ++d) target += (starts[d] + index[d]) * strides[d];
                 copy_strided(out.data + target * width, update.data + row * row_length * width * update_stride,
                              row_length, update_stride, width);
               });
  return ok_status();
}

}  // namespace
}  // namespace kernels

SelectedKernel select_dynamic_slice(const Instruction& instruction, std::span<const ArrayView> operands,
                                    std::span<const ArrayView> outputs) {
  if (outputs.size() != 1 || !outputs[0].shape->is_array() || operands.empty() || operands[0].scalar)
    return std::nullopt;
  const ArrayView& operand = operands[0];
  const ArrayView& out = outputs[0];
  if (out.type() != operand.type()) return std::nullopt;
  if (instruction.opcode() == Opcode::kDynamicSlice) {
    if (out.shape->dimensions() != instruction.dynamic_slice_sizes ||
        !kernels::valid_starts(operands.subspan(1), *operand.shape, instruction.dynamic_slice_sizes))
      return std::nullopt;
    return NativeKernel{&kernels::dynamic_slice_kernel, nullptr};
  }
  if (instruction.opcode() != Opcode::kDynamicUpdateSlice || operands.size() < 2) return std::nullopt;
  const ArrayView& update = operands[1];
  if (update.type() != operand.type() || update.shape->rank() != operand.shape->rank() ||
      out.byte_size() != operand.byte_size() ||
      !kernels::valid_starts(operands.subspan(2), *operand.shape, update.shape->dimensions()))
    return std::nullopt;
  return NativeKernel{&kernels::dynamic_update_slice_kernel, nullptr};
}

int64_t dynamic_view_offset(const Instruction& instruction, std::span<const ArrayView> operands) {
  const Shape& shape = *operands[0].shape;
  const std::vector<int64_t>& sizes = instruction.opcode() == Opcode::kDynamicUpdateSlice
                                          ? instruction.operand(1)->shape().dimensions()
                                          : instruction.dynamic_slice_sizes;
  const kernels::IndexVector starts = kernels::read_starts(operands.subspan(1), shape, sizes);
  const kernels::IndexVector strides = kernels::strides_of(shape.dimensions());
  int64_t offset = 0;
  for (size_t d = 0; d < starts.size(); ++d) offset += starts[d] * strides[d];
  return offset * byte_width(shape.element_type());
}

}  // namespace insitu
