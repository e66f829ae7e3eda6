// End-to-end tests of the insitu binary: exit statuses and messages as a user sees them.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "insitu/ir/npy.h"

namespace insitu {
namespace {

namespace fs = std::filesystem;

struct Result {
  int status = -1;
  std::string out;
  std::string err;
};

std::string read_file(const fs::path& path) {
  std::ifstream file(path, std::ios::binary);
  std::ostringstream buffer;
  buffer << file.rdbuf();
  return buffer.str();
}

std::string quote(const std::string& arg) {
  std::string out = "'";
  for (char c : arg) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

class CliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("insitu_cli_test_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Runs the insitu binary with `args`, capturing stdout, stderr and the exit status.
  Result insitu(const std::vector<std::string>& args) {
    std::string command = quote(INSITU_BINARY);
    for (const std::string& arg : args) command += " " + quote(arg);
    command += " >" + quote((dir_ / "stdout").string()) + " 2>" + quote((dir_ / "stderr").string());
    int raw = std::system(command.c_str());
    Result result;
    result.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : 128 + WTERMSIG(raw);
    result.out = read_file(dir_ / "stdout");
    result.err = read_file(dir_ / "stderr");
    return result;
  }

  std::string write(const std::string& name, const std::string& contents) {
    fs::path path = dir_ / name;
    std::ofstream(path, std::ios::binary) << contents;
    return path.string();
  }
  std::string write_npy(const std::string& name, const Literal& literal) {
    std::string path = (dir_ / name).string();
    EXPECT_TRUE(write_npy_file(path, literal).ok());
    return path;
  }

  fs::path dir_;
};

constexpr const char* kAddModule = R"(HloModule add_module

ENTRY main {
  x = f32[2,3] parameter(0)
  pair = (s32[], f32[2,3]) parameter(1)
  y = f32[2,3] get-tuple-element(pair), index=1
  sum = f32[2,3] add(x, y)
  n = s32[] get-tuple-element(pair), index=0
  ROOT out = (f32[2,3], s32[]) tuple(sum, n)
}
)";

TEST_F(CliTest, HelpAndVersion) {
  Result help = insitu({"--help"});
  EXPECT_EQ(help.status, 0);
  EXPECT_NE(help.out.find("Usage: insitu"), std::string::npos) << help.out;
  EXPECT_NE(help.out.find("run"), std::string::npos);
  EXPECT_NE(help.out.find("fmt"), std::string::npos);

  Result run_help = insitu({"run", "--help"});
  EXPECT_EQ(run_help.status, 0);
  for (const char* flag : {"--arg", "--save", "--stats", "--plugin", "--threads", "--reference", "--check-races",
                           "--strict-donation"})
    EXPECT_NE(run_help.out.find(flag), std::string::npos) << flag;

  Result fmt_help = insitu({"fmt", "--help"});
  EXPECT_EQ(fmt_help.status, 0);
  EXPECT_NE(fmt_help.out.find("--short"), std::string::npos);

  Result version = insitu({"--version"});
  EXPECT_EQ(version.status, 0);
  EXPECT_EQ(version.out, "insitu 0.1.0\n");
}

TEST_F(CliTest, UsageErrorsExitWithOne) {
  Result none = insitu({});
  EXPECT_EQ(none.status, 1);
  EXPECT_EQ(none.err.rfind("insitu: error: ", 0), 0u) << none.err;

  Result unknown = insitu({"frobnicate"});
  EXPECT_EQ(unknown.status, 1);
  EXPECT_NE(unknown.err.find("frobnicate"), std::string::npos) << unknown.err;

  std::string module = write("m.hlo", kAddModule);
  Result threads = insitu({"run", module, "--threads", "0"});
  EXPECT_EQ(threads.status, 1);
  EXPECT_NE(threads.err.find("--threads: Value 0 not in range 1 to 1024"), std::string::npos) << threads.err;
}

TEST_F(CliTest, MissingModuleFile) {
  for (const char* command : {"run", "fmt"}) {
    Result result = insitu({command, "/nonexistent/module.hlo"});
    EXPECT_EQ(result.status, 1);
    EXPECT_EQ(result.err, "insitu: error: cannot read '/nonexistent/module.hlo': No such file or directory\n");
    EXPECT_EQ(result.out, "");
  }
}

TEST_F(CliTest, UnparseableModuleReportsLineAndColumn) {
  std::string module = write("bad.hlo",
                             "HloModule bad\n"
                             "\n"
                             "ENTRY main {\n"
                             "  p = f32[4] parameter(0)\n"
                             "  ROOT r = f32[4] frobnicate(p)\n"
                             "}\n");
  for (const char* command : {"run", "fmt"}) {
    Result result = insitu({command, module});
    EXPECT_EQ(result.status, 1);
    EXPECT_EQ(result.err.rfind(module + ":5:", 0), 0u) << result.err;
    EXPECT_NE(result.err.find(": error: "), std::string::npos) << result.err;
    EXPECT_NE(result.err.find("frobnicate"), std::string::npos) << result.err;
  }
}

// StableHLO text (what jax.jit(f).lower(x).as_text() prints) is a module every command takes: fmt
// prints it as HLO (--to hlo, the only form written), run runs it, and a bad op is an error at the
// text's line and column.
TEST_F(CliTest, StablehloTextRunsAndPrintsAsHlo) {
  std::string module = write("step.mlir",
                             "module @step {\n"
                             "  func.func public @main(%arg0: tensor<4xf32>) -> tensor<4xf32> {\n"
                             "    %0 = stablehlo.add %arg0, %arg0 : tensor<4xf32>\n"
                             "    return %0 : tensor<4xf32>\n"
                             "  }\n"
                             "}\n");
  Result printed = insitu({"fmt", module, "--to", "hlo"});
  EXPECT_EQ(printed.status, 0) << printed.err;
  EXPECT_EQ(printed.out.rfind("HloModule step", 0), 0u) << printed.out;
  EXPECT_NE(printed.out.find("add("), std::string::npos) << printed.out;
  EXPECT_EQ(insitu({"fmt", module, "--to", "mlir"}).status, 1);
  Result ran = insitu({"run", module});
  EXPECT_EQ(ran.status, 0) << ran.err;
  EXPECT_EQ(ran.out.rfind("f32[4]", 0), 0u) << ran.out;
  std::string bad = write("bad.mlir",
                          "module {\n"
                          "  func.func public @main(%arg0: tensor<4xf32>) -> tensor<4xf32> {\n"
                          "    %0 = stablehlo.frobnicate %arg0 : tensor<4xf32>\n"
                          "    return %0 : tensor<4xf32>\n"
                          "  }\n"
                          "}\n");
  Result error = insitu({"run", bad});
  EXPECT_EQ(error.status, 1);
  EXPECT_EQ(error.err.rfind(bad + ":3:10: error: ", 0), 0u) << error.err;
  EXPECT_NE(error.err.find("stablehlo.frobnicate"), std::string::npos) << error.err;
}

TEST_F(CliTest, WrongArgumentShapeNamesParameterAndShapes) {
  std::string module = write("m.hlo", kAddModule);
  std::string x = write_npy("x.npy", Literal(Shape::array(PrimitiveType::kF32, {2, 3})));
  std::string n = write_npy("n.npy", Literal::scalar<int32_t>(4));
  std::string wrong = write_npy("wrong.npy", Literal(Shape::array(PrimitiveType::kF32, {3, 2})));
  Result result = insitu({"run", module, "--arg", x, "--arg", n, "--arg", wrong});
  EXPECT_EQ(result.status, 1);
  EXPECT_EQ(result.err, "insitu: error: --arg 3 (" + wrong +
                            "): parameter 1 {1} expects f32[2,3] but the file holds f32[3,2]\n");

  std::string wrong_type = write_npy("wrong_type.npy", Literal(Shape::array(PrimitiveType::kF64, {2, 3})));
  Result type_result = insitu({"run", module, "--arg", wrong_type, "--arg", n, "--arg", x});
  EXPECT_EQ(type_result.status, 1);
  EXPECT_EQ(type_result.err, "insitu: error: --arg 1 (" + wrong_type +
                                 "): parameter 0 expects f32[2,3] but the file holds f64[2,3]\n");
}

TEST_F(CliTest, WrongArgumentCountListsTheLeaves) {
  std::string module = write("m.hlo", kAddModule);
  std::string x = write_npy("x.npy", Literal(Shape::array(PrimitiveType::kF32, {2, 3})));
  Result result = insitu({"run", module, "--arg", x});
  EXPECT_EQ(result.status, 1);
  EXPECT_EQ(result.err,
            "insitu: error: the entry computation takes 3 array arguments (parameter 0: f32[2,3], "
            "parameter 1 {0}: s32[], parameter 1 {1}: f32[2,3]) but 1 --arg file was given\n");
}

TEST_F(CliTest, UnreadableNpyIsAnError) {
  std::string module = write("m.hlo", kAddModule);
  std::string junk = write("junk.npy", "this is not numpy");
  std::string x = write_npy("x.npy", Literal(Shape::array(PrimitiveType::kF32, {2, 3})));
  Result result = insitu({"run", module, "--arg", x, "--arg", junk, "--arg", x});
  EXPECT_EQ(result.status, 1);
  EXPECT_EQ(result.err, "insitu: error: --arg 2 (" + junk +
                            "): not a .npy file (the magic string \\x93NUMPY is missing)\n");
  Result missing = insitu({"run", module, "--arg", x, "--arg", "/nonexistent.npy", "--arg", x});
  EXPECT_EQ(missing.status, 1);
  EXPECT_NE(missing.err.find("--arg 2 (/nonexistent.npy): cannot read '/nonexistent.npy'"), std::string::npos)
      << missing.err;
}

TEST_F(CliTest, SaveWritesReadableNpyAndStatsWritesJson) {
  std::string module = write("m.hlo", kAddModule);
  std::string x = write_npy("x.npy", Literal::from_values<float>({2, 3}, {1, 2, 3, 4, 5, 6}));
  std::string n = write_npy("n.npy", Literal::scalar<int32_t>(42));
  std::string y = write_npy("y.npy", Literal::from_values<float>({2, 3}, {10, 20, 30, 40, 50, 60}));
  fs::path save = dir_ / "results" / "nested";
  fs::path stats = dir_ / "stats.json";
  Result result = insitu({"run", module, "--arg", x, "--arg", n, "--arg", y, "--save", save.string(), "--stats",
                          stats.string(), "--reference"});
  ASSERT_EQ(result.status, 0) << result.err;
  StatusOr<Literal> out0 = read_npy_file((save / "output_0.npy").string());
  ASSERT_TRUE(out0.ok()) << out0.status().to_string();
  EXPECT_EQ(*out0, Literal::from_values<float>({2, 3}, {11, 22, 33, 44, 55, 66}));
  StatusOr<Literal> out1 = read_npy_file((save / "output_1.npy").string());
  ASSERT_TRUE(out1.ok()) << out1.status().to_string();
  EXPECT_EQ(*out1, Literal::scalar<int32_t>(42));
  EXPECT_FALSE(fs::exists(save / "output_2.npy"));
  EXPECT_FALSE(fs::exists(save / "output_0.npy.partial"));

  std::string json = read_file(stats);
  for (const char* key : {"\"copies_executed\": 0", "\"bytes_copied\": 0", "\"peak_memory_bytes\": 80",
                          "\"compile_seconds\": ", "\"run_seconds\": "})
    EXPECT_NE(json.find(key), std::string::npos) << key << " in " << json;
}

TEST_F(CliTest, DefaultArgumentsAreDeterministic) {
  std::string module = write("id.hlo",
                             "HloModule id\n\nENTRY main {\n  a = s32[9] parameter(0)\n  b = pred[3] parameter(1)\n"
                             "  ROOT t = (s32[9], pred[3]) tuple(a, b)\n}\n");
  fs::path save = dir_ / "out";
  Result result = insitu({"run", module, "--save", save.string()});
  ASSERT_EQ(result.status, 0) << result.err;
  EXPECT_EQ(*read_npy_file((save / "output_0.npy").string()), Literal::vector<int32_t>({1, 2, 3, 4, 5, 6, 7, 1, 2}));
  EXPECT_EQ(*read_npy_file((save / "output_1.npy").string()), Literal::vector<bool>({true, false, true}));
  Result again = insitu({"run", module});
  EXPECT_EQ(again.out, result.out);
}

TEST_F(CliTest, SeedCustomCallWithoutKernelIsAClearError) {
  Result result = insitu({"run", std::string(INSITU_SEED_DIR) + "/ir_to_hlo.hlo"});
  EXPECT_EQ(result.status, 1) << result.out << result.err;
  EXPECT_NE(result.err.find("no kernel is registered for target \"tpu_custom_call\""), std::string::npos)
      << result.err;
  EXPECT_EQ(result.err.find("internal error"), std::string::npos) << result.err;
}

TEST_F(CliTest, BadPluginIsAClearError) {
  std::string module = write("m.hlo", kAddModule);
  Result missing = insitu({"run", module, "--plugin", (dir_ / "nope.so").string()});
  EXPECT_EQ(missing.status, 1);
  EXPECT_EQ(missing.err, "insitu: error: cannot load plugin '" + (dir_ / "nope.so").string() + "': no such file\n");
  std::string not_elf = write("fake.so", "not a library");
  Result bad = insitu({"run", module, "--plugin", not_elf});
  EXPECT_EQ(bad.status, 1);
  EXPECT_NE(bad.err.find("cannot load plugin '" + not_elf + "': "), std::string::npos) << bad.err;
}

// A run that fails writes nothing to --save; one that cannot write all its outputs leaves none.
TEST_F(CliTest, FailedRunsSaveNothing) {
  const std::string forever = write("forever.hlo", R"(HloModule forever
body {
  s = s32[] parameter(0)
  one = s32[] constant(1)
  ROOT n = s32[] add(s, one)
}
cond {
  s = s32[] parameter(0)
  ROOT t = pred[] constant(true)
}
ENTRY main {
  a = s32[] parameter(0)
  ROOT w = s32[] while(a), condition=cond, body=body
}
)");
  const fs::path save = dir_ / "saved";
  Result timed_out = insitu({"run", forever, "--timeout", "0.1", "--save", save.string()});
  EXPECT_EQ(timed_out.status, 1);
  EXPECT_NE(timed_out.err.find("deadline"), std::string::npos) << timed_out.err;
  EXPECT_FALSE(fs::exists(save));

  // output_1.npy is a directory, so the second output cannot be written: neither is kept.
  const std::string module = write("m.hlo", kAddModule);
  const fs::path blocked = dir_ / "blocked";
  fs::create_directories(blocked / "output_1.npy.partial");
  Result partial = insitu({"run", module, "--save", blocked.string()});
  EXPECT_EQ(partial.status, 1);
  EXPECT_FALSE(fs::exists(blocked / "output_0.npy"));
  EXPECT_FALSE(fs::exists(blocked / "output_0.npy.partial"));
}

// Inputs that claim more than they hold, or ask for more than the machine gives, are clear
// errors (exit 1), found before anything large is allocated or read.
TEST_F(CliTest, InputsThatClaimTooMuchAreClearErrors) {
  const std::string module = write("negate.hlo", "HloModule n\nENTRY main {\n  p = f32[4] parameter(0)\n"
                                                 "  ROOT n = f32[4] negate(p)\n}\n");
  Result threads = insitu({"run", module, "--threads", "4096"});
  EXPECT_EQ(threads.status, 1);
  EXPECT_NE(threads.err.find("--threads: Value 4096 not in range 1 to 1024"), std::string::npos) << threads.err;

  // A .npy header claiming 10^11 elements over 16 bytes of data.
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (100000000000,), }";
  header.append(118 - header.size(), ' ');
  header += '\n';
  std::string npy = std::string("\x93NUMPY\x01\x00", 8) + static_cast<char>(header.size() & 0xff) +
                    static_cast<char>(header.size() >> 8) + header + std::string(16, '\0');
  Result claims = insitu({"run", module, "--arg", write("claims.npy", npy)});
  EXPECT_EQ(claims.status, 1);
  EXPECT_NE(claims.err.find("truncated .npy data: f32[100000000000] needs 400000000000 bytes but the file holds 16"),
            std::string::npos)
      << claims.err;

