// Data-movement ops of the reference evaluator: iota, broadcast, reshape, bitcast, transpose,
// slice, dynamic-slice, dynamic-update-slice, concatenate, pad, reverse.
//
// Apart from iota, these ops never look at element values: they move elements as raw bytes of
// byte_width(type), so one implementation serves every element type. Each op checks what it
// relies on (operand count, ranks, dimension bounds, the instruction's result shape) and
// returns a located error instead of reading out of bounds: the evaluator may run modules the
// verifier has not seen. Semantics follow XLA's HloEvaluator (dynamic-slice starts clamped,
// negative pad edges crop, interior padding before edge padding).
#include <algorithm>
#include <cstring>

#include "insitu/evaluator/element_arithmetic.h"
#include "insitu/evaluator/index_util.h"
#include "insitu/evaluator/ops.h"
#include "insitu/support/str.h"

namespace insitu::eval {
namespace {

using Index = std::span<const int64_t>;
using Dimensions = std::vector<int64_t>;

std::string dimensions_to_string(std::span<const int64_t> dimensions) {
  return "[" + str_join(dimensions, ",") + "]";
}

Status op_error(const Instruction& instruction, const std::string& message) {
  return invalid_argument(str_cat(opcode_name(instruction.opcode()), " %", instruction.name(), ": ", message),
                          instruction.location());
}

Status check_operand_count(const Instruction& instruction, Operands operands, size_t expected) {
  if (operands.size() != expected)
    return op_error(instruction, str_cat("expects ", expected, " operands, got ", operands.size()));
  for (size_t i = 0; i < operands.size(); ++i) {
    if (!operands[i]->shape().is_array())
      return op_error(instruction, str_cat("operand ", i, " must be an array, got ",
                                           operands[i]->shape().to_string(false)));
  }
  return ok_status();
}

// The instruction's declared shape must be an array of `type` with `dimensions`.
Status check_result_shape(const Instruction& instruction, PrimitiveType type, std::span<const int64_t> dimensions) {
  const Shape& shape = instruction.shape();
  if (!shape.is_array() || shape.element_type() != type ||
      !std::equal(shape.dimensions().begin(), shape.dimensions().end(), dimensions.begin(), dimensions.end())) {
    return op_error(instruction, str_cat("the operands give ", primitive_type_name(type), dimensions_to_string(dimensions),
                                         " but the instruction's shape is ", shape.to_string(false),
                                         "; fix the result shape or the operands"));
  }
  return ok_status();
}

Status check_dimension_number(const Instruction& instruction, int64_t dimension, int64_t rank, const char* what) {
  if (dimension < 0 || dimension >= rank)
    return op_error(instruction, str_cat(what, " ", dimension, " is out of range for rank ", rank));
  return ok_status();
}

// memcpy that accepts empty (possibly null) ranges.
void copy_bytes(uint8_t* to, const uint8_t* from, int64_t count) {
  if (count > 0) std::memcpy(to, from, count);
}

// For every result index in row-major order, copies the operand element at the row-major
// position source(result_index) into the result.
template <typename SourceFn>
void copy_elements(const Literal& operand, Literal& result, SourceFn&& source) {
  const int64_t width = byte_width(result.shape().element_type());
  const uint8_t* from = operand.untyped_data();
  uint8_t* to = result.untyped_data();
  for_each_index(result.shape().dimensions(), [&](Index index) {
    std::memcpy(to, from + source(index) * width, width);
    to += width;
  });
}

// Row-major position in `dimensions` of a multi-index.
int64_t linearize(std::span<const int64_t> strides, std::span<const int64_t> index) {
  int64_t linear = 0;
  for (size_t i = 0; i < index.size(); ++i) linear += strides[i] * index[i];
  return linear;
}

// ---------------------------------------------------------------------------------------------

StatusOr<Literal> evaluate_iota(const Instruction& instruction, Operands operands) {
  INSITU_RETURN_IF_ERROR(check_operand_count(instruction, operands, 0));
  const Shape& shape = instruction.shape();
  if (!shape.is_array()) return op_error(instruction, "the result must be an array");
  INSITU_RETURN_IF_ERROR(check_dimension_number(instruction, instruction.iota_dimension, shape.rank(), "iota_dimension"));
  Literal result(shape);
  dispatch_element_type(shape.element_type(), [&](auto tag) {
    using T = decltype(tag);
    T* out = reinterpret_cast<T*>(result.untyped_data());
    for_each_index(shape.dimensions(), [&](Index index) { *out++ = iota_value<T>(index[instruction.iota_dimension]); });
  });
  return result;
}

StatusOr<Literal> evaluate_broadcast(const Instruction& instruction, Operands operands) {
  INSITU_RETURN_IF_ERROR(check_operand_count(instruction, operands, 1));
  const Literal& operand = *operands[0];
  const Shape& shape = instruction.shape();
  if (!shape.is_array() || shape.element_type() != operand.shape().element_type())
    return op_error(instruction, str_cat("result ", shape.to_string(false), " must be an array of the operand's type ",
                                         primitive_type_name(operand.shape().element_type())));
  const Dimensions& map = instruction.dimensions;
  if (static_cast<int64_t>(map.size()) != operand.shape().rank())
    return op_error(instruction, str_cat("dimensions={", str_join(map, ","), "} must name one result dimension per ",
                                         "operand dimension (operand rank ", operand.shape().rank(), ")"));
  for (size_t i = 0; i < map.size(); ++i) {
    INSITU_RETURN_IF_ERROR(check_dimension_number(instruction, map[i], shape.rank(), "broadcast dimension"));
    if (shape.dimension(map[i]) != operand.shape().dimension(i) && operand.shape().dimension(i) != 1)
      return op_error(instruction, str_cat("operand dimension ", i, " has size ", operand.shape().dimension(i),
                                           " but result dimension ", map[i], " has size ", shape.dimension(map[i])));
  }
  Literal result(shape);
  // A size-1 operand dimension is stretched: its stride is 0, so every index reads element 0.
  Dimensions strides = row_major_strides(operand.shape().dimensions());
  for (size_t i = 0; i < map.size(); ++i)
    if (operand.shape().dimension(static_cast<int64_t>(i)) == 1) strides[i] = 0;
  copy_elements(operand, result, [&](Index index) {
    int64_t linear = 0;
    for (size_t i = 0; i < map.size(); ++i) linear += strides[i] * index[map[i]];
    return linear;
  });
  return result;
}

StatusOr<Literal> evaluate_reshape(const Instruction& instruction, Operands operands) {
  INSITU_RETURN_IF_ERROR(check_operand_count(instruction, operands, 1));
  const Literal& operand = *operands[0];
  const Shape& shape = instruction.shape();
  if (!shape.is_array() || shape.element_type() != operand.shape().element_type() ||
      shape.element_count() != operand.element_count()) {
    return op_error(instruction, str_cat("cannot reshape ", operand.shape().to_string(false), " to ",
                                         shape.to_string(false), ": element type and count must match"));
  }
  Literal result(shape);
  copy_bytes(result.untyped_data(), operand.untyped_data(), operand.size_bytes());
  return result;
}

// For each row-major position of `shape`, its element position in memory under the shape's
// layout (minor_to_major; tiles are ignored: dense storage, as on XLA:CPU).
Dimensions physical_positions(const Shape& shape) {
  const int64_t rank = shape.rank();
  Dimensions minor_to_major = shape.layout().minor_to_major;
  if (static_cast<int64_t>(minor_to_major.size()) != rank) minor_to_major = Layout::descending(rank).minor_to_major;
  Dimensions strides(rank, 1);
  int64_t stride = 1;
  for (int64_t dimension : minor_to_major) {
    strides[dimension] = stride;
    stride *= shape.dimension(dimension);
  }
  Dimensions positions;
  positions.reserve(shape.element_count());
  for_each_index(shape.dimensions(), [&](Index index) { positions.push_back(linearize(strides, index)); });
  return positions;
}

bool is_permutation_of_rank(const Dimensions& dimensions, int64_t rank) {
  if (static_cast<int64_t>(dimensions.size()) != rank) return false;
  std::vector<bool> seen(rank, false);
  for (int64_t d : dimensions) {
    if (d < 0 || d >= rank || seen[d]) return false;
    seen[d] = true;
  }
  return true;
}

// bitcast reinterprets the operand's bytes in memory (in its layout) as the result (in its
// layout). With default layouts and equal element types that is a reshape of the values.
StatusOr<Literal> evaluate_bitcast(const Instruction& instruction, Operands operands) {
  INSITU_RETURN_IF_ERROR(check_operand_count(instruction, operands, 1));
  const Literal& operand = *operands[0];
  const Shape& shape = instruction.shape();
  if (!shape.is_array() || shape.byte_size() != operand.shape().byte_size()) {
    return op_error(instruction, str_cat("cannot bitcast ", operand.shape().to_string(false), " (",
                                         operand.shape().byte_size(), " bytes) to ", shape.to_string(false),
                                         ": the byte sizes differ"));
  }
  const bool tiled = !operand.shape().layout().tiles.empty() || !shape.layout().tiles.empty();
  if (tiled) {
    // Tiled memory is not modelled; a bitcast between identical tiled shapes moves no element.
    if (operand.shape().element_type() == shape.element_type() && operand.shape().dimensions() == shape.dimensions() &&
        operand.shape().layout().minor_to_major == shape.layout().minor_to_major &&
        operand.shape().layout().tiles == shape.layout().tiles) {
      Literal result = operand;
      result.set_shape_layouts(shape);
      return result;
    }
    return op_error(instruction, str_cat("cannot bitcast ", operand.shape().to_string(), " to ", shape.to_string(),
                                         ": tiled layouts are not modelled (only a bitcast between identical tiled "
                                         "shapes is)"));
  }
  for (const Shape* s : {&operand.shape(), &shape}) {
    const Dimensions& minor_to_major = s->layout().minor_to_major;
    if (!minor_to_major.empty() && !is_permutation_of_rank(minor_to_major, s->rank()))
      return op_error(instruction, str_cat("layout of ", s->to_string(), " is not a permutation of its dimensions"));
  }
  Literal result(shape);
  // Operand values in memory order, then read back in the result's memory order.
  const int64_t operand_width = byte_width(operand.shape().element_type());
  std::vector<uint8_t> memory(operand.size_bytes());
  const Dimensions operand_positions = physical_positions(operand.shape());
  for (size_t i = 0; i < operand_positions.size(); ++i)
    std::memcpy(memory.data() + operand_positions[i] * operand_width, operand.untyped_data() + i * operand_width,
                operand_width);
  const int64_t result_width = byte_width(shape.element_type());
  const Dimensions result_positions = physical_positions(shape);
  for (size_t i = 0; i < result_positions.size(); ++i)
    std::memcpy(result.untyped_data() + i * result_width, memory.data() + result_positions[i] * result_width,
                result_width);
  return result;
}

StatusOr<Literal> evaluate_transpose(const Instruction& instruction, Operands operands) {
  INSITU_RETURN_IF_ERROR(check_operand_count(instruction, operands, 1));
  const Literal& operand = *operands[0];
  const Dimensions& permutation = instruction.dimensions;
  if (!is_permutation_of_rank(permutation, operand.shape().rank()))
    return op_error(instruction, str_cat("dimensions={", str_join(permutation, ","), "} must be a permutation of 0..",
                                         operand.shape().rank() - 1));
  Dimensions dimensions;
  for (int64_t d : permutation) dimensions.push_back(operand.shape().dimension(d));
  INSITU_RETURN_IF_ERROR(check_result_shape(instruction, operand.shape().element_type(), dimensions));
  Literal result(instruction.shape());
  const Dimensions strides = row_major_strides(operand.shape().dimensions());
  copy_elements(operand, result, [&](Index index) {
    int64_t linear = 0;
    for (size_t i = 0; i < permutation.size(); ++i) linear += strides[permutation[i]] * index[i];
    return linear;
  });
  return result;
}

StatusOr<Literal> evaluate_reverse(const Instruction& instruction, Operands operands) {
  INSITU_RETURN_IF_ERROR(check_operand_count(instruction, operands, 1));
  const Literal& operand = *operands[0];
  const int64_t rank = operand.shape().rank();
  std::vector<bool> reversed(rank, false);
  for (int64_t d : instruction.dimensions) {
    INSITU_RETURN_IF_ERROR(check_dimension_number(instruction, d, rank, "reverse dimension"));
    reversed[d] = true;
  }
  INSITU_RETURN_IF_ERROR(
      check_result_shape(instruction, operand.shape().element_type(), operand.shape().dimensions()));
  Literal result(instruction.shape());
  const Dimensions& dimensions = operand.shape().dimensions();
  const Dimensions strides = row_major_strides(dimensions);
  copy_elements(operand, result, [&](Index index) {
    int64_t linear = 0;
    for (int64_t i = 0; i < rank; ++i) linear += strides[i] * (reversed[i] ? dimensions[i] - 1 - index[i] : index[i]);
    return linear;
  });
  return result;
}

StatusOr<Literal> evaluate_slice(const Instruction& instruction, Operands operands) {
  INSITU_RETURN_IF_ERROR(check_operand_count(instruction, operands, 1));
  const Literal& operand = *operands[0];
  const int64_t rank = operand.shape().rank();
  const std::vector<SliceDimension>& slice = instruction.slice;
  if (static_cast<int64_t>(slice.size()) != rank)
    return op_error(instruction, str_cat("slice has ", slice.size(), " ranges for an operand of rank ", rank));
  Dimensions dimensions;
  for (int64_t i = 0; i < rank; ++i) {
    const SliceDimension& range = slice[i];
    if (range.start < 0 || range.start > range.limit || range.limit > operand.shape().dimension(i) || range.stride < 1)
      return op_error(instruction, str_cat("slice [", range.start, ":", range.limit, ":", range.stride,
                                           "] is not within dimension ", i, " of size ", operand.shape().dimension(i)));
    dimensions.push_back((range.limit - range.start + range.stride - 1) / range.stride);
  }
  INSITU_RETURN_IF_ERROR(check_result_shape(instruction, operand.shape().element_type(), dimensions));
  Literal result(instruction.shape());
  const Dimensions strides = row_major_strides(operand.shape().dimensions());
  copy_elements(operand, result, [&](Index index) {
    int64_t linear = 0;
    for (int64_t i = 0; i < rank; ++i) linear += strides[i] * (slice[i].start + index[i] * slice[i].stride);
    return linear;
  });
  return result;
}

// Start indices of dynamic-slice/dynamic-update-slice: one integer scalar per dimension (or,
// in the old form, one integer vector), each clamped into [0, dimension - size] as XLA does.
StatusOr<Dimensions> read_start_indices(const Instruction& instruction, Operands indices,
                                        std::span<const int64_t> dimensions, std::span<const int64_t> sizes) {
  const size_t rank = dimensions.size();
  Dimensions starts;
  if (indices.size() == 1 && indices[0]->shape().is_array() && indices[0]->shape().rank() == 1 &&
      indices[0]->element_count() == static_cast<int64_t>(rank) && is_integral(indices[0]->shape().element_type())) {
    for (size_t i = 0; i < rank; ++i) starts.push_back(indices[0]->get_integer(i));
  } else {
    if (indices.size() != rank)
      return op_error(instruction, str_cat("expects ", rank, " start indices (one per operand dimension), got ",
                                           indices.size()));
    for (size_t i = 0; i < rank; ++i) {
      const Shape& shape = indices[i]->shape();
      if (!shape.is_array() || shape.rank() != 0 || !is_integral(shape.element_type()))
        return op_error(instruction, str_cat("start index ", i, " must be an integer scalar, got ",
                                             shape.to_string(false)));
      starts.push_back(indices[i]->get_integer(0));
    }
  }
  for (size_t i = 0; i < rank; ++i) starts[i] = std::clamp<int64_t>(starts[i], 0, dimensions[i] - sizes[i]);
  return starts;
}

StatusOr<Literal> evaluate_dynamic_slice(const Instruction& instruction, Operands operands) {
  if (operands.empty() || !operands[0]->shape().is_array())
    return op_error(instruction, "expects an array operand followed by start indices");
  const Literal& operand = *operands[0];
  const Dimensions& dimensions = operand.shape().dimensions();
  const Dimensions& sizes = instruction.dynamic_slice_sizes;
  if (sizes.size() != dimensions.size())
    return op_error(instruction, str_cat("dynamic_slice_sizes={", str_join(sizes, ","), "} must have one size per ",
                                         "operand dimension (operand is ", operand.shape().to_string(false), ")"));
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (sizes[i] < 0 || sizes[i] > dimensions[i])
      return op_error(instruction, str_cat("slice size ", sizes[i], " does not fit dimension ", i, " of size ",
                                           dimensions[i]));
  }
  INSITU_RETURN_IF_ERROR(check_result_shape(instruction, operand.shape().element_type(), sizes));
  INSITU_ASSIGN_OR_RETURN(Dimensions starts, read_start_indices(instruction, operands.subspan(1), dimensions, sizes));
  Literal result(instruction.shape());
  const Dimensions strides = row_major_strides(dimensions);
  copy_elements(operand, result, [&](Index index) {
    int64_t linear = 0;
    for (size_t i = 0; i < index.size(); ++i) linear += strides[i] * (starts[i] + index[i]);
    return linear;
  });
  return result;
}

StatusOr<Literal> evaluate_dynamic_update_slice(const Instruction& instruction, Operands operands) {
  if (operands.size() < 2 || !operands[0]->shape().is_array() || !operands[1]->shape().is_array())
    return op_error(instruction, "expects an array operand, an array update and start indices");
  const Literal& operand = *operands[0];
  const Literal& update = *operands[1];
  const Dimensions& dimensions = operand.shape().dimensions();
  const Dimensions& sizes = update.shape().dimensions();
  if (update.shape().element_type() != operand.shape().element_type() || sizes.size() != dimensions.size())
    return op_error(instruction, str_cat("update ", update.shape().to_string(false), " must have the type and rank of ",
                                         "the operand ", operand.shape().to_string(false)));
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (sizes[i] > dimensions[i])
      return op_error(instruction, str_cat("update dimension ", i, " of size ", sizes[i],
                                           " is larger than the operand's (", dimensions[i], ")"));
  }
  INSITU_RETURN_IF_ERROR(check_result_shape(instruction, operand.shape().element_type(), dimensions));
  INSITU_ASSIGN_OR_RETURN(Dimensions starts, read_start_indices(instruction, operands.subspan(2), dimensions, sizes));
  Literal result(instruction.shape());
  copy_bytes(result.untyped_data(), operand.untyped_data(), operand.size_bytes());
  const int64_t width = byte_width(operand.shape().element_type());
  const Dimensions strides = row_major_strides(dimensions);
  const uint8_t* from = update.untyped_data();
  for_each_index(sizes, [&](Index index) {
    int64_t linear = 0;
    for (size_t i = 0; i < index.size(); ++i) linear += strides[i] * (starts[i] + index[i]);
    std::memcpy(result.untyped_data() + linear * width, from, width);
    from += width;
  });
  return result;
}

