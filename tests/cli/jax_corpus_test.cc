// Real JAX programs run in insitu with JAX's results. tests/data/jax/NAME/ holds what
// bench/peers/make_corpus.sh dumped from jax/jaxlib 0.12.0.1 on CPU: the HLO XLA received
// (before_optimizations.hlo), the HLO XLA:CPU ran (after_optimizations.hlo), the flattened
// inputs (input_i.npy) and JAX's flattened outputs (output_i.npy). No Python is needed here.
//
// For every program:
//   - both modules parse and verify;
//   - before_optimizations runs in the reference evaluator and through insitu's whole compile
//     path (optimize_module + Executable, donating what the module aliases), and both equal
//     JAX's outputs;
//   - after_optimizations (XLA's fusions and XLA:CPU custom-calls) runs the same way;
//   - every instruction runs natively (fallback_ops_executed == 0);
//   - except the modules in known_gaps(), which must fail with the listed message (so the list
//     stays true: a module that starts to run must be taken off it).
//
// Comparison: integers and pred bit-exact; floats |insitu - jax| <= kAbsoluteTolerance +
// kRelativeTolerance * |jax| + kScaleTolerance * max |jax| over the output (insitu's exp/tanh/log
// and summation order differ from XLA:CPU's in the last bits, and a sum's rounding error scales
// with its terms, which the output's largest magnitude stands for: a convolution gradient whose
// terms reach 200 and cancel to 0.13 is off by a few ulps of 200), NaN only where JAX has NaN.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "insitu/arguments.h"
#include "insitu/evaluator/evaluator.h"
#include "insitu/ir/npy.h"
#include "insitu/ir/parser.h"
#include "insitu/ir/verifier.h"
#include "insitu/passes/optimize.h"
#include "insitu/runtime/executable.h"
#include "insitu/support/str.h"

