// Native data-movement kernels: reshape (bytes), slice, broadcast, iota, concatenate,
// transpose, reverse, pad (edge padding, negative included, and interior padding). They move
// elements as raw bytes of the element width, so every element type is
// served by one path (iota computes values with the evaluator's conversion rules). Large
// outputs split over the pool by rows; each row is written by exactly one chunk.
#include <complex>

#include "insitu/runtime/cpu_level.h"
#include "insitu/runtime/element_compute.h"
#include "insitu/runtime/row_walk.h"
#include "insitu/runtime/transpose_tiles.h"

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

Status copy_kernel(const KernelCall& call) {
  copy_bytes_parallel(call.pool, call.out().data, call.operands[0].data, call.out().byte_size());
  return ok_status();
}

Status slice_kernel(const KernelCall& call) {
  const Instruction& instruction = call.instruction;
  const ArrayView& operand = call.operands[0];
  const ArrayView& out = call.out();
  ThreadPool& pool = call.pool;
  const int64_t rank = operand.shape->rank();
  const int64_t width = byte_width(out.type());
  const IndexVector strides = strides_of(operand.shape->dimensions());
  const int64_t row_length = rows_of(out.shape->dimensions()).second;  // a plain variable: lambdas capture it
  const int64_t inner_stride = rank == 0 ? 1 : instruction.slice.back().stride;
  const int64_t inner_start = rank == 0 ? 0 : instruction.slice.back().start;
  for_each_row(pool, out.shape->dimensions(), [&](int64_t row, std::span<const int64_t> index) {
    int64_t source = inner_start;
    for (size_t d = 0; d < index.size(); ++d)
      source += (instruction.slice[d].start + index[d] * instruction.slice[d].stride) * strides[d];
    copy_strided(out.data + row * row_length * width, operand.data + source * width, row_length, inner_stride, width);
  });
  return ok_status();
}

Status broadcast_kernel(const KernelCall& call) {
  const Instruction& instruction = call.instruction;
  const ArrayView& operand = call.operands[0];
  const ArrayView& out = call.out();
  ThreadPool& pool = call.pool;
  const std::vector<int64_t>& map = instruction.dimensions;
  const int64_t rank = out.shape->rank();
  const int64_t width = byte_width(out.type());
  if (operand.scalar || operand.shape->rank() == 0) {
    // Fill: every element is the operand's one element.
    const auto [rows, row_length] = rows_of(out.shape->dimensions());
    for_each_row(pool, out.shape->dimensions(), [&, row_length = row_length](int64_t row, std::span<const int64_t>) {
      copy_strided(out.data + row * row_length * width, operand.data, row_length, 0, width);
    });
    return ok_status();
  }
  const IndexVector operand_strides = strides_of(operand.shape->dimensions());
  // The operand stride of each result dimension (0 for dimensions the operand does not have).
  std::vector<int64_t> stride_of_result(rank, 0);
  // (a size-1 operand dimension stretched to a longer result dimension reads its one element)
  for (size_t k = 0; k < map.size(); ++k)
    stride_of_result[map[k]] = operand.shape->dimension(static_cast<int64_t>(k)) == 1 ? 0 : operand_strides[k];
  const auto [rows, row_length] = rows_of(out.shape->dimensions());
  const int64_t inner_stride = stride_of_result.back();
  for_each_row(pool, out.shape->dimensions(), [&, row_length = row_length](int64_t row, std::span<const int64_t> index) {
    int64_t source = 0;
    for (size_t d = 0; d < index.size(); ++d) source += index[d] * stride_of_result[d];
    copy_strided(out.data + row * row_length * width, operand.data + source * width, row_length, inner_stride, width);
  });
  return ok_status();
}

