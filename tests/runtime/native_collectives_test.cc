// The runtime's native collectives (Executor::run_reduce_scatter, run_all_to_all,
// run_collective_permute, run_device_id, the combined all-reduce) equal the reference evaluator
// bit for bit on every device, and run without the evaluator fallback; the forms they do not
// take (pieces that are not byte ranges) still run, through the fallback. Devices are threads
// over an InProcessCommunicator (the MPI path is tests/cli/mpi_cli_test.cc).
#include <gtest/gtest.h>

#include <optional>
#include <thread>

#include "insitu/evaluator/collectives.h"
#include "insitu/ir/parser.h"
#include "insitu/passes/optimize.h"
#include "insitu/runtime/executable.h"
#include "insitu/support/str.h"

namespace insitu {
namespace {

struct DeviceResult {
  Literal value;
  ExecutionStats stats;
  std::vector<const uint8_t*> inputs;    // the arguments' data, as passed
  std::vector<const uint8_t*> outputs;   // the results' data
};

// Device d's argument i: element e is (d + 1) * 100 + i * 10 + e, in the parameter's type.
Literal argument(const Shape& shape, int64_t d, int64_t i) {
  Literal value(shape);
  for (int64_t e = 0; e < value.element_count(); ++e) {
    const double v = static_cast<double>((d + 1) * 100 + i * 10 + e);
    if (shape.element_type() == PrimitiveType::kF32) value.data<float>()[e] = static_cast<float>(v);
    if (shape.element_type() == PrimitiveType::kS32) value.data<int32_t>()[e] = static_cast<int32_t>(v);
  }
  return value;
}

class NativeCollectivesTest : public ::testing::Test {
 protected:
  // Parses `text`, evaluates it on every device (the reference) and runs it optimized, one
  // thread per device; every device's result must equal the reference's.
  void run(const std::string& text, bool donate = false) {
    StatusOr<std::unique_ptr<Module>> module = parse_module(text);
    ASSERT_TRUE(module.ok()) << module.status().to_string();
    const DeviceGrid grid = device_grid(**module);
    std::vector<std::vector<Literal>> arguments(grid.devices());
    for (int64_t d = 0; d < grid.devices(); ++d)
      for (const Instruction* parameter : (*module)->entry()->parameters())
        arguments[d].push_back(argument(parameter->shape(), d, parameter->parameter_number));
    StatusOr<std::vector<Literal>> reference = evaluate_devices(**module, arguments);
    ASSERT_TRUE(reference.ok()) << reference.status().to_string();

    StatusOr<OptimizedModule> optimized = optimize_module(std::move(module).value());
    ASSERT_TRUE(optimized.ok()) << optimized.status().to_string();
    StatusOr<std::unique_ptr<Executable>> executable = Executable::create(std::move(optimized).value());
    ASSERT_TRUE(executable.ok()) << executable.status().to_string();
    fallbacks_ = (*executable)->fallback_instructions().size();
    InProcessCommunicator communicator(30);
    results_.assign(grid.devices(), {});
    std::vector<std::optional<Status>> failures(grid.devices());
    std::vector<std::thread> threads;
    for (int64_t d = 0; d < grid.devices(); ++d) {
      threads.emplace_back([&, d] {
        DeviceContext context{&communicator, grid, d};
        std::vector<BufferHandle> handles;
        ExecuteOptions options{.threads = 1, .stats = &results_[d].stats, .device = &context};
        for (Literal& value : arguments[d]) {
          handles.push_back(*BufferHandle::from_literal(value));
          results_[d].inputs.push_back(handles.back().data());
          options.donate.push_back(donate);
        }
        StatusOr<std::vector<BufferHandle>> out = (*executable)->execute(std::move(handles), options);
        if (!out.ok()) {
          failures[d] = out.status();
          communicator.abort(d, out.status());
          return;
        }
        const Shape& shape = (*executable)->module().entry()->root()->shape();
        results_[d].value = Literal(shape);
        size_t next = 0;
        shape.for_each_leaf([&](const Shape& leaf, const ShapeIndex& index) {
          if (!leaf.is_array()) return;
          results_[d].outputs.push_back((*out)[next].data());
          *results_[d].value.mutable_subliteral(index) = *(*out)[next++].to_literal();
        });
      });
    }
    for (std::thread& thread : threads) thread.join();
    for (int64_t d = 0; d < grid.devices(); ++d) {
      ASSERT_FALSE(failures[d].has_value()) << "device " << d << ": " << failures[d]->to_string();
      EXPECT_TRUE(results_[d].value == (*reference)[d])
          << "device " << d << ":\n" << results_[d].value.to_string() << "\nwant\n" << (*reference)[d].to_string();
    }
  }
  void expect_native() {
    EXPECT_EQ(fallbacks_, 0u);
    for (size_t d = 0; d < results_.size(); ++d) EXPECT_EQ(results_[d].stats.fallback_ops_executed, 0) << "device " << d;
  }

