// The CUDA executor (cuda/executor.h) on an emulated device: device memory is host memory, and
// the plan's kernels are compiled by the host compiler (with the same shim as host_run_test.cc)
// into a shared library whose launchers run each kernel over its grid. So the executor's part,
// values, views, in-place updates, GEMM calls, host-driven loops and conditionals, transfers
// counted, is checked on every corpus module the plan covers, against the reference evaluator
// on the module as written, where there is no GPU. The same executor runs on a GPU through
// Driver (gpu-check).
#include "insitu/cuda/executor.h"

#include <dlfcn.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <regex>

#include "corpus_kernels.h"
#include "insitu/cuda/driver.h"
#include "insitu/kernel/registry.h"

namespace insitu::cuda {
namespace {

using namespace testing;


// Host memory as device memory; kernels from a shared library the host compiler builds.
class EmulatedDevice final : public Device {
 public:
  ~EmulatedDevice() override {
    if (library_ != nullptr) dlclose(library_);
  }
  std::string name() const override { return "emulated CUDA device (the host)"; }
  StatusOr<DevicePointer> allocate(int64_t bytes) override {
    void* memory = std::calloc(static_cast<size_t>(std::max<int64_t>(bytes, 1)), 1);
    if (memory == nullptr) return resource_exhausted("emulated device: out of memory");
    ++live_;
    return reinterpret_cast<DevicePointer>(memory);
  }
  Status free(DevicePointer pointer) override {
    std::free(reinterpret_cast<void*>(pointer));
    --live_;
    return ok_status();
  }
  Status copy_to_device(DevicePointer to, const void* from, int64_t bytes) override {
    if (bytes > 0) std::memcpy(reinterpret_cast<void*>(to), from, static_cast<size_t>(bytes));
    return ok_status();
  }
  Status copy_to_host(void* to, DevicePointer from, int64_t bytes) override {
    if (bytes > 0) std::memcpy(to, reinterpret_cast<const void*>(from), static_cast<size_t>(bytes));
    return ok_status();
  }
  Status copy_on_device(DevicePointer to, DevicePointer from, int64_t bytes) override {
    return copy_to_device(to, reinterpret_cast<const void*>(from), bytes);
  }
  // Each kernel gets a launcher: launch_NAME(void** arguments, long long threads).
  Status load(const std::string& source) override {
    std::string program = str_cat(kHostShim, source);
    static const std::regex kSignature(R"(extern "C" __global__ void (\w+)\(([^)]*)\))");
    for (std::sregex_iterator it(source.begin(), source.end(), kSignature), end; it != end; ++it) {
      const std::string name = (*it)[1];
      std::string parameters = (*it)[2], call;
      size_t index = 0;
      for (size_t begin = 0; begin <= parameters.size(); ++index) {
        size_t comma = parameters.find(", ", begin);
        if (comma == std::string::npos) comma = parameters.size();
        std::string parameter = parameters.substr(begin, comma - begin);
        begin = comma + 2;
        const size_t star = parameter.rfind('*');  // a pointer (aliased ones are not __restrict__)
        const bool pointer = star != std::string::npos;
        const std::string type = pointer ? parameter.substr(0, star + 1) : "long long";
        if (!call.empty()) call += ", ";
        call += pointer ? str_cat("(", type, ")(*(const uint64_t*)a[", index, "])") : str_cat("*(long long*)a[", index, "]");
      }
      program += str_cat("extern \"C\" void launch_", name, "(void** a, long long threads) {\n  blockDim.x = 128;\n",
                         "  for (blockIdx.x = 0; (long long)blockIdx.x * 128 < threads; ++blockIdx.x)\n",
                         "    for (threadIdx.x = 0; threadIdx.x < 128; ++threadIdx.x) ", name, "(", call, ");\n}\n");
    }
    const std::string base = str_cat(fs::temp_directory_path().string(), "/insitu_emulated_", ::getpid(), "_", loads_++);
    {
      std::ofstream file(base + ".cc");
      file << program;
    }
    const std::string command = str_cat(INSITU_HOST_CXX, " -std=c++17 -O1 -ffp-contract=off -w -shared -fPIC -o ",
                                        base, ".so ", base, ".cc 2>", base, ".log");
    if (std::system(command.c_str()) != 0) return internal_error(str_cat("emulated device: the host compiler failed: ", base, ".log"));
    if (library_ != nullptr) dlclose(library_);
    library_ = dlopen((base + ".so").c_str(), RTLD_NOW | RTLD_LOCAL);
    if (library_ == nullptr) return internal_error(str_cat("emulated device: dlopen: ", dlerror()));
    fs::remove(base + ".cc");
    fs::remove(base + ".so");
    fs::remove(base + ".log");
    return ok_status();
  }
  Status launch(const std::string& kernel, int64_t threads, std::span<void*> arguments) override {
    using Launcher = void (*)(void**, long long);
    auto launcher = reinterpret_cast<Launcher>(dlsym(library_, ("launch_" + kernel).c_str()));
    if (launcher == nullptr) return not_found(str_cat("emulated device: no kernel ", kernel));
    launcher(arguments.data(), threads);
    return ok_status();
  }
  int64_t live() const { return live_; }

