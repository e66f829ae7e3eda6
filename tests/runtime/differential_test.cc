// Differential tests: generated programs (program_generator.h) give bit-identical results in the
// reference evaluator and in the optimized runtime (the full pass pipeline, buffer assignment,
// Executable with random donation). A failure prints the seed, the module text and the
// arguments, so the case can be rerun with `insitu run` / `insitu opt`.
#include <cstdlib>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
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

// 1000 programs run in a few seconds; seeds 0-19999 passed when the generator landed, again
// when it gained views, again when it gained layouts, and again when it gained reductions
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

// The same values: the same bits, except that any two f32 NaNs match. IEEE 754 leaves a NaN
// result's sign and payload to the implementation: x86 returns the first NaN operand of an add,
// and a compiler may commute the add, so the evaluator's in-order sum of several NaNs and a
// kernel's (the same adds in the same order) can carry different signs (seed 2222: a row of
// {-nan, -nan, nan} summed to nan and to -nan). A NaN against a number still differs.
bool same_values(const Literal& actual, const Literal& expected) {
  if (actual == expected) return true;
  if (!actual.shape().is_array() || !actual.shape().compatible(expected.shape()) ||
      actual.shape().element_type() != PrimitiveType::kF32)
    return false;
  const uint32_t* a = reinterpret_cast<const uint32_t*>(actual.untyped_data());
  const uint32_t* b = reinterpret_cast<const uint32_t*>(expected.untyped_data());
  auto nan = [](uint32_t bits) { return (bits & 0x7fffffffu) > 0x7f800000u; };
  for (int64_t i = 0; i < actual.element_count(); ++i)
    if (a[i] != b[i] && !(nan(a[i]) && nan(b[i]))) return false;
  return true;
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
  StatusOr<std::unique_ptr<Executable>> executable = Executable::create(std::move(*optimized));
  if (!executable.ok()) return str_cat("create: ", executable.status().to_string(), "\n", describe(seed, program, arguments));

  std::vector<BufferHandle> handles = testing_runtime::to_handles(arguments);
  StatusOr<std::vector<BufferHandle>> results =
      (*executable)->execute(handles, {.donate = program.donate, .threads = seed % 2 == 0 ? 1 : 2, .stats = nullptr});
  if (!results.ok()) return str_cat("execute: ", results.status().to_string(), "\n", describe(seed, program, arguments));

  std::vector<Literal> expected_leaves;
  testing_runtime::flatten(expected, expected_leaves);
  const std::string where = str_cat("\n", describe(seed, program, arguments), "\noptimized:\n", print_module((*executable)->module()));
  if (results->size() != expected_leaves.size())
    return str_cat("runtime returned ", results->size(), " results, evaluator ", expected_leaves.size(), where);
  for (size_t i = 0; i < expected_leaves.size(); ++i) {
    StatusOr<Literal> actual = (*results)[i].to_literal();
    if (!actual.ok()) return str_cat("result ", i, ": ", actual.status().to_string(), where);
    if (!same_values(*actual, expected_leaves[i]))
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

// One instruction line of a generated program, as much as the view features below need.
struct Line {
  std::string computation, name, dims, opcode;  // dims: "[4,3]" ("" for a tuple)
  std::vector<std::string> operands;
  bool root = false;
};

std::vector<Line> read_lines(const std::string& text) {
  static const std::regex kHeader(R"(^(?:ENTRY )?(\S+) \{$)");
  static const std::regex kInstruction(R"(^  (ROOT )?(\S+) = (?:\(.*?\)|\w+(\[[\d,]*\])) ([a-z-]+)\(([^)]*)\))");
  std::vector<Line> lines;
  std::string computation, text_line;
  std::istringstream stream(text);
  while (std::getline(stream, text_line)) {
    std::smatch match;
    if (std::regex_match(text_line, match, kHeader)) computation = match[1];
    if (!std::regex_search(text_line, match, kInstruction)) continue;
    Line line{computation, match[2], match[3], match[4], {}, match[1].matched};
    std::istringstream operands(match[5].str());
    for (std::string operand; std::getline(operands, operand, ',');)
      line.operands.push_back(operand.substr(operand.find_first_not_of(' ')));
    lines.push_back(std::move(line));
  }
  return lines;
}

// The features of a program's views (program_generator.h names each slice and reshape kind by
// its stem: vrows, vrow, vpart, vcols, vstep, vshape, vdyn; a hazard's update is clobber_*, and the
// reader of the view after it late.*).
std::set<std::string> view_features(const std::string& text) {
  const std::vector<Line> lines = read_lines(text);
  std::map<std::string, const Line*> by_name;
  for (const Line& line : lines) by_name[line.name] = &line;
  const auto stem = [](const std::string& name) { return name.substr(0, name.find('.')); };
  const auto is_view = [&](const std::string& name) {
    static const std::set<std::string> kStems = {"vrows", "vrow", "vpart", "vcols", "vstep", "vshape", "vdyn"};
    return kStems.contains(stem(name));
  };
  const auto line_of = [&](const std::string& name) -> const Line* {
    auto found = by_name.find(name);
    return found == by_name.end() ? nullptr : found->second;
  };
  const auto source_of = [&](std::string name) {  // through a chain of views
    while (is_view(name) && line_of(name) != nullptr) name = line_of(name)->operands[0];
    return name;
  };
  const auto opcode_of = [&](const std::string& name) {
    const Line* line = line_of(name);
    return line == nullptr ? std::string() : line->opcode;
  };
  const auto rank = [](const std::string& dims) { return dims == "[]" ? 0 : std::count(dims.begin(), dims.end(), ',') + 1; };
  const auto any_view = [&](const std::vector<std::string>& names) { return std::any_of(names.begin(), names.end(), is_view); };
  static const std::set<std::string> kElementwise = {"add",   "subtract", "multiply", "maximum", "minimum", "divide",
                                                     "remainder", "negate", "abs",     "select",  "compare", "convert"};

  std::set<std::string> features;
  for (const Line& line : lines) {
    const std::string kind = stem(line.name);
    if (is_view(line.name)) features.insert(kind);
    if (kind.starts_with("clobber_")) features.insert(kind);
    const Line* from = line.operands.empty() ? nullptr : line_of(line.operands[0]);
    if (line.opcode == "reshape" && is_view(line.name) && from != nullptr) {
      const std::string to_row = str_cat("[1,", line.dims.substr(1)), from_row = str_cat("[1,", from->dims.substr(1));
      if (from->dims == to_row || line.dims == from_row) features.insert("reshape [1,N] <-> [N]");
      const Line* first = from->opcode == "reshape" ? line_of(from->operands[0]) : nullptr;
      if (first != nullptr && rank(first->dims) == 2 && rank(from->dims) == 1 && rank(line.dims) == 2)
        features.insert("reshape 2-D -> 1-D -> 2-D");
    }
    if (line.opcode == "slice" && from != nullptr && from->opcode == "reshape" && is_view(from->name) &&
        opcode_of(from->operands[0]) == "slice")
      features.insert("slice -> reshape -> slice");
    if (kElementwise.contains(line.opcode) && any_view(line.operands)) features.insert("elementwise reader");
    if (line.opcode == "dynamic-slice" && is_view(line.operands[0])) features.insert("dynamic-slice reader");
    if (line.opcode == "dynamic-update-slice" && is_view(line.operands[1])) {
      features.insert("update of a dynamic-update-slice");
      if (source_of(line.operands[1]) == line.operands[0]) features.insert("update into its own source");
    }
    if (line.opcode == "while" && from != nullptr && any_view(from->operands)) features.insert("while state");
    if (line.opcode == "conditional" && any_view(line_of(line.operands[1])->operands)) features.insert("conditional operand");
    if (line.root && line.computation == "main" && any_view(line.operands)) features.insert("entry result");
    if (line.root && line.computation.starts_with("body.") && any_view(line.operands)) features.insert("loop body result");
    if ((line.opcode == "dynamic-update-slice" || line.opcode == "scatter") && is_view(line.operands[0]))
      features.insert("updated in place");
    if (is_view(line.name) && line.computation.starts_with("body.") && stem(source_of(line.name)) == "s")
      features.insert("view of a body's state");
    if (kind == "late") {
      const std::string source = source_of(line.operands[0]), updated = source_of(line.operands[1]);
      if (line.computation == "main" && opcode_of(source) == "parameter") features.insert("hazard on a parameter");
      if (line.computation.starts_with("body.") && stem(source) == "s") features.insert("hazard on a body's state");
      if (stem(updated) == "w") features.insert("hazard by a while");
      if (stem(updated) == "r") features.insert("hazard by a conditional");
    }
  }
  return features;
}

TEST(GeneratedPrograms, MixCoversEveryFeature) {
  std::map<std::string_view, int> counts;
  constexpr std::string_view kFeatures[] = {
      " while(", " conditional(", "true_computation=", "branch_computations=", " scatter(", "to_apply=scatter_add",
      "to_apply=scatter_overwrite", " dynamic-update-slice(", " dynamic-slice(", "input_output_alias=", "must-alias",
      "buffer_donor=", " select(", " convert(", " compare(", " broadcast(", " divide(", "{0,1} parameter(",
      "{0,1} transpose(", "{0,1} copy(", "{0,1} add(", " bitcast(", "index=0\n  ROOT"};
  std::map<std::string, int> view_counts;
  int donating = 0;
  for (uint64_t seed = 0; seed < kProgramCount; ++seed) {
    const GeneratedProgram program = generate_program(seed);
    for (const std::string& feature : view_features(program.text)) ++view_counts[feature];
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
  // Views for buffer assignment: each kind of slice and reshape, reader and hazard (see view_features).
  constexpr std::string_view kViewFeatures[] = {
      "vrows", "vrow", "vpart", "vcols", "vstep", "vshape", "vdyn", "reshape [1,N] <-> [N]", "reshape 2-D -> 1-D -> 2-D",
      "slice -> reshape -> slice", "elementwise reader", "dynamic-slice reader", "update of a dynamic-update-slice",
      "update into its own source", "updated in place", "while state", "conditional operand", "entry result",
      "loop body result", "view of a body's state", "clobber_dus", "clobber_scatter", "clobber_self", "clobber_ew",
      "hazard on a parameter", "hazard on a body's state", "hazard by a while", "hazard by a conditional"};
  for (std::string_view feature : kViewFeatures)
    EXPECT_GE(view_counts[std::string(feature)], 50) << "too few generated programs have the view feature '" << feature << "'";
  EXPECT_GE(view_counts["hazard on a parameter"], 150);
  EXPECT_GE(view_counts["hazard on a body's state"], 150);
}

// The block updates (a block read out, updated by a dynamic-update-slice or a one-window
// scatter, written back) are folded often enough that the differential run checks the folds.
TEST(GeneratedPrograms, BlockUpdatesAreFolded) {
  int folded_slices = 0, folded_scatters = 0;
  for (uint64_t seed = 0; seed < kProgramCount; ++seed) {
    StatusOr<std::unique_ptr<Module>> module = parse_module(generate_program(seed).text);
    ASSERT_TRUE(module.ok()) << module.status().to_string();
    StatusOr<OptimizedModule> optimized = optimize_module(std::move(*module));
    ASSERT_TRUE(optimized.ok()) << optimized.status().to_string();
    const std::string text = print_module(*optimized->module);
    folded_slices += text.find("folded_update_slice") != std::string::npos ? 1 : 0;
    folded_scatters += text.find("folded_scatter") != std::string::npos ? 1 : 0;
  }
  EXPECT_GE(folded_slices, 20);
  EXPECT_GE(folded_scatters, 20);
  std::printf("block updates folded in %d of %d programs (dynamic-update-slice), %d (scatter)\n", folded_slices,
              static_cast<int>(kProgramCount), folded_scatters);
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