  std::vector<DeviceResult> results_;
  size_t fallbacks_ = 0;
};

constexpr const char* kAdd = R"(
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT r = f32[] add(a, b)
}
maxs {
  a = s32[] parameter(0)
  b = s32[] parameter(1)
  ROOT r = s32[] maximum(a, b)
}
)";

std::string module(const std::string& header, const std::string& entry) {
  return str_cat("HloModule m, ", header, "\n", kAdd, "\nENTRY e {\n", entry, "}\n");
}

TEST_F(NativeCollectivesTest, ReduceScatterKeepsEachMembersPiece) {
  run(module("replica_count=4", "  x = f32[8,3] parameter(0)\n  ROOT r = f32[2,3] reduce-scatter(x), dimensions={0}, to_apply=add\n"));
  expect_native();
  // Device 1 keeps rows 2..3 summed over devices: sum_d ((d+1)*100 + e) for e = 6.
  EXPECT_EQ(results_[1].value.data<float>()[0], 1000.0f + 4 * 6);
}

TEST_F(NativeCollectivesTest, ReduceScatterInGroupsAndOfIntegers) {
  run(module("replica_count=4",
             "  x = s32[1,4,2] parameter(0)\n"
             "  ROOT r = s32[1,2,2] reduce-scatter(x), replica_groups={{0,2},{3,1}}, dimensions={1}, to_apply=maxs\n"));
  expect_native();
}

TEST_F(NativeCollectivesTest, AllToAllOfOneArraySplitAlongItsFirstDimension) {
  run(module("replica_count=4", "  x = f32[8,2] parameter(0)\n  ROOT r = f32[8,2] all-to-all(x), dimensions={0}\n"));
  expect_native();
}

TEST_F(NativeCollectivesTest, AllToAllOfATupleInPartitionGroups) {
  run(module("replica_count=2, num_partitions=2",
             "  a = f32[3] parameter(0)\n  b = f32[3] parameter(1)\n"
             "  ROOT r = (f32[3], f32[3]) all-to-all(a, b), channel_id=1, replica_groups={{0,1}}\n"));
  expect_native();
}

TEST_F(NativeCollectivesTest, AnAllToAllWhosePiecesAreNotByteRangesRunsThroughTheEvaluator) {
  run(module("replica_count=2", "  x = f32[3,4] parameter(0)\n  ROOT r = f32[3,4] all-to-all(x), dimensions={1}\n"));
  EXPECT_EQ(fallbacks_, 1u);
}

TEST_F(NativeCollectivesTest, CollectivePermuteLeavesZerosWhereNoPairTargets) {
  run(module("replica_count=4",
             "  x = f32[5] parameter(0)\n"
             "  ROOT r = f32[5] collective-permute(x), source_target_pairs={{0,1},{1,2},{2,0},{3,3}}\n"));
  expect_native();
  run(module("replica_count=4",
             "  x = f32[5] parameter(0)\n  ROOT r = f32[5] collective-permute(x), source_target_pairs={{0,2},{2,3}}\n"));
  expect_native();
  EXPECT_EQ(results_[1].value.data<float>()[4], 0.0f);  // no source: zeros
  EXPECT_EQ(results_[3].value.data<float>()[4], 304.0f);  // from device 2
}

TEST_F(NativeCollectivesTest, CollectivePermuteAcrossPartitions) {
  run(module("replica_count=2, num_partitions=2",
             "  x = s32[4] parameter(0)\n  ROOT r = s32[4] collective-permute(x), channel_id=3, source_target_pairs={{0,1},{1,0}}\n"));
  expect_native();
}

// XLA's collective-permute combiner: several arrays moved by the same pairs.
TEST_F(NativeCollectivesTest, ACombinedCollectivePermute) {
  run(module("replica_count=3",
             "  a = f32[5] parameter(0)\n  b = s32[2,3] parameter(1)\n"
             "  ROOT r = (f32[5], s32[2,3]) collective-permute(a, b), source_target_pairs={{0,1},{1,2}}\n"));
  expect_native();
  EXPECT_EQ(results_[2].value.element(1).data<int32_t>()[0], 210);  // device 1's b
  EXPECT_EQ(results_[0].value.element(0).data<float>()[0], 0.0f);   // no source
}

