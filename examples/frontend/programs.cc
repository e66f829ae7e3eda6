// The frontend example programs (programs.h).
#include "examples/frontend/programs.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "examples/kernels/example_kernels.h"
#include "insitu/passes/explain.h"
#include "insitu/frontend/jit.h"
#include "insitu/frontend/kernel_call.h"
#include "insitu/frontend/ops.h"
#include "insitu/ir/printer.h"
#include "insitu/support/str.h"

namespace insitu::examples {
namespace {

template <typename T>
std::string values_text(const std::vector<T>& values, size_t limit = 16) {
  std::string out = "{";
  for (size_t i = 0; i < values.size() && i < limit; ++i) out += str_cat(i ? ", " : "", values[i]);
  return out + (values.size() > limit ? ", ...}" : "}");
}

void describe_compile(const JitFunction& f, ExampleResult& result) {
  const Module& optimized = *f.last_compiled()->optimized;
  const Explanation explanation = explain_module(optimized);
  result.copies = static_cast<int64_t>(explanation.copies.size());
  result.bytes_copied = f.last_stats().bytes_copied;
  result.report += str_cat("\n--- optimized HLO ---\n", print_module(optimized), "\n--- explain ---\n",
                           explanation_text(explanation), "bytes copied at run time: ", result.bytes_copied, "\n");
}

bool near(const std::vector<float>& a, const std::vector<float>& b, float tolerance) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (std::abs(a[i] - b[i]) > tolerance) return false;
  return true;
}

}  // namespace

StatusOr<ExampleResult> run_plus_one_mutating(int threads) {
  JitFunction f = jit(
      [](std::vector<Tensor>& a) {
        call_kernel_mutating("plus_one", {a[0]}, std::vector<int64_t>{0});  // mutates_args=("x",)
        return std::vector<Tensor>{};
      },
      {.name = "plus_one_", .threads = threads});
  Array x = Array::from_vector<int32_t>({4}, {1, 1, 1, 1}, "x");
  const void* buffer = x.data();
  INSITU_RETURN_IF_ERROR(f({x}).status());
  INSITU_ASSIGN_OR_RETURN(std::vector<int32_t> values, x.to_vector<int32_t>());
  ExampleResult result;
  result.report = str_cat("x after plus_one_(x): ", values_text(values), "\n");
  result.correct = values == std::vector<int32_t>{2, 2, 2, 2};
  result.in_place = x.data() == buffer;
  describe_compile(f, result);
  return result;
}

StatusOr<ExampleResult> run_plus_one_donated(int threads) {
  JitFunction f = jit([](std::vector<Tensor>& a) { return call_kernel("plus_one", {a[0]}); },
                      {.donate_argnums = {0}, .name = "plus_one", .threads = threads});
  Array x = Array::from_vector<float>({4}, {1, 1, 1, 1}, "x");
  const void* buffer = x.data();
  INSITU_ASSIGN_OR_RETURN(std::vector<Array> out, f({x}));
  INSITU_ASSIGN_OR_RETURN(std::vector<float> values, out[0].to_vector<float>());
  ExampleResult result;
  result.report = str_cat("y = plus_one(x) with x donated: ", values_text(values), "; x deleted: ",
                          x.deleted() ? "yes" : "no", "\n");
  result.correct = values == std::vector<float>{2, 2, 2, 2} && x.deleted();
  result.in_place = out[0].data() == buffer;
  describe_compile(f, result);
  return result;
}

StatusOr<ExampleResult> run_kv_cache_decode(int threads) {
  constexpr int64_t kLength = 64, kWidth = 16, kSteps = 10;
  // One decode step: write this step's key vector at row `position`, in place.
  JitFunction step = jit(
      [](std::vector<Tensor>& a) {
        Tensor cache = a[0], token = a[1], position = a[2];
        cache.assign(dynamic_update_slice(cache, token, {position, scalar(0, PrimitiveType::kS32)}));
        return std::vector<Tensor>{};
      },
      {.name = "decode_step", .threads = threads});
  Array cache = Array::zeros(Shape::array(PrimitiveType::kF32, {kLength, kWidth}), "cache");
  const void* buffer = cache.data();
  int64_t bytes_copied = 0;
  for (int64_t t = 0; t < kSteps; ++t) {
    Array token = Array::from_vector<float>({1, kWidth}, std::vector<float>(kWidth, static_cast<float>(t + 1)), "token");
    Array position = Array::from_vector<int32_t>({}, {static_cast<int32_t>(t)}, "position");
    INSITU_RETURN_IF_ERROR(step({cache, token, position}).status());
    bytes_copied += step.last_stats().bytes_copied;
  }
  INSITU_ASSIGN_OR_RETURN(std::vector<float> values, cache.to_vector<float>());
  std::vector<float> expected(kLength * kWidth, 0.0f);
  for (int64_t t = 0; t < kSteps; ++t)
    for (int64_t j = 0; j < kWidth; ++j) expected[t * kWidth + j] = static_cast<float>(t + 1);
  ExampleResult result;
  result.report = str_cat("cache rows after ", kSteps, " steps: ");
  for (int64_t t = 0; t <= kSteps; ++t) result.report += str_cat(values[t * kWidth], " ");
  result.report += str_cat("(compiled ", step.cache_size(), " time(s) for ", kSteps, " steps)\n");
  result.correct = values == expected && step.cache_size() == 1;
  result.in_place = cache.data() == buffer;
  describe_compile(step, result);
  result.bytes_copied = bytes_copied;
  return result;
}

