// Every module of the round-trip corpus and the seeds loads, verifies and runs in the reference
// evaluator on the CLI's deterministic default inputs, producing a value of the entry's result
// shape. The corpus's custom-call targets get small test kernels (the seed's plus-one, an
// SGD-with-momentum update) so that those modules run too; their values are checked.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "cli/arguments.h"
#include "insitu/evaluator/evaluator.h"
#include "insitu/ir/parser.h"
#include "insitu/ir/verifier.h"

namespace insitu {
namespace {

namespace fs = std::filesystem;

std::string read_file(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

// out = in + 1; works aliased (result starts as operand 0) and not.
Status plus_one(const Instruction&, std::span<const Literal* const> operands, Literal& result) {
  auto in = operands[0]->data<int32_t>();
  auto out = result.data<int32_t>();
  for (size_t i = 0; i < out.size(); ++i) out[i] = in[i] + 1;
  return Status();
}

// (weights, grad, momentum) -> (weights - 0.1 * m', m' = 0.9 * m + grad broadcast over rows)
Status sgd_momentum(const Instruction&, std::span<const Literal* const> operands, Literal& result) {
  auto weights = result.element(0).data<float>();
  auto momentum = result.element(1).data<float>();
  auto grad = operands[1]->data<float>();
  for (size_t i = 0; i < momentum.size(); ++i) momentum[i] = 0.9f * momentum[i] + grad[i];
  for (size_t i = 0; i < weights.size(); ++i) weights[i] -= 0.1f * momentum[i % momentum.size()];
  return Status();
}

class CorpusEvalTest : public ::testing::Test {
 protected:
  CorpusEvalTest() {
    EXPECT_TRUE(registry_.add({.name = "plus_one_inplace", .evaluate = plus_one}).ok());
    EXPECT_TRUE(registry_.add({.name = "tpu_custom_call", .evaluate = plus_one}).ok());
    EXPECT_TRUE(registry_.add({.name = "sgd_momentum_update", .evaluate = sgd_momentum}).ok());
    options_.custom_calls = &registry_;
    options_.max_while_iterations = 100000;
  }

  StatusOr<Literal> evaluate_file(const fs::path& path) {
    INSITU_ASSIGN_OR_RETURN(std::unique_ptr<Module> module, parse_module(read_file(path)));
    INSITU_RETURN_IF_ERROR(verify_module(*module));
    INSITU_ASSIGN_OR_RETURN(std::vector<Literal> arguments, cli::bind_arguments(*module, {}));
    INSITU_ASSIGN_OR_RETURN(Literal result, evaluate_module(*module, arguments, options_));
    if (!result.shape().compatible(module->entry_layout().result_shape))
      return internal_error("result " + result.shape().to_string() + " does not match the entry result");
    return result;
  }

  CustomCallTable registry_;
  EvaluatorOptions options_;
};

TEST_F(CorpusEvalTest, EveryCorpusModuleRuns) {
  int count = 0;
  for (const auto& entry : fs::directory_iterator(fs::path(INSITU_SOURCE_DIR) / "tests" / "corpus")) {
    if (entry.path().extension() != ".hlo") continue;
    SCOPED_TRACE(entry.path().filename().string());
    auto result = evaluate_file(entry.path());
    EXPECT_TRUE(result.ok()) << result.status().to_string(entry.path().string());
    ++count;
  }
  EXPECT_GE(count, 30);
}

TEST_F(CorpusEvalTest, SeedModulesRunTheirPlusOneKernel) {
  const fs::path seed = fs::path(INSITU_SEED_DIR);
  // Default inputs are (i % 7) + 1: {1, 2, 3, 4}.
  auto before = evaluate_file(seed / "sync_tensors_graph.before_optimizations.hlo");
  ASSERT_TRUE(before.ok()) << before.status().to_string();
  EXPECT_EQ(*before, Literal::tuple({Literal::vector<int32_t>({2, 3, 4, 5})}));
  auto after = evaluate_file(seed / "sync_tensors_graph.after_optimizations.hlo");
  ASSERT_TRUE(after.ok()) << after.status().to_string();
  EXPECT_EQ(*after, Literal::tuple({Literal::vector<int32_t>({2, 3, 4, 5})}));
  auto ir = evaluate_file(seed / "ir_to_hlo.hlo");
  ASSERT_TRUE(ir.ok()) << ir.status().to_string();
  EXPECT_EQ(*ir, Literal::tuple({Literal::vector<int32_t>({2, 3, 4, 5})}));
}

TEST_F(CorpusEvalTest, TupleAliasedKernelUpdatesBothOutputs) {
  auto result = evaluate_file(fs::path(INSITU_SOURCE_DIR) / "tests" / "corpus" / "custom_call_tuple_alias.hlo");
  ASSERT_TRUE(result.ok()) << result.status().to_string();
  // grad = {1,2,3,4}, momentum = {1,2,3,4}: m' = 0.9 m + g; weights (4x4, (i%7)+1) -= 0.1 m'.
  auto momentum = result->element(1).data<float>();
  EXPECT_FLOAT_EQ(momentum[0], 0.9f * 1 + 1);
  EXPECT_FLOAT_EQ(momentum[3], 0.9f * 4 + 4);
  auto weights = result->element(0).data<float>();
  EXPECT_FLOAT_EQ(weights[5], 6.0f - 0.1f * (0.9f * 2 + 2));
}

}  // namespace
}  // namespace insitu