 private:
  void* library_ = nullptr;
  int loads_ = 0;
  int64_t live_ = 0;
};

// A module as written (for the evaluator) and as insitu's pipeline optimizes it (for the device).
struct Loaded {
  std::unique_ptr<Module> written, optimized;
};

StatusOr<Loaded> load_text(const std::string& text) {
  Loaded loaded;
  INSITU_ASSIGN_OR_RETURN(loaded.written, parse_module(text));
  INSITU_ASSIGN_OR_RETURN(std::unique_ptr<Module> parsed, parse_module(text));
  INSITU_ASSIGN_OR_RETURN(OptimizedModule optimized, optimize_module(std::move(parsed)));
  loaded.optimized = std::move(optimized.module);
  return loaded;
}

StatusOr<Loaded> load(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return load_text(text.str());
}

fs::path corpus_module(const std::string& program) {
  return fs::path(INSITU_SOURCE_DIR) / "tests" / "data" / "jax" / program / "before_optimizations.hlo";
}

Literal random_argument(const Shape& shape, std::mt19937& rng) {
  if (!shape.is_tuple()) return random_input(shape, rng);
  std::vector<Literal> elements;
  for (int64_t i = 0; i < shape.tuple_size(); ++i) elements.push_back(random_argument(shape.tuple_shape(i), rng));
  return Literal::tuple(std::move(elements));
}

// One random argument per entry parameter of `module`.
std::vector<Literal> random_arguments(const Module& module, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<Literal> arguments;
  for (int64_t p = 0; p < module.entry()->parameter_count(); ++p)
    arguments.push_back(random_argument(module.entry()->parameter(p)->shape(), rng));
  return arguments;
}

// Leaf by leaf: integers exactly, floats within 1e-4 relative (the generated GEMM sums in the
// element type, the evaluator's dot may not), NaN where the other has NaN.
std::string differs(const Literal& actual, const Literal& expected) {
  if (expected.shape().is_tuple()) {
    if (!actual.shape().is_tuple() || actual.shape().tuple_size() != expected.shape().tuple_size()) return "shapes";
    for (int64_t i = 0; i < expected.shape().tuple_size(); ++i)
      if (std::string d = differs(actual.element(i), expected.element(i)); !d.empty()) return str_cat("{", i, "} ", d);
    return "";
  }
  const PrimitiveType type = expected.shape().element_type();
  for (int64_t i = 0; i < expected.element_count(); ++i) {
    if (type == PrimitiveType::kF32 || type == PrimitiveType::kF64) {
      const double a = actual.get_double(i), e = expected.get_double(i);
      if ((std::isnan(a) && std::isnan(e)) || a == e) continue;
      if (std::isfinite(a) && std::isfinite(e) && std::fabs(a - e) <= 1e-5 + 1e-4 * std::fabs(e)) continue;
      return str_cat("element ", i, ": device ", a, ", evaluator ", e);
    }
    if (actual.get_integer(i) != expected.get_integer(i))
      return str_cat("element ", i, ": device ", actual.get_integer(i), ", evaluator ", expected.get_integer(i));
  }
  return "";
}

TEST(CudaExecutor, CorpusModulesRunOnAnEmulatedDevice) {
  EmulatedDevice device;
  int ran = 0, unplanned = 0;
  int64_t launched = 0, loop_bytes = 0;
  std::mt19937 rng(7);
  for (const auto& entry : fs::directory_iterator(fs::path(INSITU_SOURCE_DIR) / "tests" / "data" / "jax")) {
    StatusOr<Loaded> loaded = load(entry.path() / "before_optimizations.hlo");
    if (!loaded.ok()) continue;  // a module for several devices does not optimize alone
    const std::unique_ptr<Module>& written = loaded->written;
    StatusOr<DevicePlan> plan = plan_for_cuda(*loaded->optimized->entry());
    if (!plan.ok()) {
      ++unplanned;
      continue;
    }
    StatusOr<std::unique_ptr<CudaExecutable>> executable = CudaExecutable::create(std::move(loaded->optimized), device);
    ASSERT_TRUE(executable.ok()) << entry.path() << ": " << executable.status().to_string();
    std::vector<Literal> arguments;
    for (int64_t p = 0; p < written->entry()->parameter_count(); ++p)
      arguments.push_back(random_argument(written->entry()->parameter(p)->shape(), rng));
    StatusOr<Literal> expected = evaluate_module(*written, arguments);
    ASSERT_TRUE(expected.ok()) << entry.path() << ": " << expected.status().to_string();
    CudaStats stats;
    StatusOr<Literal> actual = (*executable)->run(arguments, &stats);
    ASSERT_TRUE(actual.ok()) << entry.path() << ": " << actual.status().to_string();
    EXPECT_EQ(differs(*actual, *expected), "") << entry.path().filename();
    int64_t argument_bytes = 0;
    for (const Literal& argument : arguments) argument_bytes += argument.size_bytes();
    EXPECT_EQ(stats.bytes_to_device, argument_bytes) << entry.path().filename();
    launched += stats.kernels_launched;
    loop_bytes += stats.bytes_to_host - expected->size_bytes();
    ++ran;
  }
  EXPECT_GE(ran, 20);
  std::printf("CUDA executor on an emulated device: %d corpus modules agree with the evaluator (%lld kernels launched, "
              "%lld bytes of loop preds and branch indices read back); %d not planned yet\n",
              ran, static_cast<long long>(launched), static_cast<long long>(loop_bytes), unplanned);
}

// A multi-output fusion (the fusion pass makes Adam's m, v and p updates one) is one kernel
// writing every output; an integer clamp whose low bound is above its high bound gives the
// high bound, as XLA's min(max(x, lo), hi) does (the kernel gave lo for x < lo).
TEST(CudaExecutor, MultiOutputFusionAndAClampWithCrossedBoundsMatchTheEvaluator) {
  EmulatedDevice device;
  StatusOr<Loaded> loaded = load_text(R"(
HloModule cases

ENTRY main {
  m = f32[4,50] parameter(0)
  g = f32[4,50] parameter(1)
  p = f32[4,50] parameter(2)
  x = s32[7] parameter(3)
  half = f32[] constant(0.5)
  h = f32[4,50] broadcast(half), dimensions={}
  m2 = f32[4,50] multiply(m, h)
  m3 = f32[4,50] add(m2, g)
  e = f32[4,50] exponential(m3)
  p2 = f32[4,50] subtract(p, e)
  lo = s32[] constant(1)
  hi = s32[] constant(-5)
  c = s32[7] clamp(lo, x, hi)
  ROOT r = (f32[4,50], f32[4,50], s32[7]) tuple(p2, m3, c)
}
)");
  ASSERT_TRUE(loaded.ok()) << loaded.status().to_string();
  int multi_output = 0;
  for (const Instruction* instruction : loaded->optimized->entry()->instructions())
    multi_output += instruction->opcode() == Opcode::kFusion && instruction->shape().is_tuple();
  EXPECT_EQ(multi_output, 1);
  const std::unique_ptr<Module>& written = loaded->written;
  StatusOr<std::unique_ptr<CudaExecutable>> executable = CudaExecutable::create(std::move(loaded->optimized), device);
  ASSERT_TRUE(executable.ok()) << executable.status().to_string();
  std::vector<Literal> arguments = random_arguments(*written, 5);
  int32_t* x = arguments[3].data<int32_t>().data();
  for (int i = 0; i < 7; ++i) x[i] = i - 3;  // below, between and above both bounds
  StatusOr<Literal> expected = evaluate_module(*written, arguments);
  ASSERT_TRUE(expected.ok()) << expected.status().to_string();
  StatusOr<Literal> actual = (*executable)->run(arguments);
  ASSERT_TRUE(actual.ok()) << actual.status().to_string();
  EXPECT_EQ(differs(*actual, *expected), "");
  for (int i = 0; i < 7; ++i) EXPECT_EQ(expected->element(2).data<int32_t>()[i], -5);
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
    StatusOr<std::unique_ptr<CudaExecutable>> executable = CudaExecutable::create(std::move(loaded->optimized), device);
    ASSERT_TRUE(executable.ok()) << program << ": " << executable.status().to_string();
    std::mt19937 rng(3);
    std::vector<Literal> arguments;
    std::vector<DevicePointer> leaves;
    for (int64_t p = 0; p < written->entry()->parameter_count(); ++p) {
      arguments.push_back(random_argument(written->entry()->parameter(p)->shape(), rng));
      ASSERT_FALSE(arguments.back().shape().is_tuple());
      StatusOr<DevicePointer> pointer = device.allocate(arguments.back().size_bytes());
      ASSERT_TRUE(pointer.ok());
      ASSERT_TRUE(device.copy_to_device(*pointer, arguments.back().untyped_data(), arguments.back().size_bytes()).ok());
      leaves.push_back(*pointer);
    }
    StatusOr<Literal> expected = evaluate_module(*written, arguments);
    ASSERT_TRUE(expected.ok()) << expected.status().to_string();
    const int64_t live_before = device.live();
    CudaStats stats;
    StatusOr<std::vector<DevicePointer>> results = (*executable)->run_on_device(leaves, &stats);
    ASSERT_TRUE(results.ok()) << program << ": " << results.status().to_string();
    ASSERT_EQ(static_cast<int64_t>(results->size()), expected->shape().leaf_count());
    EXPECT_EQ((*results)[0], leaves[0]) << program << ": the donated cache is the result, in place";
    EXPECT_EQ(stats.bytes_to_device, 0) << program;
    EXPECT_EQ(stats.bytes_copied_on_device, 0) << program;
    // What the run left allocated: exactly the results that are not the caller's arguments.
    int64_t fresh = 0;
    for (DevicePointer result : *results)
      fresh += std::find(leaves.begin(), leaves.end(), result) == leaves.end();
    EXPECT_EQ(device.live() - live_before, fresh) << program << ": the run's temporaries are freed";
    for (int64_t i = 0; i < expected->shape().tuple_size(); ++i) {
      Literal actual(expected->element(i).shape());
      ASSERT_TRUE(device.copy_to_host(actual.untyped_data(), (*results)[i], actual.size_bytes()).ok());
      EXPECT_EQ(differs(actual, expected->element(i)), "") << program << " output " << i;
    }
    for (DevicePointer result : *results) {
      if (std::find(leaves.begin(), leaves.end(), result) == leaves.end()) {
        ASSERT_TRUE(device.free(result).ok());
      }
    }
    for (DevicePointer leaf : leaves) {
      ASSERT_TRUE(device.free(leaf).ok());
    }
  }
}

// Scatters in place: duplicate indices combine in the evaluator's order (a float sum's rounding
// depends on it), a window that does not fit is dropped, a combiner reading (update, current)
// and integer sums that wrap; a window overlapping another in part is a located refusal.
TEST(CudaExecutor, ScattersCombineDuplicatesInTheEvaluatorsOrder) {
  EmulatedDevice device;
  StatusOr<Loaded> loaded = load_text(R"(
HloModule scatters

add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}

max_first {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT m = f32[] maximum(b, a)
}

add_s32 {
  a = s32[] parameter(0)
  b = s32[] parameter(1)
  ROOT s = s32[] add(a, b)
}

ENTRY main {
  table = f32[6,5] parameter(0)
  rows = s32[9,1] parameter(1)
  updates = f32[9,5] parameter(2)
  counts = s32[4] parameter(3)
  at = s32[5,1] parameter(4)
  big = s32[5] parameter(5)
  summed = f32[6,5] scatter(table, rows, updates), update_window_dims={1}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=add
  maxed = f32[6,5] scatter(summed, rows, updates), update_window_dims={1}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=max_first
  wrapped = s32[4] scatter(counts, at, big), update_window_dims={}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=add_s32
  ROOT r = (f32[6,5], s32[4]) tuple(maxed, wrapped)
}
)");
  ASSERT_TRUE(loaded.ok()) << loaded.status().to_string();
  const std::unique_ptr<Module>& written = loaded->written;
  StatusOr<std::unique_ptr<CudaExecutable>> executable = CudaExecutable::create(std::move(loaded->optimized), device);
  ASSERT_TRUE(executable.ok()) << executable.status().to_string();
  std::vector<Literal> arguments = random_arguments(*written, 13);
  const int32_t rows[] = {2, 5, 2, -1, 6, 2, 0, 5, 2};  // 2 four times, 5 twice; -1 and 6 dropped
  std::copy(std::begin(rows), std::end(rows), arguments[1].data<int32_t>().data());
  float* updates = arguments[2].data<float>().data();
  for (int i = 0; i < 45; ++i) updates[i] = (i % 3 == 0) ? 1e8f : 1.0f / static_cast<float>(1 + i);  // order shows
  const int32_t at[] = {1, 1, 3, 4, 1};
  std::copy(std::begin(at), std::end(at), arguments[4].data<int32_t>().data());
  for (int32_t& value : arguments[5].data<int32_t>()) value = 2147483000;  // sums wrap
  StatusOr<Literal> expected = evaluate_module(*written, arguments);
  ASSERT_TRUE(expected.ok()) << expected.status().to_string();
  CudaStats stats;
  StatusOr<Literal> actual = (*executable)->run(arguments, &stats);
  ASSERT_TRUE(actual.ok()) << actual.status().to_string();
  EXPECT_TRUE(actual->element(0) == expected->element(0)) << "bit for bit: " << differs(*actual, *expected);
  EXPECT_TRUE(actual->element(1) == expected->element(1)) << differs(*actual, *expected);

