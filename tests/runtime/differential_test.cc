// Differential tests: generated programs (program_generator.h) give bit-identical results in the
// reference evaluator and in the optimized runtime (the full pass pipeline, buffer assignment,
// Executable with random donation). A failure prints the seed, the module text and the
// arguments, so the case can be rerun with `insitu run` / `insitu opt`.
#include <cstdlib>
#include <fstream>
#include <map>
#include <string_view>

#include "executable_test_util.h"
#include "insitu/ir/npy.h"
#include "insitu/ir/printer.h"
#include "insitu/ir/verifier.h"
#include "insitu/support/str.h"
#include "program_generator.h"

namespace insitu {
namespace {

using testing_generator::GeneratedProgram;
using testing_generator::generate_program;
using testing_generator::make_generated_arguments;

// 1000 programs run in a few seconds; seeds 0-19999 passed when the generator landed
// (INSITU_DIFFERENTIAL_SEEDS=20000).
constexpr uint64_t kProgramCount = 1000;

// INSITU_DIFFERENTIAL_DUMP=DIR writes each failing program as DIR/seed_N.hlo with its arguments
// DIR/seed_N.arg_I.npy, for `insitu run DIR/seed_N.hlo --arg ...` (which donates every aliased
// --arg input, so runs with an undonated alias may need the test to reproduce).
void dump_failure(uint64_t seed, const GeneratedProgram& program) {
  const char* directory = std::getenv("INSITU_DIFFERENTIAL_DUMP");
  if (directory == nullptr) return;
  const std::string stem = str_cat(directory, "/seed_", seed);
  std::ofstream(stem + ".hlo") << program.text;
  StatusOr<std::unique_ptr<Module>> module = parse_module(program.text);
  if (!module.ok()) return;
  const std::vector<Literal> arguments = make_generated_arguments(**module, seed);
  for (size_t i = 0; i < arguments.size(); ++i) (void)write_npy_file(str_cat(stem, ".arg_", i, ".npy"), arguments[i]);
}

// INSITU_DIFFERENTIAL_SEEDS=N runs seeds 0..N-1 in RuntimeMatchesEvaluator (a longer hunt);
// INSITU_DIFFERENTIAL_FIRST=S starts at seed S (S..S+N-1) to rerun one case.
uint64_t environment_number(const char* name, uint64_t otherwise) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0' ? std::strtoull(value, nullptr, 10) : otherwise;
}

std::string describe(uint64_t seed, const GeneratedProgram& program, const std::vector<Literal>& arguments) {
  std::string text = str_cat("seed ", seed, ", donate={");
  for (size_t i = 0; i < program.donate.size(); ++i) text += str_cat(i == 0 ? "" : ",", program.donate[i] ? "1" : "0");
  text += "}\n";
  for (size_t i = 0; i < arguments.size(); ++i) text += str_cat("argument ", i, ": ", arguments[i].to_string(), "\n");
  return text + program.text;
}

// Parses, verifies and evaluates one program; an empty string on success, else what failed.
std::string parse_and_evaluate(uint64_t seed, const GeneratedProgram& program, std::unique_ptr<Module>& module,
                               Literal& expected) {
  StatusOr<std::unique_ptr<Module>> parsed = parse_module(program.text);
  if (!parsed.ok()) return str_cat("parse: ", parsed.status().to_string(), "\n", describe(seed, program, {}));
  module = std::move(parsed).value();
  Status verified = verify_module(*module);
  if (!verified.ok()) return str_cat("verify: ", verified.to_string(), "\n", describe(seed, program, {}));
  const std::vector<Literal> arguments = make_generated_arguments(*module, seed);
  StatusOr<Literal> result = evaluate_module(*module, arguments);
  if (!result.ok()) return str_cat("evaluate: ", result.status().to_string(), "\n", describe(seed, program, arguments));
  expected = std::move(result).value();
  return "";
}

// Optimizes and runs one program in the runtime and compares every result leaf bit-exactly
// with the evaluator; undonated arguments must come back unchanged, donated ones consumed.
std::string run_and_compare(uint64_t seed, const GeneratedProgram& program, const Module& module, const Literal& expected) {
  const std::vector<Literal> arguments = make_generated_arguments(module, seed);
  StatusOr<OptimizedModule> optimized = optimize_module(module.clone());
  if (!optimized.ok()) return str_cat("optimize: ", optimized.status().to_string(), "\n", describe(seed, program, arguments));
  std::shared_ptr<const Module> optimized_module = std::move(optimized->module);
  StatusOr<std::unique_ptr<Executable>> executable = Executable::create(optimized_module, std::move(*optimized->buffers));
  if (!executable.ok()) return str_cat("create: ", executable.status().to_string(), "\n", describe(seed, program, arguments));

  std::vector<BufferHandle> handles = testing_runtime::to_handles(arguments);
  StatusOr<std::vector<BufferHandle>> results =
      (*executable)->execute(handles, {.donate = program.donate, .threads = seed % 2 == 0 ? 1 : 2, .stats = nullptr});
  if (!results.ok()) return str_cat("execute: ", results.status().to_string(), "\n", describe(seed, program, arguments));

  std::vector<Literal> expected_leaves;
  testing_runtime::flatten(expected, expected_leaves);
  const std::string where = str_cat("\n", describe(seed, program, arguments), "\noptimized:\n", print_module(*optimized_module));
  if (results->size() != expected_leaves.size())
    return str_cat("runtime returned ", results->size(), " results, evaluator ", expected_leaves.size(), where);
  for (size_t i = 0; i < expected_leaves.size(); ++i) {
    StatusOr<Literal> actual = (*results)[i].to_literal();
    if (!actual.ok()) return str_cat("result ", i, ": ", actual.status().to_string(), where);
    if (!(*actual == expected_leaves[i]))
      return str_cat("result ", i, " differs: runtime ", actual->to_string(), ", evaluator ", expected_leaves[i].to_string(), where);
  }
  for (size_t i = 0; i < handles.size(); ++i) {
    const bool donated = i < program.donate.size() && program.donate[i];
    if (donated != handles[i].is_donated())
      return str_cat("argument ", i, (donated ? " was donated but is still usable" : " was not donated but is consumed"), where);
    if (donated) continue;
    StatusOr<Literal> after = handles[i].to_literal();
    if (!after.ok() || !(*after == arguments[i]))
      return str_cat("undonated argument ", i, " changed: ", after.ok() ? after->to_string() : after.status().to_string(), where);
  }
  return "";
}

TEST(GeneratedPrograms, GeneratorIsDeterministic) {
  for (uint64_t seed = 0; seed < kProgramCount; ++seed) {
    const GeneratedProgram first = generate_program(seed), second = generate_program(seed);
    ASSERT_EQ(first.text, second.text) << "seed " << seed;
    ASSERT_EQ(first.donate, second.donate) << "seed " << seed;
  }
  EXPECT_NE(generate_program(1).text, generate_program(2).text);
  // The PRNG is SplitMix64 exactly (reference values of the published algorithm for seed 0).
  testing_generator::SplitMix64 rng(0);
  EXPECT_EQ(rng.next(), 0xE220A8397B1DCDAFull);
  EXPECT_EQ(rng.next(), 0x6E789E6AA1B965F4ull);
}

TEST(GeneratedPrograms, MixCoversEveryFeature) {
  std::map<std::string_view, int> counts;
  constexpr std::string_view kFeatures[] = {
      " while(", " conditional(", "true_computation=", "branch_computations=", " scatter(", "to_apply=scatter_add",
      "to_apply=scatter_overwrite", " dynamic-update-slice(", " dynamic-slice(", "input_output_alias=", "must-alias",
      "buffer_donor=", " select(", " convert(", " compare(", " broadcast(", " divide(", "index=0\n  ROOT"};
  int donating = 0;
  for (uint64_t seed = 0; seed < kProgramCount; ++seed) {
    const GeneratedProgram program = generate_program(seed);
    for (std::string_view feature : kFeatures)
      if (program.text.find(feature) != std::string::npos) ++counts[feature];
    for (bool donate : program.donate) donating += donate ? 1 : 0;
  }
  for (std::string_view feature : kFeatures) {
    if (feature == "index=0\n  ROOT") continue;  // informational only
    EXPECT_GE(counts[feature], 10) << "too few generated programs contain '" << feature << "'";
  }
  EXPECT_GE(counts[" while("], 60);
  EXPECT_GE(counts[" conditional("], 60);
  EXPECT_GE(counts[" scatter("], 60);
  EXPECT_GE(counts[" dynamic-update-slice("], 100);
  EXPECT_GE(counts["input_output_alias="], 60);
  EXPECT_GE(donating, 100);
}

TEST(GeneratedPrograms, EveryProgramParsesVerifiesAndEvaluates) {
  for (uint64_t seed = 0; seed < kProgramCount; ++seed) {
    std::unique_ptr<Module> module;
    Literal expected;
    const std::string failure = parse_and_evaluate(seed, generate_program(seed), module, expected);
    ASSERT_EQ(failure, "");
  }
}

TEST(GeneratedPrograms, RuntimeMatchesEvaluator) {
  std::vector<uint64_t> failing;
  const uint64_t first = environment_number("INSITU_DIFFERENTIAL_FIRST", 0);
  const uint64_t count = environment_number("INSITU_DIFFERENTIAL_SEEDS", kProgramCount);
  for (uint64_t seed = first; seed < first + count; ++seed) {
    const GeneratedProgram program = generate_program(seed);
    std::unique_ptr<Module> module;
    Literal expected;
    std::string failure = parse_and_evaluate(seed, program, module, expected);
    if (failure.empty()) failure = run_and_compare(seed, program, *module, expected);
    if (failure.empty()) continue;
    failing.push_back(seed);
    dump_failure(seed, program);
    if (failing.size() <= 3) ADD_FAILURE() << failure;  // the first few in full, then one line each
    else ADD_FAILURE() << "seed " << seed << ": " << failure.substr(0, failure.find('\n'));
  }
  EXPECT_TRUE(failing.empty()) << failing.size() << " of " << count
                               << " generated programs differ; seeds: " << str_join(failing, ", ");
}

}  // namespace
}  // namespace insitu
