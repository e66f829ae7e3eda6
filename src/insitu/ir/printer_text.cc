// Attribute spellings for the HLO printer; each function names the XLA routine it matches in
// printer_text.h.
#include "insitu/ir/printer_text.h"

#include <algorithm>
#include <cctype>
#include <cstdio>

#include "insitu/support/str.h"

namespace insitu {

std::string c_escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    unsigned char u = static_cast<unsigned char>(c);
    switch (c) {
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\"': out += "\\\""; break;
      case '\'': out += "\\'"; break;
      case '\\': out += "\\\\"; break;
      default:
        if (u < 0x20 || u >= 0x7f) {
          char buffer[8];
          std::snprintf(buffer, sizeof(buffer), "\\%03o", u);
          out += buffer;
        } else {
          out += c;
        }
    }
  }
  return out;
}

bool lexes_as_json_dict(std::string_view text) {
  if (text.size() < 2 || text.front() != '{') return false;
  int depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (in_string) {
      if (c == '\\') ++i;  // skip the escaped character
      else if (c == '"') in_string = false;
      continue;
    }
    if (c == '"') in_string = true;
    else if (c == '{') ++depth;
    else if (c == '}' && --depth == 0) return i + 1 == text.size();
  }
  return false;
}

std::string int_list_to_string(const std::vector<int64_t>& values) { return "{" + str_join(values, ",") + "}"; }

std::string window_to_string(const std::vector<WindowDimension>& window) {
  std::string out;
  auto add_field = [&](const char* heading, auto format) {
    out += heading;
    out += "=";
    out += str_join(window, "x", format);
  };
  auto any = [&](auto predicate) { return std::any_of(window.begin(), window.end(), predicate); };
  if (!window.empty()) add_field("size", [](const WindowDimension& d) { return std::to_string(d.size); });
  if (any([](const WindowDimension& d) { return d.stride != 1; }))
    add_field(" stride", [](const WindowDimension& d) { return std::to_string(d.stride); });
  if (any([](const WindowDimension& d) { return d.padding_low != 0 || d.padding_high != 0; }))
    add_field(" pad", [](const WindowDimension& d) { return str_cat(d.padding_low, "_", d.padding_high); });
  if (any([](const WindowDimension& d) { return d.base_dilation != 1; }))
    add_field(" lhs_dilate", [](const WindowDimension& d) { return std::to_string(d.base_dilation); });
  if (any([](const WindowDimension& d) { return d.window_dilation != 1; }))
    add_field(" rhs_dilate", [](const WindowDimension& d) { return std::to_string(d.window_dilation); });
  if (any([](const WindowDimension& d) { return d.window_reversal; }))
    add_field(" rhs_reversal", [](const WindowDimension& d) { return std::string(d.window_reversal ? "1" : "0"); });
  return out;
}

std::string padding_to_string(const std::vector<PaddingDimension>& padding) {
  bool interior = std::any_of(padding.begin(), padding.end(), [](const PaddingDimension& d) { return d.interior != 0; });
  return str_join(padding, "x", [&](const PaddingDimension& d) {
    std::string out = str_cat(d.low, "_", d.high);
    if (interior) out += str_cat("_", d.interior);
    return out;
  });
}

std::string slice_to_string(const std::vector<SliceDimension>& slice) {
  bool omit_stride = std::all_of(slice.begin(), slice.end(), [](const SliceDimension& d) { return d.stride == 1; });
  return "{" + str_join(slice, ", ", [&](const SliceDimension& d) {
           std::string out = str_cat("[", d.start, ":", d.limit);
           if (!omit_stride) out += str_cat(":", d.stride);
           return out + "]";
         }) + "}";
}

std::string dot_dimension_numbers_to_string(const DotDimensionNumbers& numbers) {
  std::vector<std::string> parts;
  if (!numbers.lhs_batch_dimensions.empty())
    parts.push_back("lhs_batch_dims=" + int_list_to_string(numbers.lhs_batch_dimensions));
  parts.push_back("lhs_contracting_dims=" + int_list_to_string(numbers.lhs_contracting_dimensions));
  if (!numbers.rhs_batch_dimensions.empty())
    parts.push_back("rhs_batch_dims=" + int_list_to_string(numbers.rhs_batch_dimensions));
  parts.push_back("rhs_contracting_dims=" + int_list_to_string(numbers.rhs_contracting_dimensions));
  return str_join(parts, ", ");
}