// A transpose whose output rows read their source with a stride while the next-to-last output
// dimension is contiguous in the source (a matrix transpose, batched or not): 16 x 16 tiles, so
// that each tile reads 16 source cache lines once instead of one line per element; 4-byte
// elements 8 x 8 in vector registers (transpose_tiles.h). `outer` counts the output's leading
// dimensions (all but the last two), whose source offsets are `outer_offset(o)`.
template <typename T, typename OuterOffset>
void transpose_tiled(ThreadPool& pool, const T* from, T* to, int64_t outer, int64_t rows, int64_t columns,
                     int64_t column_stride, OuterOffset outer_offset) {
  constexpr int64_t kTile = 16;
  const int64_t row_tiles = (rows + kTile - 1) / kTile;
  run_range(pool, outer * row_tiles, std::max<int64_t>(1, kParallelElements / (kTile * std::max<int64_t>(columns, 1))),
            [&](int64_t begin, int64_t end) {
              for (int64_t task = begin; task < end; ++task) {
                const int64_t o = task / row_tiles, r0 = (task % row_tiles) * kTile;
                const int64_t r1 = std::min(rows, r0 + kTile);
                const T* source = from + outer_offset(o);
                T* target = to + o * rows * columns;
                if constexpr (sizeof(T) == 4) {  // target[r * columns + c] = source[r + c * column_stride]
                  run_at_cpu_level<TransposeToRows>(source, column_stride, r0, r1 - r0, columns, target + r0 * columns);
                  continue;
                }
                for (int64_t c0 = 0; c0 < columns; c0 += kTile) {
                  const int64_t c1 = std::min(columns, c0 + kTile);
                  for (int64_t r = r0; r < r1; ++r)
                    for (int64_t c = c0; c < c1; ++c) target[r * columns + c] = source[r + c * column_stride];
                }
              }
            });
}

Status transpose_kernel(const KernelCall& call) {
  const Instruction& instruction = call.instruction;
  const ArrayView& operand = call.operands[0];
  const ArrayView& out = call.out();
  ThreadPool& pool = call.pool;
  const std::vector<int64_t>& permutation = instruction.dimensions;
  const int64_t rank = out.shape->rank();
  if (rank == 0) {
    std::memcpy(out.data, operand.data, static_cast<size_t>(byte_width(out.type())));
    return ok_status();
  }
  const int64_t width = byte_width(out.type());
  const IndexVector operand_strides = strides_of(operand.shape->dimensions());
  const auto [rows, row_length] = rows_of(out.shape->dimensions());
  const int64_t inner_stride = operand_strides[permutation.back()];
  const std::span<const int64_t> dimensions = out.shape->dimensions();
  if (rank >= 2 && inner_stride != 1 && operand_strides[permutation[rank - 2]] == 1 && dimensions[rank - 2] >= 16 &&
      (width == 4 || width == 8)) {
    int64_t outer = 1;
    for (int64_t d = 0; d + 2 < rank; ++d) outer *= dimensions[d];
    auto outer_offset = [&](int64_t o) {  // the source offset of leading output index o
      int64_t offset = 0;
      for (int64_t d = rank - 3; d >= 0; --d) {
        offset += (o % dimensions[d]) * operand_strides[permutation[d]];
        o /= dimensions[d];
      }
      return offset;
    };
    if (width == 4)
      transpose_tiled(pool, reinterpret_cast<const uint32_t*>(operand.data), reinterpret_cast<uint32_t*>(out.data), outer,
                      dimensions[rank - 2], dimensions[rank - 1], inner_stride, outer_offset);
    else
      transpose_tiled(pool, reinterpret_cast<const uint64_t*>(operand.data), reinterpret_cast<uint64_t*>(out.data), outer,
                      dimensions[rank - 2], dimensions[rank - 1], inner_stride, outer_offset);
    return ok_status();
  }
  for_each_row(pool, dimensions, [&, row_length = row_length](int64_t row, std::span<const int64_t> index) {
    int64_t source = 0;
    for (size_t d = 0; d < index.size(); ++d) source += index[d] * operand_strides[permutation[d]];
    copy_strided(out.data + row * row_length * width, operand.data + source * width, row_length, inner_stride, width);
  });
  return ok_status();
}

