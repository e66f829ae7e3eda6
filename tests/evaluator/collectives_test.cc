// Collectives (evaluator/collectives.h): replica groups in every spelling and group mode, the
// collectives' values on hand-written modules, and the faults: mismatched collectives, a device
// that fails, a device that never arrives. Each fault ends every device with an error naming the
// devices and the instruction, within the communicator's timeout.
#include "test_util.h"
#include "insitu/evaluator/collectives.h"

#include <gtest/gtest.h>

#include <chrono>

#include "insitu/ir/parser.h"
#include "insitu/ir/verifier.h"

namespace insitu {
namespace {


// The groups of the entry root, a collective written with `attributes`, on R x P devices.
StatusOr<std::vector<std::vector<int64_t>>> groups_of(const std::string& attributes, int64_t replicas,
                                                      int64_t partitions) {
  std::unique_ptr<Module> module = parse_text(
      "HloModule m\n\nadd {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT r = f32[] add(a, b)\n}\n\n"
      "ENTRY e {\n  x = f32[4] parameter(0)\n  ROOT s = f32[4] all-reduce(x), to_apply=add" +
      (attributes.empty() ? "" : ", " + attributes) + "\n}\n");
  if (module == nullptr) return internal_error("did not parse");
  return collective_device_groups(*module->entry()->root(), {replicas, partitions});
}

using Groups = std::vector<std::vector<int64_t>>;

TEST(CollectiveGroups, EverySpellingOfReplicaGroups) {
  EXPECT_EQ(*groups_of("replica_groups={{0,1},{2,3}}", 4, 1), (Groups{{0, 1}, {2, 3}}));
  EXPECT_EQ(*groups_of("replica_groups={}", 3, 1), (Groups{{0, 1, 2}}));
  EXPECT_EQ(*groups_of("", 2, 1), (Groups{{0, 1}}));
  EXPECT_EQ(*groups_of("replica_groups=[2,2]<=[4]", 4, 1), (Groups{{0, 1}, {2, 3}}));
  EXPECT_EQ(*groups_of("replica_groups=[2,2]<=[2,2]T(1,0)", 4, 1), (Groups{{0, 2}, {1, 3}}));
  EXPECT_EQ(*groups_of("replica_groups=[1,4]<=[4]", 4, 1), (Groups{{0, 1, 2, 3}}));
  // Shardy meshes: the devices that vary along the named axes, the others fixed.
  const std::string flattened = "channel_id=1, use_global_device_ids=true, replica_groups=";
  EXPECT_EQ(*groups_of(flattened + "mesh['x'=2,'y'=2] {'y'}", 1, 4), (Groups{{0, 1}, {2, 3}}));
  EXPECT_EQ(*groups_of(flattened + "mesh['x'=2,'y'=2] {'x'}", 1, 4), (Groups{{0, 2}, {1, 3}}));
  EXPECT_EQ(*groups_of(flattened + "mesh['x'=2,'y'=2] {'y','x'}", 1, 4), (Groups{{0, 2, 1, 3}}));
  EXPECT_EQ(*groups_of(flattened + "mesh['x'=4] {'x'}", 1, 4), (Groups{{0, 1, 2, 3}}));
}

TEST(CollectiveGroups, TheFourGroupModesOnTwoReplicasTimesTwoPartitions) {
  // Device d = replica * 2 + partition.
  EXPECT_EQ(*groups_of("replica_groups={{0,1}}", 2, 2), (Groups{{0, 2}, {1, 3}}));                // cross-replica
  EXPECT_EQ(*groups_of("channel_id=1, replica_groups={{0,1}}", 2, 2), (Groups{{0, 1}, {2, 3}}));  // cross-partition
  EXPECT_EQ(*groups_of("channel_id=1, replica_groups={{0},{1}}, use_global_device_ids=false", 2, 2),
            (Groups{{0, 1}, {2, 3}}));  // cross-replica-and-partition
  EXPECT_EQ(*groups_of("channel_id=1, replica_groups={{0,3},{1,2}}, use_global_device_ids=true", 2, 2),
            (Groups{{0, 3}, {1, 2}}));  // flattened ids
}

TEST(CollectiveGroups, BadGroupsAreLocatedErrors) {
  StatusOr<Groups> out_of_range = groups_of("replica_groups={{0,5}}", 4, 1);
  ASSERT_FALSE(out_of_range.ok());
  EXPECT_NE(out_of_range.status().message().find("name id 5, but the module runs 4 replica(s) x 1 partition(s)"),
            std::string::npos)
      << out_of_range.status().to_string();
  EXPECT_TRUE(out_of_range.status().location().valid());
  StatusOr<Groups> bad_iota = groups_of("replica_groups=[2,3]<=[4]", 4, 1);
  ASSERT_FALSE(bad_iota.ok());
  EXPECT_NE(bad_iota.status().message().find("groups x size = 4 ids"), std::string::npos) << bad_iota.status().to_string();
  StatusOr<Groups> no_channel = groups_of("use_global_device_ids=true", 4, 1);
  ASSERT_FALSE(no_channel.ok());
  EXPECT_NE(no_channel.status().message().find("needs a channel_id"), std::string::npos);
  StatusOr<Groups> sub_axis = groups_of("channel_id=1, use_global_device_ids=true, replica_groups=mesh['x'=4] {'x':(1)2}", 1, 4);
  ASSERT_FALSE(sub_axis.ok());
  EXPECT_NE(sub_axis.status().message().find("sub-axes"), std::string::npos) << sub_axis.status().to_string();
}

std::vector<std::vector<Literal>> per_device(std::vector<Literal> values) {
  std::vector<std::vector<Literal>> arguments;
  for (Literal& value : values) {
    std::vector<Literal> one;
    one.push_back(std::move(value));
    arguments.push_back(std::move(one));
  }
  return arguments;
}

TEST(Collectives, ValuesOnThreeReplicas) {
  std::unique_ptr<Module> module = parse_text(R"(HloModule m, replica_count=3

max {
  a = s32[] parameter(0)
  b = s32[] parameter(1)
  ROOT r = s32[] maximum(a, b)
}

ENTRY e {
  x = s32[3] parameter(0)
  all = s32[3] all-reduce(x), to_apply=max
  gathered = s32[9] all-gather(x), dimensions={0}
  scattered = s32[1] reduce-scatter(x), dimensions={0}, to_apply=max
  swapped = s32[3] all-to-all(x), dimensions={0}
  shifted = s32[3] collective-permute(x), source_target_pairs={{0,1},{1,2}}
  id = u32[] replica-id()
  ROOT t = (s32[3], s32[9], s32[1], s32[3], s32[3], u32[]) tuple(all, gathered, scattered, swapped, shifted, id)
}
)");
  ASSERT_NE(module, nullptr);
  ASSERT_TRUE(verify_module(*module).ok());
  StatusOr<std::vector<Literal>> results = evaluate_devices(
      *module, per_device({Literal::vector<int32_t>({1, 9, 2}), Literal::vector<int32_t>({5, 0, 7}),
                           Literal::vector<int32_t>({3, 4, 8})}));
  ASSERT_TRUE(results.ok()) << results.status().to_string();
  const Literal& device1 = (*results)[1];
  EXPECT_EQ(device1.element(0), Literal::vector<int32_t>({5, 9, 8}));
  EXPECT_EQ(device1.element(1), Literal::vector<int32_t>({1, 9, 2, 5, 0, 7, 3, 4, 8}));
  EXPECT_EQ(device1.element(2), Literal::vector<int32_t>({9}));
  EXPECT_EQ(device1.element(3), Literal::vector<int32_t>({9, 0, 4}));     // the second piece of each
  EXPECT_EQ(device1.element(4), Literal::vector<int32_t>({1, 9, 2}));     // from replica 0
  EXPECT_EQ((*results)[0].element(4), Literal::vector<int32_t>({0, 0, 0}));  // nobody sends to 0: zeros
  EXPECT_EQ(device1.element(5), Literal::scalar<uint32_t>(1));
}

TEST(Collectives, AsyncStartAndDonePairs) {
  std::unique_ptr<Module> module = parse_text(R"(HloModule async, replica_count=2

ENTRY e {
  x = f32[2] parameter(0)
  start = ((f32[2]), f32[4], u32[]) all-gather-start(x), dimensions={0}
  gathered = f32[4] all-gather-done(start)
  pstart = (f32[2], f32[2], u32[], u32[]) collective-permute-start(x), source_target_pairs={{0,1},{1,0}}
  permuted = f32[2] collective-permute-done(pstart)
  ROOT t = (f32[4], f32[2]) tuple(gathered, permuted)
}
)");
  ASSERT_NE(module, nullptr);
  ASSERT_TRUE(verify_module(*module).ok());
  StatusOr<std::vector<Literal>> results =
      evaluate_devices(*module, per_device({Literal::vector<float>({1, 2}), Literal::vector<float>({3, 4})}));
  ASSERT_TRUE(results.ok()) << results.status().to_string();
  EXPECT_EQ((*results)[0].element(0), Literal::vector<float>({1, 2, 3, 4}));
  EXPECT_EQ((*results)[0].element(1), Literal::vector<float>({3, 4}));
  EXPECT_EQ((*results)[1].element(1), Literal::vector<float>({1, 2}));
}

// A module whose devices take different paths by partition-id: `branch0` and `branch1` are the
// two branches' bodies over x = f32[2] (each ends in ROOT r).
std::unique_ptr<Module> diverging(const std::string& branch0, const std::string& branch1) {
  return parse_text(R"(HloModule m, num_partitions=2

add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT r = f32[] add(a, b)
}

zero {
  x = f32[2] parameter(0)
)" + branch0 + R"(
}

one {
  x = f32[2] parameter(0)
)" + branch1 + R"(
}

ENTRY e {
  x = f32[2] parameter(0)
  p = u32[] partition-id()
  i = s32[] convert(p)
  ROOT c = f32[2] conditional(i, x, x), branch_computations={zero, one}
}
)");
}

std::vector<std::vector<Literal>> two_devices() {
  return per_device({Literal::vector<float>({1, 2}), Literal::vector<float>({3, 4})});
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

TEST(CollectiveFaults, MismatchedCollectivesNameBothDevicesAndInstructions) {
  std::unique_ptr<Module> module =
      diverging("  ROOT r = f32[2] all-reduce(x), channel_id=1, to_apply=add",
                "  g = f32[4] all-gather(x), channel_id=1, dimensions={0}\n  ROOT r = f32[2] slice(g), slice={[0:2]}");
  ASSERT_NE(module, nullptr);
  const auto start = std::chrono::steady_clock::now();
  StatusOr<std::vector<Literal>> results = evaluate_devices(*module, two_devices(), {}, 10);
  ASSERT_FALSE(results.ok());
  const std::string message = results.status().message();
  EXPECT_NE(message.find("mismatched collectives"), std::string::npos) << message;
  EXPECT_NE(message.find("all-reduce %r"), std::string::npos) << message;
  EXPECT_NE(message.find("all-gather %g"), std::string::npos) << message;
  EXPECT_LT(seconds_since(start), 5);  // at once, not at the timeout
}

TEST(CollectiveFaults, DifferentShapesAtOneCollectiveAreAnError) {
  std::unique_ptr<Module> module = parse_text(R"(HloModule m, num_partitions=2

add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT r = f32[] add(a, b)
}

ENTRY e {
  x = f32[2] parameter(0)
  ROOT r = f32[2] all-reduce(x), channel_id=1, to_apply=add
}
)");
  ASSERT_NE(module, nullptr);
  std::vector<std::vector<Literal>> arguments = two_devices();
  arguments[1][0] = Literal::vector<float>({1, 2, 3});  // not the parameter's shape: device 1 fails
  StatusOr<std::vector<Literal>> results = evaluate_devices(*module, arguments, {}, 10);
  ASSERT_FALSE(results.ok());
  EXPECT_NE(results.status().message().find("argument 0 has shape f32[3]"), std::string::npos)
      << results.status().to_string();
}

TEST(CollectiveFaults, AFailingDeviceEndsTheOthersWithItsError) {
  // Device 1 loops forever before the all-reduce; its evaluation is bounded by
  // max_while_iterations, so it fails, and device 0 (waiting at the all-reduce) ends too.
  std::unique_ptr<Module> module = parse_text(R"(HloModule m, num_partitions=2

add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT r = f32[] add(a, b)
}

cond {
  s = s32[] parameter(0)
  p = u32[] partition-id()
  zero = u32[] constant(0)
  ROOT busy = pred[] compare(p, zero), direction=NE
}

body {
  s = s32[] parameter(0)
  one = s32[] constant(1)
  ROOT n = s32[] add(s, one)
}

ENTRY e {
  x = f32[2] parameter(0)
  zero = s32[] constant(0)
  w = s32[] while(zero), condition=cond, body=body
  ROOT r = f32[2] all-reduce(x), channel_id=1, to_apply=add
}
)");
  ASSERT_NE(module, nullptr);
  const auto start = std::chrono::steady_clock::now();
  StatusOr<std::vector<Literal>> results = evaluate_devices(*module, two_devices(), {.max_while_iterations = 1000}, 30);
  ASSERT_FALSE(results.ok());
  EXPECT_NE(results.status().message().find("ran more than 1000 iterations"), std::string::npos)
      << results.status().to_string();
  EXPECT_LT(seconds_since(start), 10);
}

