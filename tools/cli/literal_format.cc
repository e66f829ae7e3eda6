// The abbreviated form follows Literal::to_string's layout (XLA's: rank 1 "{1, 2, 3}"; higher
// ranks one line per innermost row, "  { 1, 2, 3 }", nested braces on their own lines; tuple
// values on one line) and only adds the "..." entries, so an abbreviated value reads like a
// full one.
#include "cli/literal_format.h"

#include <functional>

#include "insitu/support/str.h"

namespace insitu::cli {
namespace {

constexpr int64_t kEdgeItems = 3;

bool has_large_leaf(const Literal& literal, int64_t limit) {
  if (literal.shape().is_tuple()) {
    for (const Literal& element : literal.elements())
      if (has_large_leaf(element, limit)) return true;
    return false;
  }
  return literal.shape().is_array() && literal.element_count() > limit;
}

// One element as XLA prints it: pred in arrays as 1/0, everything else as a scalar literal.
std::string format_element(const Literal& literal, int64_t linear) {
  PrimitiveType type = literal.shape().element_type();
  if (type == PrimitiveType::kPred) return literal.untyped_data()[linear] ? "1" : "0";
  Literal scalar(Shape::scalar(type));
  int64_t width = byte_width(type);
  std::copy_n(literal.untyped_data() + linear * width, width, scalar.untyped_data());
  return scalar.values_to_string();
}

// The values of an array (no shape), XLA's layout plus "..." where dimensions are elided.
std::string abbreviated_array_values(const Literal& literal, bool oneline) {
  const Shape& shape = literal.shape();
  const std::vector<int64_t>& dims = shape.dimensions();
  const int64_t rank = shape.rank();
  const std::string linebreak = oneline ? " " : "\n";
  const std::string indent = oneline ? "" : "  ";
  std::string out;
  std::vector<int64_t> index;
  std::function<void(int64_t)> print_level = [&](int64_t level) {
    if (level == rank) {
      int64_t linear = 0;
      for (int64_t d = 0; d < rank; ++d) linear = linear * dims[d] + index[d];
      out += format_element(literal, linear);
      return;
    }
    const int64_t size = dims[level];
    const bool innermost = level == rank - 1;
    if (rank == 1) out += "{";
    else if (innermost) out += indent + "{" + (size <= 1 ? "" : " ");
    else if (rank > 3 && level > 0) out += str_cat("{ /*i", level - 1, "=", index.back(), "*/", size > 0 ? linebreak : "");
    else out += "{" + linebreak;
    const bool elide = size > 2 * kEdgeItems;
    for (int64_t i = 0; i < size; ++i) {
      if (elide && i == kEdgeItems) {
        // numpy's summary: the first and last kEdgeItems entries, "..." for the rest.
        out += innermost ? "..., " : (level + 1 == rank - 1 ? indent : "") + "...," + linebreak;
        i = size - kEdgeItems - 1;
        continue;
      }
      index.push_back(i);
      print_level(level + 1);
      index.pop_back();
      if (i < size - 1) out += innermost ? ", " : "," + linebreak;
    }
    if (rank == 1) out += "}";
    else if (innermost) out += std::string(size <= 1 ? "" : " ") + "}";
    else out += linebreak + "}";
  };
  print_level(0);
  return out;
}

// Values of any literal, tuples as Literal::values_to_string writes them: "(a, b)".
std::string abbreviated_values(const Literal& literal, bool oneline, int64_t limit) {
  if (literal.shape().is_tuple()) {
    return "(" +
           str_join(literal.elements(), ", ",
                    [&](const Literal& element) { return abbreviated_values(element, true, limit); }) +
           ")";
  }
  if (!literal.shape().is_array() || literal.element_count() <= limit)
    return oneline ? literal.values_to_string() : literal.to_string().substr(literal.shape().to_string(false).size() + 1);
  return abbreviated_array_values(literal, oneline);
}

}  // namespace

std::string format_result(const Literal& literal, int64_t abbreviate_above) {
  if (!has_large_leaf(literal, abbreviate_above)) return literal.to_string();
  // Literal::to_string's layout: the shape, then the values (tuples on one line).
  return literal.shape().to_string(false) + " " +
         abbreviated_values(literal, /*oneline=*/literal.shape().is_tuple(), abbreviate_above);
}

}  // namespace insitu::cli
