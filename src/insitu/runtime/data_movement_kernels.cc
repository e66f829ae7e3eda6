// Native data-movement kernels: copy and reshape (bytes), slice, broadcast, iota, concatenate,
// transpose, reverse, pad (edge padding, negative included, and interior padding). They move elements as raw bytes of the element width, so every element type is
// served by one path (iota computes values with the evaluator's conversion rules). Large
// outputs split over the pool by rows; each row is written by exactly one chunk.
#include <complex>

#include "insitu/runtime/element_compute.h"
#include "insitu/runtime/row_walk.h"

namespace insitu {

void copy_bytes_parallel(ThreadPool& pool, uint8_t* to, const uint8_t* from, int64_t bytes) {
  if (bytes <= 0 || to == from) return;
  if (bytes < kParallelBytes || pool.thread_count() == 1) {
    std::memcpy(to, from, static_cast<size_t>(bytes));
    return;
  }
  pool.parallel_for(bytes, [&](int64_t begin, int64_t end) {
    std::memcpy(to + begin, from + begin, static_cast<size_t>(end - begin));
  });
}

namespace kernels {
namespace {

bool run_slice(const Instruction& instruction, const ArrayView& operand, const ArrayView& out, ThreadPool& pool) {
  const int64_t rank = operand.shape->rank();
  if (static_cast<int64_t>(instruction.slice.size()) != rank || out.shape->rank() != rank) return false;
  const int64_t width = byte_width(out.type());
  const std::vector<int64_t> strides = strides_of(operand.shape->dimensions());
  const auto [rows, row_length] = rows_of(out.shape->dimensions());
  const int64_t inner_stride = rank == 0 ? 1 : instruction.slice.back().stride;
  const int64_t inner_start = rank == 0 ? 0 : instruction.slice.back().start;
  for_each_row(pool, out.shape->dimensions(), [&](int64_t row, std::span<const int64_t> index) {
    int64_t source = inner_start;
    for (size_t d = 0; d < index.size(); ++d)
      source += (instruction.slice[d].start + index[d] * instruction.slice[d].stride) * strides[d];
    copy_strided(out.data + row * row_length * width, operand.data + source * width, row_length, inner_stride, width);
  });
  return true;
}

bool run_broadcast(const Instruction& instruction, const ArrayView& operand, const ArrayView& out, ThreadPool& pool) {
  const std::vector<int64_t>& map = instruction.dimensions;
  const int64_t rank = out.shape->rank();
  const int64_t width = byte_width(out.type());
  if (operand.scalar || operand.shape->rank() == 0) {
    // Fill: every element is the operand's one element.
    const auto [rows, row_length] = rows_of(out.shape->dimensions());
    for_each_row(pool, out.shape->dimensions(), [&, row_length = row_length](int64_t row, std::span<const int64_t>) {
      copy_strided(out.data + row * row_length * width, operand.data, row_length, 0, width);
    });
    return true;
  }
  if (static_cast<int64_t>(map.size()) != operand.shape->rank()) return false;
  const std::vector<int64_t> operand_strides = strides_of(operand.shape->dimensions());
  // The operand stride of each result dimension (0 for dimensions the operand does not have).
  std::vector<int64_t> stride_of_result(rank, 0);
  for (size_t k = 0; k < map.size(); ++k) {
    if (map[k] < 0 || map[k] >= rank) return false;
    stride_of_result[map[k]] = operand_strides[k];
  }
  const auto [rows, row_length] = rows_of(out.shape->dimensions());
  const int64_t inner_stride = stride_of_result.back();
  for_each_row(pool, out.shape->dimensions(), [&, row_length = row_length](int64_t row, std::span<const int64_t> index) {
    int64_t source = 0;
    for (size_t d = 0; d < index.size(); ++d) source += index[d] * stride_of_result[d];
    copy_strided(out.data + row * row_length * width, operand.data + source * width, row_length, inner_stride, width);
  });
  return true;
}

bool run_transpose(const Instruction& instruction, const ArrayView& operand, const ArrayView& out, ThreadPool& pool) {
  const std::vector<int64_t>& permutation = instruction.dimensions;
  const int64_t rank = out.shape->rank();
  if (static_cast<int64_t>(permutation.size()) != rank || operand.shape->rank() != rank) return false;
  if (rank == 0) {
    std::memcpy(out.data, operand.data, static_cast<size_t>(byte_width(out.type())));
    return true;
  }
  const int64_t width = byte_width(out.type());
  const std::vector<int64_t> operand_strides = strides_of(operand.shape->dimensions());
  const auto [rows, row_length] = rows_of(out.shape->dimensions());
  const int64_t inner_stride = operand_strides[permutation.back()];
  for_each_row(pool, out.shape->dimensions(), [&, row_length = row_length](int64_t row, std::span<const int64_t> index) {
    int64_t source = 0;
    for (size_t d = 0; d < index.size(); ++d) source += index[d] * operand_strides[permutation[d]];
    copy_strided(out.data + row * row_length * width, operand.data + source * width, row_length, inner_stride, width);
  });
  return true;
}

// reverse: a transpose with the identity permutation where reversed dimensions count down.
bool run_reverse(const Instruction& instruction, const ArrayView& operand, const ArrayView& out, ThreadPool& pool) {
  const int64_t rank = out.shape->rank();
  if (operand.shape->dimensions() != out.shape->dimensions()) return false;
  std::vector<bool> reversed(static_cast<size_t>(rank), false);
  for (int64_t d : instruction.dimensions) {
    if (d < 0 || d >= rank) return false;
    reversed[d] = true;
  }
  const int64_t width = byte_width(out.type());
  if (rank == 0) {
    std::memcpy(out.data, operand.data, static_cast<size_t>(width));
    return true;
  }
  const std::vector<int64_t>& dims = out.shape->dimensions();
  const std::vector<int64_t> strides = strides_of(dims);
  const auto [rows, row_length] = rows_of(dims);
  const int64_t inner = rank - 1;
  const int64_t inner_stride = reversed[inner] ? -1 : 1;
  for_each_row(pool, dims, [&, row_length = row_length](int64_t row, std::span<const int64_t> index) {
    int64_t source = reversed[inner] ? dims[inner] - 1 : 0;
    for (size_t d = 0; d < index.size(); ++d)
      source += (reversed[d] ? dims[d] - 1 - index[d] : index[d]) * strides[d];
    copy_strided(out.data + row * row_length * width, operand.data + source * width, row_length, inner_stride, width);
  });
  return true;
}

// pad: result position o of dimension d reads operand position (o - low) / (interior + 1) when
// that divides evenly and lies inside the operand; every other position is the padding value.
bool run_pad(const Instruction& instruction, std::span<const ArrayView> operands, const ArrayView& out,
             ThreadPool& pool) {
  if (operands.size() != 2 || operands[0].scalar) return false;
  const ArrayView& operand = operands[0];
  const ArrayView& value = operands[1];
  const int64_t rank = out.shape->rank();
  if (operand.shape->rank() != rank || static_cast<int64_t>(instruction.padding.size()) != rank ||
      operand.type() != out.type() || value.type() != out.type())
    return false;
  for (int64_t d = 0; d < rank; ++d) {
    const PaddingDimension& p = instruction.padding[d];
    const int64_t n = operand.shape->dimension(d);
    const int64_t expected = p.low + p.high + n + std::max<int64_t>(n - 1, 0) * p.interior;
    if (p.interior < 0 || out.shape->dimension(d) != expected) return false;
  }
  const int64_t width = byte_width(out.type());
  if (rank == 0) {
    std::memcpy(out.data, operand.data, static_cast<size_t>(width));
    return true;
  }
  const std::vector<int64_t>& dims = out.shape->dimensions();
  const std::vector<int64_t> strides = strides_of(operand.shape->dimensions());
  // The operand position of result position o along d, or -1 for padding.
  auto source_of = [&](int64_t d, int64_t o) -> int64_t {
    const PaddingDimension& p = instruction.padding[d];
    const int64_t shifted = o - p.low;
    if (shifted < 0 || shifted % (p.interior + 1) != 0) return -1;
    const int64_t position = shifted / (p.interior + 1);
    return position < operand.shape->dimension(d) ? position : -1;
  };
  const auto [rows, row_length] = rows_of(dims);
  const int64_t inner = rank - 1;
  for_each_row(pool, dims, [&, row_length = row_length](int64_t row, std::span<const int64_t> index) {
    uint8_t* to = out.data + row * row_length * width;
    int64_t base = 0;
    bool padding_row = false;
    for (size_t d = 0; d < index.size(); ++d) {
      const int64_t position = source_of(static_cast<int64_t>(d), index[d]);
      if (position < 0) {
        padding_row = true;
        break;
      }
      base += position * strides[d];
    }
    for (int64_t j = 0; j < row_length; ++j) {
      const int64_t position = padding_row ? -1 : source_of(inner, j);
      const uint8_t* from = position < 0 ? value.data : operand.data + (base + position) * width;
      std::memcpy(to + j * width, from, static_cast<size_t>(width));
    }
  });
  return true;
}

template <typename T>
T iota_value(int64_t i) {
  if constexpr (std::is_same_v<T, bool>) return i != 0;
  else if constexpr (kIsHalfLike<T>) return T::from_float(static_cast<float>(i));
  else return static_cast<T>(i);
}

bool run_iota(const Instruction& instruction, const ArrayView& out, ThreadPool& pool) {
  const int64_t rank = out.shape->rank();
  const int64_t dimension = instruction.iota_dimension;
  if (dimension < 0 || dimension >= rank) return false;
  dispatch_element_type(out.type(), [&](auto tag) {
    using T = decltype(tag);
    T* o = reinterpret_cast<T*>(out.data);
    const int64_t row_length = out.shape->dimensions().back();
    for_each_row(pool, out.shape->dimensions(), [&](int64_t row, std::span<const int64_t> index) {
      T* to = o + row * row_length;
      if (dimension == rank - 1) {
        for (int64_t i = 0; i < row_length; ++i) to[i] = iota_value<T>(i);
      } else {
        const T value = iota_value<T>(index[dimension]);
        for (int64_t i = 0; i < row_length; ++i) to[i] = value;
      }
    });
  });
  return true;
}

bool run_concatenate(const Instruction& instruction, std::span<const ArrayView> operands, const ArrayView& out,
                     ThreadPool& pool) {
  if (instruction.dimensions.size() != 1) return false;
  const int64_t dimension = instruction.dimensions[0];
  const int64_t rank = out.shape->rank();
  if (dimension < 0 || dimension >= rank) return false;
  const int64_t width = byte_width(out.type());
  // outer: product of dimensions before `dimension`; each operand contributes a contiguous
  // block of dim(dimension) * inner elements per outer index.
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < dimension; ++d) outer *= out.shape->dimension(d);
  for (int64_t d = dimension + 1; d < rank; ++d) inner *= out.shape->dimension(d);
  const int64_t out_block = out.shape->dimension(dimension) * inner * width;
  std::vector<int64_t> blocks, offsets;
  int64_t offset = 0;
  for (const ArrayView& operand : operands) {
    if (operand.scalar || operand.shape->rank() != rank || operand.type() != out.type()) return false;
    blocks.push_back(operand.shape->dimension(dimension) * inner * width);
    offsets.push_back(offset);
    offset += blocks.back();
  }
  if (offset != out_block) return false;
  run_range(pool, outer, std::max<int64_t>(1, kParallelElements / std::max<int64_t>(1, out_block / width)),
            [&](int64_t begin, int64_t end) {
              for (int64_t o = begin; o < end; ++o)
                for (size_t k = 0; k < operands.size(); ++k)
                  if (blocks[k] > 0)
                    std::memcpy(out.data + o * out_block + offsets[k], operands[k].data + o * blocks[k],
                                static_cast<size_t>(blocks[k]));
            });
  return true;
}

}  // namespace
}  // namespace kernels

