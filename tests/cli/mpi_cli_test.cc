// `mpirun -np N insitu run MODULE`: one process per device, collectives over MPI
// (runtime/mpi_communicator.h). The partitioned JAX programs give JAX's results on every rank;
// each fault ends the whole job, within its timeout, with an error naming the rank and the
// collective. Skipped (with a message) in a build without MPI.
#include <gtest/gtest.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "insitu/evaluator/collectives.h"
#include "insitu/support/str.h"
#include "jax_compare.h"

namespace insitu {
namespace {

namespace fs = std::filesystem;
using namespace testing_jax;

struct Job {
  int status = -1;
  std::string output;  // stdout and stderr of every rank
  double seconds = 0;
};

Job mpirun(int ranks, const std::string& arguments) {
#ifdef INSITU_MPIEXEC
  // As root (CI), OpenMPI wants both variables; --oversubscribe: more ranks than cores.
  const std::string command = str_cat("OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1 ",
                                      INSITU_MPIEXEC, " --oversubscribe -np ", ranks, " ", INSITU_BINARY, " run ",
                                      arguments, " 2>&1");
  const auto start = std::chrono::steady_clock::now();
  Job job;
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return job;
  std::array<char, 4096> buffer;
  while (size_t n = fread(buffer.data(), 1, buffer.size(), pipe)) job.output.append(buffer.data(), n);
  const int raw = pclose(pipe);
  job.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
  job.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return job;
#else
  return {};
#endif
}

class MpiCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
#ifndef INSITU_MPIEXEC
    GTEST_SKIP() << "this build has no MPI (apt install libopenmpi-dev openmpi-bin, then rebuild)";
#endif
    dir_ = fs::temp_directory_path() / str_cat("insitu_mpi_test_", ::getpid(), "_",
                                               ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string write(const std::string& name, const std::string& text) {
    std::ofstream(dir_ / name) << text;
    return (dir_ / name).string();
  }
  fs::path dir_;
};

std::string program_arguments(const fs::path& program) {
  std::string arguments = (program / "module.hlo").string();
  for (const std::string& input : numbered_files(program / "device_0", "input"))
    arguments += " --arg " + (program / "device_{device}" / fs::path(input).filename()).string();
  return arguments;
}

TEST_F(MpiCliTest, PartitionedJaxProgramsGiveJaxsResultsOnEveryRank) {
  for (const char* base : {"collectives_mix", "dp_mlp_step", "jit_sharded_mlp_grad", "tp_block", "ring_permute"}) {
    for (const int devices : {2, 4}) {
      const std::string name = str_cat(base, ".", devices);
      const fs::path program = fs::path(INSITU_SOURCE_DIR) / "tests" / "data" / "jax_collectives" / name;
      const fs::path save = dir_ / name;
      Job job = mpirun(devices, program_arguments(program) + " --threads 1 --save " + save.string());
      ASSERT_EQ(job.status, 0) << name << ":\n" << job.output;
      for (int d = 0; d < devices; ++d) {
        const fs::path mine = program / str_cat("device_", d);
        for (const std::string& expected : numbered_files(mine, "output")) {
          StatusOr<Literal> want = read_npy_file(expected);
          StatusOr<Literal> have = read_npy_file((save / str_cat("device_", d) / fs::path(expected).filename()).string());
          ASSERT_TRUE(want.ok() && have.ok()) << expected;
          EXPECT_TRUE(leaf_matches(*have, *want)) << name << " device " << d << " " << expected;
        }
      }
    }
  }
}

// Groups that are not every rank in rank order: the native collectives run on a communicator
// made for each group ({0,2} and {3,1}: member order, not rank order, decides the pieces), with
// the values of the reference evaluator's exchange, and none falls back.
TEST_F(MpiCliTest, CollectivesInGroupsOtherThanTheWorldMatchTheEvaluator) {
  const std::string module = write("groups.hlo", R"(HloModule groups, replica_count=4

add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT r = f32[] add(a, b)
}

ENTRY e {
  x = f32[8] parameter(0)
  r = u32[] replica-id()
  f = f32[] convert(r)
  b = f32[8] broadcast(f), dimensions={}
  m = f32[8] multiply(x, b)
  y = f32[8] add(m, b)
  s = f32[8] all-reduce(y), replica_groups={{0,2},{3,1}}, to_apply=add
  g = f32[16] all-gather(y), replica_groups={{0,2},{3,1}}, dimensions={0}
  c = f32[4] reduce-scatter(y), replica_groups={{0,2},{3,1}}, dimensions={0}, to_apply=add
  a = f32[8] all-to-all(y), replica_groups={{0,2},{3,1}}, dimensions={0}
  k = f32[8] collective-broadcast(y), replica_groups={{0,2},{3,1}}
  ROOT t = (f32[8], f32[16], f32[4], f32[8], f32[8]) tuple(s, g, c, a, k)
}
)");
  Job native = mpirun(4, module + " --threads 1 --save " + (dir_ / "native").string() + " --stats " +
                             (dir_ / "stats.json").string());
  ASSERT_EQ(native.status, 0) << native.output;
  Job reference = mpirun(4, module + " --reference --save " + (dir_ / "reference").string());
  ASSERT_EQ(reference.status, 0) << reference.output;
  for (int d = 0; d < 4; ++d) {
    for (int leaf = 0; leaf < 5; ++leaf) {
      const std::string name = str_cat("device_", d, "/output_", leaf, ".npy");
      StatusOr<Literal> have = read_npy_file((dir_ / "native" / name).string());
      StatusOr<Literal> want = read_npy_file((dir_ / "reference" / name).string());
      ASSERT_TRUE(have.ok() && want.ok()) << name;
      EXPECT_TRUE(*have == *want) << name << ": " << have->to_string() << " vs " << want->to_string();
    }
    std::ifstream stats(dir_ / str_cat("stats.json.rank", d));
    const std::string text((std::istreambuf_iterator<char>(stats)), std::istreambuf_iterator<char>());
    EXPECT_NE(text.find("\"fallback_ops_executed\": 0"), std::string::npos) << "rank " << d << ": " << text;
  }
  // Device 3 gathers its group {3,1} in member order: y3 first (x * 3 + 3, x = 1 at element 0).
  StatusOr<Literal> gathered = read_npy_file((dir_ / "native" / "device_3" / "output_1.npy").string());
  ASSERT_TRUE(gathered.ok());
  EXPECT_EQ(gathered->data<float>()[0], 6.0f);
  EXPECT_EQ(gathered->data<float>()[8], 2.0f);  // then y1 = x * 1 + 1
}

const char* kStuck = R"(HloModule stuck, num_partitions=2

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
  ROOT r = f32[2] BRANCH
}

