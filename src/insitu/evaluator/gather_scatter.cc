// gather and scatter of the reference evaluator, with the semantics of XLA's HloEvaluator.
//
//   gather   each output element reads operand[start + offset]: `start` comes from the index
//            vector at the output's batch position (start_index_map) plus, for batching
//            dimensions, the batch position itself; it is clamped so that the whole slice
//            (slice_sizes) stays inside the operand, as XLA clamps.
//   scatter  variadic (N operands, indices, N updates). The result starts as the operands; the
//            update windows are applied in the updates' layout order (row-major by default),
//            scatter position outermost, each element through to_apply(current_0..current_{N-1},
//            update_0..update_{N-1}), so later updates see earlier results and duplicate indices
//            combine deterministically. A window that would not fit inside the operand is
//            dropped whole, not clamped.
//
// Index vectors: index_vector_dim names the dimension of the indices that holds them; when it
// equals the indices' rank, each index is a vector of length 1 (an implicit trailing dimension).
#include <algorithm>

#include "insitu/evaluator/apply_util.h"
#include "insitu/evaluator/index_util.h"
#include "insitu/evaluator/ops.h"

namespace insitu::eval {
namespace {

int64_t linear_of(std::span<const int64_t> index, const std::vector<int64_t>& strides) {
  int64_t linear = 0;
  for (size_t d = 0; d < index.size(); ++d) linear += index[d] * strides[d];
  return linear;
}

void copy_element(const Literal& from, int64_t from_linear, Literal& to, int64_t to_linear) {
  const int64_t width = byte_width(from.shape().element_type());
  std::memcpy(to.untyped_data() + to_linear * width, from.untyped_data() + from_linear * width,
              static_cast<size_t>(width));
}

// Reads index vectors out of gather/scatter indices. The dimensions of the indices other than
// index_vector_dim are the "batch" dimensions, in order.
class IndexVectorReader {
 public:
  IndexVectorReader(const Literal& indices, int64_t index_vector_dim)
      : indices_(indices),
        index_vector_dim_(index_vector_dim),
        strides_(row_major_strides(indices.shape().dimensions())),
        position_(static_cast<size_t>(indices.shape().rank()), 0) {
    for (int64_t d = 0; d < indices.shape().rank(); ++d)
      if (d != index_vector_dim) batch_dimensions_.push_back(d);
  }

  const std::vector<int64_t>& batch_dimensions() const { return batch_dimensions_; }
  int64_t vector_size() const {
    return index_vector_dim_ == indices_.shape().rank() ? 1 : indices_.shape().dimension(index_vector_dim_);
  }
  // Positions the reader at batch coordinates `batch` (one per batch dimension).
  void seek(std::span<const int64_t> batch) {
    for (size_t j = 0; j < batch_dimensions_.size(); ++j) position_[batch_dimensions_[j]] = batch[j];
  }
  // The coordinate of the current position along indices dimension `dimension`.
  int64_t coordinate(int64_t dimension) const { return position_[dimension]; }
  // Element k of the index vector at the current position.
  int64_t component(int64_t k) {
    if (index_vector_dim_ < indices_.shape().rank()) position_[index_vector_dim_] = k;
    return indices_.get_integer(linear_of(position_, strides_));
  }