StatusOr<Literal> evaluate_concatenate(const Instruction& instruction, Operands operands) {
  if (operands.empty()) return op_error(instruction, "expects at least one operand");
  INSITU_RETURN_IF_ERROR(check_operand_count(instruction, operands, operands.size()));
  const Shape& first = operands[0]->shape();
  if (instruction.dimensions.size() != 1)
    return op_error(instruction, "expects exactly one concatenation dimension, dimensions={d}");
  const int64_t axis = instruction.dimensions[0];
  INSITU_RETURN_IF_ERROR(check_dimension_number(instruction, axis, first.rank(), "concatenate dimension"));
  Dimensions dimensions = first.dimensions();
  dimensions[axis] = 0;
  for (size_t k = 0; k < operands.size(); ++k) {
    const Shape& shape = operands[k]->shape();
    bool matches = shape.element_type() == first.element_type() && shape.rank() == first.rank();
    for (int64_t i = 0; matches && i < first.rank(); ++i) matches = i == axis || shape.dimension(i) == first.dimension(i);
    if (!matches)
      return op_error(instruction, str_cat("operand ", k, " ", shape.to_string(false), " does not match operand 0 ",
                                           first.to_string(false), " outside dimension ", axis));
    dimensions[axis] += shape.dimension(axis);
  }
  INSITU_RETURN_IF_ERROR(check_result_shape(instruction, first.element_type(), dimensions));
  Literal result(instruction.shape());
  // Each operand fills a band of the result: `outer` rows of `inner` contiguous bytes.
  const int64_t width = byte_width(first.element_type());
  int64_t outer = 1;
  for (int64_t i = 0; i < axis; ++i) outer *= dimensions[i];
  int64_t trailing = width;
  for (int64_t i = axis + 1; i < first.rank(); ++i) trailing *= dimensions[i];
  const int64_t result_row = dimensions[axis] * trailing;
  int64_t offset = 0;
  for (const Literal* operand : operands) {
    const int64_t row = operand->shape().dimension(axis) * trailing;
    for (int64_t o = 0; o < outer; ++o)
      copy_bytes(result.untyped_data() + o * result_row + offset, operand->untyped_data() + o * row, row);
    offset += row;
  }
  return result;
}

