// `insitu opt`, `explain --json`, `run --stats` on the optimized runtime and --strict-donation,
// in process through the CLI library.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "cli/cli.h"
#include "insitu/passes/pipeline.h"
#include "insitu/support/str.h"

namespace insitu {
namespace {

namespace fs = std::filesystem;

struct Output {
  int status;
  std::string out;
  std::string err;
};

Output insitu_command(const std::vector<std::string>& args, const std::string& module_text) {
  std::ostringstream out, err;
  cli::CliContext context{out, err};
  context.read_module_text = [&](const std::string&) -> StatusOr<std::string> { return module_text; };
  std::vector<std::string> argv = {"insitu"};
  argv.insert(argv.end(), args.begin(), args.end());
  int status = cli::run_insitu(argv, context);
  return {status, out.str(), err.str()};
}

constexpr char kDonatedUpdate[] = R"(HloModule donated_update, buffer_donor={ (0, {}) }

ENTRY main {
  cache = f32[8,4] parameter(0)
  row = f32[1,4] parameter(1)
  i = s32[] parameter(2)
  zero = s32[] constant(0)
  ROOT updated = f32[8,4] dynamic-update-slice(cache, row, i, zero)
}
)";

constexpr char kUnusableDonor[] = R"(HloModule unusable, buffer_donor={ (0, {}) }

ENTRY main {
  x = f32[4] parameter(0)
  ROOT r = f32[8] concatenate(x, x), dimensions={0}
}
)";

TEST(OptimizeCliTest, OptDumpsXlaStageFiles) {
  const fs::path dir = fs::path(::testing::TempDir()) / "insitu_opt_dump";
  fs::remove_all(dir);
  Output result = insitu_command({"opt", "m.hlo", "--dump-to", dir.string()}, kDonatedUpdate);
  ASSERT_EQ(result.status, 0) << result.err;
  EXPECT_NE(result.out.find("input_output_alias={ {}: (0, {}, may-alias) }"), std::string::npos) << result.out;
  for (const char* suffix : {".before_optimizations.txt", ".after_optimizations.txt",
                             ".after_optimizations-buffer-assignment.txt",
                             ".after_optimizations-memory-usage-report.txt", ".0015.after_copy-insertion.txt"})
    EXPECT_TRUE(fs::exists(dir / (std::string("module_0001.donated_update") + suffix))) << suffix;
  std::ifstream report(dir / "module_0001.donated_update.after_optimizations-memory-usage-report.txt");
  std::stringstream text;
  text << report.rdbuf();
  EXPECT_EQ(text.str().rfind("Total bytes used: ", 0), 0u) << text.str();
}

// `opt --passes=help` needs no module: one line per pass of the pipeline's table, in order, each
// saying why the pass sits where it does.
TEST(OptimizeCliTest, PassesHelpListsThePipelineTable) {
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"opt", "--passes=help"}, std::vector<std::string>{"opt", "--passes", "help"}}) {
    Output result = insitu_command(args, "");
    ASSERT_EQ(result.status, 0) << result.err;
    size_t at = 0;
    for (const std::string_view name : optimization_pass_names()) {
      const size_t line = result.out.find(str_cat("\n  ", name, ": "), at);
      ASSERT_NE(line, std::string::npos) << name << " missing or out of order:\n" << result.out;
      at = line + 1;
    }
  }
}

