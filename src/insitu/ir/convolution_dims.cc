// convolution_dims (convolution_dims.h).
#include "insitu/ir/convolution_dims.h"

#include <charconv>
#include <optional>
#include <string_view>

#include "insitu/support/str.h"

namespace insitu {
namespace {

std::optional<ConvolutionLabels> parse_labels(std::string_view text, char first, char second, int64_t rank) {
  if (static_cast<int64_t>(text.size()) != rank) return std::nullopt;
  ConvolutionLabels labels;
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

const RawAttribute* find(const Instruction& instruction, std::string_view key) {
  for (const RawAttribute& attribute : instruction.extra_attributes)
    if (attribute.key == key) return &attribute;
  return nullptr;
}

StatusOr<int64_t> group_count(const Instruction& instruction, std::string_view key) {
  const RawAttribute* attribute = find(instruction, key);
  if (attribute == nullptr) return int64_t{1};
  int64_t value = 0;
  const std::string& text = attribute->value;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() || value < 1)
    return invalid_argument(str_cat(key, "=", text, " must be a positive integer"));
  return value;
}

}  // namespace

StatusOr<ConvolutionDims> convolution_dims(const Instruction& instruction, const Shape& lhs, const Shape& rhs) {
  if (!lhs.is_array() || !rhs.is_array() || lhs.rank() != rhs.rank() || lhs.rank() < 2)
    return invalid_argument(str_cat("takes two arrays of one rank (>= 2), not ", lhs.to_string(false), " and ",
                                    rhs.to_string(false)));
  ConvolutionDims dims;
  INSITU_ASSIGN_OR_RETURN(dims.feature_groups, group_count(instruction, "feature_group_count"));
  INSITU_ASSIGN_OR_RETURN(dims.batch_groups, group_count(instruction, "batch_group_count"));
  const RawAttribute* labels_attribute = find(instruction, "dim_labels");
  const int64_t rank = lhs.rank();
  const std::string labels_text = labels_attribute == nullptr ? "" : labels_attribute->value;
  const size_t underscore = labels_text.find('_'), arrow = labels_text.find("->");
  std::optional<ConvolutionLabels> in, kernel, out;
  if (underscore != std::string::npos && arrow != std::string::npos && underscore < arrow) {
    in = parse_labels(std::string_view(labels_text).substr(0, underscore), 'b', 'f', rank);
    kernel = parse_labels(std::string_view(labels_text).substr(underscore + 1, arrow - underscore - 1), 'i', 'o', rank);
    out = parse_labels(std::string_view(labels_text).substr(arrow + 2), 'b', 'f', rank);
  }
  if (!in || !kernel || !out)
    return invalid_argument(str_cat("dim_labels=", labels_attribute == nullptr ? "(missing)" : labels_text,
                                    ": expected dim_labels=LHS_RHS->OUT for rank ", rank,
                                    " (b, f and spatial digits; i, o and spatial digits; b, f and digits)"));
  dims.lhs = *in;
  dims.kernel = *kernel;
  dims.out = *out;
  const size_t spatial = static_cast<size_t>(rank - 2);
  if (instruction.window.size() != spatial)
    return invalid_argument(str_cat("window= has ", instruction.window.size(), " dimensions; the operands have ",
                                    spatial, " spatial dimensions"));
  const int64_t feature_groups = dims.feature_groups, batch_groups = dims.batch_groups;
  const int64_t batch = lhs.dimension(in->first), features = lhs.dimension(in->second);
  const int64_t kernel_input = rhs.dimension(kernel->first), kernel_output = rhs.dimension(kernel->second);
  if (feature_groups > 1 && batch_groups > 1)
    return invalid_argument("feature_group_count and batch_group_count cannot both be above 1");
  if (features % feature_groups != 0 || kernel_input * feature_groups != features ||
      kernel_output % feature_groups != 0 || kernel_output % batch_groups != 0 || batch % batch_groups != 0)
    return invalid_argument(str_cat("lhs ", lhs.to_string(false), " and kernel ", rhs.to_string(false),
                                    " do not fit feature_group_count=", feature_groups, " and batch_group_count=",
                                    batch_groups, ": input features must be the kernel's input features times the "
                                    "feature groups, and the kernel's output features and the batch divide by the "
                                    "group counts"));
  dims.dimensions.assign(static_cast<size_t>(rank), 0);
  dims.dimensions[out->first] = batch / batch_groups;
  dims.dimensions[out->second] = kernel_output;
  for (size_t s = 0; s < spatial; ++s) {
    const WindowDimension& window = instruction.window[s];
    const int64_t size = rhs.dimension(kernel->spatial[s]);
    if (window.size != size || window.stride < 1 || window.base_dilation < 1 || window.window_dilation < 1)
      return invalid_argument(str_cat("window dimension ", s, " must have the kernel's size ", size,
                                      " and strides and dilations >= 1"));
    const int64_t input = lhs.dimension(in->spatial[s]);
    // In __int128 so that a hostile padding or dilation cannot overflow.
    const __int128 dilated_input = input == 0 ? 0 : (static_cast<__int128>(input) - 1) * window.base_dilation + 1;
    const __int128 padded = dilated_input + window.padding_low + window.padding_high;
    const __int128 dilated_window = (static_cast<__int128>(size) - 1) * window.window_dilation + 1;
    const __int128 extent = padded < dilated_window ? 0 : (padded - dilated_window) / window.stride + 1;
    if (padded < 0 || extent > (__int128{1} << 40))
      return invalid_argument(str_cat("window dimension ", s, " gives an output size out of range"));
    dims.dimensions[out->spatial[s]] = static_cast<int64_t>(extent);
  }
  return dims;
}

}  // namespace insitu
