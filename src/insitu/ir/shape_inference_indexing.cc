// Shape inference for ops driven by dimension numbers: dot (general), gather and scatter,
// following XLA's InferDotOpShape / InferGatherShape / InferScatterShape.
#include <algorithm>

#include "insitu/ir/convolution_dims.h"
#include "insitu/ir/shape_inference_internal.h"

namespace insitu::shape_inference_internal {
namespace {

bool contains(const std::vector<int64_t>& list, int64_t value) {
  return std::find(list.begin(), list.end(), value) != list.end();
}

// Distinct, in [0, rank), and (if sorted) strictly increasing.
Status check_dims(const Instruction& instruction, const std::vector<int64_t>& dims, int64_t rank,
                  std::string_view what, bool sorted) {
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] < 0 || dims[i] >= rank)
      return error_at(instruction, str_cat(what, "=", dims_text(dims), ": ", dims[i], " is out of range [0, ", rank, ")"));
    for (size_t j = 0; j < i; ++j)
      if (dims[j] == dims[i]) return error_at(instruction, str_cat(what, "=", dims_text(dims), " repeats ", dims[i]));
    if (sorted && i > 0 && dims[i] < dims[i - 1])
      return error_at(instruction, str_cat(what, "=", dims_text(dims), " must be sorted"));
  }
  return ok_status();
}

// The dot's result type may widen (s8 x s8 -> s32, bf16 -> f32) but not change kind.
bool dot_result_type_ok(PrimitiveType operand, PrimitiveType result) {
  if (is_floating(operand)) return is_floating(result);
  if (is_complex(operand)) return is_complex(result);
  if (is_integral(operand)) return is_integral(result);
  return operand == result || is_integral(result);  // pred
}

// The element type of a dot or convolution of `lhs` and `rhs`: the operands' kind (a float if
// either is one, else the wider), widened to the written result's type when that keeps the kind.
PrimitiveType contraction_result_type(const Instruction& instruction, const Shape& lhs, const Shape& rhs) {
  PrimitiveType result_type = lhs.element_type();
  if (lhs.element_type() != rhs.element_type()) {
    const PrimitiveType l = lhs.element_type(), r = rhs.element_type();
    if (is_floating(l) != is_floating(r)) result_type = is_floating(l) ? l : r;
    else result_type = bit_width(r) > bit_width(l) ? r : l;
  }
  const PrimitiveType written = instruction.shape().element_type();
  if (is_array_type(written) && dot_result_type_ok(result_type, written)) result_type = written;
  return result_type;
}

}  // namespace

