// The runtime's Executable on a CUDA device (ExecutableOptions::device = kCuda), here the
// emulated one: the same calls, checks and donation rules as on the CPU, with the transfers
// counted. Every value is checked against the CPU executable of the same module.
#include <thread>

#include "emulated_device.h"
#include "insitu/cuda/driver.h"
#include "insitu/runtime/executable.h"

namespace insitu::cuda {
namespace {

using namespace testing;

// A decode step's shape: row i of a donated cache is overwritten, and the cache's column sums
// (read after the update) come out beside it.
constexpr const char* kStep = R"(
HloModule step, input_output_alias={ {0}: (0, {}, may-alias) }
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY main {
  cache = f32[4,8] parameter(0)
  row = f32[1,8] parameter(1)
  i = s32[] parameter(2)
  zero = s32[] constant(0)
  updated = f32[4,8] dynamic-update-slice(cache, row, i, zero)
  init = f32[] constant(0)
  sums = f32[8] reduce(updated, init), dimensions={0}, to_apply=add
  ROOT out = (f32[4,8], f32[8]) tuple(updated, sums)
})";

StatusOr<std::unique_ptr<Executable>> compile(const std::string& text, ExecutableOptions options) {
  INSITU_ASSIGN_OR_RETURN(std::unique_ptr<Module> module, parse_module(text));
  INSITU_ASSIGN_OR_RETURN(OptimizedModule optimized, optimize_module(std::move(module)));
  return Executable::create(std::move(optimized), options);
}

Literal filled(Shape shape, float start) {
  Literal literal(std::move(shape));
  for (int64_t k = 0; k < literal.element_count(); ++k) literal.data<float>()[k] = start + static_cast<float>(k);
  return literal;
}

struct StepArguments {
  Literal cache = filled(Shape::array(PrimitiveType::kF32, {4, 8}), 0.5f);
  Literal row = filled(Shape::array(PrimitiveType::kF32, {1, 8}), 100.0f);
  Literal i = Literal::scalar<int32_t>(2);
  std::vector<BufferHandle> handles() const {
    return {BufferHandle::from_literal(cache).value(), BufferHandle::from_literal(row).value(),
            BufferHandle::from_literal(i).value()};
  }
};

class ExecutableOnCuda : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    device_ = new EmulatedDevice;
    StatusOr<std::unique_ptr<Executable>> on_cuda = compile(kStep, {.device = DeviceKind::kCuda, .cuda_device = device_});
    ASSERT_TRUE(on_cuda.ok()) << on_cuda.status().to_string();
    on_cuda_ = on_cuda->release();
    StatusOr<std::unique_ptr<Executable>> on_cpu = compile(kStep, {});
    ASSERT_TRUE(on_cpu.ok()) << on_cpu.status().to_string();
    on_cpu_ = on_cpu->release();
  }
  static void TearDownTestSuite() {
    delete on_cuda_;  // before its device
    delete on_cpu_;
    delete device_;
  }
  // The CPU's results for `arguments`, as literals.
  static std::vector<Literal> expected(const StepArguments& arguments) {
    std::vector<Literal> literals;
    const std::vector<BufferHandle> results = on_cpu_->execute(arguments.handles()).value();
    for (const BufferHandle& result : results)
      literals.push_back(result.to_literal().value());
    return literals;
  }
  static inline EmulatedDevice* device_ = nullptr;
  static inline Executable* on_cuda_ = nullptr;
  static inline Executable* on_cpu_ = nullptr;
};