  // A file that never ends is read up to the cap, then refused.
  ::setenv("INSITU_MAX_INPUT_BYTES", "1048576", 1);
  Result endless = insitu({"fmt", "/dev/zero"});
  ::unsetenv("INSITU_MAX_INPUT_BYTES");
  EXPECT_EQ(endless.status, 1);
  EXPECT_NE(endless.err.find("cannot read '/dev/zero': it is larger than 1048576 bytes (set INSITU_MAX_INPUT_BYTES"),
            std::string::npos)
      << endless.err;

  // A shared library that registers no kernels is not a plugin.
  Result not_plugin = insitu({"run", module, "--plugin", "libm.so.6"});
  EXPECT_EQ(not_plugin.status, 1);
  EXPECT_NE(not_plugin.err.find("cannot load plugin 'libm.so.6': it registers no kernels, so it is not an insitu "
                                "plugin"),
            std::string::npos)
      << not_plugin.err;
}

TEST_F(CliTest, FmtRoundTrips) {
  std::string module = write("m.hlo", kAddModule);
  Result first = insitu({"fmt", module});
  ASSERT_EQ(first.status, 0) << first.err;
  EXPECT_NE(first.out.find("%sum = f32[2,3]{1,0} add("), std::string::npos) << first.out;
  std::string printed = write("printed.hlo", first.out);
  Result second = insitu({"fmt", printed});
  ASSERT_EQ(second.status, 0) << second.err;
  EXPECT_EQ(second.out, first.out);

  Result short_form = insitu({"fmt", module, "--short"});
  ASSERT_EQ(short_form.status, 0) << short_form.err;
  EXPECT_EQ(short_form.out.find("%"), std::string::npos) << short_form.out;
  EXPECT_NE(short_form.out.find("add(x, y)"), std::string::npos) << short_form.out;
}

}  // namespace
}  // namespace insitu

