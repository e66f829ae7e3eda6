// The seed's story (examples/seed/pallas_inplace_question.txt) as tests of `insitu explain`:
// why the donated buffer of the before-optimizations module cannot be used as written, and why
// XLA's optimized module has copy.3.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "cli/cli.h"

namespace insitu {
namespace {

struct Output {
  int status;
  std::string out;
  std::string err;
};

Output explain(const std::vector<std::string>& args) {
  std::ostringstream out, err;
  cli::CliContext context{out, err};
  std::vector<std::string> argv = {"insitu", "explain"};
  argv.insert(argv.end(), args.begin(), args.end());
  int status = cli::run_insitu(argv, context);
  return {status, out.str(), err.str()};
}

const std::string kSeed = std::string(INSITU_SEED_DIR) + "/";

TEST(SeedExplainTest, BeforeOptimizationsSaysWhyTheDonorIsNotUsedAndWhatToWrite) {
  Output result = explain({kSeed + "sync_tensors_graph.before_optimizations.hlo", "--json"});
  ASSERT_EQ(result.status, 0) << result.err;
  EXPECT_NE(result.out.find("\"copies\": []"), std::string::npos) << result.out;
  EXPECT_NE(result.out.find("\"unused_donors\": [\n    {"), std::string::npos) << result.out;
  EXPECT_NE(result.out.find("output_to_operand_aliasing"), std::string::npos) << result.out;
  EXPECT_NE(result.out.find("output_to_operand_aliasing={{}: (0, {})}"), std::string::npos)
      << "the detail says what to write: " << result.out;
}

TEST(SeedExplainTest, AfterOptimizationsExplainsCopy3) {
  Output result = explain({kSeed + "sync_tensors_graph.after_optimizations.hlo"});
  ASSERT_EQ(result.status, 0) << result.err;
  EXPECT_NE(result.out.find("1 copy (16 bytes)"), std::string::npos) << result.out;
  EXPECT_NE(result.out.find("copy %copy.3"), std::string::npos) << result.out;
  EXPECT_NE(result.out.find("S(0)->S(3)"), std::string::npos) << result.out;
  EXPECT_NE(result.out.find("p0.1"), std::string::npos) << result.out;
  EXPECT_NE(result.out.find("output {0}"), std::string::npos) << result.out;
  EXPECT_NE(result.out.find("output_to_operand_aliasing"), std::string::npos) << result.out;
  EXPECT_NE(result.out.find("still reads"), std::string::npos) << result.out;
}

TEST(SeedExplainTest, DotDrawsCopiesRedWithTheirReason) {
  Output result = explain({kSeed + "sync_tensors_graph.after_optimizations.hlo", "--dot"});
  ASSERT_EQ(result.status, 0) << result.err;
  EXPECT_EQ(result.out.rfind("digraph", 0), 0u);
  EXPECT_NE(result.out.find("color=red"), std::string::npos) << result.out;
  EXPECT_NE(result.out.find("memory-space-change"), std::string::npos) << result.out;
  EXPECT_NE(result.out.find("aliased to output {0}"), std::string::npos) << result.out;
}

// scripts/setup installs graphviz, so the graph is rendered for real.
TEST(SeedExplainTest, DotRendersToSvg) {
  Output result = explain({kSeed + "sync_tensors_graph.after_optimizations.hlo", "--dot"});
  ASSERT_EQ(result.status, 0) << result.err;
  const std::string dot_path = ::testing::TempDir() + "seed_explain.dot";
  const std::string svg_path = ::testing::TempDir() + "seed_explain.svg";
  {
    std::ofstream file(dot_path);
    file << result.out;
  }
  ASSERT_EQ(std::system(("dot -Tsvg '" + dot_path + "' -o '" + svg_path + "'").c_str()), 0);
  std::ifstream svg(svg_path);
  std::stringstream text;
  text << svg.rdbuf();
  EXPECT_NE(text.str().find("<svg"), std::string::npos);
  EXPECT_NE(text.str().find("memory&#45;space&#45;change"), std::string::npos) << text.str().substr(0, 2000);
}

}  // namespace
}  // namespace insitu