StatusOr<ExampleResult> run_adam_step(int threads) {
  constexpr int64_t kSize = 1000;
  JitFunction f = jit(
      [](std::vector<Tensor>& a) {
        // adam_step(params, grads, m, v) writes params, m and v in place.
        call_kernel_mutating("adam_step", {a[0], a[1], a[2], a[3]}, std::vector<int64_t>{0, 2, 3});
        return std::vector<Tensor>{};
      },
      {.name = "adam", .threads = threads});
  std::vector<float> params(kSize), grads(kSize), m(kSize), v(kSize);
  for (int64_t i = 0; i < kSize; ++i) {
    params[i] = 0.01f * static_cast<float>(i % 37) - 0.1f;
    grads[i] = 0.001f * static_cast<float>(i % 11) - 0.005f;
    m[i] = 0.0001f * static_cast<float>(i % 5);
    v[i] = 0.00001f * static_cast<float>(i % 7);
  }
  Array p = Array::from_vector<float>({kSize}, params, "params"), g = Array::from_vector<float>({kSize}, grads, "grads");
  Array m_array = Array::from_vector<float>({kSize}, m, "m"), v_array = Array::from_vector<float>({kSize}, v, "v");
  const void* buffers[3] = {p.data(), m_array.data(), v_array.data()};
  INSITU_RETURN_IF_ERROR(f({p, g, m_array, v_array}).status());
  for (int64_t i = 0; i < kSize; ++i) {
    m[i] = kAdamBeta1 * m[i] + (1 - kAdamBeta1) * grads[i];
    v[i] = kAdamBeta2 * v[i] + (1 - kAdamBeta2) * grads[i] * grads[i];
    const float m_hat = m[i] / (1 - kAdamBeta1), v_hat = v[i] / (1 - kAdamBeta2);
    params[i] -= kAdamLearningRate * m_hat / (std::sqrt(v_hat) + kAdamEpsilon);
  }
  INSITU_ASSIGN_OR_RETURN(std::vector<float> new_params, p.to_vector<float>());
  INSITU_ASSIGN_OR_RETURN(std::vector<float> new_m, m_array.to_vector<float>());
  INSITU_ASSIGN_OR_RETURN(std::vector<float> new_v, v_array.to_vector<float>());
  ExampleResult result;
  result.report = str_cat("params after one Adam step: ", values_text(new_params, 6), "\n");
  result.correct = near(new_params, params, 1e-6f) && near(new_m, m, 1e-7f) && near(new_v, v, 1e-9f);
  result.in_place = p.data() == buffers[0] && m_array.data() == buffers[1] && v_array.data() == buffers[2];
  describe_compile(f, result);
  return result;
}

StatusOr<ExampleResult> run_tiled_grid(int threads) {
  constexpr int64_t kRows = 70, kColumns = 45;  // not multiples of the 32x32 tiles: ragged edges
  JitFunction f = jit([](std::vector<Tensor>& a) { return call_kernel("tiled_axpy", {a[0], a[1]}, {a[0].shape()}); },
                      {.name = "tiled_axpy", .threads = threads});
  std::vector<float> x(kRows * kColumns), y(kRows * kColumns), expected(kRows * kColumns);
  for (int64_t i = 0; i < kRows * kColumns; ++i) {
    x[i] = static_cast<float>(i % 101) * 0.5f;
    y[i] = static_cast<float>(i % 13) - 6.0f;
    expected[i] = 2.0f * x[i] + y[i];
  }
  INSITU_ASSIGN_OR_RETURN(std::vector<Array> out, f({Array::from_vector<float>({kRows, kColumns}, x, "x"),
                                                     Array::from_vector<float>({kRows, kColumns}, y, "y")}));
  INSITU_ASSIGN_OR_RETURN(std::vector<float> values, out[0].to_vector<float>());
  ExampleResult result;
  result.report = str_cat("2*x+y over f32[", kRows, ",", kColumns, "] in 32x32 tiles: ", values_text(values, 8), "\n");
  result.correct = values == expected;
  result.in_place = true;  // no aliasing in this kernel
  describe_compile(f, result);
  return result;
}

int example_main(int argc, char** argv, StatusOr<ExampleResult> (*run)(int threads)) {
  const int threads = argc > 1 ? std::atoi(argv[1]) : 2;
  StatusOr<ExampleResult> result = run(threads);
  if (!result.ok()) {
    std::fprintf(stderr, "%s\n", result.status().to_string().c_str());
    return 1;
  }
  std::printf("%s", result->report.c_str());
  std::printf("correct: %s; written in place: %s\n", result->correct ? "yes" : "NO", result->in_place ? "yes" : "no");
  return result->correct ? 0 : 1;
}

}  // namespace insitu::examples