// reverse: a transpose with the identity permutation where reversed dimensions count down.
Status reverse_kernel(const KernelCall& call) {
  const Instruction& instruction = call.instruction;
  const ArrayView& operand = call.operands[0];
  const ArrayView& out = call.out();
  ThreadPool& pool = call.pool;
  const int64_t rank = out.shape->rank();
  std::vector<bool> reversed(static_cast<size_t>(rank), false);
  for (int64_t d : instruction.dimensions) reversed[d] = true;
  const int64_t width = byte_width(out.type());
  if (rank == 0) {
    std::memcpy(out.data, operand.data, static_cast<size_t>(width));
    return ok_status();
  }
  const std::vector<int64_t>& dims = out.shape->dimensions();
  const IndexVector strides = strides_of(dims);
  const auto [rows, row_length] = rows_of(dims);
  const int64_t inner = rank - 1;
  const int64_t inner_stride = reversed[inner] ? -1 : 1;
  for_each_row(pool, dims, [&, row_length = row_length](int64_t row, std::span<const int64_t> index) {
    int64_t source = reversed[inner] ? dims[inner] - 1 : 0;
    for (size_t d = 0; d < index.size(); ++d)
      source += (reversed[d] ? dims[d] - 1 - index[d] : index[d]) * strides[d];
    copy_strided(out.data + row * row_length * width, operand.data + source * width, row_length, inner_stride, width);
  });
  return ok_status();
}

// pad: result position o of dimension d reads operand position (o - low) / (interior + 1) when
// that divides evenly and lies inside the operand; every other position is the padding value.
Status pad_kernel(const KernelCall& call) {
  const Instruction& instruction = call.instruction;
  const ArrayView& operand = call.operands[0];
  const ArrayView& value = call.operands[1];
  const ArrayView& out = call.out();
  ThreadPool& pool = call.pool;
  const int64_t rank = out.shape->rank();
  const int64_t width = byte_width(out.type());
  if (rank == 0) {
    std::memcpy(out.data, operand.data, static_cast<size_t>(width));
    return ok_status();
  }
  const std::vector<int64_t>& dims = out.shape->dimensions();
  const IndexVector strides = strides_of(operand.shape->dimensions());
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
  return ok_status();
}

template <typename T>
Status iota_kernel(const KernelCall& call) {
  const ArrayView& out = call.out();
  const int64_t rank = out.shape->rank();
  const int64_t dimension = call.instruction.iota_dimension;
  {
    T* o = reinterpret_cast<T*>(out.data);
    const int64_t row_length = out.shape->dimensions().back();
    for_each_row(call.pool, out.shape->dimensions(), [&](int64_t row, std::span<const int64_t> index) {
      T* to = o + row * row_length;
      if (dimension == rank - 1) {
        for (int64_t i = 0; i < row_length; ++i) to[i] = iota_value<T>(i);
      } else {
        const T value = iota_value<T>(index[dimension]);
        for (int64_t i = 0; i < row_length; ++i) to[i] = value;
      }
    });
  }
  return ok_status();
}

Status concatenate_kernel(const KernelCall& call) {
  const std::span<const ArrayView> operands = call.operands;
  const ArrayView& out = call.out();
  const int64_t dimension = call.instruction.dimensions[0];
  const int64_t rank = out.shape->rank();
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
    blocks.push_back(operand.shape->dimension(dimension) * inner * width);
    offsets.push_back(offset);
    offset += blocks.back();
  }
  run_range(call.pool, outer, std::max<int64_t>(1, kParallelElements / std::max<int64_t>(1, out_block / width)),
            [&](int64_t begin, int64_t end) {
              for (int64_t o = begin; o < end; ++o)
                for (size_t k = 0; k < operands.size(); ++k)
                  if (blocks[k] > 0)
                    std::memcpy(out.data + o * out_block + offsets[k], operands[k].data + o * blocks[k],
                                static_cast<size_t>(blocks[k]));
            });
  return ok_status();
}

}  // namespace
}  // namespace kernels

