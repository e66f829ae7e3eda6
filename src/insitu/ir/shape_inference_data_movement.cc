// Shape inference for ops that move elements without computing on them: broadcast, reshape,
// transpose, slice, dynamic-slice, dynamic-update-slice, concatenate, pad, reverse.
#include <algorithm>

#include "insitu/ir/shape_inference_internal.h"

namespace insitu::shape_inference_internal {
namespace {

// `dims` are distinct dimension numbers in [0, rank).
Status check_dimension_list(const Instruction& instruction, const std::vector<int64_t>& dims,
                            int64_t rank, std::string_view what, const Shape& of) {
  std::vector<bool> seen(static_cast<size_t>(std::max<int64_t>(rank, 0)), false);
  for (int64_t d : dims) {
    if (d < 0 || d >= rank)
      return error_at(instruction, str_cat(what, "=", dims_text(dims), ": dimension ", d, " is out of range for ", text(of)));
    if (seen[d]) return error_at(instruction, str_cat(what, "=", dims_text(dims), " repeats dimension ", d));
    seen[d] = true;
  }
  return ok_status();
}

StatusOr<Shape> infer_broadcast(const Instruction& instruction) {
  INSITU_RETURN_IF_ERROR(check_operand_count(instruction, 1));
  INSITU_RETURN_IF_ERROR(check_array_operand(instruction, 0));
  const Shape& operand = instruction.operand(0)->shape();
  const Shape& output = instruction.shape();
  if (!output.is_array()) return error_at(instruction, str_cat("broadcast needs an array result, got ", text(output)));
  const auto& dims = instruction.dimensions;
  if (static_cast<int64_t>(dims.size()) != operand.rank()) {
    return error_at(instruction, str_cat("broadcast dimensions=", dims_text(dims), " has ", dims.size(),
                                         " entries but the operand ", text(operand), " has rank ", operand.rank(),
                                         "; write one output dimension per operand dimension"));
  }
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] < 0 || dims[i] >= output.rank())
      return error_at(instruction, str_cat("broadcast dimensions=", dims_text(dims), ": ", dims[i], " is out of range for ", text(output)));
    // Any order (operand dimension i goes to output dimension dims[i]: XLA's HLO allows an
    // unsorted list, a transpose and broadcast in one), but each output dimension once.
    for (size_t j = 0; j < i; ++j)
      if (dims[j] == dims[i])
        return error_at(instruction, str_cat("broadcast dimensions=", dims_text(dims), " names output dimension ",
                                             dims[i], " twice"));
    // Equal sizes, or a size-1 operand dimension stretched to the output's (StableHLO's
    // broadcast_in_dim rule, which XLA's shape inference and XLA:CPU follow; XLA's own tests
    // write it in HLO): its one element repeats along that output dimension.
    int64_t from = operand.dimension(static_cast<int64_t>(i)), to = output.dimension(dims[i]);
    if (from != to && from != 1) {
      return error_at(instruction, str_cat("broadcast operand dimension ", i, " (size ", from, ") maps to output dimension ",
                                           dims[i], " (size ", to, "); sizes must be equal or the operand's 1"));
    }
  }
  return with_element_type(output, operand.element_type());
}

StatusOr<Shape> infer_reshape(const Instruction& instruction) {
  INSITU_RETURN_IF_ERROR(check_operand_count(instruction, 1));
  INSITU_RETURN_IF_ERROR(check_array_operand(instruction, 0));
  const Shape& operand = instruction.operand(0)->shape();
  const Shape& output = instruction.shape();
  if (!output.is_array() || output.element_count() != operand.element_count()) {
    return error_at(instruction, str_cat("reshape from ", text(operand), " (", operand.element_count(), " elements) to ",
                                         text(output), " (", output.element_count(), " elements) changes the element count"));
  }
  return with_element_type(output, operand.element_type());
}

StatusOr<Shape> infer_transpose(const Instruction& instruction) {
  INSITU_RETURN_IF_ERROR(check_operand_count(instruction, 1));
  INSITU_RETURN_IF_ERROR(check_array_operand(instruction, 0));
  const Shape& operand = instruction.operand(0)->shape();
  const auto& dims = instruction.dimensions;
  if (static_cast<int64_t>(dims.size()) != operand.rank())
    return error_at(instruction, str_cat("transpose dimensions=", dims_text(dims), " is not a permutation of the ", operand.rank(),
                                         " dimensions of ", text(operand)));
  INSITU_RETURN_IF_ERROR(check_dimension_list(instruction, dims, operand.rank(), "transpose dimensions", operand));
  std::vector<int64_t> out;
  for (int64_t d : dims) out.push_back(operand.dimension(d));
  return Shape::array(operand.element_type(), out);
}