TEST_F(ExecutableOnCuda, ADonatedCacheComesBackAsItsOwnBufferUpdated) {
  StepArguments arguments;
  std::vector<BufferHandle> handles = arguments.handles();
  const uint8_t* cache_memory = handles[0].data();
  ExecutionStats stats;
  StatusOr<std::vector<BufferHandle>> results =
      on_cuda_->execute(handles, {.donate = {true, false, false}, .stats = &stats});
  ASSERT_TRUE(results.ok()) << results.status().to_string();
  EXPECT_EQ(on_cuda_->device(), DeviceKind::kCuda);
  EXPECT_EQ(on_cuda_->device_name(), device_->name());
  EXPECT_EQ(on_cpu_->device_name(), "cpu");
  EXPECT_TRUE(handles[0].is_donated());
  ASSERT_EQ(results->size(), 2u);
  EXPECT_EQ((*results)[0].data(), cache_memory);  // the donated buffer is the updated cache
  const std::vector<Literal> want = expected(arguments);
  for (size_t j = 0; j < 2; ++j) EXPECT_EQ(not_identical((*results)[j].to_literal().value(), want[j]), "") << j;
  // Every transfer counted: the three arguments in, the two results out, nothing else.
  EXPECT_EQ(stats.bytes_to_device, 4 * 8 * 4 + 8 * 4 + 4);
  EXPECT_EQ(stats.bytes_to_host, 4 * 8 * 4 + 8 * 4);
  EXPECT_EQ(stats.bytes_copied, 0);
  EXPECT_GT(stats.kernels_launched, 0);
  EXPECT_GT(stats.peak_memory_bytes, 0);
  EXPECT_EQ(on_cuda_->last_stats().bytes_to_host, stats.bytes_to_host);
}

TEST_F(ExecutableOnCuda, AnAliasedArgumentNotDonatedIsLeftAsItWas) {
  StepArguments arguments;
  std::vector<BufferHandle> handles = arguments.handles();
  StatusOr<std::vector<BufferHandle>> results = on_cuda_->execute(handles);
  ASSERT_TRUE(results.ok()) << results.status().to_string();
  EXPECT_TRUE(handles[0].is_usable());
  EXPECT_EQ(handles[0].to_literal().value(), arguments.cache);
  EXPECT_NE((*results)[0].data(), handles[0].data());
  EXPECT_EQ(not_identical((*results)[0].to_literal().value(), expected(arguments)[0]), "");
}

TEST_F(ExecutableOnCuda, BorrowedMemoryOfADonatedCacheIsUpdatedInPlace) {
  StepArguments arguments;
  const std::vector<Literal> want = expected(arguments);
  Literal cache = arguments.cache;
  Literal sums(Shape::array(PrimitiveType::kF32, {8}));
  uint8_t* const argument_memory[] = {cache.untyped_data(), arguments.row.untyped_data(), arguments.i.untyped_data()};
  uint8_t* const result_memory[] = {cache.untyped_data(), sums.untyped_data()};
  Status status = on_cuda_->execute_borrowed(argument_memory, result_memory, {.donate = {true}});
  ASSERT_TRUE(status.ok()) << status.to_string();
  EXPECT_EQ(not_identical(cache, want[0]), "");
  EXPECT_EQ(not_identical(sums, want[1]), "");
}

TEST_F(ExecutableOnCuda, AFailingCallLeavesEveryInputIntactWithTheCpusMessage) {
  StepArguments arguments;
  std::vector<BufferHandle> handles = arguments.handles();
  handles[1] = BufferHandle::from_literal(filled(Shape::array(PrimitiveType::kF32, {2, 8}), 0)).value();
  StatusOr<std::vector<BufferHandle>> on_cuda = on_cuda_->execute(handles, {.donate = {true}});
  StatusOr<std::vector<BufferHandle>> on_cpu = on_cpu_->execute(handles, {.donate = {true}});
  ASSERT_FALSE(on_cuda.ok());
  EXPECT_EQ(on_cuda.status().to_string(), on_cpu.status().to_string());
  EXPECT_NE(on_cuda.status().message().find("argument 1"), std::string::npos) << on_cuda.status().to_string();
  EXPECT_TRUE(handles[0].is_usable());
  EXPECT_EQ(handles[0].to_literal().value(), arguments.cache);

  // One buffer passed twice with one of them donated.
  std::vector<BufferHandle> twice = arguments.handles();
  twice[1] = twice[0];
  EXPECT_FALSE(on_cuda_->execute(twice, {.donate = {true}}).ok());
  EXPECT_TRUE(twice[0].is_usable());

  // Memory for too few results.
  uint8_t* const argument_memory[] = {arguments.cache.untyped_data(), arguments.row.untyped_data(),
                                      arguments.i.untyped_data()};
  uint8_t* const result_memory[] = {arguments.cache.untyped_data()};
  Status borrowed = on_cuda_->execute_borrowed(argument_memory, result_memory);
  EXPECT_NE(borrowed.message().find("returns 2 array(s), got memory for 1"), std::string::npos) << borrowed.to_string();
}

