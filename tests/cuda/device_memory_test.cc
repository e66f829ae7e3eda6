// Device memory and kernels across executables (cuda/executor.h), on the emulated device:
// each executable launches its own kernels though every plan names them k0, k1, ...; a run holds
// the buffer assignment's allocations and nothing else (dead values' bytes reused in the temp
// arena, elementwise results over operands that die there, a loop in the memory of one
// iteration), from the executable's pool, so a warm run allocates nothing; every run's values
// agree with the reference evaluator. And the GPU benchmarks' programs (bench/cuda_programs.h),
// at small size.
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

// The bytes a run takes from the pool beyond its arguments: the plan's outputs and temp arena.
int64_t planned_blocks(const DevicePlan& plan) {
  int64_t bytes = 0;
  for (const DeviceAllocation& allocation : plan.allocations)
    if (allocation.kind == AllocationKind::kOutput || allocation.kind == AllocationKind::kTemp) bytes += allocation.size;
  return bytes;
}

TEST(CudaDeviceMemory, ARunHoldsTheBufferAssignmentsAllocationsAndNothingElse) {
  // Four dots in a chain over 32x32 f32 (4 KiB each), x and w uploaded by run: d1 is dead once
  // d2 is computed, so d3 takes its bytes in the temp arena (two blocks for three values), d4 is
  // the output. The run takes exactly that from the device, and the peak is explain's.
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
  const DevicePlan& plan = on->executable->plan();
  constexpr int64_t kBlock = 32 * 32 * 4;
  EXPECT_EQ(on->executable->buffers().temp_bytes(), 2 * kBlock) << on->executable->buffers().to_string();
  EXPECT_EQ(planned_blocks(plan), 3 * kBlock);
  EXPECT_EQ(plan.planned_peak_bytes, 4 * kBlock);  // x and w, then two values live at a time
  EXPECT_EQ(plan.planned_peak_bytes, on->executable->buffers().peak_memory_bytes());
  const std::vector<Literal> arguments = random_arguments(*on->written, 5);
  CudaStats stats;
  StatusOr<Literal> expected = evaluate_module(*on->written, arguments);
  ASSERT_TRUE(expected.ok()) << expected.status().to_string();
  StatusOr<Literal> actual = on->executable->run(arguments, &stats);
  ASSERT_TRUE(actual.ok()) << actual.status().to_string();
  EXPECT_EQ(differs(*actual, *expected), "");
  EXPECT_EQ(stats.device_bytes_allocated, 2 * kBlock + planned_blocks(plan)) << describe(plan);  // + x and w
  EXPECT_EQ(stats.peak_device_bytes, 5 * kBlock);
  // A second run takes nothing new from the device.
  const int64_t allocations = device.allocations();
  CudaStats again;
  StatusOr<Literal> second = on->executable->run(arguments, &again);
  ASSERT_TRUE(second.ok()) << second.status().to_string();
  EXPECT_EQ(differs(*second, *expected), "");
  EXPECT_EQ(again.device_bytes_allocated, 0);
  EXPECT_EQ(device.allocations(), allocations);
}

TEST(CudaDeviceMemory, AnElementwiseResultIsWrittenOverAnOperandThatDiesThere) {
  // t (a transpose, a temp) is read only by the fusion computing e, element by element: e is
  // written over t, one block for both; the output r is a block of its own.
  EmulatedDevice device;
  StatusOr<OnDevice> on = compile_on(device, R"(
HloModule over
ENTRY main {
  x = f32[16,24] parameter(0)
  t = f32[24,16] transpose(x), dimensions={1,0}
  e = f32[24,16] exponential(t)
  one = f32[] constant(1)
  ones = f32[24,16] broadcast(one), dimensions={}
  s = f32[24,16] add(e, ones)
  ROOT r = f32[16,24] transpose(s), dimensions={1,0}
})");
  ASSERT_TRUE(on.ok()) << on.status().to_string();
  const DevicePlan& plan = on->executable->plan();
  const std::string steps = describe(plan);
  EXPECT_NE(steps.find("in place over operand 0"), std::string::npos) << steps;
  EXPECT_EQ(on->executable->buffers().temp_bytes(), 16 * 24 * 4) << on->executable->buffers().to_string();
  const std::vector<Literal> arguments = random_arguments(*on->written, 3);
  StatusOr<Literal> expected = evaluate_module(*on->written, arguments);
  ASSERT_TRUE(expected.ok()) << expected.status().to_string();
  CudaStats stats;
  StatusOr<Literal> actual = on->executable->run(arguments, &stats);
  ASSERT_TRUE(actual.ok()) << actual.status().to_string();
  EXPECT_EQ(differs(*actual, *expected), "");
  EXPECT_EQ(stats.bytes_copied_on_device, 0);
}

TEST(CudaDeviceMemory, ASortOfADyingOperandGetsMemoryOfItsOwn) {
  // On the CPU a sort may permute its dying operand in place (kSameSlot); the device's sort
  // kernels read the operand while they write the result, so its assignment keeps them apart.
  EmulatedDevice device;
  StatusOr<OnDevice> on = compile_on(device, R"(
HloModule sorted
less {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT lt = pred[] compare(a, b), direction=LT
}
ENTRY main {
  x = f32[8,300] parameter(0)
  n = f32[8,300] negate(x)
  ROOT s = f32[8,300] sort(n), dimensions={1}, to_apply=less
})");
  ASSERT_TRUE(on.ok()) << on.status().to_string();
  const std::string steps = describe(on->executable->plan());
  EXPECT_EQ(steps.find("in place"), std::string::npos) << steps;
  Literal x(Shape::array(PrimitiveType::kF32, {8, 300}));
  for (int64_t i = 0; i < 8 * 300; ++i) x.data<float>()[i] = static_cast<float>((i * 7919) % 601) - 300.0f;
  const std::vector<Literal> arguments = {std::move(x)};
  StatusOr<Literal> expected = evaluate_module(*on->written, arguments);
  ASSERT_TRUE(expected.ok()) << expected.status().to_string();
  StatusOr<Literal> actual = on->executable->run(arguments);
  ASSERT_TRUE(actual.ok()) << actual.status().to_string();
  EXPECT_EQ(differs(*actual, *expected), "");
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

TEST(CudaDeviceMemory, ADonatedArgumentReadAfterItsOutputsProducerIsWrittenOnceItsReadersRan) {
  // y (aliased to x) is computed from x, which the sum reads too: the schedule runs the sum
  // first, then y is written over the donated x, element by element (the CPU's plan): nothing
  // is copied, and the caller gets x back as y. (The device's own plan used to give y a block
  // and copy it over x at the end.)
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
  const std::string steps = describe(on->executable->plan());
  EXPECT_LT(steps.find("%sum"), steps.find("in place over operand 0")) << steps;
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
  EXPECT_EQ(stats.bytes_copied_on_device, 0);
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