StatusOr<Shape> infer_slice(const Instruction& instruction) {
  INSITU_RETURN_IF_ERROR(check_operand_count(instruction, 1));
  INSITU_RETURN_IF_ERROR(check_array_operand(instruction, 0));
  const Shape& operand = instruction.operand(0)->shape();
  if (static_cast<int64_t>(instruction.slice.size()) != operand.rank())
    return error_at(instruction, str_cat("slice has ", instruction.slice.size(), " ranges but the operand ", text(operand),
                                         " has rank ", operand.rank()));
  std::vector<int64_t> out;
  for (int64_t i = 0; i < operand.rank(); ++i) {
    const SliceDimension& s = instruction.slice[i];
    if (s.start < 0 || s.limit < s.start || s.limit > operand.dimension(i) || s.stride <= 0) {
      return error_at(instruction, str_cat("slice dimension ", i, " [", s.start, ":", s.limit, ":", s.stride,
                                           "] is invalid for size ", operand.dimension(i),
                                           "; need 0 <= start <= limit <= size and stride > 0"));
    }
    out.push_back((s.limit - s.start + s.stride - 1) / s.stride);
  }
  return Shape::array(operand.element_type(), out);
}

// Operands [first, first + rank) are scalar integer start indices of one type.
Status check_start_indices(const Instruction& instruction, int64_t first, int64_t rank) {
  if (instruction.operand_count() != first + rank) {
    return invalid_argument(str_cat(opcode_name(instruction.opcode()), " needs ", first + rank, " operands (",
                                    rank, " scalar start indices for rank ", rank, "), %", instruction.name(),
                                    " has ", instruction.operand_count()),
                            instruction.location());
  }
  for (int64_t i = first; i < first + rank; ++i) {
    const Shape& index = instruction.operand(i)->shape();
    if (!index.is_array() || index.rank() != 0 || !is_integral(index.element_type())) {
      return error_at(instruction, str_cat(opcode_name(instruction.opcode()), " start index ", i - first, " (%",
                                           instruction.operand(i)->name(), ") must be an integer scalar, got ", text(index)));
    }
    if (index.element_type() != instruction.operand(first)->shape().element_type())
      return error_at(instruction, str_cat(opcode_name(instruction.opcode()), " start indices must have one element type"));
  }
  return ok_status();
}

StatusOr<Shape> infer_dynamic_slice(const Instruction& instruction) {
  INSITU_RETURN_IF_ERROR(check_min_operand_count(instruction, 1));
  INSITU_RETURN_IF_ERROR(check_array_operand(instruction, 0));
  const Shape& operand = instruction.operand(0)->shape();
  INSITU_RETURN_IF_ERROR(check_start_indices(instruction, 1, operand.rank()));
  const auto& sizes = instruction.dynamic_slice_sizes;
  if (static_cast<int64_t>(sizes.size()) != operand.rank())
    return error_at(instruction, str_cat("dynamic_slice_sizes=", dims_text(sizes), " needs one size per dimension of ", text(operand)));
  for (int64_t i = 0; i < operand.rank(); ++i) {
    if (sizes[i] < 0 || sizes[i] > operand.dimension(i))
      return error_at(instruction, str_cat("dynamic_slice_sizes=", dims_text(sizes), ": size ", sizes[i],
                                           " of dimension ", i, " exceeds ", text(operand)));
  }
  return Shape::array(operand.element_type(), sizes);
}

StatusOr<Shape> infer_dynamic_update_slice(const Instruction& instruction) {
  INSITU_RETURN_IF_ERROR(check_min_operand_count(instruction, 2));
  INSITU_RETURN_IF_ERROR(check_array_operand(instruction, 0));
  INSITU_RETURN_IF_ERROR(check_array_operand(instruction, 1));
  const Shape& operand = instruction.operand(0)->shape();
  const Shape& update = instruction.operand(1)->shape();
  INSITU_RETURN_IF_ERROR(check_start_indices(instruction, 2, operand.rank()));
  if (update.element_type() != operand.element_type() || update.rank() != operand.rank())
    return error_at(instruction, str_cat("dynamic-update-slice update ", text(update), " must have the rank and element type of the operand ",
                                         text(operand)));
  for (int64_t i = 0; i < operand.rank(); ++i) {
    if (update.dimension(i) > operand.dimension(i))
      return error_at(instruction, str_cat("dynamic-update-slice update ", text(update), " is larger than the operand ",
                                           text(operand), " in dimension ", i));
  }
  return operand;
}

