// convolution in the reference evaluator: dim_labels and the group counts read and checked,
// the result shape inferred and compared, then convolution.h's loop.
#include "insitu/evaluator/convolution.h"

#include <charconv>

#include "insitu/evaluator/apply_util.h"
#include "insitu/evaluator/index_util.h"
#include "insitu/evaluator/ops.h"
#include "insitu/ir/convolution_dims.h"

namespace insitu::eval {
namespace {

Status conv_error(const Instruction& instruction, std::string_view message) {
  return bad_instruction(instruction, message);
}

std::vector<int64_t> row_major(const Shape& shape) {
  std::vector<int64_t> strides(static_cast<size_t>(shape.rank()), 1);
  for (int64_t d = shape.rank() - 2; d >= 0; --d) strides[d] = strides[d + 1] * shape.dimension(d + 1);
  return strides;
}

}  // namespace

StatusOr<ConvolutionPlan> plan_convolution(const Instruction& instruction, const Shape& lhs, const Shape& rhs) {
  if (const RawAttribute* kind = find_own_attribute(instruction, "conv_kind"))
    return conv_error(instruction, str_cat("conv_kind=", kind->value, " is a backend's rewrite that insitu does not "
                                           "run; give the plain convolution"));
  if (const RawAttribute* sparsity = find_own_attribute(instruction, "sparsity_config"))
    return conv_error(instruction, str_cat("sparsity_config=", sparsity->value,
                                           ": sparse convolutions are not supported yet"));
  const PrimitiveType type = instruction.shape().is_array() ? instruction.shape().element_type() : PrimitiveType::kTuple;
  if (!lhs.is_array() || !rhs.is_array() || !instruction.shape().is_array() || lhs.rank() != rhs.rank() ||
      lhs.rank() < 2)
    return conv_error(instruction, str_cat("takes two arrays of one rank (>= 2), not ", lhs.to_string(false), " and ",
                                           rhs.to_string(false)));
  if (type == PrimitiveType::kPred || is_complex(type) || is_complex(lhs.element_type()) ||
      is_complex(rhs.element_type()))
    return unimplemented(str_cat("convolution %", instruction.name(), ": insitu convolves real numbers, not ",
                                 primitive_type_name(type)),
                         instruction.location());
  StatusOr<ConvolutionDims> read = convolution_dims(instruction, lhs, rhs);
  if (!read.ok()) return conv_error(instruction, read.status().message());
  const ConvolutionDims& dims = *read;
  const std::vector<int64_t>& dimensions = dims.dimensions;
  ConvolutionPlan plan;
  plan.lhs_batch = dims.lhs.first;
  plan.lhs_feature = dims.lhs.second;
  plan.lhs_spatial = dims.lhs.spatial;
  plan.rhs_input = dims.kernel.first;
  plan.rhs_output = dims.kernel.second;
  plan.rhs_spatial = dims.kernel.spatial;
  plan.out_batch = dims.out.first;
  plan.out_feature = dims.out.second;
  plan.out_spatial = dims.out.spatial;
  plan.window = instruction.window;
  plan.lhs_strides = row_major(lhs);
  plan.rhs_strides = row_major(rhs);
  for (size_t s = 0; s < plan.window.size(); ++s) {
    plan.lhs_sizes.push_back(lhs.dimension(plan.lhs_spatial[s]));
    plan.window_positions *= plan.window[s].size;
  }
  const int64_t batch = lhs.dimension(plan.lhs_batch), features = lhs.dimension(plan.lhs_feature);
  const int64_t kernel_output = rhs.dimension(plan.rhs_output);
  const int64_t feature_groups = dims.feature_groups, batch_groups = dims.batch_groups;
  if (instruction.shape().dimensions() != dimensions)
    return conv_error(instruction, str_cat("result ", instruction.shape().to_string(false), " must have dimensions [",
                                           str_join(dimensions, ","), "]"));
  plan.out_dimensions = dimensions;
  plan.input_feature_group_size = features / feature_groups;
  plan.output_feature_group_size = kernel_output / feature_groups;
  plan.batch_group_size = batch / batch_groups;
  plan.batch_group_features = kernel_output / batch_groups;
  return plan;
}

StatusOr<Literal> evaluate_convolution(const Instruction& instruction, Operands operands) {
  if (operands.size() != 2) return conv_error(instruction, "takes two operands (lhs, kernel)");
  INSITU_ASSIGN_OR_RETURN(ConvolutionPlan plan, plan_convolution(instruction, operands[0]->shape(), operands[1]->shape()));
  const PrimitiveType type = instruction.shape().element_type();
  OperandsAs as;
  convert_operands(operands, type, as);
  Literal result(instruction.shape());
  dispatch_element_type(type, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (!std::is_same_v<T, bool> && !kIsComplex<T>)
      convolve<T>(plan, reinterpret_cast<const T*>(as.inputs[0]->untyped_data()),
                  reinterpret_cast<const T*>(as.inputs[1]->untyped_data()), reinterpret_cast<T*>(result.untyped_data()), 0,
                  result.element_count());
  });
  return result;
}

}  // namespace insitu::eval
