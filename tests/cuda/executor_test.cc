// The CUDA executor (cuda/executor.h) on an emulated device: device memory is host memory, and
// the plan's kernels are compiled by the host compiler (with the same shim as host_run_test.cc)
// into a shared library whose launchers run each kernel over its grid. So the executor's part,
// values, views, in-place updates, GEMM calls, host-driven loops and conditionals, transfers
// counted, is checked on every corpus module the plan covers, against the reference evaluator
// on the module as written, where there is no GPU. The same executor runs on a GPU through
// Driver (gpu-check).
#include "emulated_device.h"
#include "insitu/cuda/driver.h"
#include "insitu/kernel/registry.h"

namespace insitu::cuda {
namespace {

using namespace testing;

// Every corpus module the plan covers, run on `device` with random arguments, against the
// evaluator on the module as written. A module that fails is reported and the rest still run
// (on a GPU, one run must say all it can).
void corpus_modules_agree(Device& device, int minimum) {
  int ran = 0, unplanned = 0;
  int64_t launched = 0, loop_bytes = 0;
  std::mt19937 rng(7);
  for (const auto& entry : fs::directory_iterator(fs::path(INSITU_SOURCE_DIR) / "tests" / "data" / "jax")) {
    const std::string name = entry.path().filename().string();
    StatusOr<Loaded> loaded = load(entry.path() / "before_optimizations.hlo");
    if (!loaded.ok()) continue;  // a module for several devices does not optimize alone
    const std::unique_ptr<Module>& written = loaded->written;
    StatusOr<DevicePlan> plan = plan_for_cuda(*loaded->optimized);
    if (!plan.ok()) {
      ++unplanned;
      continue;
    }
    StatusOr<std::unique_ptr<CudaExecutable>> executable = CudaExecutable::create(std::move(loaded->optimized), device);
    if (!executable.ok()) {
      ADD_FAILURE() << name << ": " << executable.status().to_string();
      continue;
    }
    std::vector<Literal> arguments;
    for (int64_t p = 0; p < written->entry()->parameter_count(); ++p)
      arguments.push_back(random_argument(written->entry()->parameter(p)->shape(), rng));
    StatusOr<Literal> expected = evaluate_module(*written, arguments);
    ASSERT_TRUE(expected.ok()) << name << ": " << expected.status().to_string();
    CudaStats stats;
    StatusOr<Literal> actual = (*executable)->run(arguments, &stats);
    if (!actual.ok()) {
      ADD_FAILURE() << name << ": " << actual.status().to_string();
      continue;
    }
    EXPECT_EQ(differs(*actual, *expected), "") << name;
    int64_t argument_bytes = 0;
    for (const Literal& argument : arguments) argument_bytes += argument.size_bytes();
    EXPECT_EQ(stats.bytes_to_device, argument_bytes) << name;
    launched += stats.kernels_launched;
    loop_bytes += stats.bytes_to_host - expected->size_bytes();
    ++ran;
  }
  EXPECT_GE(ran, minimum);
  std::printf("CUDA executor on %s: %d corpus modules ran and were compared with the evaluator (%lld kernels "
              "launched, %lld bytes of loop preds and branch indices read back); %d not planned yet\n",
              device.name().c_str(), ran, static_cast<long long>(launched), static_cast<long long>(loop_bytes),
              unplanned);
}

TEST(CudaExecutor, CorpusModulesRunOnAnEmulatedDevice) {
  EmulatedDevice device;
  corpus_modules_agree(device, 59);
}

// The same on GPU 0 (gpu-check): the issue's "the corpus programs that use only the supported
// ops give the evaluator's results on the GPU".
TEST(CudaExecutor, CorpusModulesRunOnTheGpu) {
  StatusOr<std::unique_ptr<Driver>> driver = Driver::open();
  if (!driver.ok()) GTEST_SKIP() << driver.status().to_string();
  corpus_modules_agree(**driver, 59);
}

// Device-resident memory in and out: the donated cache of the decode programs (their modules
// alias output {0} to parameter 0) is updated in place and comes back as the same pointer; no
// byte crosses to the device, and only the loops' preds come back.
TEST(CudaExecutor, DonatedCacheIsUpdatedInPlaceOnTheDevice) {
  EmulatedDevice device;
  for (const char* program : {"kv_cache_decode_step", "kv_cache_decode_loop", "scan_decode_layers"}) {
    StatusOr<Loaded> loaded = load(corpus_module(program));
    ASSERT_TRUE(loaded.ok()) << program << ": " << loaded.status().to_string();
    const std::unique_ptr<Module>& written = loaded->written;
    ASSERT_EQ(written->config().input_output_alias.size(), 1u) << program;
    const int64_t live_at_start = device.live();
    StatusOr<std::unique_ptr<CudaExecutable>> executable = CudaExecutable::create(std::move(loaded->optimized), device);
    ASSERT_TRUE(executable.ok()) << program << ": " << executable.status().to_string();
    const std::vector<Literal> arguments = random_arguments(*written, 3);
    for (const Literal& argument : arguments) ASSERT_FALSE(argument.shape().is_tuple());
    StatusOr<std::vector<DevicePointer>> uploaded = upload(device, arguments);
    ASSERT_TRUE(uploaded.ok()) << uploaded.status().to_string();
    const std::vector<DevicePointer>& leaves = *uploaded;
    StatusOr<Literal> expected = evaluate_module(*written, arguments);
    ASSERT_TRUE(expected.ok()) << expected.status().to_string();
    CudaStats stats;
    StatusOr<std::vector<DevicePointer>> results = (*executable)->run_on_device(leaves, &stats);
    ASSERT_TRUE(results.ok()) << program << ": " << results.status().to_string();
    ASSERT_EQ(static_cast<int64_t>(results->size()), expected->shape().leaf_count());
    EXPECT_EQ((*results)[0], leaves[0]) << program << ": the donated cache is the result, in place";
    EXPECT_EQ(stats.bytes_to_device, 0) << program;
    EXPECT_EQ(stats.bytes_copied_on_device, 0) << program;
    int64_t fresh = 0;  // results that are not the caller's arguments: the caller's now
    for (DevicePointer result : *results)
      fresh += std::find(leaves.begin(), leaves.end(), result) == leaves.end();
    EXPECT_EQ(differs_on_device(device, *results, *expected), "") << program;
    // The temporaries stay in the executable's pool, reused within the run (its peak is below
    // what it took from the device only where a block served two values) and by the next run,
    // which takes from the device at most its fresh results.
    EXPECT_GT(stats.device_bytes_allocated, 0) << program;
    EXPECT_LE(stats.peak_device_bytes, stats.device_bytes_allocated) << program;
    const int64_t allocations_before = device.allocations();
    CudaStats again;
    StatusOr<std::vector<DevicePointer>> second = (*executable)->run_on_device(leaves, &again);
    ASSERT_TRUE(second.ok()) << program << ": " << second.status().to_string();
    EXPECT_LE(device.allocations() - allocations_before, fresh) << program << ": a warm run reuses the pool";
    EXPECT_EQ(again.peak_device_bytes, stats.peak_device_bytes) << program;
    for (const std::vector<DevicePointer>& returned : {*results, *second})
      for (DevicePointer result : returned)
        if (std::find(leaves.begin(), leaves.end(), result) == leaves.end()) {
          ASSERT_TRUE(device.free(result).ok());
        }
    executable->reset();  // its pool goes with it
    EXPECT_EQ(device.live() - live_at_start, static_cast<int64_t>(leaves.size()))
        << program << ": nothing left on the device but the arguments";
    for (DevicePointer leaf : leaves) {
      ASSERT_TRUE(device.free(leaf).ok());
    }
  }
}

// Registered kernels with a CUDA body (the examples: plus_one, in place, and tiled_axpy, on a
// 2-D grid of clipped 32x32 tiles) run their body on the device, one team per grid step.
void expect_registered_kernels_run_in_place(Device& device) {
  StatusOr<Loaded> loaded = load_text(R"(
HloModule kernels, input_output_alias={ {0}: (0, {}, must-alias) }

ENTRY main {
  cache = f32[300,1000] parameter(0)
  x = f32[70,45] parameter(1)
  y = f32[70,45] parameter(2)
  bumped = f32[300,1000] custom-call(cache), custom_call_target="plus_one", output_to_operand_aliasing={{}: (0, {})}
  again = f32[300,1000] custom-call(bumped), custom_call_target="plus_one", output_to_operand_aliasing={{}: (0, {})}
  axpy = f32[70,45] custom-call(x, y), custom_call_target="tiled_axpy"
  ROOT r = (f32[300,1000], f32[70,45]) tuple(again, axpy)
}
)");
  ASSERT_TRUE(loaded.ok()) << loaded.status().to_string();
  const std::unique_ptr<Module>& written = loaded->written;
  StatusOr<std::unique_ptr<CudaExecutable>> executable = CudaExecutable::create(std::move(loaded->optimized), device);
  ASSERT_TRUE(executable.ok()) << executable.status().to_string();
  const DevicePlan& plan = (*executable)->plan();
  EXPECT_EQ(plan.custom_bodies, (std::vector<std::string>{"plus_one_cuda", "tiled_axpy_cuda"}));  // each body once
  const std::string steps = describe(plan);
  EXPECT_NE(steps.find("%axpy: kernel k2, 768 threads"), std::string::npos) << steps;  // 3 x 2 tiles of 128 threads
  if (cuda_available()) {
    StatusOr<std::string> ptx = compile_to_ptx(plan.source, "kernels.cu");
    EXPECT_TRUE(ptx.ok()) << ptx.status().to_string();
  }
  std::vector<Literal> arguments = random_arguments(*written, 9);
  StatusOr<Literal> expected = evaluate_module(*written, arguments);
  ASSERT_TRUE(expected.ok()) << expected.status().to_string();
  StatusOr<std::vector<DevicePointer>> leaves = upload(device, arguments);
  ASSERT_TRUE(leaves.ok()) << leaves.status().to_string();
  CudaStats stats;
  StatusOr<std::vector<DevicePointer>> results = (*executable)->run_on_device(*leaves, &stats);
  ASSERT_TRUE(results.ok()) << results.status().to_string();
  ASSERT_EQ(results->size(), 2u);
  EXPECT_EQ((*results)[0], (*leaves)[0]) << "the donated cache is updated in place, twice";
  EXPECT_EQ(stats.bytes_copied_on_device, 0);
  EXPECT_EQ(stats.kernels_launched, 3);
  EXPECT_EQ(differs_on_device(device, *results, *expected), "");
  ASSERT_TRUE(device.free((*results)[1]).ok());
  for (DevicePointer leaf : *leaves) ASSERT_TRUE(device.free(leaf).ok());
}

TEST(CudaExecutor, RegisteredKernelsRunTheirCudaBodyInPlace) {
  EmulatedDevice device;
  expect_registered_kernels_run_in_place(device);
}

TEST(CudaExecutor, RegisteredKernelsRunTheirCudaBodyInPlaceOnTheGpu) {
  StatusOr<std::unique_ptr<Driver>> driver = Driver::open();
  if (!driver.ok()) GTEST_SKIP() << driver.status().message();
  if (!cuda_available()) GTEST_SKIP() << "built without NVRTC";
  expect_registered_kernels_run_in_place(**driver);
}

// A call that does not alias the kernel's in-place pair gets an output that starts as a device
// copy of the operand (counted), and the operand keeps its value, as on the CPU.
TEST(CudaExecutor, AnUnaliasedCallOfAnInPlaceKernelUpdatesACopy) {
  EmulatedDevice device;
  StatusOr<Loaded> loaded = load_text(R"(
HloModule copy_in

ENTRY main {
  x = f32[5,7] parameter(0)
  y = f32[5,7] custom-call(x), custom_call_target="plus_one"
  z = f32[5,7] add(x, x)
  ROOT r = (f32[5,7], f32[5,7]) tuple(z, y)
}
)");
  ASSERT_TRUE(loaded.ok()) << loaded.status().to_string();
  const std::unique_ptr<Module>& written = loaded->written;
  StatusOr<std::unique_ptr<CudaExecutable>> executable = CudaExecutable::create(std::move(loaded->optimized), device);
  ASSERT_TRUE(executable.ok()) << executable.status().to_string();
  std::vector<Literal> arguments = random_arguments(*written, 4);
  StatusOr<Literal> expected = evaluate_module(*written, arguments);
  ASSERT_TRUE(expected.ok());
  CudaStats stats;
  StatusOr<Literal> actual = (*executable)->run(arguments, &stats);
  ASSERT_TRUE(actual.ok()) << actual.status().to_string();
  EXPECT_EQ(differs(*actual, *expected), "");
  EXPECT_EQ(stats.bytes_copied_on_device, 5 * 7 * 4);
}

// What a CUDA grid cannot run is a located error naming the kernel and why, at create.
TEST(CudaExecutor, KernelsWithoutACudaFormAreLocatedErrors) {
  CustomCallTable table;
  KernelSpec sequential;
  sequential.name = "running_sum";
  sequential.in_specs.resize(1);
  sequential.out_specs.resize(1);
  sequential.in_specs[0].block_shape = sequential.out_specs[0].block_shape = {4};
  sequential.in_specs[0].index_map = sequential.out_specs[0].index_map = [](std::span<const int64_t> g) {
    return std::vector<int64_t>{g[0]};
  };
  sequential.grid = {4};
  sequential.dimension_semantics = {DimensionSemantics::kSequential};
  sequential.body = [](const KernelContext&, KernelRefs&) {};
  sequential.cuda_function = "running_sum_cuda";
  sequential.cuda_source = "__device__ void running_sum_cuda(insitu_team, insitu_block<const float>, insitu_block<float>) {}\n";
  ASSERT_TRUE(register_kernel(sequential, "test", table).ok());
  KernelSpec plain = sequential;
  plain.name = "no_cuda";
  plain.cuda_source.clear();
  plain.cuda_function.clear();
  ASSERT_TRUE(register_kernel(plain, "test", table).ok());
  EmulatedDevice device;
  for (const auto& [target, why] : {std::pair<std::string, std::string>{"running_sum", "sequential grid axis 0"},
                                    {"no_cuda", "has no CUDA body"},
                                    {"absent", "is not a registered kernel"}}) {
    StatusOr<Loaded> loaded = load_text(str_cat(R"(
HloModule refused

ENTRY main {
  x = f32[16] parameter(0)
  ROOT y = f32[16] custom-call(x), custom_call_target=")", target, "\"\n}\n"));
    ASSERT_TRUE(loaded.ok()) << loaded.status().to_string();
    StatusOr<std::unique_ptr<CudaExecutable>> executable =
        CudaExecutable::create(std::move(loaded->optimized), device, &table);
    ASSERT_FALSE(executable.ok()) << target;
    EXPECT_NE(executable.status().message().find(why), std::string::npos) << executable.status().to_string();
    EXPECT_NE(executable.status().message().find("%y"), std::string::npos) << executable.status().to_string();
    EXPECT_EQ(executable.status().location().line, 6) << target;  // the custom-call's line
  }
}

// Any module on the emulated device against the evaluator: INSITU_CUDA_MODULE=path.hlo (e.g. a
// real-size decode step dumped by bench/peers/measure_xla.py; minutes, the kernels run on one
// host thread).
TEST(CudaExecutor, ModuleFromTheEnvironmentRunsOnAnEmulatedDevice) {
  const char* path = std::getenv("INSITU_CUDA_MODULE");
  if (path == nullptr) GTEST_SKIP() << "set INSITU_CUDA_MODULE=MODULE.hlo to run one module on the emulated device";
  StatusOr<Loaded> loaded = load(path);
  ASSERT_TRUE(loaded.ok()) << path << ": " << loaded.status().to_string();
  const std::unique_ptr<Module>& written = loaded->written;
  EmulatedDevice device;
  StatusOr<std::unique_ptr<CudaExecutable>> executable = CudaExecutable::create(std::move(loaded->optimized), device);
  ASSERT_TRUE(executable.ok()) << executable.status().to_string();
  std::vector<Literal> arguments = random_arguments(*written, 5);
  StatusOr<Literal> expected = evaluate_module(*written, arguments);
  ASSERT_TRUE(expected.ok()) << expected.status().to_string();
  CudaStats stats;
  StatusOr<Literal> actual = (*executable)->run(arguments, &stats);
  ASSERT_TRUE(actual.ok()) << actual.status().to_string();
  EXPECT_EQ(differs(*actual, *expected), "");
  std::printf("%s on the emulated device: %lld kernels, %lld bytes in, %lld bytes out, %lld copied on the device\n",
              path, static_cast<long long>(stats.kernels_launched), static_cast<long long>(stats.bytes_to_device),
              static_cast<long long>(stats.bytes_to_host), static_cast<long long>(stats.bytes_copied_on_device));
}

// On a GPU: the same, through the driver (skips without one).
TEST(CudaExecutor, KvCacheDecodeStepRunsOnTheGpu) {
  StatusOr<std::unique_ptr<Driver>> driver = Driver::open();
  if (!driver.ok()) GTEST_SKIP() << driver.status().message();
  if (!cuda_available()) GTEST_SKIP() << "built without NVRTC";
  for (const char* program : {"kv_cache_decode_step", "kv_cache_decode_loop", "scan_decode_layers"}) {
    StatusOr<Loaded> loaded = load(corpus_module(program));
    ASSERT_TRUE(loaded.ok()) << program << ": " << loaded.status().to_string();
    const std::unique_ptr<Module>& written = loaded->written;
    StatusOr<std::unique_ptr<CudaExecutable>> executable = CudaExecutable::create(std::move(loaded->optimized), **driver);
    ASSERT_TRUE(executable.ok()) << program << ": " << executable.status().to_string();
    std::mt19937 rng(11);
    std::vector<Literal> arguments;
    for (int64_t p = 0; p < written->entry()->parameter_count(); ++p)
      arguments.push_back(random_argument(written->entry()->parameter(p)->shape(), rng));
    StatusOr<Literal> expected = evaluate_module(*written, arguments);
    ASSERT_TRUE(expected.ok());
    StatusOr<Literal> actual = (*executable)->run(arguments);
    ASSERT_TRUE(actual.ok()) << program << ": " << actual.status().to_string();
    EXPECT_EQ(differs(*actual, *expected), "") << program;
  }
}

// A layer norm the CPU pipeline groups into a row fusion (passes/row_fusion.h): the CUDA plan
// inlines it and the reduce fusion it holds (inline_unlooped_fusions), so its members run as the
// plan's own reduces and loops, and the result is the evaluator's.
TEST(CudaExecutor, RowFusionsRunAsTheirMembers) {
  EmulatedDevice device;
  const std::string text = R"(
HloModule layer_norm
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY main {
  x = f32[64,256] parameter(0)
  zero = f32[] constant(0)
  count = f32[] constant(256)
  n = f32[64] broadcast(count), dimensions={}
  s = f32[64] reduce(x, zero), dimensions={1}, to_apply=add
  mean = f32[64] divide(s, n)
  mb = f32[64,256] broadcast(mean), dimensions={0}
  d = f32[64,256] subtract(x, mb)
  dd = f32[64,256] multiply(d, d)
  v = f32[64] reduce(dd, zero), dimensions={1}, to_apply=add
  r = f32[64] rsqrt(f32[64] divide(v, n))
  rb = f32[64,256] broadcast(r), dimensions={0}
  y = f32[64,256] multiply(d, rb)
  ROOT t = (f32[64,256], f32[64]) tuple(y, mean)
}
)";
  StatusOr<std::unique_ptr<Module>> parsed = parse_module(text);
  ASSERT_TRUE(parsed.ok()) << parsed.status().to_string();
  StatusOr<OptimizedModule> optimized = optimize_module(std::move(parsed).value());
  ASSERT_TRUE(optimized.ok()) << optimized.status().to_string();
  auto kinds = [](const Module& module, const char* kind) {
    int count = 0;
    for (const Instruction* instruction : module.entry()->instructions())
      count += instruction->opcode() == Opcode::kFusion && instruction->fusion_kind == kind;
    return count;
  };
  EXPECT_EQ(kinds(*optimized->module, "kCustom"), 1);  // the CPU's row fusion
  StatusOr<OnDevice> on = compile_on(device, text);
  ASSERT_TRUE(on.ok()) << on.status().to_string();
  for (const DeviceStep& step : on->executable->plan().steps)
    EXPECT_FALSE(step.instruction->opcode() == Opcode::kFusion && step.instruction->fusion_kind != "kLoop")
        << step.instruction->name();
  StatusOr<BothResults> run = run_both(*on, random_arguments(*on->written, 9));
  ASSERT_TRUE(run.ok()) << run.status().to_string();
  EXPECT_EQ(differs(run->actual, run->expected), "");
}

}  // namespace
}  // namespace insitu::cuda
