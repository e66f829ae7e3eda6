// convolution in the reference evaluator: dim_labels and the group counts read and checked,
// the result shape inferred and compared, then convolution.h's loop.
#include "insitu/evaluator/convolution.h"

#include <charconv>

#include "insitu/evaluator/apply_util.h"
#include "insitu/evaluator/index_util.h"
#include "insitu/evaluator/ops.h"

namespace insitu::eval {
namespace {

Status conv_error(const Instruction& instruction, std::string_view message) {
  return bad_instruction(instruction, message);
}

// One part of dim_labels ("b01f"): where the two named dimensions and each spatial one sit.
struct Labels {
  int64_t first = -1, second = -1;
  std::vector<int64_t> spatial;
};

std::optional<Labels> parse_labels(std::string_view text, char first, char second, int64_t rank) {
  if (static_cast<int64_t>(text.size()) != rank) return std::nullopt;
  Labels labels;
  labels.spatial.assign(static_cast<size_t>(rank - 2), -1);
  for (int64_t d = 0; d < rank; ++d) {
    const char c = text[d];
    int64_t* slot = c == first ? &labels.first : c == second ? &labels.second : nullptr;
    if (c >= '0' && c <= '9' && c - '0' < rank - 2) slot = &labels.spatial[c - '0'];
    if (slot == nullptr || *slot != -1) return std::nullopt;
    *slot = d;
  }
  return labels;
}

StatusOr<int64_t> own_count(const Instruction& instruction, std::string_view key) {
  const RawAttribute* attribute = find_own_attribute(instruction, key);
  if (attribute == nullptr) return int64_t{1};
  int64_t value = 0;
  const std::string& text = attribute->value;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() || value < 1)
    return conv_error(instruction, str_cat(key, "=", text, " must be a positive integer"));
  return value;
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
  INSITU_ASSIGN_OR_RETURN(const int64_t feature_groups, own_count(instruction, "feature_group_count"));
  INSITU_ASSIGN_OR_RETURN(const int64_t batch_groups, own_count(instruction, "batch_group_count"));
  const RawAttribute* labels_attribute = find_own_attribute(instruction, "dim_labels");
  const int64_t rank = lhs.rank();
  const std::string labels_text = labels_attribute == nullptr ? "" : labels_attribute->value;
  const size_t underscore = labels_text.find('_'), arrow = labels_text.find("->");
  std::optional<Labels> in, kernel, out;
  if (underscore != std::string::npos && arrow != std::string::npos && underscore < arrow) {
    in = parse_labels(std::string_view(labels_text).substr(0, underscore), 'b', 'f', rank);
    kernel = parse_labels(std::string_view(labels_text).substr(underscore + 1, arrow - underscore - 1), 'i', 'o', rank);
    out = parse_labels(std::string_view(labels_text).substr(arrow + 2), 'b', 'f', rank);
  }
  if (!in || !kernel || !out)
    return conv_error(instruction, str_cat("dim_labels=", labels_attribute == nullptr ? "(missing)" : labels_text,
                                           ": expected dim_labels=LHS_RHS->OUT for rank ", rank,
                                           " (b, f and spatial digits; i, o and spatial digits; b, f and digits)"));
  const size_t spatial = static_cast<size_t>(rank - 2);
  if (instruction.window.size() != spatial)
    return conv_error(instruction, str_cat("window= has ", instruction.window.size(), " dimensions; the operands have ",
                                           spatial, " spatial dimensions"));
  ConvolutionPlan plan;
  plan.lhs_batch = in->first;
  plan.lhs_feature = in->second;
  plan.lhs_spatial = in->spatial;
  plan.rhs_input = kernel->first;
  plan.rhs_output = kernel->second;
  plan.rhs_spatial = kernel->spatial;
  plan.out_batch = out->first;
  plan.out_feature = out->second;
  plan.out_spatial = out->spatial;
  plan.window = instruction.window;
  plan.lhs_strides = row_major(lhs);
  plan.rhs_strides = row_major(rhs);
  const int64_t batch = lhs.dimension(plan.lhs_batch), features = lhs.dimension(plan.lhs_feature);
  const int64_t kernel_input = rhs.dimension(plan.rhs_input), kernel_output = rhs.dimension(plan.rhs_output);
  if (feature_groups > 1 && batch_groups > 1)
    return conv_error(instruction, "feature_group_count and batch_group_count cannot both be above 1");
  if (features % feature_groups != 0 || kernel_input * feature_groups != features ||
      kernel_output % feature_groups != 0 || kernel_output % batch_groups != 0 || batch % batch_groups != 0)
    return conv_error(instruction,
                      str_cat("lhs ", lhs.to_string(false), " and kernel ", rhs.to_string(false),
                              " do not fit feature_group_count=", feature_groups, " and batch_group_count=",
                              batch_groups, ": input features must be the kernel's input features times the feature "
                              "groups, and the kernel's output features and the batch divide by the group counts"));
  std::vector<int64_t> dimensions(static_cast<size_t>(rank));
  dimensions[plan.out_batch] = batch / batch_groups;
  dimensions[plan.out_feature] = kernel_output;
  for (size_t s = 0; s < spatial; ++s) {
    const WindowDimension& window = plan.window[s];
    const int64_t size = rhs.dimension(plan.rhs_spatial[s]);
    if (window.size != size || window.stride < 1 || window.base_dilation < 1 || window.window_dilation < 1)
      return conv_error(instruction, str_cat("window dimension ", s, " must have the kernel's size ", size,
                                             " and strides and dilations >= 1"));
    const int64_t input = lhs.dimension(plan.lhs_spatial[s]);
    plan.lhs_sizes.push_back(input);
    plan.window_positions *= size;
    // In __int128 so that a hostile padding or dilation cannot overflow.
    const __int128 dilated_input = input == 0 ? 0 : (static_cast<__int128>(input) - 1) * window.base_dilation + 1;
    const __int128 padded = dilated_input + window.padding_low + window.padding_high;
    const __int128 dilated_window = (static_cast<__int128>(size) - 1) * window.window_dilation + 1;
    const __int128 extent = padded < dilated_window ? 0 : (padded - dilated_window) / window.stride + 1;
    if (padded < 0 || extent > (__int128{1} << 40))
      return conv_error(instruction, str_cat("window dimension ", s, " gives an output size out of range"));
    dimensions[plan.out_spatial[s]] = static_cast<int64_t>(extent);
  }
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
