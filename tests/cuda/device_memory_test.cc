// Device memory and kernels across executables (cuda/executor.h), on the emulated device:
// each executable launches its own kernels though every plan names them k0, k1, ...; a value's
// block goes back to the executable's pool after its last reader and serves later steps, so a
// run holds what its live values need and a loop runs in the memory of one iteration; every
// run's values agree with the reference evaluator. And the GPU benchmarks' programs
// (bench/cuda_programs.h), at small size.
#include "bench/cuda_programs.h"
#include "emulated_device.h"

namespace insitu::cuda {
namespace {

using namespace testing;

Literal iota_f32(int64_t count, float scale) {
  Literal literal(Shape::array(PrimitiveType::kF32, {count}));
  for (int64_t i = 0; i < count; ++i) literal.data<float>()[i] = scale * static_cast<float>(i);
  return literal;
}

TEST(CudaDeviceMemory, TwoExecutablesOnOneDeviceKeepTheirOwnKernels) {
  // Both plans' kernels are named k0: a device holding one module at a time ran the second
  // module's k0 for the first executable (x + 100 for x * 2).
  EmulatedDevice device;
  StatusOr<OnDevice> twice = compile_on(device, R"(
HloModule twice
ENTRY main {
  x = f32[8] parameter(0)
  two = f32[] constant(2)
  b = f32[8] broadcast(two), dimensions={}
  ROOT y = f32[8] multiply(x, b)
})");
  ASSERT_TRUE(twice.ok()) << twice.status().to_string();
  StatusOr<OnDevice> shifted = compile_on(device, R"(
HloModule shifted
ENTRY main {
  x = f32[8] parameter(0)
  hundred = f32[] constant(100)
  b = f32[8] broadcast(hundred), dimensions={}
  ROOT y = f32[8] add(x, b)
})");
  ASSERT_TRUE(shifted.ok()) << shifted.status().to_string();
  EXPECT_EQ(device.modules(), 2u);
  const std::vector<Literal> arguments = {iota_f32(8, 1.0f)};
  for (const OnDevice* on : {&*twice, &*shifted, &*twice}) {
    StatusOr<BothResults> results = run_both(*on, arguments);
    ASSERT_TRUE(results.ok()) << results.status().to_string();
    EXPECT_EQ(differs(results->actual, results->expected), "") << on->written->name();
  }
  shifted->executable.reset();  // its kernels go with it; the other's stay
  EXPECT_EQ(device.modules(), 1u);
  StatusOr<BothResults> results = run_both(*twice, arguments);
  ASSERT_TRUE(results.ok()) << results.status().to_string();
  EXPECT_EQ(differs(results->actual, results->expected), "");
}

TEST(CudaDeviceMemory, AValuesBlockServesLaterStepsOnceItsLastReaderIsQueued) {
  // Four dots in a chain over 32x32 f32 (4 KiB each), x and w uploaded by run: x's block serves
  // d2 once d1 (its last reader) is queued, d1's serves d3, d2's d4. Three blocks in all, where
  // a block per value takes six.
  EmulatedDevice device;
  StatusOr<OnDevice> on = compile_on(device, R"(
HloModule chain
ENTRY main {
  x = f32[32,32] parameter(0)
  w = f32[32,32] parameter(1)
  d1 = f32[32,32] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  d2 = f32[32,32] dot(d1, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  d3 = f32[32,32] dot(d2, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT d4 = f32[32,32] dot(d3, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
})");
  ASSERT_TRUE(on.ok()) << on.status().to_string();
  const std::vector<Literal> arguments = random_arguments(*on->written, 5);
  CudaStats stats;
  StatusOr<Literal> expected = evaluate_module(*on->written, arguments);
  ASSERT_TRUE(expected.ok()) << expected.status().to_string();
  StatusOr<Literal> actual = on->executable->run(arguments, &stats);
  ASSERT_TRUE(actual.ok()) << actual.status().to_string();
  EXPECT_EQ(differs(*actual, *expected), "");
  constexpr int64_t kBlock = 32 * 32 * 4;
  EXPECT_EQ(stats.device_bytes_allocated, 3 * kBlock) << describe(on->executable->plan());
  EXPECT_EQ(stats.peak_device_bytes, 3 * kBlock);
  // A second run takes nothing new from the device.
  const int64_t allocations = device.allocations();
  CudaStats again;
  StatusOr<Literal> second = on->executable->run(arguments, &again);
  ASSERT_TRUE(second.ok()) << second.status().to_string();
  EXPECT_EQ(differs(*second, *expected), "");
  EXPECT_EQ(again.device_bytes_allocated, 0);
  EXPECT_EQ(device.allocations(), allocations);
}

TEST(CudaDeviceMemory, ALoopRunsInTheMemoryOfOneIteration) {
  // 500 iterations, each computing a new state: with a block per value until the run ends the
  // run would hold thousands; it takes a handful, and the result is the evaluator's.
  EmulatedDevice device;
  StatusOr<OnDevice> on = compile_on(device, R"(
HloModule loop
body {
  p = (s32[], f32[256]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  x = f32[256] get-tuple-element(p), index=1
  one = s32[] constant(1)
  next = s32[] add(i, one)
  half = f32[] constant(0.5)
  h = f32[256] broadcast(half), dimensions={}
  y = f32[256] multiply(x, h)
  onef = f32[] constant(1)
  o = f32[256] broadcast(onef), dimensions={}
  z = f32[256] add(y, o)
  ROOT t = (s32[], f32[256]) tuple(next, z)
}
condition {
  p = (s32[], f32[256]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  n = s32[] constant(500)
  ROOT less = pred[] compare(i, n), direction=LT
}
ENTRY main {
  x = f32[256] parameter(0)
  zero = s32[] constant(0)
  start = (s32[], f32[256]) tuple(zero, x)
  loop = (s32[], f32[256]) while(start), condition=condition, body=body
  ROOT result = f32[256] get-tuple-element(loop), index=1
})");
  ASSERT_TRUE(on.ok()) << on.status().to_string();
  const std::vector<Literal> arguments = {iota_f32(256, 3.0f)};
  const int64_t allocations = device.allocations();
  CudaStats stats;
  StatusOr<Literal> expected = evaluate_module(*on->written, arguments);
  ASSERT_TRUE(expected.ok()) << expected.status().to_string();
  StatusOr<Literal> actual = on->executable->run(arguments, &stats);
  ASSERT_TRUE(actual.ok()) << actual.status().to_string();
  EXPECT_EQ(differs(*actual, *expected), "");
  EXPECT_GT(stats.kernels_launched, 500);
  EXPECT_LE(device.allocations() - allocations, 8) << describe(on->executable->plan());
  EXPECT_LE(stats.peak_device_bytes, 4 * 256 * 4 + 64) << describe(on->executable->plan());
}

TEST(CudaDeviceMemory, TheBenchmarkProgramsAgreeAndTheDecodeStepWritesItsCachesInPlace) {
  EmulatedDevice device;
  {
    StatusOr<OnDevice> on = compile_on(device, insitu::bench::decode_step_hlo(4, 64, 16));
    ASSERT_TRUE(on.ok()) << on.status().to_string();
    std::vector<Literal> arguments = random_arguments(*on->written, 9);
    arguments[5] = Literal::scalar<int32_t>(37);  // the position written
    StatusOr<Literal> expected = evaluate_module(*on->written, arguments);
    ASSERT_TRUE(expected.ok()) << expected.status().to_string();
    StatusOr<std::vector<DevicePointer>> leaves = upload(device, arguments);
    ASSERT_TRUE(leaves.ok()) << leaves.status().to_string();
    CudaStats stats;
    StatusOr<std::vector<DevicePointer>> results = on->executable->run_on_device(*leaves, &stats);
    ASSERT_TRUE(results.ok()) << results.status().to_string();
    ASSERT_EQ(results->size(), 3u);
    EXPECT_EQ((*results)[0], (*leaves)[0]) << "the K cache, in place";
    EXPECT_EQ((*results)[1], (*leaves)[1]) << "the V cache, in place";
    EXPECT_EQ(stats.bytes_copied_on_device, 0);
    EXPECT_EQ(stats.bytes_to_device, 0);
    EXPECT_EQ(differs_on_device(device, *results, *expected), "");
    ASSERT_TRUE(device.free((*results)[2]).ok());
    for (DevicePointer leaf : *leaves) ASSERT_TRUE(device.free(leaf).ok());
  }
  {  // the donated chain is computed over its argument
    StatusOr<OnDevice> on = compile_on(device, insitu::bench::elementwise_chain_hlo(1000, /*donated=*/true));
    ASSERT_TRUE(on.ok()) << on.status().to_string();
    EXPECT_NE(describe(on->executable->plan()).find("in place over operand 0"), std::string::npos)
        << describe(on->executable->plan());
    const std::vector<Literal> arguments = random_arguments(*on->written, 6);
    StatusOr<Literal> expected = evaluate_module(*on->written, arguments);
    ASSERT_TRUE(expected.ok()) << expected.status().to_string();
    StatusOr<std::vector<DevicePointer>> x = upload(device, arguments);
    ASSERT_TRUE(x.ok()) << x.status().to_string();
    CudaStats stats;
    StatusOr<std::vector<DevicePointer>> results = on->executable->run_on_device(*x, &stats);
    ASSERT_TRUE(results.ok()) << results.status().to_string();
    ASSERT_EQ(results->size(), 1u);
    EXPECT_EQ((*results)[0], (*x)[0]) << "written over the donated argument";
    EXPECT_EQ(stats.bytes_copied_on_device + stats.device_bytes_allocated, 0);
    EXPECT_EQ(differs_on_device(device, *results, *expected), "");
    ASSERT_TRUE(device.free((*x)[0]).ok());
  }
  for (const std::string& text : {insitu::bench::elementwise_chain_hlo(1000), insitu::bench::matmul_hlo(48)}) {
    StatusOr<OnDevice> on = compile_on(device, text);
    ASSERT_TRUE(on.ok()) << on.status().to_string();
    StatusOr<BothResults> results = run_both(*on, random_arguments(*on->written, 4));
    ASSERT_TRUE(results.ok()) << results.status().to_string();
    EXPECT_EQ(differs(results->actual, results->expected), "") << on->written->name();
  }
}

TEST(CudaDeviceMemory, ADonatedArgumentReadAfterItsOutputsProducerIsCopiedOverAtTheEnd) {
  // y (aliased to x) is computed while x is still read by the sum after it: y gets a block of
  // its own, and the donated x receives it at the end, counted; the caller gets x back as y.
  EmulatedDevice device;
  StatusOr<OnDevice> on = compile_on(device, R"(
HloModule read_after, input_output_alias={ {0}: (0, {}, may-alias) }
add_f {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY main {
  x = f32[64] parameter(0)
  two = f32[] constant(2)
  t = f32[64] broadcast(two), dimensions={}
  y = f32[64] multiply(x, t)
  zero = f32[] constant(0)
  sum = f32[] reduce(x, zero), dimensions={0}, to_apply=add_f
  ROOT out = (f32[64], f32[]) tuple(y, sum)
})");
  ASSERT_TRUE(on.ok()) << on.status().to_string();
  EXPECT_EQ(describe(on->executable->plan()).find("in place"), std::string::npos) << describe(on->executable->plan());
  const std::vector<Literal> arguments = {iota_f32(64, 0.25f)};
  StatusOr<Literal> expected = evaluate_module(*on->written, arguments);
  ASSERT_TRUE(expected.ok()) << expected.status().to_string();
  StatusOr<std::vector<DevicePointer>> x = upload(device, arguments);
  ASSERT_TRUE(x.ok()) << x.status().to_string();
  CudaStats stats;
  StatusOr<std::vector<DevicePointer>> results = on->executable->run_on_device(*x, &stats);
  ASSERT_TRUE(results.ok()) << results.status().to_string();
  ASSERT_EQ(results->size(), 2u);
  EXPECT_EQ((*results)[0], (*x)[0]);
  EXPECT_EQ(stats.bytes_copied_on_device, 64 * 4);
  EXPECT_EQ(differs_on_device(device, *results, *expected), "");
  ASSERT_TRUE(device.free((*results)[1]).ok());
  ASSERT_TRUE(device.free((*x)[0]).ok());
}

TEST(CudaDeviceMemory, AStepLoopThatReleasesItsResultsAllocatesNothingAfterItsFirstStep) {
  // The decode step's attention output is a new block each step; given back with
  // release_result, the next step reuses it. Pointers that are not results still out are refused.
  EmulatedDevice device;
  StatusOr<OnDevice> on = compile_on(device, insitu::bench::decode_step_hlo(2, 16, 8));
  ASSERT_TRUE(on.ok()) << on.status().to_string();
  StatusOr<std::vector<DevicePointer>> leaves = upload(device, random_arguments(*on->written, 2));
  ASSERT_TRUE(leaves.ok()) << leaves.status().to_string();
  int64_t allocations_after_first = 0;
  for (int step = 0; step < 3; ++step) {
    CudaStats stats;
    StatusOr<std::vector<DevicePointer>> results = on->executable->run_on_device(*leaves, &stats);
    ASSERT_TRUE(results.ok()) << results.status().to_string();
    if (step == 0) allocations_after_first = device.allocations();
    if (step > 0) {
      EXPECT_EQ(stats.device_bytes_allocated, 0) << "step " << step;
      EXPECT_EQ(device.allocations(), allocations_after_first) << "step " << step;
    }
    ASSERT_TRUE(on->executable->release_result((*results)[2]).ok());
    const Status twice = on->executable->release_result((*results)[2]);
    EXPECT_EQ(twice.code(), StatusCode::kInvalidArgument) << twice.to_string();
    EXPECT_FALSE(on->executable->release_result((*leaves)[0]).ok()) << "an argument is the caller's";
  }
  for (DevicePointer leaf : *leaves) ASSERT_TRUE(device.free(leaf).ok());
}

}  // namespace
}  // namespace insitu::cuda