TEST(CollectiveFaults, ADeviceThatNeverArrivesTimesOutNamingIt) {
  std::unique_ptr<Module> module =
      diverging("  ROOT r = f32[2] all-reduce(x), channel_id=1, to_apply=add", "  ROOT r = f32[2] negate(x)");
  ASSERT_NE(module, nullptr);
  const auto start = std::chrono::steady_clock::now();
  StatusOr<std::vector<Literal>> results = evaluate_devices(*module, two_devices(), {}, 0.3);
  ASSERT_FALSE(results.ok());
  const std::string message = results.status().message();
  EXPECT_NE(message.find("collective timed out: device 0 waited 0.3 s at all-reduce %r for device(s) 1"),
            std::string::npos)
      << message;
  EXPECT_LT(seconds_since(start), 5);
}

TEST(CollectiveFaults, AModuleForManyDevicesRunAloneSaysHowToRunIt) {
  std::unique_ptr<Module> module = parse_text(R"(HloModule m, replica_count=2

ENTRY e {
  ROOT id = u32[] replica-id()
}
)");
  ASSERT_NE(module, nullptr);
  // replica-id alone is fine (device 0); a collective needs every device.
  EXPECT_TRUE(evaluate_module(*module, {}).ok());
  std::unique_ptr<Module> with_collective = parse_text(R"(HloModule m, replica_count=2

ENTRY e {
  x = f32[2] parameter(0)
  ROOT g = f32[4] all-gather(x), dimensions={0}
}
)");
  ASSERT_NE(with_collective, nullptr);
  std::vector<Literal> arguments;
  arguments.push_back(Literal::vector<float>({1, 2}));
  StatusOr<Literal> alone = evaluate_module(*with_collective, arguments);
  ASSERT_FALSE(alone.ok());
  EXPECT_NE(alone.status().message().find("the module runs on 2 devices"), std::string::npos)
      << alone.status().to_string();
}

}  // namespace
}  // namespace insitu