StatusOr<Shape> infer_dot_shape(const Instruction& instruction) {
  INSITU_RETURN_IF_ERROR(check_operand_count(instruction, 2));
  INSITU_RETURN_IF_ERROR(check_array_operand(instruction, 0));
  INSITU_RETURN_IF_ERROR(check_array_operand(instruction, 1));
  const Shape& lhs = instruction.operand(0)->shape();
  const Shape& rhs = instruction.operand(1)->shape();
  const DotDimensionNumbers& numbers = instruction.dot_dimension_numbers;
  // Operands of different real types are each converted to the result's type (XLA allows any
  // pair: s4 or s8 weights times bf16 activations, s8 x s16); complex mixes only with complex.
  if (lhs.element_type() != rhs.element_type() && is_complex(lhs.element_type()) != is_complex(rhs.element_type()))
    return error_at(instruction, str_cat("dot operands ", text(lhs), " and ", text(rhs),
                                         " mix complex and real element types; convert one of them"));
  INSITU_RETURN_IF_ERROR(check_dims(instruction, numbers.lhs_batch_dimensions, lhs.rank(), "lhs_batch_dims", false));
  INSITU_RETURN_IF_ERROR(check_dims(instruction, numbers.rhs_batch_dimensions, rhs.rank(), "rhs_batch_dims", false));
  INSITU_RETURN_IF_ERROR(check_dims(instruction, numbers.lhs_contracting_dimensions, lhs.rank(), "lhs_contracting_dims", false));
  INSITU_RETURN_IF_ERROR(check_dims(instruction, numbers.rhs_contracting_dimensions, rhs.rank(), "rhs_contracting_dims", false));
  for (int64_t d : numbers.lhs_batch_dimensions)
    if (contains(numbers.lhs_contracting_dimensions, d))
      return error_at(instruction, str_cat("dot lhs dimension ", d, " is both a batch and a contracting dimension"));
  for (int64_t d : numbers.rhs_batch_dimensions)
    if (contains(numbers.rhs_contracting_dimensions, d))
      return error_at(instruction, str_cat("dot rhs dimension ", d, " is both a batch and a contracting dimension"));
  if (numbers.lhs_batch_dimensions.size() != numbers.rhs_batch_dimensions.size())
    return error_at(instruction, "dot needs as many lhs_batch_dims as rhs_batch_dims");
  if (numbers.lhs_contracting_dimensions.size() != numbers.rhs_contracting_dimensions.size())
    return error_at(instruction, "dot needs as many lhs_contracting_dims as rhs_contracting_dims");
  for (size_t i = 0; i < numbers.lhs_batch_dimensions.size(); ++i) {
    int64_t l = lhs.dimension(numbers.lhs_batch_dimensions[i]), r = rhs.dimension(numbers.rhs_batch_dimensions[i]);
    if (l != r) return error_at(instruction, str_cat("dot batch dimension sizes differ: lhs ", l, " vs rhs ", r, " (", text(lhs), " x ", text(rhs), ")"));
  }
  for (size_t i = 0; i < numbers.lhs_contracting_dimensions.size(); ++i) {
    int64_t l = lhs.dimension(numbers.lhs_contracting_dimensions[i]);
    int64_t r = rhs.dimension(numbers.rhs_contracting_dimensions[i]);
    if (l != r)
      return error_at(instruction, str_cat("dot contracting dimension sizes differ: lhs ", l, " vs rhs ", r, " (", text(lhs), " x ", text(rhs), ")"));
  }
  // Result: batch dims, then lhs free dims, then rhs free dims, each in operand order.
  std::vector<int64_t> out;
  for (int64_t d : numbers.lhs_batch_dimensions) out.push_back(lhs.dimension(d));
  for (int64_t d = 0; d < lhs.rank(); ++d)
    if (!contains(numbers.lhs_batch_dimensions, d) && !contains(numbers.lhs_contracting_dimensions, d)) out.push_back(lhs.dimension(d));
  for (int64_t d = 0; d < rhs.rank(); ++d)
    if (!contains(numbers.rhs_batch_dimensions, d) && !contains(numbers.rhs_contracting_dimensions, d)) out.push_back(rhs.dimension(d));
  return Shape::array(contraction_result_type(instruction, lhs, rhs), out);
}

// A convolution's dimensions (convolution_dims.h); its element type is the operands' (as a
// dot's: the written type may widen it, s8 x s8 -> s32). A written shape is kept when the
// dimension numbers cannot be read here: the evaluator reports them, located, when it runs.
StatusOr<Shape> infer_convolution_shape(const Instruction& instruction) {
  // A sparse convolution (its kernel a tuple of values and indices) keeps its written shape: the
  // evaluator refuses it, located, when it runs.
  for (const RawAttribute& attribute : instruction.extra_attributes)
    if (attribute.key == "sparsity_config" && instruction.shape().is_array()) return instruction.shape();
  INSITU_RETURN_IF_ERROR(check_operand_count(instruction, 2));
  INSITU_RETURN_IF_ERROR(check_array_operand(instruction, 0));
  INSITU_RETURN_IF_ERROR(check_array_operand(instruction, 1));
  const Shape& lhs = instruction.operand(0)->shape();
  const Shape& rhs = instruction.operand(1)->shape();
  const bool written = instruction.shape().is_array();
  StatusOr<ConvolutionDims> dims = convolution_dims(instruction, lhs, rhs);
  if (!dims.ok()) {
    if (written) return instruction.shape();
    return error_at(instruction, std::string(dims.status().message()));
  }
  return Shape::array(contraction_result_type(instruction, lhs, rhs), dims->dimensions);
}