namespace insitu {
namespace {

// A partitioned JAX program (tests/data/jax_collectives) from the command line: every device in
// this process, each with its own --arg files ({device}), its result under its own heading and
// in DIR/device_D when saved.
TEST_F(CliTest, RunsEveryDeviceOfAPartitionedModule) {
  const fs::path program = fs::path(INSITU_SOURCE_DIR) / "tests" / "data" / "jax_collectives" / "collectives_mix.2";
  const std::string inputs = (program / "device_{device}").string();
  const fs::path save = dir_ / "saved";
  for (const char* mode : {"--threads=1", "--reference"}) {
    fs::remove_all(save);
    Result run = insitu({"run", (program / "module.hlo").string(), "--arg", inputs + "/input_0.npy", "--arg",
                         inputs + "/input_1.npy", "--save", save.string(), mode});
    ASSERT_EQ(run.status, 0) << run.err;
    EXPECT_NE(run.out.find("device 0 (replica 0, partition 0):"), std::string::npos) << run.out;
    EXPECT_NE(run.out.find("device 1 (replica 0, partition 1):"), std::string::npos) << run.out;
    for (int d = 0; d < 2; ++d)
      for (int i = 0; i < 6; ++i) {
        const fs::path saved = save / ("device_" + std::to_string(d)) / ("output_" + std::to_string(i) + ".npy");
        ASSERT_TRUE(fs::exists(saved)) << saved;
        EXPECT_EQ(read_file(saved), read_file(program / ("device_" + std::to_string(d)) /
                                              ("output_" + std::to_string(i) + ".npy")))
            << mode << " device " << d << " output " << i;  // this program's results are exact
      }
  }
}

TEST_F(CliTest, ACollectiveThatNeverCompletesEndsWithinItsTimeout) {
  const std::string module = write("stuck.hlo", R"(HloModule stuck, num_partitions=2

add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT r = f32[] add(a, b)
}

zero {
  x = f32[2] parameter(0)
  ROOT r = f32[2] all-reduce(x), channel_id=1, to_apply=add
}

one {
  x = f32[2] parameter(0)
  ROOT r = f32[2] negate(x)
}

ENTRY e {
  x = f32[2] parameter(0)
  p = u32[] partition-id()
  i = s32[] convert(p)
  ROOT c = f32[2] conditional(i, x, x), branch_computations={zero, one}
}
)");
  const fs::path save = dir_ / "saved";
  Result run = insitu({"run", module, "--collective-timeout", "0.2", "--save", save.string()});
  EXPECT_EQ(run.status, 1);
  EXPECT_NE(run.err.find("collective timed out: device 0 waited 0.2 s at all-reduce %r for device(s) 1"),
            std::string::npos)
      << run.err;
  EXPECT_FALSE(fs::exists(save));  // nothing written for any device
}

}  // namespace
}  // namespace insitu