bool run_data_movement_kernel(const Instruction& instruction, std::span<const ArrayView> operands,
                              const ArrayView& out, ThreadPool& pool) {
  if (!out.shape->is_array()) return false;
  switch (instruction.opcode()) {
    case Opcode::kCopy:
    case Opcode::kReshape:
      if (operands.size() != 1 || operands[0].scalar || operands[0].byte_size() != out.byte_size()) return false;
      copy_bytes_parallel(pool, out.data, operands[0].data, out.byte_size());
      return true;
    case Opcode::kSlice: return operands.size() == 1 && !operands[0].scalar && kernels::run_slice(instruction, operands[0], out, pool);
    case Opcode::kBroadcast: return operands.size() == 1 && kernels::run_broadcast(instruction, operands[0], out, pool);
    case Opcode::kTranspose:
      return operands.size() == 1 && !operands[0].scalar && kernels::run_transpose(instruction, operands[0], out, pool);
    case Opcode::kIota: return operands.empty() && kernels::run_iota(instruction, out, pool);
    case Opcode::kConcatenate: return kernels::run_concatenate(instruction, operands, out, pool);
    case Opcode::kReverse:
      return operands.size() == 1 && !operands[0].scalar && kernels::run_reverse(instruction, operands[0], out, pool);
    case Opcode::kPad: return kernels::run_pad(instruction, operands, out, pool);
    default: return false;
  }
}

}  // namespace insitu
