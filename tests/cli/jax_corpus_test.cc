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

#include "cli/arguments.h"
#include "insitu/evaluator/evaluator.h"
#include "insitu/ir/npy.h"
#include "insitu/ir/parser.h"
#include "insitu/ir/verifier.h"
#include "insitu/passes/optimize.h"
#include "insitu/runtime/executable.h"
#include "insitu/support/str.h"
#include "jax_compare.h"

namespace insitu {
namespace {

namespace fs = std::filesystem;
using namespace testing_jax;

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
