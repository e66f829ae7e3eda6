// Registration validation, duplicate names, races (at the evaluator's first call, at the runtime's
// create), and the CLI with the plugin.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "insitu/kernel/bindings.h"
#include "insitu/kernel/grid_executor.h"
#include "insitu/kernel/registry.h"
#include "insitu/support/str.h"
#include "tests/kernel/kernel_test_util.h"

namespace insitu {
namespace {

KernelSpec simple_spec(std::string name) {
  KernelSpec spec;
  spec.name = std::move(name);
  spec.in_specs.resize(1);
  spec.out_specs.resize(1);
  spec.body = [](const KernelContext&, KernelRefs&) {};
  return spec;
}

void expect_error(const Status& status, std::string_view fragment) {
  ASSERT_FALSE(status.ok()) << "expected an error containing: " << fragment;
  EXPECT_NE(status.message().find(fragment), std::string::npos) << status.message();
}

TEST(KernelRegistry, RejectsGridRankMismatchingDimensionSemantics) {
  KernelSpec spec = simple_spec("bad_semantics");
  spec.grid = {2, 2};
  spec.dimension_semantics = {DimensionSemantics::kParallel};
  expect_error(register_kernel(spec),
               "kernel \"bad_semantics\": the grid has rank 2 but dimension_semantics has 1 entries");
  EXPECT_EQ(CustomCallTable::global().find("bad_semantics"), nullptr);
}

TEST(KernelRegistry, RejectsAliasesOutOfRangeAndBlockRankMismatch) {
  KernelSpec spec = simple_spec("bad_alias");
  spec.input_output_aliases = {{1, 0}};
  expect_error(register_kernel(spec), "input_output_aliases entry (1, 0) is out of range (1 inputs, 1 outputs)");
  KernelSpec blocks = simple_spec("bad_block_rank");
  blocks.out_shapes = {Shape::array(PrimitiveType::kF32, {4, 4})};
  blocks.out_specs[0].block_shape = {2};
  expect_error(register_kernel(blocks), "output 0 (f32[4,4]) has a BlockSpec with block_shape of rank 1");
  KernelSpec counts = simple_spec("bad_counts");
  counts.out_shapes = {Shape::array(PrimitiveType::kF32, {4}), Shape::array(PrimitiveType::kF32, {4})};
  expect_error(register_kernel(counts), "declares 2 out_shapes but 1 out_specs; give one BlockSpec per output");
}

TEST(KernelRegistry, AliasedOperandsNeedIdenticalShapeAndDtype) {
  KernelSpec spec = simple_spec("alias_types");
  spec.input_output_aliases = {{0, 0}};
  std::vector<float> a(4);
  std::vector<int32_t> b(4);
  GridOperand input{reinterpret_cast<uint8_t*>(a.data()), PrimitiveType::kF32, {4}};
  GridOperand output{reinterpret_cast<uint8_t*>(b.data()), PrimitiveType::kS32, {4}};
  expect_error(check_kernel_call(spec, {&input, 1}, {&output, 1}),
               "kernel \"alias_types\": input 0 (f32[4]) is aliased to output 0 (s32[4]); aliased operands need "
               "identical shape and dtype");
}

TEST(KernelRegistry, DuplicateNamesNameBothOrigins) {
  ASSERT_TRUE(register_kernel(simple_spec("twice"), "libfirst.so").ok());
  expect_error(register_kernel(simple_spec("twice"), "libsecond.so"),
               "custom-call target \"twice\" is registered twice: by libfirst.so and by libsecond.so");
  EXPECT_EQ(CustomCallTable::global().find("twice")->origin, "libfirst.so");
}

// Output block i writes input block i + 1 of the aliased buffer.
KernelSpec shift_spec(std::string name, DimensionSemantics semantics) {
  KernelSpec spec = simple_spec(std::move(name));
  spec.grid = {4};
  spec.dimension_semantics = {semantics};
  spec.in_specs[0] = BlockSpec{{2}, [](std::span<const int64_t> g) { return std::vector<int64_t>{g[0]}; }};
  spec.out_specs[0] = BlockSpec{{2}, [](std::span<const int64_t> g) { return std::vector<int64_t>{(g[0] + 1) % 4}; }};
  spec.input_output_aliases = {{0, 0}};
  spec.body = [](const KernelContext&, KernelRefs& refs) {
    BlockRef<int32_t> x = refs.input<int32_t>(0), y = refs.output<int32_t>(0);
    for (int64_t i = 0; i < 2; ++i) y(i) = x(i) + 1;
  };
  return spec;
}

std::string shift_module(std::string_view target) {
  return str_cat("HloModule shift, input_output_alias={ {}: (0, {}, may-alias) }\nENTRY main {\n"
                 "  p = s32[8]{0} parameter(0)\n  ROOT r = s32[8]{0} custom-call(p), custom_call_target=\"",
                 target, "\", output_to_operand_aliasing={{}: (0, {})}\n}\n");
}

TEST(KernelRegistry, ParallelShiftIsRejectedInEvaluatorAndRuntime) {
  ASSERT_TRUE(register_kernel(shift_spec("shift_par", DimensionSemantics::kParallel)).ok());
  std::vector<Literal> arguments = {Literal::from_values<int32_t>({8}, {0, 1, 2, 3, 4, 5, 6, 7})};
  StatusOr<Literal> evaluated = kernel_testing::evaluate_text(shift_module("shift_par"), arguments);
  expect_error(evaluated.status(), "kernel \"shift_par\": grid steps (3) and (0) race");
  kernel_testing::RuntimeRun run = kernel_testing::run_text(shift_module("shift_par"), arguments, 2, {true});
  expect_error(run.status, "step (3) writes output 0 block (0) and step (0) reads input 0 block (0)");
}

// The runtime prepares a custom call's kernel (specialize, validate, race-check) once, at
// Executable::create: the race is reported before any call, so no argument is touched.
TEST(KernelRegistry, RuntimeRejectsARacingKernelAtCreateNotAtCall) {
  ASSERT_TRUE(register_kernel(shift_spec("shift_par_create", DimensionSemantics::kParallel)).ok());
  StatusOr<OptimizedModule> optimized = optimize_module(kernel_testing::parse_or_die(shift_module("shift_par_create")));
  ASSERT_TRUE(optimized.ok()) << optimized.status().to_string();
  StatusOr<std::unique_ptr<Executable>> executable = Executable::create(std::move(*optimized));
  expect_error(executable.status(), "kernel \"shift_par_create\": grid steps (3) and (0) race");
  EXPECT_TRUE(executable.status().location().valid()) << executable.status().to_string();
}

// The static race check is remembered per kernel spec and shapes, not per name: a racing kernel
// that shares its name with a race-free one of another table (another plugin, another
// registry) is still checked. (Keyed by name and shapes, the second was never checked.)
TEST(KernelRegistry, RaceCheckIsPerKernelNotPerName) {
  auto race_free = std::make_shared<const KernelSpec>(shift_spec("same_name", DimensionSemantics::kSequential));
  auto racing = std::make_shared<const KernelSpec>(shift_spec("same_name", DimensionSemantics::kParallel));
  std::vector<GridOperand> operands = {GridOperand{nullptr, PrimitiveType::kS32, {8}}};
  EXPECT_TRUE(prepare_kernel_call(race_free, operands, operands).ok());
  StatusOr<std::shared_ptr<const KernelSpec>> prepared = prepare_kernel_call(racing, operands, operands);
  ASSERT_FALSE(prepared.ok());
  expect_error(prepared.status(), "kernel \"same_name\": grid steps (3) and (0) race");
  EXPECT_TRUE(prepare_kernel_call(race_free, operands, operands).ok());  // the first one's pass is kept
}

// A body that misuses its blocks fails that call with an error naming the kernel, the grid
// step and the misuse (in the evaluator and in the runtime, on 1 and 2 threads); it used to
// abort the process.
TEST(KernelRegistry, BodyMisuseIsAnErrorOfItsGridStepNotACrash) {
  KernelSpec past_end = shift_spec("misuse_index", DimensionSemantics::kSequential);
  past_end.out_specs[0].index_map = [](std::span<const int64_t> g) { return std::vector<int64_t>{g[0]}; };
  past_end.body = [](const KernelContext& context, KernelRefs& refs) {
    BlockRef<int32_t> y = refs.output<int32_t>(0);
    y(context.program_id(0) == 2 ? 2 : 0) = 1;  // the block has 2 elements
  };
  KernelSpec wrong_type = shift_spec("misuse_type", DimensionSemantics::kSequential);
  wrong_type.out_specs[0].index_map = past_end.out_specs[0].index_map;
  wrong_type.body = [](const KernelContext&, KernelRefs& refs) { (void)refs.input<float>(0); };
  ASSERT_TRUE(register_kernel(std::move(past_end)).ok());
  ASSERT_TRUE(register_kernel(std::move(wrong_type)).ok());
  std::vector<Literal> arguments = {Literal::from_values<int32_t>({8}, {0, 1, 2, 3, 4, 5, 6, 7})};
  const std::pair<const char*, const char*> cases[] = {
      {"misuse_index", "kernel \"misuse_index\", grid step (2): block index 2 is out of range in dim 0"},
      {"misuse_type", "kernel \"misuse_type\", grid step (0): input 0 is s32, the body asked for f32"}};
  for (const auto& [name, message] : cases) {
    StatusOr<Literal> evaluated = kernel_testing::evaluate_text(shift_module(name), arguments);
    expect_error(evaluated.status(), message);
    for (int threads : {1, 2}) {
      kernel_testing::RuntimeRun run = kernel_testing::run_text(shift_module(name), arguments, threads, {true});
      expect_error(run.status, message);
    }
  }
}

TEST(KernelRegistry, SequentialShiftRunsInGridOrderEverywhere) {
  ASSERT_TRUE(register_kernel(shift_spec("shift_seq", DimensionSemantics::kSequential)).ok());
  std::vector<Literal> arguments = {Literal::from_values<int32_t>({8}, {0, 0, 0, 0, 0, 0, 0, 0})};
  // Step k reads block k (written by step k-1) and writes block k+1; step 3 wraps to block 0.
  const Literal expected = Literal::from_values<int32_t>({8}, {4, 4, 1, 1, 2, 2, 3, 3});
  StatusOr<Literal> evaluated = kernel_testing::evaluate_text(shift_module("shift_seq"), arguments);
  ASSERT_TRUE(evaluated.ok()) << evaluated.status().to_string();
  EXPECT_TRUE(*evaluated == expected) << evaluated->to_string();
  for (int threads : {1, 2}) {
    kernel_testing::RuntimeRun run = kernel_testing::run_text(shift_module("shift_seq"), arguments, threads, {true});
    ASSERT_TRUE(run.status.ok()) << run.status.to_string();
    EXPECT_TRUE(run.results[0] == expected) << run.results[0].to_string();
  }
}

// The CLI with the example plugin.
struct CommandResult {
  int exit_code;
  std::string output;
};

CommandResult run_command(const std::string& command) {
  CommandResult result{-1, ""};
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return result;
  char buffer[4096];
  while (size_t n = fread(buffer, 1, sizeof(buffer), pipe)) result.output.append(buffer, n);
  result.exit_code = WEXITSTATUS(pclose(pipe));
  return result;
}

std::string write_temp(const std::string& name, const std::string& text) {
  const std::filesystem::path path = std::filesystem::temp_directory_path() / ("insitu_kernel_test_" + name);
  std::ofstream(path) << text;
  return path.string();
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

TEST(KernelPlugin, RunsPlusOneFromHloWithAndWithoutAliasing) {
  const std::string plugin = INSITU_EXAMPLES_PLUGIN;
  const std::string aliased = write_temp("aliased.hlo", R"(HloModule plus, input_output_alias={ {}: (0, {}, must-alias) }
ENTRY main {
  p = s32[4]{0} parameter(0)
  ROOT r = s32[4]{0} custom-call(p), custom_call_target="plus_one", output_to_operand_aliasing={{}: (0, {})}
})");
  const std::string plain = write_temp("plain.hlo", R"(HloModule plus
ENTRY main {
  p = f32[4]{0} parameter(0)
  ROOT r = f32[4]{0} custom-call(p), custom_call_target="plus_one"
})");
  const std::string stats = std::filesystem::temp_directory_path() / "insitu_kernel_test_stats.json";
  CommandResult run = run_command(str_cat(INSITU_BINARY, " run --threads 2 --plugin ", plugin, " --stats ", stats, " ", aliased));
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_EQ(run.output, "s32[4] {2, 3, 4, 5}\n");  // default arguments are (i % 7) + 1
  EXPECT_NE(read_file(stats).find("\"bytes_copied\": 0,"), std::string::npos) << read_file(stats);
  run = run_command(str_cat(INSITU_BINARY, " run --plugin ", plugin, " --stats ", stats, " ", plain));
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_EQ(run.output, "f32[4] {2, 3, 4, 5}\n");
  EXPECT_NE(read_file(stats).find("\"bytes_copied\": 16,"), std::string::npos) << read_file(stats);
  run = run_command(str_cat(INSITU_BINARY, " run --reference --check-races --plugin ", plugin, " ", aliased));
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_EQ(run.output, "s32[4] {2, 3, 4, 5}\n");
}

TEST(KernelPlugin, TwoPluginsRegisteringOneNameIsAnErrorNamingBoth) {
  const std::string plugin = INSITU_EXAMPLES_PLUGIN;
  const std::string copy = (std::filesystem::temp_directory_path() / "insitu_kernel_test_copy.so").string();
  std::filesystem::copy_file(plugin, copy, std::filesystem::copy_options::overwrite_existing);
  const std::string module = write_temp("dup.hlo", "HloModule m\nENTRY main {\n  ROOT p = s32[2]{0} parameter(0)\n}\n");
  CommandResult run = run_command(str_cat(INSITU_BINARY, " run --plugin ", plugin, " --plugin ", copy, " ", module));
  EXPECT_NE(run.exit_code, 0);
  EXPECT_NE(run.output.find(str_cat("custom-call target \"plus_one\" is registered twice: by ", plugin, " and by ", copy)),
            std::string::npos)
      << run.output;
}

}  // namespace
}  // namespace insitu