TEST_F(ExecutableOnCuda, OptionsTheDeviceCannotHonourAreRefusedNotIgnored) {
  StepArguments arguments;
  std::vector<BufferHandle> handles = arguments.handles();
  StatusOr<std::vector<BufferHandle>> timed = on_cuda_->execute(handles, {.donate = {true}, .timeout_seconds = 5});
  ASSERT_FALSE(timed.ok());
  EXPECT_EQ(timed.status().code(), StatusCode::kUnimplemented);
  EXPECT_NE(timed.status().message().find("timeout"), std::string::npos) << timed.status().to_string();
  EXPECT_TRUE(handles[0].is_usable());
  StatusOr<std::vector<BufferHandle>> profiled = on_cuda_->execute(handles, {.profile = true});
  ASSERT_FALSE(profiled.ok());
  EXPECT_NE(profiled.status().message().find("profiling"), std::string::npos) << profiled.status().to_string();
}

TEST_F(ExecutableOnCuda, CallsFromManyThreadsAtOnceAgree) {
  StepArguments arguments;
  const std::vector<Literal> want = expected(arguments);
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 3; ++t)
    threads.emplace_back([&] {
      for (int k = 0; k < 10; ++k) {
        StatusOr<std::vector<BufferHandle>> results = on_cuda_->execute(arguments.handles(), {.donate = {true}});
        if (!results.ok() || !((*results)[0].to_literal().value() == want[0]) ||
            !((*results)[1].to_literal().value() == want[1]))
          ++wrong;
      }
    });
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(wrong.load(), 0);
}

TEST(ExecutableOnCudaCreate, AnOpTheDeviceCannotRunFailsCreateAtItsLocation) {
  EmulatedDevice device;
  StatusOr<std::unique_ptr<Executable>> executable = compile(R"(
HloModule spectrum
ENTRY main {
  x = c64[8] parameter(0)
  ROOT f = c64[8] fft(x), fft_type=FFT, fft_length={8}
})",
                                                             {.device = DeviceKind::kCuda, .cuda_device = &device});
  ASSERT_FALSE(executable.ok());
  EXPECT_EQ(executable.status().code(), StatusCode::kUnimplemented);
  EXPECT_NE(executable.status().to_string().find("%f"), std::string::npos) << executable.status().to_string();
  EXPECT_EQ(executable.status().to_string().rfind("5:8: ", 0), 0u) << executable.status().to_string();  // line:column
}

TEST(ExecutableOnCudaCreate, WithoutADeviceGivenTheDriverIsOpenedOrCreateSaysWhyNot) {
  StatusOr<std::unique_ptr<Driver>> driver = Driver::open();
  StatusOr<std::unique_ptr<Executable>> executable = compile(kStep, {.device = DeviceKind::kCuda});
  if (driver.ok()) {
    ASSERT_TRUE(executable.ok()) << executable.status().to_string();
    EXPECT_EQ((*executable)->device(), DeviceKind::kCuda);
    return;
  }
  ASSERT_FALSE(executable.ok());
  EXPECT_EQ(executable.status().to_string(), driver.status().to_string());
}

}  // namespace
}  // namespace insitu::cuda