std::string gather_dimension_numbers_to_string(const GatherDimensionNumbers& numbers) {
  std::string out = "offset_dims=" + int_list_to_string(numbers.offset_dims) +
                    ", collapsed_slice_dims=" + int_list_to_string(numbers.collapsed_slice_dims) +
                    ", start_index_map=" + int_list_to_string(numbers.start_index_map);
  if (!numbers.operand_batching_dims.empty())
    out += ", operand_batching_dims=" + int_list_to_string(numbers.operand_batching_dims);
  if (!numbers.start_indices_batching_dims.empty())
    out += ", start_indices_batching_dims=" + int_list_to_string(numbers.start_indices_batching_dims);
  return out + str_cat(", index_vector_dim=", numbers.index_vector_dim);
}

std::string scatter_dimension_numbers_to_string(const ScatterDimensionNumbers& numbers) {
  std::string out = "update_window_dims=" + int_list_to_string(numbers.update_window_dims) +
                    ", inserted_window_dims=" + int_list_to_string(numbers.inserted_window_dims) +
                    ", scatter_dims_to_operand_dims=" + int_list_to_string(numbers.scatter_dims_to_operand_dims);
  if (!numbers.input_batching_dims.empty())
    out += ", input_batching_dims=" + int_list_to_string(numbers.input_batching_dims);
  if (!numbers.scatter_indices_batching_dims.empty())
    out += ", scatter_indices_batching_dims=" + int_list_to_string(numbers.scatter_indices_batching_dims);
  return out + str_cat(", index_vector_dim=", numbers.index_vector_dim);
}

std::string output_operand_aliasing_to_string(const std::vector<OutputOperandAlias>& aliasing) {
  return "{" + str_join(aliasing, ", ", [](const OutputOperandAlias& a) {
           return str_cat(shape_index_to_string(a.output_index), ": (", a.operand_number, ", ",
                          shape_index_to_string(a.operand_index), ")");
         }) + "}";
}

std::string frontend_attributes_to_string(const std::vector<std::pair<std::string, std::string>>& attributes) {
  std::vector<std::pair<std::string, std::string>> sorted = attributes;
  std::sort(sorted.begin(), sorted.end());
  return "{" + str_join(sorted, ",", [](const std::pair<std::string, std::string>& item) {
           // a key that is not a plain name (insitu_unused_donor:0:{}) is quoted so it parses back
           bool plain = !item.first.empty() && !std::isdigit(static_cast<unsigned char>(item.first[0])) &&
                        std::all_of(item.first.begin(), item.first.end(), [](char c) {
                          return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-';
                        });
           std::string key = plain ? item.first : "\"" + c_escape(item.first) + "\"";
           if (lexes_as_json_dict(item.second)) return key + "=" + item.second;
           return key + "=\"" + c_escape(item.second) + "\"";
         }) + "}";
}

std::string input_output_alias_to_string(const std::vector<InputOutputAlias>& aliases) {
  return str_join(aliases, ", ", [](const InputOutputAlias& a) {
    return str_cat(shape_index_to_string(a.output_index), ": (", a.parameter_number, ", ",
                   shape_index_to_string(a.parameter_index),
                   a.kind == AliasKind::kMustAlias ? ", must-alias" : ", may-alias", ")");
  });
}

std::string buffer_donors_to_string(const std::vector<BufferDonor>& donors) {
  return str_join(donors, ", ", [](const BufferDonor& d) {
    return str_cat("(", d.parameter_number, ", ", shape_index_to_string(d.parameter_index), ")");
  });
}

std::string computation_layout_to_string(const ComputationLayout& layout) {
  std::string out = "(";
  for (size_t i = 0; i < layout.parameter_shapes.size(); ++i) {
    if (i > 0) out += (i % 5 == 0) ? str_cat(", /*index=", i, "*/") : std::string(", ");
    out += layout.parameter_shapes[i].to_string();
  }
  return out + ")->" + layout.result_shape.to_string();
}

}  // namespace insitu