StatusOr<Shape> infer_gather_shape(const Instruction& instruction) {
  INSITU_RETURN_IF_ERROR(check_operand_count(instruction, 2));
  INSITU_RETURN_IF_ERROR(check_array_operand(instruction, 0));
  INSITU_RETURN_IF_ERROR(check_array_operand(instruction, 1));
  const Shape& operand = instruction.operand(0)->shape();
  const Shape& indices = instruction.operand(1)->shape();
  const GatherDimensionNumbers& numbers = instruction.gather_dimension_numbers;
  const std::vector<int64_t>& slice_sizes = instruction.dynamic_slice_sizes;
  if (!is_integral(indices.element_type()))
    return error_at(instruction, str_cat("gather indices must be integers, got ", text(indices)));
  if (numbers.index_vector_dim < 0 || numbers.index_vector_dim > indices.rank())
    return error_at(instruction, str_cat("gather index_vector_dim=", numbers.index_vector_dim, " is out of range for indices ", text(indices)));
  // index_vector_dim == rank means a trailing implicit dimension of size 1.
  std::vector<int64_t> expanded = indices.dimensions();
  if (numbers.index_vector_dim == indices.rank()) expanded.push_back(1);
  INSITU_RETURN_IF_ERROR(check_dims(instruction, numbers.collapsed_slice_dims, operand.rank(), "collapsed_slice_dims", true));
  INSITU_RETURN_IF_ERROR(check_dims(instruction, numbers.operand_batching_dims, operand.rank(), "operand_batching_dims", true));
  INSITU_RETURN_IF_ERROR(check_dims(instruction, numbers.start_index_map, operand.rank(), "start_index_map", false));
  INSITU_RETURN_IF_ERROR(check_dims(instruction, numbers.start_indices_batching_dims, static_cast<int64_t>(expanded.size()),
                                    "start_indices_batching_dims", false));
  if (static_cast<int64_t>(numbers.start_index_map.size()) != expanded[numbers.index_vector_dim])
    return error_at(instruction, str_cat("gather start_index_map has ", numbers.start_index_map.size(),
                                         " entries but the index vector has ", expanded[numbers.index_vector_dim]));
  if (static_cast<int64_t>(slice_sizes.size()) != operand.rank())
    return error_at(instruction, str_cat("gather slice_sizes=", dims_text(slice_sizes), " needs one size per dimension of ", text(operand)));
  for (int64_t i = 0; i < operand.rank(); ++i)
    if (slice_sizes[i] < 0 || slice_sizes[i] > operand.dimension(i))
      return error_at(instruction, str_cat("gather slice_sizes[", i, "]=", slice_sizes[i], " is out of range for ", text(operand)));
  for (int64_t d : numbers.collapsed_slice_dims)
    if (slice_sizes[d] > 1) return error_at(instruction, str_cat("gather collapses dimension ", d, " whose slice size ", slice_sizes[d], " is not 1"));
  for (int64_t d : numbers.operand_batching_dims)
    if (slice_sizes[d] > 1) return error_at(instruction, str_cat("gather batching dimension ", d, " has slice size ", slice_sizes[d], ", not 1"));
  if (numbers.operand_batching_dims.size() != numbers.start_indices_batching_dims.size())
    return error_at(instruction, "gather needs as many operand_batching_dims as start_indices_batching_dims");
  for (int64_t d : numbers.start_indices_batching_dims)
    if (d == numbers.index_vector_dim) return error_at(instruction, "gather start_indices_batching_dims contains index_vector_dim");
  int64_t window_dims = operand.rank() - static_cast<int64_t>(numbers.collapsed_slice_dims.size()) -
                        static_cast<int64_t>(numbers.operand_batching_dims.size());
  if (static_cast<int64_t>(numbers.offset_dims.size()) != window_dims)
    return error_at(instruction, str_cat("gather has ", numbers.offset_dims.size(), " offset_dims but ", window_dims,
                                         " uncollapsed slice dimensions"));
  int64_t output_rank = static_cast<int64_t>(numbers.offset_dims.size() + expanded.size()) - 1;
  INSITU_RETURN_IF_ERROR(check_dims(instruction, numbers.offset_dims, output_rank, "offset_dims", true));
  std::vector<int64_t> window_sizes;
  for (int64_t d = 0; d < operand.rank(); ++d)
    if (!contains(numbers.collapsed_slice_dims, d) && !contains(numbers.operand_batching_dims, d)) window_sizes.push_back(slice_sizes[d]);
  std::vector<int64_t> batch_sizes;
  for (int64_t d = 0; d < static_cast<int64_t>(expanded.size()); ++d)
    if (d != numbers.index_vector_dim) batch_sizes.push_back(expanded[d]);
  std::vector<int64_t> out;
  size_t next_window = 0, next_batch = 0;
  for (int64_t i = 0; i < output_rank; ++i)
    out.push_back(contains(numbers.offset_dims, i) ? window_sizes[next_window++] : batch_sizes[next_batch++]);
  return Shape::array(operand.element_type(), out);
}