 private:
  const Literal& indices_;
  int64_t index_vector_dim_;
  std::vector<int64_t> strides_;
  std::vector<int64_t> position_;
  std::vector<int64_t> batch_dimensions_;
};

Status check_indices(const Instruction& instruction, const Literal& indices, int64_t index_vector_dim) {
  if (!indices.shape().is_array() || !is_integral(indices.shape().element_type())) {
    return bad_instruction(instruction, str_cat("indices are ", indices.shape().to_string(false),
                                                "; they must be an integer array"));
  }
  if (index_vector_dim < 0 || index_vector_dim > indices.shape().rank()) {
    return bad_instruction(instruction, str_cat("index_vector_dim=", index_vector_dim, " is outside [0, ",
                                                indices.shape().rank(), "] for indices of rank ",
                                                indices.shape().rank()));
  }
  return ok_status();
}

// Indices batching dimensions must be batch dimensions of the indices (not index_vector_dim).
bool valid_indices_batching(const std::vector<int64_t>& dims, const Literal& indices, int64_t index_vector_dim) {
  return distinct_in_range(dims, indices.shape().rank()) && !contains(dims, index_vector_dim);
}

}  // namespace

StatusOr<Literal> evaluate_gather(const Instruction& instruction, Operands operands) {
  if (operands.size() != 2) return bad_instruction(instruction, "takes an operand and start indices");
  const Literal& operand = *operands[0];
  const Literal& indices = *operands[1];
  const GatherDimensionNumbers& numbers = instruction.gather_dimension_numbers;
  const std::vector<int64_t>& slice_sizes = instruction.dynamic_slice_sizes;
  if (!operand.shape().is_array()) return bad_instruction(instruction, "the operand must be an array");
  INSITU_RETURN_IF_ERROR(check_indices(instruction, indices, numbers.index_vector_dim));
  const int64_t operand_rank = operand.shape().rank();
  IndexVectorReader reader(indices, numbers.index_vector_dim);

  if (static_cast<int64_t>(slice_sizes.size()) != operand_rank) {
    return bad_instruction(instruction, str_cat("slice_sizes has ", slice_sizes.size(),
                                                " entries for an operand of rank ", operand_rank));
  }
  for (int64_t d = 0; d < operand_rank; ++d) {
    if (slice_sizes[d] < 0 || slice_sizes[d] > operand.shape().dimension(d)) {
      return bad_instruction(instruction, str_cat("slice_sizes[", d, "]=", slice_sizes[d], " does not fit operand ",
                                                  operand.shape().to_string(false)));
    }
  }
  if (!distinct_in_range(numbers.start_index_map, operand_rank) ||
      static_cast<int64_t>(numbers.start_index_map.size()) != reader.vector_size()) {
    return bad_instruction(instruction, str_cat("start_index_map={", str_join(numbers.start_index_map, ","),
                                                "} must name ", reader.vector_size(),
                                                " distinct operand dimensions (the index vector's length)"));
  }
  if (!distinct_in_range(numbers.collapsed_slice_dims, operand_rank) ||
      !distinct_in_range(numbers.operand_batching_dims, operand_rank) ||
      !valid_indices_batching(numbers.start_indices_batching_dims, indices, numbers.index_vector_dim) ||
      numbers.start_indices_batching_dims.size() != numbers.operand_batching_dims.size()) {
    return bad_instruction(instruction, "collapsed_slice_dims, operand_batching_dims and "
                                        "start_indices_batching_dims must be distinct dimensions in range, "
                                        "with one start_indices batching dimension per operand batching dimension");
  }
  // Operand dimensions that appear in the output, in increasing order.
  std::vector<int64_t> offset_operand_dimensions;
  for (int64_t d = 0; d < operand_rank; ++d) {
    const bool dropped = contains(numbers.collapsed_slice_dims, d) || contains(numbers.operand_batching_dims, d);
    if (dropped && slice_sizes[d] != 1) {
      return bad_instruction(instruction, str_cat("operand dimension ", d,
                                                  " is collapsed or batching, so its slice size must be 1"));
    }
    if (!dropped) offset_operand_dimensions.push_back(d);
  }
  const Shape& shape = instruction.shape();
  const int64_t batch_count = static_cast<int64_t>(reader.batch_dimensions().size());
  const int64_t output_rank = batch_count + static_cast<int64_t>(offset_operand_dimensions.size());
  if (!shape.is_array() || shape.rank() != output_rank || shape.element_type() != operand.shape().element_type() ||
      numbers.offset_dims.size() != offset_operand_dimensions.size() ||
      !distinct_in_range(numbers.offset_dims, output_rank) ||
      !std::is_sorted(numbers.offset_dims.begin(), numbers.offset_dims.end())) {
    return bad_instruction(instruction, str_cat("shape ", shape.to_string(false), " and offset_dims={",
                                                str_join(numbers.offset_dims, ","),
                                                "} do not match the operand, indices and slice sizes"));
  }
  // Output dimensions that are not offset dimensions index the indices' batch dimensions.
  std::vector<int64_t> output_batch_dimensions;
  for (int64_t d = 0, batch = 0, offset = 0; d < output_rank; ++d) {
    const bool is_offset = contains(numbers.offset_dims, d);
    const int64_t expected = is_offset ? slice_sizes[offset_operand_dimensions[offset++]]
                                       : indices.shape().dimension(reader.batch_dimensions()[batch++]);
    if (!is_offset) output_batch_dimensions.push_back(d);
    if (shape.dimension(d) != expected) {
      return bad_instruction(instruction, str_cat("output dimension ", d, " is ", shape.dimension(d),
                                                  " but the gather produces ", expected));
    }
  }

  Literal result(shape);
  const std::vector<int64_t> operand_strides = row_major_strides(operand.shape().dimensions());
  std::vector<int64_t> batch(static_cast<size_t>(batch_count));
  std::vector<int64_t> start(static_cast<size_t>(operand_rank));
  int64_t output_linear = 0;
  for_each_index(shape.dimensions(), [&](std::span<const int64_t> output_index) {
    for (int64_t j = 0; j < batch_count; ++j) batch[j] = output_index[output_batch_dimensions[j]];
    reader.seek(batch);
    std::fill(start.begin(), start.end(), 0);
    for (size_t k = 0; k < numbers.start_index_map.size(); ++k)
      start[numbers.start_index_map[k]] = reader.component(static_cast<int64_t>(k));
    for (size_t i = 0; i < numbers.operand_batching_dims.size(); ++i)
      start[numbers.operand_batching_dims[i]] = reader.coordinate(numbers.start_indices_batching_dims[i]);
    int64_t operand_linear = 0;
    for (int64_t d = 0; d < operand_rank; ++d) {
      // XLA clamps the start so that the whole slice is in bounds.
      const int64_t clamped = std::clamp<int64_t>(start[d], 0, operand.shape().dimension(d) - slice_sizes[d]);
      operand_linear += clamped * operand_strides[d];
    }
    for (size_t k = 0; k < offset_operand_dimensions.size(); ++k)
      operand_linear += output_index[numbers.offset_dims[k]] * operand_strides[offset_operand_dimensions[k]];
    copy_element(operand, operand_linear, result, output_linear++);
  });
  return result;
}

StatusOr<Literal> evaluate_scatter(const Instruction& instruction, Operands operands, ComputationRunner& runner) {
  INSITU_ASSIGN_OR_RETURN(const Computation* computation, find_to_apply(instruction));
  if (operands.size() < 3 || operands.size() % 2 != 1) {
    return bad_instruction(instruction, str_cat("takes N operands, indices and N updates, got ", operands.size(),
                                                " operands"));
  }
  const size_t count = operands.size() / 2;
  const Literal& indices = *operands[count];
  const ScatterDimensionNumbers& numbers = instruction.scatter_dimension_numbers;
  std::vector<PrimitiveType> types;
  for (size_t i = 0; i < count; ++i) {
    const Shape& operand = operands[i]->shape();
    const Shape& update = operands[count + 1 + i]->shape();
    if (!operand.is_array() || !update.is_array() || operand.dimensions() != operands[0]->shape().dimensions() ||
        update.dimensions() != operands[count + 1]->shape().dimensions() ||
        update.element_type() != operand.element_type()) {
      return bad_instruction(instruction, str_cat("operand ", i, " (", operand.to_string(false), ") and update ", i,
                                                  " (", update.to_string(false),
                                                  ") must be arrays of one element type, with the dimensions of "
                                                  "operand 0 and update 0"));
    }
    types.push_back(operand.element_type());
  }
  INSITU_RETURN_IF_ERROR(check_indices(instruction, indices, numbers.index_vector_dim));
  const Shape& operand_shape = operands[0]->shape();
  const Shape& updates_shape = operands[count + 1]->shape();
  const int64_t operand_rank = operand_shape.rank();
  const int64_t update_rank = updates_shape.rank();
  IndexVectorReader reader(indices, numbers.index_vector_dim);

  if (!distinct_in_range(numbers.scatter_dims_to_operand_dims, operand_rank) ||
      static_cast<int64_t>(numbers.scatter_dims_to_operand_dims.size()) != reader.vector_size()) {
    return bad_instruction(instruction, str_cat("scatter_dims_to_operand_dims={",
                                                str_join(numbers.scatter_dims_to_operand_dims, ","), "} must name ",
                                                reader.vector_size(),
                                                " distinct operand dimensions (the index vector's length)"));
  }
  if (!distinct_in_range(numbers.update_window_dims, update_rank) ||
      !std::is_sorted(numbers.update_window_dims.begin(), numbers.update_window_dims.end()) ||
      !distinct_in_range(numbers.inserted_window_dims, operand_rank) ||
      !distinct_in_range(numbers.input_batching_dims, operand_rank) ||
      !valid_indices_batching(numbers.scatter_indices_batching_dims, indices, numbers.index_vector_dim) ||
      numbers.scatter_indices_batching_dims.size() != numbers.input_batching_dims.size()) {
    return bad_instruction(instruction, "update_window_dims, inserted_window_dims, input_batching_dims and "
                                        "scatter_indices_batching_dims must be distinct dimensions in range, "
                                        "with one indices batching dimension per input batching dimension");
  }
  // Operand dimensions covered by the update window, in increasing order; they pair up with
  // update_window_dims.
  std::vector<int64_t> window_operand_dimensions;
  for (int64_t d = 0; d < operand_rank; ++d)
    if (!contains(numbers.inserted_window_dims, d) && !contains(numbers.input_batching_dims, d))
      window_operand_dimensions.push_back(d);
  if (window_operand_dimensions.size() != numbers.update_window_dims.size()) {
    return bad_instruction(instruction, str_cat("update_window_dims has ", numbers.update_window_dims.size(),
                                                " dimensions but the operand leaves ",
                                                window_operand_dimensions.size(), " window dimensions"));
  }
  std::vector<int64_t> window_extent(static_cast<size_t>(operand_rank), 1);
  for (size_t k = 0; k < window_operand_dimensions.size(); ++k) {
    const int64_t extent = updates_shape.dimension(numbers.update_window_dims[k]);
    if (extent > operand_shape.dimension(window_operand_dimensions[k])) {
      return bad_instruction(instruction, str_cat("update window dimension ", numbers.update_window_dims[k],
                                                  " is larger than operand dimension ",
                                                  window_operand_dimensions[k]));
    }
    window_extent[window_operand_dimensions[k]] = extent;
  }
  std::vector<bool> is_window(static_cast<size_t>(update_rank), false);
  std::vector<bool> is_scatter(static_cast<size_t>(update_rank), true);
  for (int64_t d : numbers.update_window_dims) is_window[d] = true, is_scatter[d] = false;
  std::vector<int64_t> update_scatter_dimensions;
  for (int64_t d = 0; d < update_rank; ++d)
    if (is_scatter[d]) update_scatter_dimensions.push_back(d);
  if (update_scatter_dimensions.size() != reader.batch_dimensions().size()) {
    return bad_instruction(instruction, str_cat("updates have ", update_scatter_dimensions.size(),
                                                " scatter dimensions but the indices have ",
                                                reader.batch_dimensions().size(), " batch dimensions"));
  }
  for (size_t j = 0; j < update_scatter_dimensions.size(); ++j) {
    if (updates_shape.dimension(update_scatter_dimensions[j]) !=
        indices.shape().dimension(reader.batch_dimensions()[j])) {
      return bad_instruction(instruction, str_cat("update dimension ", update_scatter_dimensions[j],
                                                  " does not match indices dimension ",
                                                  reader.batch_dimensions()[j]));
    }
  }

  // The result starts as the operands.
  Literal result(instruction.shape());
  INSITU_ASSIGN_OR_RETURN(std::vector<Literal*> leaves, variadic_result_leaves(instruction, result, operands, count));
  for (size_t i = 0; i < count; ++i) {
    const size_t bytes = static_cast<size_t>(operands[i]->size_bytes());
    if (bytes > 0) std::memcpy(leaves[i]->untyped_data(), operands[i]->untyped_data(), bytes);
  }

  const std::vector<int64_t> operand_strides = row_major_strides(operand_shape.dimensions());
  const std::vector<int64_t> update_strides = row_major_strides(updates_shape.dimensions());
  const std::vector<int64_t> order = iteration_minor_to_major(updates_shape);
  std::vector<int64_t> batch(update_scatter_dimensions.size());
  std::vector<int64_t> start(static_cast<size_t>(operand_rank));
  std::vector<Literal> arguments_storage;
  std::vector<const Literal*> arguments;

  Status status = for_each_index_in_order(
      updates_shape.dimensions(), is_scatter, order, [&](std::span<const int64_t> scatter_index) -> Status {
        for (size_t j = 0; j < batch.size(); ++j) batch[j] = scatter_index[update_scatter_dimensions[j]];
        reader.seek(batch);
        std::fill(start.begin(), start.end(), 0);
        for (size_t k = 0; k < numbers.scatter_dims_to_operand_dims.size(); ++k)
          start[numbers.scatter_dims_to_operand_dims[k]] = reader.component(static_cast<int64_t>(k));
        for (size_t i = 0; i < numbers.input_batching_dims.size(); ++i)
          start[numbers.input_batching_dims[i]] = reader.coordinate(numbers.scatter_indices_batching_dims[i]);
        // XLA drops a window that does not fit whole.
        for (int64_t d = 0; d < operand_rank; ++d)
          if (start[d] < 0 || start[d] > operand_shape.dimension(d) - window_extent[d]) return ok_status();
        return for_each_index_in_order(
            updates_shape.dimensions(), is_window, order, [&](std::span<const int64_t> window_index) -> Status {
              int64_t update_linear = 0;
              for (int64_t d = 0; d < update_rank; ++d)
                update_linear += (scatter_index[d] + window_index[d]) * update_strides[d];
              int64_t operand_linear = 0;
              for (int64_t d = 0; d < operand_rank; ++d) operand_linear += start[d] * operand_strides[d];
              for (size_t k = 0; k < window_operand_dimensions.size(); ++k) {
                operand_linear +=
                    window_index[numbers.update_window_dims[k]] * operand_strides[window_operand_dimensions[k]];
              }
              arguments_storage.clear();
              for (size_t i = 0; i < count; ++i) arguments_storage.push_back(scalar_at(*leaves[i], operand_linear));
              for (size_t i = 0; i < count; ++i)
                arguments_storage.push_back(scalar_at(*operands[count + 1 + i], update_linear));
              arguments.clear();
              for (const Literal& argument : arguments_storage) arguments.push_back(&argument);
              INSITU_ASSIGN_OR_RETURN(Literal combined, runner.run(*computation, arguments));
              INSITU_ASSIGN_OR_RETURN(std::vector<const Literal*> scalars,
                                      unpack_scalars(combined, types, instruction));
              for (size_t i = 0; i < count; ++i) store_scalar(*leaves[i], operand_linear, *scalars[i]);
              return ok_status();
            });
      });
  if (!status.ok()) return status;
  return result;
}

}  // namespace insitu::eval
