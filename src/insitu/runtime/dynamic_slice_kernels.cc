// Native dynamic-slice and dynamic-update-slice. Start indices are clamped into
// [0, dimension - size] as XLA does. dynamic-update-slice runs in place: the output is the
// operand's memory (buffer assignment links them), and only the update's bytes are written,
// row by row, split over the pool when the update is large.
#include <optional>

#include "insitu/runtime/row_walk.h"

namespace insitu {
namespace kernels {
namespace {

// An integer scalar at `data` of element type `type`, widened; nullopt for non-integers.
std::optional<int64_t> read_integer(const uint8_t* data, PrimitiveType type, int64_t position) {
  std::optional<int64_t> value;
  if (!is_integral(type)) return value;
  dispatch_element_type(type, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>)
      value = static_cast<int64_t>(reinterpret_cast<const T*>(data)[position]);
  });
  return value;
}

// The clamped start of every dimension, from scalar index operands (or one index vector).
std::optional<std::vector<int64_t>> read_starts(std::span<const ArrayView> indices, const Shape& shape,
                                                std::span<const int64_t> sizes) {
  const size_t rank = static_cast<size_t>(shape.rank());
  if (sizes.size() != rank) return std::nullopt;
  std::vector<int64_t> starts;
  if (indices.size() == 1 && indices[0].shape->rank() == 1 && rank != 0 && !indices[0].scalar) {
    if (indices[0].element_count() != static_cast<int64_t>(rank)) return std::nullopt;
    for (size_t i = 0; i < rank; ++i) {
      std::optional<int64_t> value = read_integer(indices[0].data, indices[0].type(), static_cast<int64_t>(i));
      if (!value) return std::nullopt;
      starts.push_back(*value);
    }
  } else {
    if (indices.size() != rank) return std::nullopt;
    for (const ArrayView& index : indices) {
      if (index.shape->rank() != 0 && !index.scalar) return std::nullopt;
      std::optional<int64_t> value = read_integer(index.data, index.type(), 0);
      if (!value) return std::nullopt;
      starts.push_back(*value);
    }
  }
  for (size_t i = 0; i < rank; ++i) {
    if (sizes[i] > shape.dimension(i) || sizes[i] < 0) return std::nullopt;
    starts[i] = std::clamp<int64_t>(starts[i], 0, shape.dimension(i) - sizes[i]);
  }
  return starts;
}

bool run_dynamic_slice(const Instruction& instruction, std::span<const ArrayView> operands, const ArrayView& out,
                       ThreadPool& pool) {
  const ArrayView& operand = operands[0];
  if (operand.scalar || out.type() != operand.type()) return false;
  if (out.shape->dimensions() != instruction.dynamic_slice_sizes) return false;
  std::optional<std::vector<int64_t>> starts =
      read_starts(operands.subspan(1), *operand.shape, instruction.dynamic_slice_sizes);
  if (!starts) return false;
  const int64_t width = byte_width(out.type());
  const std::vector<int64_t> strides = strides_of(operand.shape->dimensions());
  const auto [rows, row_length] = rows_of(out.shape->dimensions());
  const int64_t inner_start = starts->empty() ? 0 : starts->back();
  for_each_row(pool, out.shape->dimensions(), [&, row_length = row_length](int64_t row, std::span<const int64_t> index) {
    int64_t source = inner_start;
    for (size_t d = 0; d < index.size(); ++d) source += ((*starts)[d] + index[d]) * strides[d];
    std::memcpy(out.data + row * row_length * width, operand.data + source * width,
                static_cast<size_t>(row_length * width));
  });
  return true;
}

bool run_dynamic_update_slice(std::span<const ArrayView> operands, const ArrayView& out, ThreadPool& pool) {
  const ArrayView& operand = operands[0];
  const ArrayView& update = operands[1];
  if (operand.scalar || out.type() != operand.type() || update.type() != operand.type()) return false;
  if (update.shape->rank() != operand.shape->rank() || out.byte_size() != operand.byte_size()) return false;
  std::optional<std::vector<int64_t>> starts =
      read_starts(operands.subspan(2), *operand.shape, update.shape->dimensions());
  if (!starts) return false;
  // Not in place (the executor found distinct slices): start from the operand's value.
  if (out.data != operand.data) copy_bytes_parallel(pool, out.data, operand.data, out.byte_size());
  const int64_t width = byte_width(out.type());
  const std::vector<int64_t> strides = strides_of(operand.shape->dimensions());
  const auto [rows, row_length] = rows_of(update.shape->dimensions());
  const int64_t inner_start = starts->empty() ? 0 : starts->back();
  const int64_t update_stride = update.scalar ? 0 : 1;
  for_each_row(pool, update.shape->dimensions(), [&, row_length = row_length](int64_t row, std::span<const int64_t> index) {
    int64_t target = inner_start;
    for (size_t d = 0; d < index.size(); ++d) target += ((*starts)[d] + index[d]) * strides[d];
    copy_strided(out.data + target * width, update.data + row * row_length * width * update_stride, row_length,
                 update_stride, width);
  });
  return true;
}

}  // namespace
}  // namespace kernels

bool run_dynamic_slice_kernel(const Instruction& instruction, std::span<const ArrayView> operands,
                              const ArrayView& out, ThreadPool& pool) {
  if (!out.shape->is_array()) return false;
  switch (instruction.opcode()) {
    case Opcode::kDynamicSlice:
      return operands.size() >= 1 && kernels::run_dynamic_slice(instruction, operands, out, pool);
    case Opcode::kDynamicUpdateSlice:
      return operands.size() >= 2 && kernels::run_dynamic_update_slice(operands, out, pool);
    default: return false;
  }
}

}  // namespace insitu