// The checks below are what each kernel assumes; the verifier enforces most of them, and
// anything else (a malformed module run without it) stays with the evaluator, which reports it.
namespace {

bool valid_dimension_list(const std::vector<int64_t>& dimensions, int64_t rank) {
  for (int64_t d : dimensions)
    if (d < 0 || d >= rank) return false;
  return true;
}

bool selects_concatenate(const Instruction& instruction, std::span<const ArrayView> operands, const ArrayView& out) {
  const int64_t rank = out.shape->rank();
  if (instruction.dimensions.size() != 1 || !valid_dimension_list(instruction.dimensions, rank)) return false;
  const int64_t dimension = instruction.dimensions[0];
  int64_t total = 0;
  for (const ArrayView& operand : operands) {
    if (operand.scalar || operand.shape->rank() != rank || operand.type() != out.type()) return false;
    for (int64_t d = 0; d < rank; ++d)
      if (d != dimension && operand.shape->dimension(d) != out.shape->dimension(d)) return false;
    total += operand.shape->dimension(dimension);
  }
  return total == out.shape->dimension(dimension);
}

bool selects_pad(const Instruction& instruction, std::span<const ArrayView> operands, const ArrayView& out) {
  if (operands.size() != 2 || operands[0].scalar) return false;
  const ArrayView& operand = operands[0];
  const int64_t rank = out.shape->rank();
  if (operand.shape->rank() != rank || static_cast<int64_t>(instruction.padding.size()) != rank ||
      operand.type() != out.type() || operands[1].type() != out.type())
    return false;
  for (int64_t d = 0; d < rank; ++d) {
    const PaddingDimension& p = instruction.padding[d];
    const int64_t n = operand.shape->dimension(d);
    const int64_t expected = p.low + p.high + n + std::max<int64_t>(n - 1, 0) * p.interior;
    if (p.interior < 0 || out.shape->dimension(d) != expected) return false;
  }
  return true;
}

KernelFn select_iota(const ArrayView& out, int64_t dimension) {
  if (dimension < 0 || dimension >= out.shape->rank()) return nullptr;
  KernelFn chosen = nullptr;
  dispatch_element_type(out.type(), [&](auto tag) { chosen = &kernels::iota_kernel<decltype(tag)>; });
  return chosen;
}

KernelFn select_function(const Instruction& instruction, std::span<const ArrayView> operands, const ArrayView& out) {
  const bool one_array = operands.size() == 1 && !operands[0].scalar;
  const int64_t rank = out.shape->rank();
  switch (instruction.opcode()) {
    case Opcode::kReshape:  // (copy is a structural step: the executor counts it)
      return one_array && operands[0].byte_size() == out.byte_size() ? &kernels::copy_kernel : nullptr;
    case Opcode::kSlice:
      return one_array && static_cast<int64_t>(instruction.slice.size()) == rank && operands[0].shape->rank() == rank
                 ? &kernels::slice_kernel
                 : nullptr;
    case Opcode::kBroadcast:
      if (operands.size() != 1) return nullptr;
      if (operands[0].scalar || operands[0].shape->rank() == 0) return &kernels::broadcast_kernel;  // a fill
      return static_cast<int64_t>(instruction.dimensions.size()) == operands[0].shape->rank() &&
                     valid_dimension_list(instruction.dimensions, rank)
                 ? &kernels::broadcast_kernel
                 : nullptr;
    case Opcode::kTranspose:
      return one_array && static_cast<int64_t>(instruction.dimensions.size()) == rank &&
                     operands[0].shape->rank() == rank
                 ? &kernels::transpose_kernel
                 : nullptr;
    case Opcode::kReverse:
      return one_array && operands[0].shape->dimensions() == out.shape->dimensions() &&
                     valid_dimension_list(instruction.dimensions, rank)
                 ? &kernels::reverse_kernel
                 : nullptr;
    case Opcode::kIota: return operands.empty() ? select_iota(out, instruction.iota_dimension) : nullptr;
    case Opcode::kConcatenate:
      return selects_concatenate(instruction, operands, out) ? &kernels::concatenate_kernel : nullptr;
    case Opcode::kPad: return selects_pad(instruction, operands, out) ? &kernels::pad_kernel : nullptr;
    default: return nullptr;
  }
}

}  // namespace

SelectedKernel select_data_movement(const Instruction& instruction, std::span<const ArrayView> operands,
                                    std::span<const ArrayView> outputs) {
  if (outputs.size() != 1 || !outputs[0].shape->is_array()) return std::nullopt;
  if (KernelFn run = select_function(instruction, operands, outputs[0])) return NativeKernel{run, nullptr};
  return std::nullopt;
}

}  // namespace insitu