  StatusOr<Loaded> partial = load_text(R"(
HloModule overlapping

add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}

ENTRY main {
  x = f32[10] parameter(0)
  starts = s32[2,1] parameter(1)
  windows = f32[2,3] parameter(2)
  ROOT y = f32[10] scatter(x, starts, windows), update_window_dims={1}, inserted_window_dims={}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=add
}
)");
  ASSERT_TRUE(partial.ok()) << partial.status().to_string();
  StatusOr<std::unique_ptr<CudaExecutable>> refused = CudaExecutable::create(std::move(partial->optimized), device);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("a window of extent 3 along scattered operand dimension 0"),
            std::string::npos)
      << refused.status().to_string();
}

// Integer arithmetic with XLA's rules, as the evaluator computes it: x / 0 = -1, MIN / -1 = MIN,
// x % 0 = x, MIN % -1 = 0, shifts by the width or more (negative amounts too) shift all out,
// sums and products wrap; on s32 and u32 (a layout other than row-major changes nothing: it is
// metadata, as on the CPU).
TEST(CudaExecutor, IntegerEdgeCasesFollowTheEvaluator) {
  EmulatedDevice device;
  StatusOr<Loaded> loaded = load_text(R"(
HloModule integers

ENTRY main {
  a = s32[12] parameter(0)
  b = s32[12] parameter(1)
  ua = u32[12] parameter(2)
  ub = u32[12] parameter(3)
  q = s32[12] divide(a, b)
  r = s32[12] remainder(a, b)
  l = s32[12] shift-left(a, b)
  sl = s32[12] shift-right-logical(a, b)
  sa = s32[12] shift-right-arithmetic(a, b)
  m = s32[12] multiply(a, a)
  s = s32[12] add(a, b)
  x = s32[12] xor(a, b)
  uq = u32[12] divide(ua, ub)
  ur = u32[12] remainder(ua, ub)
  usa = u32[12] shift-right-arithmetic(ua, ub)
  t = s32[3,4]{0,1} reshape(q)
  tt = s32[4,3]{0,1} transpose(t), dimensions={1,0}
  ROOT out = (s32[12], s32[12], s32[12], s32[12], s32[12], s32[12], s32[12], s32[12], u32[12], u32[12], u32[12], s32[4,3]{0,1}) tuple(q, r, l, sl, sa, m, s, x, uq, ur, usa, tt)
}
)");
  ASSERT_TRUE(loaded.ok()) << loaded.status().to_string();
  const std::unique_ptr<Module>& written = loaded->written;
  StatusOr<std::unique_ptr<CudaExecutable>> executable = CudaExecutable::create(std::move(loaded->optimized), device);
  ASSERT_TRUE(executable.ok()) << executable.status().to_string();
  std::vector<Literal> arguments = random_arguments(*written, 1);
  const int32_t a[] = {7, -7, INT32_MIN, INT32_MIN, 5, -5, 1, -1, INT32_MAX, 123456789, -8, 0};
  const int32_t b[] = {0, 2, -1, 0, 31, 32, -1, 33, 1, 7, 2, 0};
  std::copy(std::begin(a), std::end(a), arguments[0].data<int32_t>().data());
  std::copy(std::begin(b), std::end(b), arguments[1].data<int32_t>().data());
  for (int i = 0; i < 12; ++i) {
    arguments[2].data<uint32_t>()[i] = static_cast<uint32_t>(a[i]);
    arguments[3].data<uint32_t>()[i] = static_cast<uint32_t>(b[i]);
  }
  StatusOr<Literal> expected = evaluate_module(*written, arguments);
  ASSERT_TRUE(expected.ok()) << expected.status().to_string();
  StatusOr<Literal> actual = (*executable)->run(arguments);
  ASSERT_TRUE(actual.ok()) << actual.status().to_string();
  for (int64_t k = 0; k < expected->shape().tuple_size(); ++k)
    EXPECT_TRUE(actual->element(k) == expected->element(k))
        << "output " << k << ": " << actual->element(k).to_string() << " vs " << expected->element(k).to_string();
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
  std::vector<DevicePointer> leaves;
  for (const Literal& argument : arguments) {
    StatusOr<DevicePointer> pointer = device.allocate(argument.size_bytes());
    ASSERT_TRUE(pointer.ok());
    ASSERT_TRUE(device.copy_to_device(*pointer, argument.untyped_data(), argument.size_bytes()).ok());
    leaves.push_back(*pointer);
  }
  CudaStats stats;
  StatusOr<std::vector<DevicePointer>> results = (*executable)->run_on_device(leaves, &stats);
  ASSERT_TRUE(results.ok()) << results.status().to_string();
  ASSERT_EQ(results->size(), 2u);
  EXPECT_EQ((*results)[0], leaves[0]) << "the donated cache is updated in place, twice";
  EXPECT_EQ(stats.bytes_copied_on_device, 0);
  EXPECT_EQ(stats.kernels_launched, 3);
  for (int64_t i = 0; i < 2; ++i) {
    Literal actual(expected->element(i).shape());
    ASSERT_TRUE(device.copy_to_host(actual.untyped_data(), (*results)[i], actual.size_bytes()).ok());
    EXPECT_EQ(differs(actual, expected->element(i)), "") << "output " << i;
  }
  ASSERT_TRUE(device.free((*results)[1]).ok());
  for (DevicePointer leaf : leaves) ASSERT_TRUE(device.free(leaf).ok());
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

}  // namespace
}  // namespace insitu::cuda