namespace insitu {
namespace {

// --device cuda runs on GPU 0 through the driver; without one, the run says why (no result,
// exit 1), never falls back to the CPU.
TEST_F(CliTest, RunOnCudaRunsOrSaysWhyNot) {
  const std::string module = write("add.hlo", R"(HloModule add
ENTRY main {
  a = f32[4] parameter(0)
  ROOT b = f32[4] add(a, a)
}
)");
  Result result = insitu({"run", module, "--device", "cuda"});
  if (result.status == 0) {
    EXPECT_NE(result.out.find("f32[4] {2, 4, 6, 8}"), std::string::npos) << result.out;
  } else {
    EXPECT_EQ(result.status, 1);
    EXPECT_TRUE(result.err.find("CUDA") != std::string::npos || result.err.find("GPU") != std::string::npos)
        << result.err;
    EXPECT_EQ(result.out, "");
  }
  Result unknown = insitu({"run", module, "--device", "tpu"});
  EXPECT_NE(unknown.status, 0);
  // A module for many devices is refused, not run on the CPU instead.
  const std::string replicated = write("replicated.hlo", R"(HloModule add, replica_count=2
ENTRY main {
  a = f32[4] parameter(0)
  ROOT b = f32[4] add(a, a)
}
)");
  Result many = insitu({"run", replicated, "--device", "cuda"});
  EXPECT_EQ(many.status, 1);
  EXPECT_NE(many.err.find("many devices runs on the CPU only"), std::string::npos) << many.err;
  EXPECT_EQ(many.out, "");
}

}  // namespace
}  // namespace insitu