// `opt --time-passes`: the module on stdout as without it; on stderr a row per pass of the
// table, in order, after the input's verification, then buffer assignment and the total.
TEST(OptimizeCliTest, TimePassesWritesARowPerPassToStderr) {
  Output plain = insitu_command({"opt", "m.hlo"}, kDonatedUpdate);
  Output timed = insitu_command({"opt", "m.hlo", "--time-passes"}, kDonatedUpdate);
  ASSERT_EQ(timed.status, 0) << timed.err;
  EXPECT_EQ(timed.out, plain.out);
  std::vector<std::string> rows = {"verify-input"};
  for (const std::string_view name : optimization_pass_names()) rows.emplace_back(name);
  rows.insert(rows.end(), {"assign-buffers", "total"});
  size_t at = timed.err.find('\n');
  ASSERT_NE(at, std::string::npos) << timed.err;
  for (const std::string& row : rows) {
    ASSERT_EQ(timed.err.compare(at + 1, row.size() + 1, row + " "), 0) << row << " expected at:\n" << timed.err.substr(at + 1);
    at = timed.err.find('\n', at + 1);
  }
  EXPECT_EQ(at, timed.err.size() - 1) << timed.err;  // nothing after the total
  // the dynamic-update-slice's donor became an alias: donor matching changed the module
  EXPECT_NE(timed.err.find("donor-matching "), std::string::npos);
  EXPECT_TRUE(timed.err.find("yes\n", timed.err.find("donor-matching ")) < timed.err.find("schedule ")) << timed.err;
}

TEST(OptimizeCliTest, ExplainJsonHasTheContractFields) {
  Output result = insitu_command({"explain", "m.hlo", "--json"}, kDonatedUpdate);
  ASSERT_EQ(result.status, 0) << result.err;
  nlohmann::json json = nlohmann::json::parse(result.out);
  EXPECT_TRUE(json["copies"].empty());
  EXPECT_GT(json["peak_memory_bytes"].get<int64_t>(), 0);
  ASSERT_EQ(json["aliases"].size(), 1u);
  EXPECT_EQ(json["aliases"][0]["parameter"], 0);
  EXPECT_EQ(json["aliases"][0]["output_index"], nlohmann::json::array());
  EXPECT_TRUE(json["unused_donors"].empty());
}

TEST(OptimizeCliTest, RunStatsComeFromTheRuntime) {
  const std::string stats_path = ::testing::TempDir() + "insitu_run_stats.json";
  Output result = insitu_command({"run", "m.hlo", "--stats", stats_path, "--threads", "2"}, kDonatedUpdate);
  ASSERT_EQ(result.status, 0) << result.err;
  std::ifstream file(stats_path);
  nlohmann::json stats = nlohmann::json::parse(file);
  EXPECT_EQ(stats["mode"], "optimized");
  EXPECT_EQ(stats["copies_executed"], 0);
  EXPECT_EQ(stats["bytes_copied"], 0) << "the donated cache is updated in place";
  EXPECT_GT(stats["peak_memory_bytes"].get<int64_t>(), 0);
  EXPECT_GE(stats["compile_seconds"].get<double>(), 0.0);
  // The optimized run prints what the reference evaluator prints.
  Output reference = insitu_command({"run", "m.hlo", "--reference"}, kDonatedUpdate);
  ASSERT_EQ(reference.status, 0) << reference.err;
  EXPECT_EQ(result.out, reference.out);
}

TEST(OptimizeCliTest, UnusableDonorIsReportedOrAnErrorUnderStrictDonation) {
  Output explain = insitu_command({"explain", "m.hlo"}, kUnusableDonor);
  ASSERT_EQ(explain.status, 0) << explain.err;
  EXPECT_NE(explain.out.find("unused donor: parameter 0 {}: no-matching-output"), std::string::npos) << explain.out;
  Output strict = insitu_command({"run", "m.hlo", "--strict-donation"}, kUnusableDonor);
  EXPECT_EQ(strict.status, 1);
  EXPECT_NE(strict.err.find("m.hlo:1:"), std::string::npos) << strict.err;
  EXPECT_NE(strict.err.find("--strict-donation: donated parameter 0 {} is not usable (no-matching-output)"),
            std::string::npos)
      << strict.err;
  const std::string stats_path = ::testing::TempDir() + "insitu_unusable_donor_stats.json";
  Output lenient = insitu_command({"run", "m.hlo", "--stats", stats_path}, kUnusableDonor);
  EXPECT_EQ(lenient.status, 0) << lenient.err;
  std::ifstream file(stats_path);
  nlohmann::json stats = nlohmann::json::parse(file);
  EXPECT_EQ(stats["unused_donors"], 1) << "counted before Executable::create takes the optimized module";
}

}  // namespace
}  // namespace insitu
