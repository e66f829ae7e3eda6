// reduce and reduce-window of the reference evaluator, with the semantics of XLA's HloEvaluator.
//
// Both are variadic: operands are N arrays then N scalar init values; the result is an array,
// or a tuple of N arrays when N > 1; to_apply is called on scalars as
// (acc_0..acc_{N-1}, x_0..x_{N-1}) and returns the new accumulators.
//
//   reduce         every output element starts from the init values and folds the input
//                  elements of the reduced dimensions, walked in the input's layout order
//                  (row-major for the default layout), as XLA's evaluator walks them. Like
//                  XLA's evaluator, a single floating reduce whose to_apply is a plain scalar
//                  add sums in double and rounds once, in blocks of kSumBlock elements
//                  (sum_order.h).
//   reduce-window  every output element starts from the init values and folds the window
//                  positions in row-major order; positions that fall into padding or into a
//                  base-dilation hole are skipped (the init value is the only "padding").
#include <type_traits>

#include "insitu/evaluator/apply_util.h"
#include "insitu/evaluator/index_util.h"
#include "insitu/evaluator/ops.h"
#include "insitu/evaluator/sum_order.h"

namespace insitu::eval {
namespace {

// The N inputs and N init values of a variadic reduce or reduce-window, checked.
struct ReduceOperands {
  std::vector<const Literal*> inputs;
  std::vector<const Literal*> inits;
  std::vector<PrimitiveType> accumulator_types;  // the init values' element types
};

StatusOr<ReduceOperands> split_reduce_operands(const Instruction& instruction, Operands operands) {
  if (operands.empty() || operands.size() % 2 != 0) {
    return bad_instruction(instruction, str_cat("takes N arrays and N init values, got ", operands.size(),
                                                " operands"));
  }
  const size_t count = operands.size() / 2;
  ReduceOperands split;
  for (size_t i = 0; i < count; ++i) {
    const Literal* input = operands[i];
    const Literal* init = operands[count + i];
    if (!input->shape().is_array() || input->shape().dimensions() != operands[0]->shape().dimensions()) {
      return bad_instruction(instruction, str_cat("input ", i, " is ", input->shape().to_string(false),
                                                  "; every input must be an array of the dimensions of input 0 (",
                                                  operands[0]->shape().to_string(false), ")"));
    }
    if (!init->shape().is_array() || init->shape().rank() != 0) {
      return bad_instruction(instruction, str_cat("init value ", i, " is ", init->shape().to_string(false),
                                                  "; init values must be scalars"));
    }
    split.inputs.push_back(input);
    split.inits.push_back(init);
    split.accumulator_types.push_back(init->shape().element_type());
  }
  return split;
}

// The result leaves (one per input), checked against the expected dimensions and types.
StatusOr<std::vector<Literal*>> result_leaves(const Instruction& instruction, Literal& result,
                                              const ReduceOperands& split,
                                              const std::vector<int64_t>& dimensions) {
  const size_t count = split.inputs.size();
  std::vector<Literal*> leaves;
  if (count == 1 && result.shape().is_array()) {
    leaves.push_back(&result);
  } else if (count > 1 && result.shape().is_tuple() && result.elements().size() == count) {
    for (Literal& element : result.elements()) leaves.push_back(&element);
  } else {
    return bad_instruction(instruction, str_cat("shape ", instruction.shape().to_string(false), " does not fit ", count,
                                                " input(s): expected ", count == 1 ? "an array" : "a tuple of arrays"));
  }
  for (size_t i = 0; i < count; ++i) {
    const Shape& shape = leaves[i]->shape();
    if (!shape.is_array() || shape.dimensions() != dimensions || shape.element_type() != split.accumulator_types[i]) {
      const Shape expected = Shape::array(split.accumulator_types[i], dimensions);
      return bad_instruction(instruction, str_cat("result ", i, " is ", shape.to_string(false), " but expected ",
                                                  expected.to_string(false)));
    }
  }
  return leaves;
}

// to_apply(a, b) = add(a, b) of two distinct scalar parameters: XLA's evaluator sums these in
// double.
bool is_scalar_add(const Computation& computation) {
  const Instruction* root = computation.root();
  if (root == nullptr || root->opcode() != Opcode::kAdd || computation.parameter_count() != 2 ||
      root->operand_count() != 2) {
    return false;
  }
  const Instruction* lhs = root->operand(0);
  const Instruction* rhs = root->operand(1);
  return lhs != rhs && lhs->opcode() == Opcode::kParameter && rhs->opcode() == Opcode::kParameter &&
         lhs->shape().is_array() && lhs->shape().rank() == 0 && rhs->shape().is_array() && rhs->shape().rank() == 0;
}

void store_double(Literal& array, int64_t linear, double value) {
  dispatch_element_type(array.shape().element_type(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (kIsNarrowFloat<T>) {
      array.data<T>()[linear] = T::from_double(value);  // one rounding
    } else if constexpr (kIsSmallFloat<T>) {
      array.data<T>()[linear] = T::from_float(static_cast<float>(value));
    } else if constexpr (std::is_floating_point_v<T>) {
      array.data<T>()[linear] = static_cast<T>(value);
    } else {
      INSITU_UNREACHABLE("store_double into " << array.shape().to_string());
    }
  });
}

// Folds elements into N accumulators through to_apply, one call per element.
class Folder {
 public:
  Folder(const Instruction& instruction, const Computation& computation, ComputationRunner& runner,
         const ReduceOperands& split)
      : instruction_(instruction), computation_(computation), runner_(runner), split_(split) {}