StatusOr<Shape> infer_scatter_shape(const Instruction& instruction) {
  // scatter(operand_1..N, indices, update_1..N), to_apply: (2N scalars) -> N scalars.
  int64_t count = instruction.operand_count();
  if (count < 3 || count % 2 == 0)
    return invalid_argument(str_cat("scatter needs N operands, the indices and N updates (an odd count >= 3), %", instruction.name(),
                                    " has ", count),
                            instruction.location());
  for (int64_t i = 0; i < count; ++i) INSITU_RETURN_IF_ERROR(check_array_operand(instruction, i));
  int64_t n = (count - 1) / 2;
  const Shape& operand = instruction.operand(0)->shape();
  const Shape& indices = instruction.operand(n)->shape();
  const ScatterDimensionNumbers& numbers = instruction.scatter_dimension_numbers;
  if (!is_integral(indices.element_type()))
    return error_at(instruction, str_cat("scatter indices must be integers, got ", text(indices)));
  for (int64_t i = 0; i < n; ++i) {
    const Shape& other = instruction.operand(i)->shape();
    const Shape& update = instruction.operand(n + 1 + i)->shape();
    if (other.dimensions() != operand.dimensions())
      return error_at(instruction, str_cat("scatter operands ", text(operand), " and ", text(other), " must have one shape"));
    if (update.element_type() != other.element_type())
      return error_at(instruction, str_cat("scatter update ", text(update), " must have the element type of its operand ", text(other)));
    if (update.dimensions() != instruction.operand(n + 1)->shape().dimensions())
      return error_at(instruction, "scatter updates must have one shape");
  }
  const Shape& updates = instruction.operand(n + 1)->shape();
  if (numbers.index_vector_dim < 0 || numbers.index_vector_dim > indices.rank())
    return error_at(instruction, str_cat("scatter index_vector_dim=", numbers.index_vector_dim, " is out of range for indices ", text(indices)));
  std::vector<int64_t> expanded = indices.dimensions();
  if (numbers.index_vector_dim == indices.rank()) expanded.push_back(1);
  INSITU_RETURN_IF_ERROR(check_dims(instruction, numbers.update_window_dims, updates.rank(), "update_window_dims", true));
  INSITU_RETURN_IF_ERROR(check_dims(instruction, numbers.inserted_window_dims, operand.rank(), "inserted_window_dims", true));
  INSITU_RETURN_IF_ERROR(check_dims(instruction, numbers.input_batching_dims, operand.rank(), "input_batching_dims", true));
  INSITU_RETURN_IF_ERROR(check_dims(instruction, numbers.scatter_dims_to_operand_dims, operand.rank(), "scatter_dims_to_operand_dims", false));
  if (numbers.input_batching_dims.size() != numbers.scatter_indices_batching_dims.size())
    return error_at(instruction, "scatter needs as many input_batching_dims as scatter_indices_batching_dims");
  int64_t window_rank = static_cast<int64_t>(numbers.update_window_dims.size() + numbers.inserted_window_dims.size() +
                                             numbers.input_batching_dims.size());
  if (window_rank != operand.rank())
    return error_at(instruction, str_cat("scatter update_window_dims, inserted_window_dims and input_batching_dims cover ", window_rank,
                                         " dimensions but the operand ", text(operand), " has rank ", operand.rank()));
  if (static_cast<int64_t>(numbers.scatter_dims_to_operand_dims.size()) != expanded[numbers.index_vector_dim])
    return error_at(instruction, str_cat("scatter_dims_to_operand_dims has ", numbers.scatter_dims_to_operand_dims.size(),
                                         " entries but the index vector has ", expanded[numbers.index_vector_dim]));
  int64_t expected_update_rank = static_cast<int64_t>(numbers.update_window_dims.size() + expanded.size()) - 1;
  if (updates.rank() != expected_update_rank)
    return error_at(instruction, str_cat("scatter updates ", text(updates), " must have rank ", expected_update_rank,
                                         " (update_window_dims plus the scatter dimensions of the indices)"));
  // Window dimensions fit in the operand; scatter dimensions match the indices' batch dims.
  std::vector<int64_t> window_operand_dims;
  for (int64_t d = 0; d < operand.rank(); ++d)
    if (!contains(numbers.inserted_window_dims, d) && !contains(numbers.input_batching_dims, d)) window_operand_dims.push_back(d);
  std::vector<int64_t> scatter_sizes;
  for (int64_t d = 0; d < static_cast<int64_t>(expanded.size()); ++d)
    if (d != numbers.index_vector_dim) scatter_sizes.push_back(expanded[d]);
  size_t next_window = 0, next_scatter = 0;
  for (int64_t d = 0; d < updates.rank(); ++d) {
    if (contains(numbers.update_window_dims, d)) {
      int64_t bound = operand.dimension(window_operand_dims[next_window++]);
      if (updates.dimension(d) > bound)
        return error_at(instruction, str_cat("scatter update window dimension ", d, " (size ", updates.dimension(d),
                                             ") is larger than the operand dimension (", bound, ")"));
    } else if (updates.dimension(d) != scatter_sizes[next_scatter++]) {
      return error_at(instruction, str_cat("scatter update dimension ", d, " (size ", updates.dimension(d),
                                           ") must match the indices' scatter dimension (", scatter_sizes[next_scatter - 1], ")"));
    }
  }
  INSITU_ASSIGN_OR_RETURN(const Computation* to_apply, called_computation(instruction, 0, "to_apply"));
  std::vector<Shape> parameters, results;
  for (int64_t i = 0; i < n; ++i) parameters.push_back(Shape::scalar(instruction.operand(i)->shape().element_type()));
  for (int64_t i = 0; i < n; ++i) parameters.push_back(Shape::scalar(instruction.operand(n + 1 + i)->shape().element_type()));
  INSITU_RETURN_IF_ERROR(check_computation_parameters(instruction, *to_apply, "to_apply", parameters));
  std::vector<Shape> operands;
  for (int64_t i = 0; i < n; ++i) {
    operands.push_back(instruction.operand(i)->shape());
    results.push_back(Shape::scalar(instruction.operand(i)->shape().element_type()));
  }
  Shape expected_root = n == 1 ? results[0] : Shape::tuple(results);
  if (!to_apply->root()->shape().compatible(expected_root))
    return error_at(instruction, str_cat("to_apply computation %", to_apply->name(), " returns ", text(to_apply->root()->shape()),
                                         " but scatter needs ", text(expected_root)));
  return n == 1 ? operands[0] : Shape::tuple(operands);
}

}  // namespace insitu::shape_inference_internal
