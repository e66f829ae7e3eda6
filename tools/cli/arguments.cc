#include "insitu/evaluator/element_arithmetic.h"
#include "cli/arguments.h"

#include "cli/cli.h"
#include "insitu/ir/npy.h"
#include "insitu/runtime/buffer.h"
#include "insitu/support/str.h"

namespace insitu::cli {
namespace {

// Builds one parameter's value from its leaves, consuming `next` in depth-first order.
Literal assemble(const Shape& shape, std::vector<Literal>& leaves, size_t& next) {
  if (shape.is_tuple()) {
    std::vector<Literal> elements;
    for (const Shape& element : shape.tuple_shapes()) elements.push_back(assemble(element, leaves, next));
    Literal tuple = Literal::tuple(std::move(elements));
    tuple.set_shape_layouts(shape);
    return tuple;
  }
  if (shape.is_token()) return Literal(shape);
  return std::move(leaves.at(next++));
}

}  // namespace

std::string ParameterLeaf::to_string() const {
  std::string out = str_cat("parameter ", parameter);
  if (in_tuple) out += " " + shape_index_to_string(index);
  return out;
}

std::vector<ParameterLeaf> entry_parameter_leaves(const Module& module) {
  std::vector<ParameterLeaf> leaves;
  const Computation* entry = module.entry();
  if (entry == nullptr) return leaves;
  for (int64_t p = 0; p < entry->parameter_count(); ++p) {
    const Shape& shape = entry->parameter(p)->shape();
    shape.for_each_leaf([&](const Shape& leaf, const ShapeIndex& index) {
      if (leaf.is_array()) leaves.push_back(ParameterLeaf{p, index, leaf, shape.is_tuple()});
    });
  }
  return leaves;
}

Literal default_argument(const Shape& shape) {
  Literal literal(shape);
  int64_t count = literal.element_count();
  dispatch_element_type(shape.element_type(), [&](auto tag) {
    using T = decltype(tag);
    std::span<T> data = literal.data<T>();
    for (int64_t i = 0; i < count; ++i) {
      int value = static_cast<int>(i % 7) + 1;
      if constexpr (std::is_same_v<T, bool>) {
        data[i] = i % 2 == 0;
      } else {
        data[i] = convert_value<T>(value);
      }
    }
  });
  return literal;
}

StatusOr<std::vector<Literal>> bind_arguments(const Module& module, const std::vector<std::string>& npy_paths) {
  std::vector<ParameterLeaf> leaves = entry_parameter_leaves(module);
  // Arguments must fit in memory before any is made (the runtime's budget is checked later).
  int64_t total = 0;
  for (const ParameterLeaf& leaf : leaves) {
    total += leaf.shape.byte_size();
    if (total > machine_memory_bytes())
      return resource_exhausted(str_cat("the arguments need more than the ", machine_memory_bytes(),
                                        " bytes this machine can give (", leaf.to_string(), " is ",
                                        leaf.shape.to_string(false), ", ", leaf.shape.byte_size(), " bytes)"));
  }
  std::vector<Literal> values;
  if (npy_paths.empty()) {
    for (const ParameterLeaf& leaf : leaves) values.push_back(default_argument(leaf.shape));
  } else {
    if (npy_paths.size() != leaves.size()) {
      std::string expected = leaves.empty() ? "none" : str_join(leaves, ", ", [](const ParameterLeaf& leaf) {
        return leaf.to_string() + ": " + leaf.shape.to_string(false);
      });
      return invalid_argument(str_cat("the entry computation takes ", leaves.size(), " array argument",
                                      leaves.size() == 1 ? "" : "s", " (", expected, ") but ", npy_paths.size(),
                                      " --arg file", npy_paths.size() == 1 ? " was" : "s were", " given"));
    }
    for (size_t i = 0; i < leaves.size(); ++i) {
      const ParameterLeaf& leaf = leaves[i];
      std::string which = str_cat("--arg ", i + 1, " (", npy_paths[i], ")");
      NpyReadOptions options;
      if (byte_width(leaf.shape.element_type()) <= 2) options.void_type = leaf.shape.element_type();
      StatusOr<std::string> bytes = read_text_file(npy_paths[i]);
      if (!bytes.ok()) return invalid_argument(which + ": " + bytes.status().message());
      StatusOr<Literal> value = parse_npy(*bytes, options);
      if (!value.ok()) return invalid_argument(which + ": " + value.status().message());
      if (!value->shape().compatible(leaf.shape)) {
        return invalid_argument(str_cat(which, ": ", leaf.to_string(), " expects ", leaf.shape.to_string(false),
                                        " but the file holds ", value->shape().to_string(false)));
      }
      value->set_shape_layouts(leaf.shape);
      values.push_back(std::move(*value));
    }
  }
  std::vector<Literal> arguments;
  size_t next = 0;
  const Computation* entry = module.entry();
  for (int64_t p = 0; entry != nullptr && p < entry->parameter_count(); ++p)
    arguments.push_back(assemble(entry->parameter(p)->shape(), values, next));
  return arguments;
}

}  // namespace insitu::cli