  void start() {
    accumulators_.clear();
    for (const Literal* init : split_.inits) accumulators_.push_back(*init);
  }

  // Folds the inputs' elements at row-major position `linear`.
  Status fold(int64_t linear) {
    const size_t count = split_.inputs.size();
    values_.clear();
    for (const Literal* input : split_.inputs) values_.push_back(scalar_at(*input, linear));
    arguments_.clear();
    for (const Literal& accumulator : accumulators_) arguments_.push_back(&accumulator);
    for (const Literal& value : values_) arguments_.push_back(&value);
    INSITU_ASSIGN_OR_RETURN(Literal result, runner_.run(computation_, arguments_));
    INSITU_ASSIGN_OR_RETURN(std::vector<const Literal*> scalars,
                            unpack_scalars(result, split_.accumulator_types, instruction_));
    std::vector<Literal> next;
    for (size_t i = 0; i < count; ++i) next.push_back(*scalars[i]);
    accumulators_ = std::move(next);
    return ok_status();
  }

  void finish(const std::vector<Literal*>& leaves, int64_t linear) const {
    for (size_t i = 0; i < leaves.size(); ++i) store_scalar(*leaves[i], linear, accumulators_[i]);
  }

 private:
  const Instruction& instruction_;
  const Computation& computation_;
  ComputationRunner& runner_;
  const ReduceOperands& split_;
  std::vector<Literal> accumulators_;
  std::vector<Literal> values_;
  std::vector<const Literal*> arguments_;
};

int64_t linear_of(std::span<const int64_t> index, const std::vector<int64_t>& strides) {
  int64_t linear = 0;
  for (size_t d = 0; d < index.size(); ++d) linear += index[d] * strides[d];
  return linear;
}

std::vector<int64_t> row_major_order(int64_t rank) {
  std::vector<int64_t> order(static_cast<size_t>(rank));
  for (int64_t i = 0; i < rank; ++i) order[i] = rank - 1 - i;
  return order;
}

}  // namespace

StatusOr<Literal> evaluate_reduce(const Instruction& instruction, Operands operands, ComputationRunner& runner) {
  INSITU_ASSIGN_OR_RETURN(const Computation* computation, find_to_apply(instruction));
  INSITU_ASSIGN_OR_RETURN(ReduceOperands split, split_reduce_operands(instruction, operands));
  const Shape& input_shape = split.inputs[0]->shape();
  const int64_t rank = input_shape.rank();
  std::vector<bool> reduced(static_cast<size_t>(rank), false);
  for (int64_t dimension : instruction.dimensions) {
    if (dimension < 0 || dimension >= rank || reduced[dimension]) {
      return bad_instruction(instruction, str_cat("dimensions={", str_join(instruction.dimensions, ","),
                                                  "} must be distinct dimensions of the rank-", rank, " input"));
    }
    reduced[dimension] = true;
  }
  std::vector<int64_t> output_dimensions;
  for (int64_t d = 0; d < rank; ++d)
    if (!reduced[d]) output_dimensions.push_back(input_shape.dimension(d));

  Literal result(instruction.shape());
  INSITU_ASSIGN_OR_RETURN(std::vector<Literal*> leaves, result_leaves(instruction, result, split, output_dimensions));

  const std::vector<int64_t> input_strides = row_major_strides(input_shape.dimensions());
  const std::vector<int64_t> input_order = iteration_minor_to_major(input_shape);
  const std::vector<int64_t> output_strides = row_major_strides(output_dimensions);
  const std::vector<bool> all_output(output_dimensions.size(), true);
  const bool sum_in_double = split.inputs.size() == 1 && is_floating(split.accumulator_types[0]) &&
                             is_floating(input_shape.element_type()) && is_scalar_add(*computation);
  Folder folder(instruction, *computation, runner, split);
  std::vector<int64_t> base(static_cast<size_t>(rank), 0);

  Status status = for_each_index_in_order(
      output_dimensions, all_output, row_major_order(static_cast<int64_t>(output_dimensions.size())),
      [&](std::span<const int64_t> output_index) -> Status {
        const int64_t output_linear = linear_of(output_index, output_strides);
        for (int64_t d = 0, kept = 0; d < rank; ++d) base[d] = reduced[d] ? 0 : output_index[kept++];
        // The reduced dimensions advance from `base`; the kept ones stay put.
        auto walk = [&](auto&& visit) {
          return for_each_index_in_order(input_shape.dimensions(), reduced, input_order,
                                         [&](std::span<const int64_t> offset) -> Status {
                                           int64_t linear = 0;
                                           for (int64_t d = 0; d < rank; ++d)
                                             linear += (reduced[d] ? offset[d] : base[d]) * input_strides[d];
                                           return visit(linear);
                                         });
        };
        if (sum_in_double) {
          // block 0 from init into `sum`, each later block from -0.0 into `block` (sum_order.h)
          double sum = split.inits[0]->get_double(0), block = -0.0;
          int64_t count = 0;
          INSITU_RETURN_IF_ERROR(walk([&](int64_t linear) {
            if (count >= kSumBlock && count % kSumBlock == 0) {
              if (count > kSumBlock) sum += block;
              block = -0.0;
            }
            (count++ < kSumBlock ? sum : block) += split.inputs[0]->get_double(linear);
            return ok_status();
          }));
          if (count > kSumBlock) sum += block;
          store_double(*leaves[0], output_linear, sum);
          return ok_status();
        }
        folder.start();
        INSITU_RETURN_IF_ERROR(walk([&](int64_t linear) { return folder.fold(linear); }));
        folder.finish(leaves, output_linear);
        return ok_status();
      });
  if (!status.ok()) return status;
  return result;
}

StatusOr<Literal> evaluate_reduce_window(const Instruction& instruction, Operands operands,
                                         ComputationRunner& runner) {
  INSITU_ASSIGN_OR_RETURN(const Computation* computation, find_to_apply(instruction));
  INSITU_ASSIGN_OR_RETURN(ReduceOperands split, split_reduce_operands(instruction, operands));
  const Shape& input_shape = split.inputs[0]->shape();
  const int64_t rank = input_shape.rank();
  const std::vector<WindowDimension>& window = instruction.window;
  if (static_cast<int64_t>(window.size()) != rank) {
    return bad_instruction(instruction, str_cat("window has ", window.size(), " dimensions but the input has rank ",
                                                rank, ": give one window dimension per input dimension"));
  }
  std::vector<int64_t> window_sizes;
  std::vector<int64_t> output_dimensions;
  for (int64_t d = 0; d < rank; ++d) {
    const WindowDimension& w = window[d];
    if (w.size <= 0 || w.stride <= 0 || w.base_dilation <= 0 || w.window_dilation <= 0) {
      return bad_instruction(instruction, str_cat("window dimension ", d,
                                                  " needs a positive size, stride and dilations"));
    }
    const int64_t extent = input_shape.dimension(d);
    const int64_t dilated_base = extent == 0 ? 0 : (extent - 1) * w.base_dilation + 1;
    const int64_t padded = dilated_base + w.padding_low + w.padding_high;
    const int64_t dilated_window = (w.size - 1) * w.window_dilation + 1;
    output_dimensions.push_back(padded < dilated_window ? 0 : (padded - dilated_window) / w.stride + 1);
    window_sizes.push_back(w.size);
  }

  Literal result(instruction.shape());
  INSITU_ASSIGN_OR_RETURN(std::vector<Literal*> leaves, result_leaves(instruction, result, split, output_dimensions));

  const std::vector<int64_t> input_strides = row_major_strides(input_shape.dimensions());
  const std::vector<int64_t> output_strides = row_major_strides(output_dimensions);
  const std::vector<bool> all(static_cast<size_t>(rank), true);
  const std::vector<int64_t> order = row_major_order(rank);
  Folder folder(instruction, *computation, runner, split);

  Status status =
      for_each_index_in_order(output_dimensions, all, order, [&](std::span<const int64_t> output_index) -> Status {
        folder.start();
        INSITU_RETURN_IF_ERROR(
            for_each_index_in_order(window_sizes, all, order, [&](std::span<const int64_t> window_index) -> Status {
              int64_t linear = 0;
              for (int64_t d = 0; d < rank; ++d) {
                const WindowDimension& w = window[d];
                // Position in the dilated, padded input; real elements sit at multiples of the
                // base dilation, the rest is padding or holes.
                int64_t position = output_index[d] * w.stride + window_index[d] * w.window_dilation - w.padding_low;
                if (position % w.base_dilation != 0) return ok_status();
                position /= w.base_dilation;
                if (position < 0 || position >= input_shape.dimension(d)) return ok_status();
                linear += position * input_strides[d];
              }
              return folder.fold(linear);
            }));
        folder.finish(leaves, linear_of(output_index, output_strides));
        return ok_status();
      });
  if (!status.ok()) return status;
  return result;
}

// select-and-scatter (XLA's semantics): the result starts as init_value everywhere; for each
// window of the operand (one per source element; padding positions skipped), `select` picks one
// element by folding over the window in row-major order (keep the current pick while
// select(pick, next) is true), and source's element is combined into the result at the pick
// with `scatter`. A window with no real element drops its source value.
StatusOr<Literal> evaluate_select_and_scatter(const Instruction& instruction, Operands operands,
                                              ComputationRunner& runner) {
  if (operands.size() != 3 || instruction.called_computations().size() != 2)
    return bad_instruction(instruction, "select-and-scatter takes (operand, source, init_value), select= and scatter=");
  const Literal& operand = *operands[0];
  const Literal& source = *operands[1];
  const Literal& init = *operands[2];
  const Computation& select = *instruction.called_computations()[0];
  const Computation& scatter = *instruction.called_computations()[1];
  const Shape& shape = operand.shape();
  const int64_t rank = shape.rank();
  const std::vector<WindowDimension>& window = instruction.window;
  if (!shape.is_array() || !source.shape().is_array() || init.shape().rank() != 0 ||
      init.shape().element_type() != source.shape().element_type())
    return bad_instruction(instruction, "select-and-scatter needs array operand and source and a scalar init_value of "
                                        "the source's type");
  if (static_cast<int64_t>(window.size()) != rank)
    return bad_instruction(instruction, str_cat("window has ", window.size(), " dimensions but the operand has rank ",
                                                rank));
  std::vector<int64_t> window_sizes, source_dimensions;
  for (int64_t d = 0; d < rank; ++d) {
    const WindowDimension& w = window[d];
    if (w.size <= 0 || w.stride <= 0 || w.base_dilation != 1 || w.window_dilation != 1)
      return bad_instruction(instruction, str_cat("window dimension ", d, " needs a positive size and stride and no "
                                                  "dilation (XLA allows none here)"));
    const int64_t padded = shape.dimension(d) + w.padding_low + w.padding_high;
    source_dimensions.push_back(padded < w.size ? 0 : (padded - w.size) / w.stride + 1);
    window_sizes.push_back(w.size);
  }
  if (source.shape().dimensions() != source_dimensions)
    return bad_instruction(instruction, str_cat("source ", source.shape().to_string(false), " must have one element "
                                                "per window: [", str_join(source_dimensions, ","), "]"));
  if (!instruction.shape().is_array() || instruction.shape().dimensions() != shape.dimensions() ||
      instruction.shape().element_type() != source.shape().element_type())
    return bad_instruction(instruction, "the result has the operand's dimensions and the source's element type");

  Literal result(instruction.shape());
  for (int64_t i = 0; i < result.element_count(); ++i) store_scalar(result, i, init);
  const std::vector<int64_t> strides = row_major_strides(shape.dimensions());
  const std::vector<int64_t> source_strides = row_major_strides(source_dimensions);
  const std::vector<bool> all(static_cast<size_t>(rank), true);
  const std::vector<int64_t> order = row_major_order(rank);
  Status status = for_each_index_in_order(source_dimensions, all, order, [&](std::span<const int64_t> source_index) -> Status {
           int64_t picked = -1;
           Literal picked_value;
           INSITU_RETURN_IF_ERROR(
               for_each_index_in_order(window_sizes, all, order, [&](std::span<const int64_t> window_index) -> Status {
                 int64_t linear = 0;
                 for (int64_t d = 0; d < rank; ++d) {
                   const int64_t position = source_index[d] * window[d].stride + window_index[d] - window[d].padding_low;
                   if (position < 0 || position >= shape.dimension(d)) return ok_status();  // padding
                   linear += position * strides[d];
                 }
                 Literal candidate = scalar_at(operand, linear);
                 if (picked >= 0) {
                   const Literal* arguments[] = {&picked_value, &candidate};
                   INSITU_ASSIGN_OR_RETURN(Literal keep, runner.run(select, arguments));
                   if (!keep.shape().is_array() || keep.shape().element_type() != PrimitiveType::kPred)
                     return bad_instruction(instruction, "select must return pred[]");
                   if (keep.data<bool>()[0]) return ok_status();
                 }
                 picked = linear;
                 picked_value = std::move(candidate);
                 return ok_status();
               }));
           if (picked < 0) return ok_status();
           const Literal current = scalar_at(result, picked);
           const Literal value = scalar_at(source, linear_of(source_index, source_strides));
           const Literal* arguments[] = {&current, &value};
           INSITU_ASSIGN_OR_RETURN(Literal combined, runner.run(scatter, arguments));
           store_scalar(result, picked, combined);
           return ok_status();
         });
  if (!status.ok()) return status;
  return result;
}

}  // namespace insitu::eval