ENTRY e {
  x = f32[2] parameter(0)
  p = u32[] partition-id()
  i = s32[] convert(p)
  ROOT c = f32[2] conditional(i, x, x), branch_computations={zero, one}
}
)";

std::string stuck_module(const std::string& branch) {
  std::string text = kStuck;
  text.replace(text.find("BRANCH"), 6, branch);
  return text;
}

TEST_F(MpiCliTest, ARankThatNeverArrivesEndsTheJobWithinTheTimeout) {
  const std::string module = write("stuck.hlo", stuck_module("negate(x)"));
  Job job = mpirun(2, module + " --collective-timeout 1 --save " + (dir_ / "saved").string());
  EXPECT_NE(job.status, 0);
  EXPECT_NE(job.output.find("rank 0: collective timed out: rank 0 waited 1 s at all-reduce %r"), std::string::npos)
      << job.output;
  EXPECT_LT(job.seconds, 30);
  EXPECT_FALSE(fs::exists(dir_ / "saved" / "device_0"));
}

TEST_F(MpiCliTest, MismatchedCollectivesNameBothRanks) {
  // Both ranks reach an all-reduce, but different ones: %r in branch zero, %s in branch one.
  std::string text = stuck_module("all-reduce(x), channel_id=2, to_apply=add");
  text.replace(text.rfind("ROOT r ="), 8, "ROOT s =");
  const std::string module = write("mismatch.hlo", text);
  Job job = mpirun(2, module + " --collective-timeout 20");
  EXPECT_NE(job.status, 0);
  EXPECT_NE(job.output.find("mismatched collectives"), std::string::npos) << job.output;
  EXPECT_NE(job.output.find("all-reduce %r"), std::string::npos) << job.output;
  EXPECT_NE(job.output.find("all-reduce %s"), std::string::npos) << job.output;
  EXPECT_LT(job.seconds, 20);  // at once, not at the timeout
}

TEST_F(MpiCliTest, AFailingRankEndsTheWholeJobNamingItself) {
  const fs::path program = fs::path(INSITU_SOURCE_DIR) / "tests" / "data" / "jax_collectives" / "collectives_mix.2";
  // Device 1's second input is missing: rank 1 fails before its first collective; rank 0 waits
  // there until the job is ended.
  const std::string arguments = (program / "module.hlo").string() + " --arg " +
                                (program / "device_{device}" / "input_0.npy").string() + " --arg " +
                                (dir_ / "only_{device}.npy").string();
  fs::copy_file(program / "device_0" / "input_1.npy", dir_ / "only_0.npy");
  Job job = mpirun(2, arguments + " --collective-timeout 60");
  EXPECT_NE(job.status, 0);
  EXPECT_NE(job.output.find("rank 1"), std::string::npos) << job.output;
  EXPECT_NE(job.output.find("only_1.npy"), std::string::npos) << job.output;
  EXPECT_LT(job.seconds, 30);  // ended by the failing rank, not by rank 0's timeout
}

TEST_F(MpiCliTest, AJobOfTheWrongSizeSaysHowManyRanks) {
  const fs::path program = fs::path(INSITU_SOURCE_DIR) / "tests" / "data" / "jax_collectives" / "collectives_mix.4";
  Job job = mpirun(2, program_arguments(program));
  EXPECT_NE(job.status, 0);
  EXPECT_NE(job.output.find("this MPI job has 2 rank(s): run mpirun -np 4"), std::string::npos) << job.output;
}

}  // namespace
}  // namespace insitu