namespace insitu {
namespace {

namespace fs = std::filesystem;

constexpr double kRelativeTolerance = 1e-5;
constexpr double kAbsoluteTolerance = 1e-6;
constexpr double kScaleTolerance = 1e-6;

// Modules insitu cannot run natively yet (none today; convolution, fft and the LAPACK calls left
// it in December 2026):
// (program, module) -> a piece of the error they give, from the reference evaluator or else from
// the optimized runtime. The test keeps the list true: a module that starts to run must leave it.
const std::map<std::pair<std::string, std::string>, std::string>& known_gaps() {
  static const auto* table = new std::map<std::pair<std::string, std::string>, std::string>{
  };
  return *table;
}

fs::path corpus_dir() { return fs::path(INSITU_SOURCE_DIR) / "tests" / "data" / "jax"; }

std::vector<std::string> program_names() {
  std::vector<std::string> names;
  std::error_code error;
  for (const auto& entry : fs::directory_iterator(corpus_dir(), error))
    if (entry.is_directory()) names.push_back(entry.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

std::string read_file(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

// input_0.npy, input_1.npy, ... (or output_) while they exist.
std::vector<std::string> numbered_files(const fs::path& dir, const std::string& stem) {
  std::vector<std::string> paths;
  for (int i = 0;; ++i) {
    fs::path path = dir / (stem + "_" + std::to_string(i) + ".npy");
    if (!fs::exists(path)) break;
    paths.push_back(path.string());
  }
  return paths;
}

void collect_array_leaves(const Literal& literal, std::vector<const Literal*>& leaves) {
  if (literal.shape().is_tuple()) {
    for (const Literal& element : literal.elements()) collect_array_leaves(element, leaves);
  } else if (literal.shape().is_array()) {
    leaves.push_back(&literal);
  }
}

::testing::AssertionResult leaf_matches(const Literal& actual, const Literal& expected) {
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

::testing::AssertionResult matches_jax(const Literal& result, const fs::path& dir) {
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

StatusOr<std::unique_ptr<Module>> load_verified(const fs::path& path) {
  INSITU_ASSIGN_OR_RETURN(std::unique_ptr<Module> module, parse_module(read_file(path)));
  INSITU_RETURN_IF_ERROR(verify_module(*module));
  return module;
}

// The compile path insitu's users get: optimize, assign buffers, execute; every parameter the
// module aliases to an output is donated (as JAX's donate_argnums did).
StatusOr<Literal> run_optimized(const Module& module, const std::vector<Literal>& arguments) {
  INSITU_ASSIGN_OR_RETURN(OptimizedModule optimized, optimize_module(module.clone()));
  INSITU_ASSIGN_OR_RETURN(std::unique_ptr<Executable> executable, Executable::create(std::move(optimized)));
  std::vector<BufferHandle> handles;
  ExecuteOptions execute;
  execute.threads = 2;
  for (const Executable::Argument& argument : executable->arguments()) {
    const Literal* leaf = arguments.at(argument.parameter_number).subliteral(argument.index);
    if (leaf == nullptr) return internal_error("no argument for " + argument.describe());
    INSITU_ASSIGN_OR_RETURN(BufferHandle handle, BufferHandle::from_literal(*leaf));
    handles.push_back(std::move(handle));
    execute.donate.push_back(argument.aliased_output.has_value());
  }
  ExecutionStats stats;
  execute.stats = &stats;
  INSITU_ASSIGN_OR_RETURN(std::vector<BufferHandle> results, executable->execute(std::move(handles), execute));
  // Every op of the corpus runs natively: the evaluator fallback is the oracle, not a path.
  if (stats.fallback_ops_executed != 0) {
    std::vector<std::string> planned;
    for (const Instruction* instruction : executable->fallback_instructions())
      planned.push_back(str_cat("%", instruction->name(), " (", opcode_name(instruction->opcode()), ")"));
    return failed_precondition(str_cat(stats.fallback_ops_executed, " instructions ran through the evaluator fallback: ",
                                       str_join(planned, ", ")));
  }
  const Shape& result_shape = executable->module().entry()->root()->shape();
  Literal result(result_shape);
  size_t next = 0;
  Status status;
  result_shape.for_each_leaf([&](const Shape& leaf_shape, const ShapeIndex& index) {
    if (!status.ok() || !leaf_shape.is_array()) return;
    StatusOr<Literal> leaf = results.at(next++).to_literal();
    if (leaf.ok()) {
      *result.mutable_subliteral(index) = std::move(leaf).value();
    } else {
      status = leaf.status();
    }
  });
  INSITU_RETURN_IF_ERROR(status);
  return result;
}

class JaxCorpusTest : public ::testing::TestWithParam<std::string> {
 protected:
  fs::path dir() const { return corpus_dir() / GetParam(); }

  // Loads one of the two modules and its inputs; reports failures as test failures.
  void load(const std::string& file, std::unique_ptr<Module>& module, std::vector<Literal>& arguments) {
    StatusOr<std::unique_ptr<Module>> loaded = load_verified(dir() / file);
    ASSERT_TRUE(loaded.ok()) << loaded.status().to_string((dir() / file).string());
    module = std::move(loaded).value();
    StatusOr<std::vector<Literal>> bound = cli::bind_arguments(*module, numbered_files(dir(), "input"));
    ASSERT_TRUE(bound.ok()) << bound.status().to_string();
    arguments = std::move(bound).value();
  }

  // A known gap must still parse and verify, and fail with the listed message.
  void expect_matches_jax_or_known_gap(const std::string& file) {
    auto gap = known_gaps().find({GetParam(), file});
    if (gap == known_gaps().end()) return expect_matches_jax(file);
    std::unique_ptr<Module> module;
    std::vector<Literal> arguments;
    ASSERT_NO_FATAL_FAILURE(load(file, module, arguments));
    StatusOr<Literal> result = evaluate_module(*module, arguments);
    if (result.ok()) result = run_optimized(*module, arguments);
    ASSERT_FALSE(result.ok()) << file << " runs now: remove " << GetParam() << " from known_gaps()";
    EXPECT_NE(result.status().to_string().find(gap->second), std::string::npos) << result.status().to_string();
  }

  // Runs `file` both ways and compares with JAX.
  void expect_matches_jax(const std::string& file) {
    std::unique_ptr<Module> module;
    std::vector<Literal> arguments;
    ASSERT_NO_FATAL_FAILURE(load(file, module, arguments));
    EvaluatorOptions options;
    options.max_while_iterations = 100000;
    StatusOr<Literal> reference = evaluate_module(*module, arguments, options);
    ASSERT_TRUE(reference.ok()) << "reference evaluator: " << reference.status().to_string(file);
    EXPECT_TRUE(matches_jax(*reference, dir())) << "reference evaluator on " << file;
    StatusOr<Literal> optimized = run_optimized(*module, arguments);
    ASSERT_TRUE(optimized.ok()) << "optimized runtime: " << optimized.status().to_string(file);
    EXPECT_TRUE(matches_jax(*optimized, dir())) << "optimized runtime on " << file;
  }
};

TEST(JaxCorpus, HasTheProgramsOfIssue5) {
  std::vector<std::string> names = program_names();
  EXPECT_GE(names.size(), 20u);
  for (const char* required : {"kv_cache_decode_step", "kv_cache_decode_loop", "adam_step", "scan_dynamic_update_slice",
                               "cond_in_scan_update_first", "cond_in_scan_keep_first", "at_index_add",
                               "embedding_grad_scatter_add", "mlp_forward", "mlp_grad", "softmax",
                               "read_then_update_donated"})
    EXPECT_NE(std::find(names.begin(), names.end(), required), names.end()) << required;
  EXPECT_GE(names.size(), 60u);
  for (const auto& [key, message] : known_gaps())
    EXPECT_NE(std::find(names.begin(), names.end(), key.first), names.end()) << "stale entry " << key.first;
}

// The comparison can fail: one integer bit, a float just outside the tolerance, a shape.
TEST(JaxCorpus, ComparisonCatchesDifferences) {
  EXPECT_TRUE(leaf_matches(Literal::vector<int32_t>({1, -2}), Literal::vector<int32_t>({1, -2})));
  EXPECT_FALSE(leaf_matches(Literal::vector<int32_t>({1, -2}), Literal::vector<int32_t>({1, -3})));
  EXPECT_FALSE(leaf_matches(Literal::vector<bool>({true}), Literal::vector<bool>({false})));
  EXPECT_TRUE(leaf_matches(Literal::vector<float>({100.0005f}), Literal::vector<float>({100.0f})));
  EXPECT_FALSE(leaf_matches(Literal::vector<float>({100.002f}), Literal::vector<float>({100.0f})));
  // beside a large element, a small one may be off by a few ulps of the large one, not more
  EXPECT_TRUE(leaf_matches(Literal::vector<float>({200.0f, 0.13375f}), Literal::vector<float>({200.0f, 0.1337f})));
  EXPECT_FALSE(leaf_matches(Literal::vector<float>({200.0f, 0.1345f}), Literal::vector<float>({200.0f, 0.1337f})));
  EXPECT_FALSE(leaf_matches(Literal::vector<float>({NAN}), Literal::vector<float>({0.0f})));
  EXPECT_TRUE(leaf_matches(Literal::vector<float>({-INFINITY, INFINITY}), Literal::vector<float>({-INFINITY, INFINITY})));
  EXPECT_FALSE(leaf_matches(Literal::vector<float>({INFINITY}), Literal::vector<float>({-INFINITY})));
  EXPECT_FALSE(leaf_matches(Literal::vector<float>({1.0f, 2.0f}), Literal::vector<float>({1.0f})));
  EXPECT_FALSE(leaf_matches(Literal::vector<int32_t>({1}), Literal::vector<float>({1.0f})));
}

// JAX's outputs depend on the committed inputs: insitu's default inputs give other values.
TEST(JaxCorpus, OutputsDependOnTheCommittedInputs) {
  const fs::path dir = corpus_dir() / "at_index_add";
  StatusOr<std::unique_ptr<Module>> module = load_verified(dir / "before_optimizations.hlo");
  ASSERT_TRUE(module.ok()) << module.status().to_string();
  StatusOr<std::vector<Literal>> defaults = cli::bind_arguments(**module, {});
  ASSERT_TRUE(defaults.ok()) << defaults.status().to_string();
  StatusOr<Literal> result = evaluate_module(**module, *defaults);
  ASSERT_TRUE(result.ok()) << result.status().to_string();
  EXPECT_FALSE(matches_jax(*result, dir));
}

TEST_P(JaxCorpusTest, BeforeOptimizationsMatchesJax) { expect_matches_jax_or_known_gap("before_optimizations.hlo"); }

TEST_P(JaxCorpusTest, AfterOptimizationsMatchesJax) { expect_matches_jax_or_known_gap("after_optimizations.hlo"); }

std::string test_name(const ::testing::TestParamInfo<std::string>& info) { return info.param; }

INSTANTIATE_TEST_SUITE_P(Programs, JaxCorpusTest, ::testing::ValuesIn(program_names()), test_name);

}  // namespace
}  // namespace insitu