StatusOr<Shape> infer_concatenate(const Instruction& instruction) {
  INSITU_RETURN_IF_ERROR(check_min_operand_count(instruction, 1));
  for (int64_t i = 0; i < instruction.operand_count(); ++i) INSITU_RETURN_IF_ERROR(check_array_operand(instruction, i));
  const Shape& first = instruction.operand(0)->shape();
  if (instruction.dimensions.size() != 1)
    return error_at(instruction, "concatenate needs exactly one dimension: dimensions={d}");
  int64_t dim = instruction.dimensions[0];
  if (dim < 0 || dim >= first.rank())
    return error_at(instruction, str_cat("concatenate dimension ", dim, " is out of range for ", text(first)));
  std::vector<int64_t> out = first.dimensions();
  for (int64_t i = 1; i < instruction.operand_count(); ++i) {
    const Shape& shape = instruction.operand(i)->shape();
    bool same = shape.element_type() == first.element_type() && shape.rank() == first.rank();
    for (int64_t d = 0; same && d < first.rank(); ++d)
      if (d != dim && shape.dimension(d) != first.dimension(d)) same = false;
    if (!same)
      return error_at(instruction, str_cat("concatenate operands ", text(first), " and ", text(shape),
                                           " must match in element type and every dimension except ", dim));
    out[dim] += shape.dimension(dim);
  }
  return Shape::array(first.element_type(), out);
}

StatusOr<Shape> infer_pad(const Instruction& instruction) {
  INSITU_RETURN_IF_ERROR(check_operand_count(instruction, 2));
  INSITU_RETURN_IF_ERROR(check_array_operand(instruction, 0));
  INSITU_RETURN_IF_ERROR(check_array_operand(instruction, 1));
  const Shape& operand = instruction.operand(0)->shape();
  const Shape& value = instruction.operand(1)->shape();
  if (value.rank() != 0 || value.element_type() != operand.element_type())
    return error_at(instruction, str_cat("pad value ", text(value), " must be a scalar of the operand's element type ",
                                         type_text(operand.element_type())));
  if (static_cast<int64_t>(instruction.padding.size()) != operand.rank())
    return error_at(instruction, str_cat("padding has ", instruction.padding.size(), " dimensions but the operand ",
                                         text(operand), " has rank ", operand.rank()));
  std::vector<int64_t> out;
  for (int64_t i = 0; i < operand.rank(); ++i) {
    const PaddingDimension& p = instruction.padding[i];
    int64_t size = operand.dimension(i);
    if (p.interior < 0) return error_at(instruction, str_cat("pad interior padding ", p.interior, " of dimension ", i, " is negative"));
    // In XLA's order: size, then low, then high, then the interior padding.
    const std::optional<int64_t> sum =
        checked_sum_of_products({{size, 1}, {p.low, 1}, {p.high, 1}, {std::max<int64_t>(size - 1, 0), p.interior}});
    if (!sum)
      return error_at(instruction, str_cat("pad dimension ", i, ": size ", size, " with padding ", p.low, "_", p.high,
                                           "_", p.interior, " overflows 64 bits"));
    const int64_t padded = *sum;
    if (padded < 0)
      return error_at(instruction, str_cat("pad dimension ", i, " would have negative size ", padded));
    out.push_back(padded);
  }
  return Shape::array(operand.element_type(), out);
}

StatusOr<Shape> infer_reverse(const Instruction& instruction) {
  INSITU_RETURN_IF_ERROR(check_operand_count(instruction, 1));
  INSITU_RETURN_IF_ERROR(check_array_operand(instruction, 0));
  const Shape& operand = instruction.operand(0)->shape();
  INSITU_RETURN_IF_ERROR(check_dimension_list(instruction, instruction.dimensions, operand.rank(), "reverse dimensions", operand));
  return operand;
}

}  // namespace

StatusOr<Shape> infer_data_movement_shape(const Instruction& instruction) {
  switch (instruction.opcode()) {
    case Opcode::kBroadcast: return infer_broadcast(instruction);
    case Opcode::kReshape: return infer_reshape(instruction);
    case Opcode::kTranspose: return infer_transpose(instruction);
    case Opcode::kSlice: return infer_slice(instruction);
    case Opcode::kDynamicSlice: return infer_dynamic_slice(instruction);
    case Opcode::kDynamicUpdateSlice: return infer_dynamic_update_slice(instruction);
    case Opcode::kConcatenate: return infer_concatenate(instruction);
    case Opcode::kPad: return infer_pad(instruction);
    case Opcode::kReverse: return infer_reverse(instruction);
    default: INSITU_UNREACHABLE("not a data-movement opcode: " << opcode_name(instruction.opcode()));
  }
  return instruction.shape();
}

}  // namespace insitu::shape_inference_internal
