// Comparing insitu's results with JAX's, shared by the JAX corpus tests (jax_corpus_test.cc)
// and the partitioned programs' (jax_collectives_test.cc): results as flattened leaves against
// output_I.npy files.
//
// Integers and pred bit-exact; floats |insitu - jax| <= kAbsoluteTolerance + kRelativeTolerance *
// |jax| + kScaleTolerance * max |jax| over the output (insitu's exp/tanh/log and summation order
// differ from XLA:CPU's in the last bits, and a sum's rounding error scales with its terms, which
// the output's largest magnitude stands for), infinities equal, NaN only where JAX has NaN.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "insitu/ir/literal.h"
#include "insitu/ir/npy.h"

namespace insitu::testing_jax {

namespace fs = std::filesystem;

inline constexpr double kRelativeTolerance = 1e-5;
inline constexpr double kAbsoluteTolerance = 1e-6;
inline constexpr double kScaleTolerance = 1e-6;

inline std::string read_file(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

// input_0.npy, input_1.npy, ... (or output_) while they exist.
inline std::vector<std::string> numbered_files(const fs::path& dir, const std::string& stem) {
  std::vector<std::string> paths;
  for (int i = 0;; ++i) {
    fs::path path = dir / (stem + "_" + std::to_string(i) + ".npy");
    if (!fs::exists(path)) break;
    paths.push_back(path.string());
  }
  return paths;
}

inline void collect_array_leaves(const Literal& literal, std::vector<const Literal*>& leaves) {
  if (literal.shape().is_tuple()) {
    for (const Literal& element : literal.elements()) collect_array_leaves(element, leaves);
  } else if (literal.shape().is_array()) {
    leaves.push_back(&literal);
  }
}

inline ::testing::AssertionResult leaf_matches(const Literal& actual, const Literal& expected) {
  const Shape& a = actual.shape();
  const Shape& e = expected.shape();
  if (a.element_type() != e.element_type() || a.dimensions() != e.dimensions())
    return ::testing::AssertionFailure() << "shape " << a.to_string() << ", JAX has " << e.to_string();
  const PrimitiveType type = a.element_type();
  if (!is_floating(type) && !is_complex(type)) {
    if (actual.size_bytes() != expected.size_bytes() ||
        std::memcmp(actual.untyped_data(), expected.untyped_data(), actual.size_bytes()) != 0)
      return ::testing::AssertionFailure() << "bits differ:\n  insitu " << actual.values_to_string()
                                           << "\n  jax    " << expected.values_to_string();
    return ::testing::AssertionSuccess();
  }
  if (is_complex(type)) return ::testing::AssertionFailure() << "complex outputs are not in the corpus";
  double scale = 0;
  for (int64_t i = 0; i < expected.element_count(); ++i)
    if (std::isfinite(expected.get_double(i))) scale = std::max(scale, std::abs(expected.get_double(i)));
  for (int64_t i = 0; i < actual.element_count(); ++i) {
    const double x = actual.get_double(i);
    const double y = expected.get_double(i);
    // infinities only where JAX has the same one; NaN only where JAX has NaN
    const bool close = std::isinf(y) || std::isinf(x)
                           ? x == y
                           : std::abs(x - y) <= kAbsoluteTolerance + kRelativeTolerance * std::abs(y) +
                                                      kScaleTolerance * scale;
    if (std::isnan(y) ? std::isnan(x) : close) continue;
    return ::testing::AssertionFailure() << "element " << i << " is " << x << ", JAX has " << y << "\n  insitu "
                                         << actual.values_to_string() << "\n  jax    " << expected.values_to_string();
  }
  return ::testing::AssertionSuccess();
}

inline ::testing::AssertionResult matches_jax(const Literal& result, const fs::path& dir) {
  std::vector<const Literal*> leaves;
  collect_array_leaves(result, leaves);
  std::vector<std::string> outputs = numbered_files(dir, "output");
  if (leaves.size() != outputs.size())
    return ::testing::AssertionFailure() << leaves.size() << " result leaves, JAX has " << outputs.size();
  for (size_t i = 0; i < outputs.size(); ++i) {
    StatusOr<Literal> expected = read_npy_file(outputs[i]);
    if (!expected.ok()) return ::testing::AssertionFailure() << expected.status().to_string();
    ::testing::AssertionResult same = leaf_matches(*leaves[i], *expected);
    if (!same) return ::testing::AssertionFailure() << "output " << i << ": " << same.message();
  }
  return ::testing::AssertionSuccess();
}

}  // namespace insitu::testing_jax
