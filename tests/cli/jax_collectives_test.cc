// Partitioned JAX programs on many devices, in-process, with JAX's results.
// tests/data/jax_collectives/NAME.N/ holds what bench/peers/jax_collectives.py dumped from
// jax/jaxlib 0.12.0.1 on N forced host devices: the per-device module XLA:CPU ran (module.hlo,
// num_partitions=N, Shardy mesh replica groups), each device's inputs (device_D/input_I.npy) and
// JAX's outputs on that device (device_D/output_I.npy). Programs: every collective once, a
// data-parallel MLP step (gradient pmean, donated parameters), a tensor-parallel transformer MLP
// block, a ring of collective-permutes in a loop (all four written with shard_map), and an MLP's
// gradients under jax.jit with shardings (the SPMD partitioner's all-reduces); each on 2 and 4
// devices.
//
// Each runs in the reference evaluator (evaluate_devices) and through insitu's compile path
// (one Executable, one thread per device with an InProcessCommunicator), and every device's
// result equals JAX's (jax_compare.h's tolerances); the runtime runs every collective natively.
#include <gtest/gtest.h>

#include <mutex>
#include <optional>
#include <thread>

#include "cli/arguments.h"
#include "insitu/evaluator/collectives.h"
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

fs::path collectives_dir() { return fs::path(INSITU_SOURCE_DIR) / "tests" / "data" / "jax_collectives"; }

std::vector<std::string> program_names() {
  std::vector<std::string> names;
  std::error_code error;
  for (const auto& entry : fs::directory_iterator(collectives_dir(), error))
    if (entry.is_directory()) names.push_back(entry.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

class JaxCollectivesTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    StatusOr<std::unique_ptr<Module>> parsed = parse_module(read_file(dir() / "module.hlo"));
    ASSERT_TRUE(parsed.ok()) << parsed.status().to_string();
    module_ = std::move(parsed).value();
    ASSERT_TRUE(verify_module(*module_).ok());
    grid_ = device_grid(*module_);
    for (int64_t d = 0; d < grid_.devices(); ++d) {
      StatusOr<std::vector<Literal>> bound = cli::bind_arguments(*module_, numbered_files(device_dir(d), "input"));
      ASSERT_TRUE(bound.ok()) << bound.status().to_string();
      arguments_.push_back(std::move(bound).value());
    }
  }
  fs::path dir() const { return collectives_dir() / GetParam(); }
  fs::path device_dir(int64_t d) const { return dir() / str_cat("device_", d); }

  std::unique_ptr<Module> module_;
  DeviceGrid grid_;
  std::vector<std::vector<Literal>> arguments_;
};

TEST(JaxCollectives, HasEveryProgramOnTwoAndFourDevices) {
  const std::vector<std::string> names = program_names();
  for (const char* program : {"collectives_mix", "dp_mlp_step", "tp_block", "ring_permute", "jit_sharded_mlp_grad"})
    for (const char* n : {"2", "4"}) {
      const std::string name = str_cat(program, ".", n);
      EXPECT_TRUE(std::find(names.begin(), names.end(), name) != names.end()) << name;
    }
}

TEST_P(JaxCollectivesTest, ModuleRunsOnItsDevices) {
  EXPECT_EQ(grid_.devices(), std::stoll(GetParam().substr(GetParam().rfind('.') + 1)));
  EXPECT_GT(grid_.devices(), 1);
}

TEST_P(JaxCollectivesTest, ReferenceEvaluatorMatchesJaxOnEveryDevice) {
  StatusOr<std::vector<Literal>> results = evaluate_devices(*module_, arguments_);
  ASSERT_TRUE(results.ok()) << results.status().to_string();
  for (int64_t d = 0; d < grid_.devices(); ++d) EXPECT_TRUE(matches_jax((*results)[d], device_dir(d))) << "device " << d;
}

TEST_P(JaxCollectivesTest, OptimizedRuntimeMatchesJaxOnEveryDevice) {
  StatusOr<OptimizedModule> optimized = optimize_module(module_->clone());
  ASSERT_TRUE(optimized.ok()) << optimized.status().to_string();
  StatusOr<std::unique_ptr<Executable>> executable = Executable::create(std::move(optimized).value());
  ASSERT_TRUE(executable.ok()) << executable.status().to_string();
  InProcessCommunicator communicator(30);
  std::vector<std::optional<StatusOr<std::vector<BufferHandle>>>> results(grid_.devices());
  std::vector<ExecutionStats> stats(grid_.devices());
  std::vector<std::thread> threads;
  for (int64_t d = 0; d < grid_.devices(); ++d) {
    threads.emplace_back([&, d] {
      DeviceContext context{&communicator, grid_, d};
      std::vector<BufferHandle> handles;
      ExecuteOptions options{.threads = 1, .stats = &stats[d], .device = &context};
      for (const Executable::Argument& argument : (*executable)->arguments()) {
        handles.push_back(*BufferHandle::from_literal(*arguments_[d].at(argument.parameter_number).subliteral(argument.index)));
        options.donate.push_back(argument.aliased_output.has_value());  // as JAX donated them
      }
      results[d] = (*executable)->execute(std::move(handles), options);
      if (!results[d]->ok()) communicator.abort(d, results[d]->status());
    });
  }
  for (std::thread& thread : threads) thread.join();
  const Shape& result_shape = (*executable)->module().entry()->root()->shape();
  std::string fallbacks;
  for (const Instruction* fallback : (*executable)->fallback_instructions()) fallbacks += fallback->name() + " ";
  for (int64_t d = 0; d < grid_.devices(); ++d) {
    ASSERT_TRUE(results[d]->ok()) << "device " << d << ": " << results[d]->status().to_string();
    Literal result(result_shape);
    size_t next = 0;
    result_shape.for_each_leaf([&](const Shape& leaf, const ShapeIndex& index) {
      if (leaf.is_array()) *result.mutable_subliteral(index) = *(**results[d]).at(next++).to_literal();
    });
    EXPECT_TRUE(matches_jax(result, device_dir(d))) << "device " << d;
    // Every collective these programs use runs natively (none through the evaluator).
    EXPECT_EQ(stats[d].fallback_ops_executed, 0) << "device " << d << ": " << fallbacks;
  }
}

std::string test_name(const ::testing::TestParamInfo<std::string>& info) {
  std::string name = info.param;
  std::replace(name.begin(), name.end(), '.', '_');
  return name;
}

INSTANTIATE_TEST_SUITE_P(Programs, JaxCollectivesTest, ::testing::ValuesIn(program_names()), test_name);

}  // namespace
}  // namespace insitu