StatusOr<Literal> evaluate_pad(const Instruction& instruction, Operands operands) {
  INSITU_RETURN_IF_ERROR(check_operand_count(instruction, operands, 2));
  const Literal& operand = *operands[0];
  const Literal& padding_value = *operands[1];
  const PrimitiveType type = operand.shape().element_type();
  if (padding_value.shape().rank() != 0 || padding_value.shape().element_type() != type)
    return op_error(instruction, str_cat("padding value ", padding_value.shape().to_string(false),
                                         " must be a scalar of the operand's type ", primitive_type_name(type)));
  const int64_t rank = operand.shape().rank();
  const std::vector<PaddingDimension>& padding = instruction.padding;
  if (static_cast<int64_t>(padding.size()) != rank)
    return op_error(instruction, str_cat("padding has ", padding.size(), " entries for an operand of rank ", rank));
  Dimensions dimensions;
  for (int64_t i = 0; i < rank; ++i) {
    const int64_t size = operand.shape().dimension(i);
    const int64_t padded = padding[i].low + padding[i].high + size + std::max<int64_t>(size - 1, 0) * padding[i].interior;
    if (padding[i].interior < 0 || padded < 0)
      return op_error(instruction, str_cat("padding ", padding[i].low, "_", padding[i].high, "_", padding[i].interior,
                                           " of dimension ", i, " (size ", size, ") gives a negative size"));
    dimensions.push_back(padded);
  }
  INSITU_RETURN_IF_ERROR(check_result_shape(instruction, type, dimensions));
  Literal result(instruction.shape());
  const int64_t width = byte_width(type);
  for (int64_t i = 0; i < result.element_count(); ++i)
    std::memcpy(result.untyped_data() + i * width, padding_value.untyped_data(), width);
  // Interior padding comes first; negative edges then crop elements of the interior-padded
  // operand, so an operand element whose target falls outside the result is dropped.
  const Dimensions strides = row_major_strides(dimensions);
  const uint8_t* from = operand.untyped_data();
  for_each_index(operand.shape().dimensions(), [&](Index index) {
    int64_t linear = 0;
    bool inside = true;
    for (int64_t i = 0; i < rank && inside; ++i) {
      const int64_t target = padding[i].low + index[i] * (padding[i].interior + 1);
      inside = target >= 0 && target < dimensions[i];
      linear += strides[i] * target;
    }
    if (inside) std::memcpy(result.untyped_data() + linear * width, from, width);
    from += width;
  });
  return result;
}

}  // namespace

StatusOr<Literal> evaluate_data_movement(const Instruction& instruction, Operands operands) {
  switch (instruction.opcode()) {
    case Opcode::kIota: return evaluate_iota(instruction, operands);
    case Opcode::kBroadcast: return evaluate_broadcast(instruction, operands);
    case Opcode::kReshape: return evaluate_reshape(instruction, operands);
    case Opcode::kBitcast: return evaluate_bitcast(instruction, operands);
    case Opcode::kTranspose: return evaluate_transpose(instruction, operands);
    case Opcode::kSlice: return evaluate_slice(instruction, operands);
    case Opcode::kDynamicSlice: return evaluate_dynamic_slice(instruction, operands);
    case Opcode::kDynamicUpdateSlice: return evaluate_dynamic_update_slice(instruction, operands);
    case Opcode::kConcatenate: return evaluate_concatenate(instruction, operands);
    case Opcode::kPad: return evaluate_pad(instruction, operands);
    case Opcode::kReverse: return evaluate_reverse(instruction, operands);
    default: break;
  }
  return internal_error(str_cat("evaluate_data_movement called for ", opcode_name(instruction.opcode())),
                        instruction.location());
}

}  // namespace insitu::eval