TEST_F(NativeCollectivesTest, CollectiveBroadcastFromEachGroupsFirstMember) {
  run(module("replica_count=4",
             "  a = f32[6] parameter(0)\n  b = s32[2] parameter(1)\n"
             "  ROOT r = (f32[6], s32[2]) collective-broadcast(a, b), replica_groups={{2,0},{1,3}}\n"));
  expect_native();
  EXPECT_EQ(results_[0].value.element(0).data<float>()[0], 300.0f);  // device 2's a
  EXPECT_EQ(results_[3].value.element(1).data<int32_t>()[1], 211);   // device 1's b
}

TEST_F(NativeCollectivesTest, ReplicaAndPartitionIds) {
  run(module("replica_count=2, num_partitions=2",
             "  r = u32[] replica-id()\n  p = u32[] partition-id()\n  ROOT t = (u32[], u32[]) tuple(r, p)\n"));
  expect_native();
}

// XLA's all-reduce combiner makes one all-reduce of many arrays: each is reduced in its own
// operand's buffer, so donated parameters are reduced where they are, with no copy.
TEST_F(NativeCollectivesTest, ACombinedAllReduceReducesEachDonatedOperandInPlace) {
  run(module("replica_count=2, input_output_alias={ {0}: (0, {}, may-alias), {1}: (1, {}, may-alias) }",
             "  a = f32[64] parameter(0)\n  b = f32[8,8] parameter(1)\n"
             "  ROOT r = (f32[64], f32[8,8]) all-reduce(a, b), to_apply=add\n"),
      /*donate=*/true);
  expect_native();
  for (const DeviceResult& result : results_) {
    EXPECT_EQ(result.stats.bytes_copied, 0);
    ASSERT_EQ(result.outputs.size(), 2u);
    EXPECT_EQ(result.outputs[0], result.inputs[0]);
    EXPECT_EQ(result.outputs[1], result.inputs[1]);
  }
}

TEST_F(NativeCollectivesTest, ACombinedAllReduceOfOneOperandTwice) {
  run(module("replica_count=2", "  a = f32[16] parameter(0)\n  ROOT r = (f32[16], f32[16]) all-reduce(a, a), to_apply=add\n"),
      /*donate=*/true);
  expect_native();
}

TEST_F(NativeCollectivesTest, AResultWrittenForAnotherGroupSizeIsALocatedError) {
  StatusOr<std::unique_ptr<Module>> parsed = parse_module(
      module("replica_count=1", "  x = f32[8] parameter(0)\n  ROOT r = f32[2] reduce-scatter(x), dimensions={0}, to_apply=add\n"));
  ASSERT_TRUE(parsed.ok()) << parsed.status().to_string();
  StatusOr<OptimizedModule> optimized = optimize_module(std::move(parsed).value());
  ASSERT_TRUE(optimized.ok()) << optimized.status().to_string();
  StatusOr<std::unique_ptr<Executable>> executable = Executable::create(std::move(optimized).value());
  ASSERT_TRUE(executable.ok()) << executable.status().to_string();
  Literal x(Shape::array(PrimitiveType::kF32, {8}));
  StatusOr<std::vector<BufferHandle>> out = (*executable)->execute({*BufferHandle::from_literal(x)}, {.threads = 1});
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.status().to_string().find("over a group of 1 device(s)"), std::string::npos) << out.status().to_string();
  EXPECT_NE(out.status().to_string().find("reduce-scatter %r"), std::string::npos) << out.status().to_string();
}

// XLA's verifier: an id is a source at most once and a target at most once.
TEST_F(NativeCollectivesTest, APermuteNamingATargetTwiceIsALocatedError) {
  StatusOr<std::unique_ptr<Module>> parsed = parse_module(module(
      "replica_count=2", "  x = f32[2] parameter(0)\n  ROOT r = f32[2] collective-permute(x), source_target_pairs={{0,1},{1,1}}\n"));
  ASSERT_TRUE(parsed.ok()) << parsed.status().to_string();
  std::vector<std::vector<Literal>> arguments(2, std::vector<Literal>{Literal(Shape::array(PrimitiveType::kF32, {2}))});
  StatusOr<std::vector<Literal>> result = evaluate_devices(**parsed, arguments);
  ASSERT_FALSE(result.ok());
  EXPECT_NE(result.status().to_string().find("source_target_pairs name target 1 twice"), std::string::npos)
      << result.status().to_string();
}

}  // namespace
}  // namespace insitu
