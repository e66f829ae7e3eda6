// Entry arguments for `insitu run`: one --arg .npy file per entry-parameter leaf, or
// deterministic default values.
//
// Leaves are the array leaves of the entry parameters, tuple parameters flattened depth-first,
// in parameter order; token leaves take no file and get a token value.
//
// Default inputs (no --arg at all), so runs are reproducible: element i (row-major) of every
// array leaf is (i % 7) + 1 converted to the leaf's type (complex: real part, imaginary 0);
// pred elements alternate true, false, true, ... starting at i = 0.
#pragma once

#include <string>
#include <vector>

#include "insitu/ir/literal.h"
#include "insitu/ir/module.h"

namespace insitu::cli {

struct ParameterLeaf {
  int64_t parameter = 0;
  ShapeIndex index;        // {} for an array parameter
  Shape shape;
  bool in_tuple = false;   // the parameter is a tuple (print the index)
  std::string to_string() const;  // "parameter 1 {0}", "parameter 0"
};

// The array leaves of the entry parameters, in --arg order.
std::vector<ParameterLeaf> entry_parameter_leaves(const Module& module);

// The default value of an array shape (see above).
Literal default_argument(const Shape& shape);

// One Literal per entry parameter, built from `npy_paths` (one per leaf) or, when it is empty,
// from default values. Errors name the --arg (1-based), the file, the parameter leaf and both
// shapes.
StatusOr<std::vector<Literal>> bind_arguments(const Module& module, const std::vector<std::string>& npy_paths);

}  // namespace insitu::cli
