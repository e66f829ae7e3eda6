// Tracing C++ functions into modules: the traced module verifies and evaluates (reference
// evaluator) to the same values as the computation written directly in C++.
#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "insitu/evaluator/evaluator.h"
#include "insitu/frontend/control_flow.h"
#include "insitu/frontend/jit.h"
#include "insitu/frontend/kernel_call.h"
#include "insitu/frontend/ops.h"
#include "insitu/ir/printer.h"

namespace insitu {
namespace {

Shape f32(std::vector<int64_t> dimensions) { return Shape::array(PrimitiveType::kF32, std::move(dimensions)); }

Literal evaluate(const TracedFunction& traced, std::vector<Literal> arguments) {
  StatusOr<Literal> result = evaluate_module(*traced.module, arguments);
  EXPECT_TRUE(result.ok()) << result.status().to_string();
  return result.ok() ? *result : Literal();
}

TEST(FrontendTracing, ElementwiseOpsMatchDirectComputation) {
  auto fn = [](std::vector<Tensor>& a) {
    Tensor x = a[0], y = a[1];
    Tensor picked = select(compare(x, y, ComparisonDirection::kGt), exp(x) * 2.0, tanh(y));
    Tensor rest = sqrt(abs(maximum(x, y) - minimum(x, y))) + log(abs(x) + 1.0) / (-y + 10.0);
    return std::vector<Tensor>{picked - rest, convert(x, PrimitiveType::kS32)};
  };
  StatusOr<TracedFunction> traced = trace_function(fn, {f32({4}), f32({4})}, "elementwise");
  ASSERT_TRUE(traced.ok()) << traced.status().to_string();
  std::vector<float> xs = {0.5f, -1.5f, 2.0f, 3.25f}, ys = {1.0f, -2.0f, 2.0f, -0.5f};
  Literal result = evaluate(*traced, {Literal::vector(xs), Literal::vector(ys)});
  for (int i = 0; i < 4; ++i) {
    float x = xs[i], y = ys[i];
    float picked = x > y ? std::exp(x) * 2.0f : std::tanh(y);
    float rest = std::sqrt(std::abs(std::max(x, y) - std::min(x, y))) + std::log(std::abs(x) + 1.0f) / (-y + 10.0f);
    EXPECT_NEAR(result.element(0).get<float>({i}), picked - rest, 1e-5) << i;
    EXPECT_EQ(result.element(1).get<int32_t>({i}), static_cast<int32_t>(x)) << i;
  }
}

// Regression: a bf16 or f16 scalar constant stored the number's integer part as its bits
// (`T(static_cast<float>(value))` on a 16-bit aggregate), so x * 2.0 multiplied by a tiny
// subnormal.
TEST(FrontendTracing, SmallFloatScalarsHoldTheirValue) {
  for (PrimitiveType type : {PrimitiveType::kBF16, PrimitiveType::kF16, PrimitiveType::kF8E4M3FN}) {
    auto fn = [type](std::vector<Tensor>& a) {
      return std::vector<Tensor>{convert(convert(a[0], type) * 2.5, PrimitiveType::kF32)};
    };
    StatusOr<TracedFunction> traced = trace_function(fn, {f32({2})}, "scale");
    ASSERT_TRUE(traced.ok()) << traced.status().to_string();
    Literal result = evaluate(*traced, {Literal::vector(std::vector<float>{1.0f, -2.0f})});
    EXPECT_EQ(result.element(0).get<float>({0}), 2.5f) << primitive_type_name(type);
    EXPECT_EQ(result.element(0).get<float>({1}), -5.0f) << primitive_type_name(type);
  }
}

TEST(FrontendTracing, DataMovementReductionsAndDot) {
  auto fn = [](std::vector<Tensor>& a) {
    Tensor m = a[0];                                   // f32[2,3]
    Tensor t = transpose(m, {1, 0});                   // [3,2]
    Tensor prod = matmul(m, t);                        // [2,2]
    Tensor flat = reshape(m, {6});
    Tensor cat = concatenate({flat, slice(flat, {1}, {5}, {2})}, 0);  // [8]
    Tensor row_sums = reduce_sum(m, {1});              // [2]
    Tensor col_max = reduce_max(m, {0});               // [3]
    Tensor index = scalar(1, PrimitiveType::kS32);
    Tensor window = dynamic_slice(m, {index, index}, {1, 2});           // m[1,1:3]
    Tensor patched = dynamic_update_slice(m, broadcast(scalar(-7, PrimitiveType::kF32), {1, 2}, {}),
                                          {scalar(0, PrimitiveType::kS32), index});
    Tensor ramp = convert(iota(Shape::array(PrimitiveType::kS32, {3}), 0), PrimitiveType::kF32) + col_max;
    return std::vector<Tensor>{prod, cat, row_sums, ramp, window, patched};
  };
  StatusOr<TracedFunction> traced = trace_function(fn, {f32({2, 3})}, "movement");
  ASSERT_TRUE(traced.ok()) << traced.status().to_string();
  std::vector<float> m = {1, 2, 3, 4, 5, 6};
  Literal result = evaluate(*traced, {Literal::from_values<float>({2, 3}, m)});
  EXPECT_EQ(result.element(0), Literal::from_values<float>({2, 2}, {14, 32, 32, 77}));
  EXPECT_EQ(result.element(1), Literal::vector<float>({1, 2, 3, 4, 5, 6, 2, 4}));
  EXPECT_EQ(result.element(2), Literal::vector<float>({6, 15}));
  EXPECT_EQ(result.element(3), Literal::vector<float>({4, 6, 8}));
  EXPECT_EQ(result.element(4), Literal::from_values<float>({1, 2}, {5, 6}));
  EXPECT_EQ(result.element(5), Literal::from_values<float>({2, 3}, {1, -7, -7, 4, 5, 6}));
}

TEST(FrontendTracing, ForiLoopWithTupleCarryAndCond) {
  auto fn = [](std::vector<Tensor>& a) {
    // sum_{i<5} i * x, and a running product of 2s, as a two-value carry.
    std::vector<Tensor> out = fori_loop(
        0, 5,
        [](const Tensor& i, const std::vector<Tensor>& carry) {
          Tensor step = broadcast(convert(i, PrimitiveType::kF32), {3}, {});
          return std::vector<Tensor>{carry[0] + step * carry[2], carry[1] * 2.0, carry[2]};
        },
        {full_like(a[0], 0.0), scalar(1, PrimitiveType::kF32), a[0]});
    Tensor positive = compare(reduce_sum(a[0], {0}), scalar(0, PrimitiveType::kF32), ComparisonDirection::kGt);
    std::vector<Tensor> chosen = cond(
        positive, [](const std::vector<Tensor>& v) { return std::vector<Tensor>{v[0] + 100.0}; },
        [](const std::vector<Tensor>& v) { return std::vector<Tensor>{-v[0]}; }, {out[0]});
    return std::vector<Tensor>{chosen[0], out[1]};
  };
  StatusOr<TracedFunction> traced = trace_function(fn, {f32({3})}, "loops");
  ASSERT_TRUE(traced.ok()) << traced.status().to_string();
  Literal positive = evaluate(*traced, {Literal::vector<float>({1, 2, 3})});
  EXPECT_EQ(positive.element(0), Literal::vector<float>({110, 120, 130}));
  EXPECT_EQ(positive.element(1), Literal::scalar<float>(32));
  Literal negative = evaluate(*traced, {Literal::vector<float>({-1, -2, -3})});
  EXPECT_EQ(negative.element(0), Literal::vector<float>({10, 20, 30}));
}

TEST(FrontendTracing, ScatterAddRows) {
  auto fn = [](std::vector<Tensor>& a) { return std::vector<Tensor>{scatter_add_rows(a[0], a[1], a[2])}; };
  StatusOr<TracedFunction> traced =
      trace_function(fn, {f32({3, 2}), Shape::array(PrimitiveType::kS32, {3}), f32({3, 2})}, "scatter");
  ASSERT_TRUE(traced.ok()) << traced.status().to_string();
  Literal result = evaluate(*traced, {Literal::from_values<float>({3, 2}, {0, 0, 1, 1, 2, 2}),
                                      Literal::vector<int32_t>({2, 0, 2}),
                                      Literal::from_values<float>({3, 2}, {1, 2, 10, 20, 100, 200})});
  EXPECT_EQ(result.element(0), Literal::from_values<float>({3, 2}, {10, 20, 1, 1, 103, 204}));
}

TEST(FrontendTracing, InstructionsCarryOpNameMetadata) {
  auto fn = [](std::vector<Tensor>& a) { return std::vector<Tensor>{exp(a[0])}; };
  StatusOr<TracedFunction> traced = trace_function(fn, {f32({2})}, "f");
  ASSERT_TRUE(traced.ok());
  EXPECT_NE(print_module(*traced->module).find("metadata={op_name=\"jit(f)/exponential\"}"), std::string::npos)
      << print_module(*traced->module);
}

TEST(FrontendTracing, ShapeMismatchIsATracedErrorNamingTheOp) {
  auto fn = [](std::vector<Tensor>& a) { return std::vector<Tensor>{a[0] + a[1]}; };
  StatusOr<TracedFunction> traced = trace_function(fn, {f32({2}), f32({3})}, "bad");
  ASSERT_FALSE(traced.ok());
  EXPECT_NE(traced.status().message().find("tracing add in jit(bad)"), std::string::npos) << traced.status().message();
}

TEST(FrontendTracing, OuterValueInsideLoopBodyIsAnError) {
  auto fn = [](std::vector<Tensor>& a) {
    Tensor outer = a[0];
    return fori_loop(0, 2, [&](const Tensor&, const std::vector<Tensor>& c) { return std::vector<Tensor>{c[0] + outer}; },
                     {a[0]});
  };
  StatusOr<TracedFunction> traced = trace_function(fn, {f32({2})}, "capture");
  ASSERT_FALSE(traced.ok());
  EXPECT_NE(traced.status().message().find("pass the value through the carry"), std::string::npos)
      << traced.status().message();
}

// A target the frontend traces but never runs: a table entry with a signature alone.
void declare_scale_signature() {
  if (CustomCallTable::global().find("frontend_test_scale") == nullptr) {
    ASSERT_TRUE(CustomCallTable::global()
                    .add({.name = "frontend_test_scale",
                          .signature = CustomCallSignature{.input_output_aliases = {{0, 0}}},
                          .origin = "tracing tests"})
                    .ok());
  }
}

TEST(FrontendTracing, KernelCallEmitsTheKernelsAliasing) {
  declare_scale_signature();
  auto fn = [](std::vector<Tensor>& a) { return call_kernel("frontend_test_scale", {a[0]}); };
  StatusOr<TracedFunction> traced = trace_function(fn, {f32({4})}, "k");
  ASSERT_TRUE(traced.ok()) << traced.status().to_string();
  const Instruction* call = traced->module->entry()->root()->operand(0);
  ASSERT_EQ(call->opcode(), Opcode::kCustomCall);
  EXPECT_EQ(call->custom_call.target, "frontend_test_scale");
  ASSERT_EQ(call->custom_call.output_to_operand_aliasing.size(), 1u);
  EXPECT_EQ(call->custom_call.output_to_operand_aliasing[0].operand_number, 0);
}

// A parameter's own name is taken: a traced op of the same stem gets another one.
TEST(FrontendTracing, ParameterNamesNeverClashWithTracedNames) {
  auto fn = [](std::vector<Tensor>& a) {
    Tensor x = a[0] + a[1];
    Tensor y = x + a[0];
    return std::vector<Tensor>{y + x};
  };
  StatusOr<TracedFunction> traced = trace_function(fn, {f32({4}), f32({4})}, "names", {"add.1", "add"});
  ASSERT_TRUE(traced.ok()) << traced.status().to_string();
  std::set<std::string> names;
  for (const Instruction* instruction : traced->module->entry()->instructions())
    EXPECT_TRUE(names.insert(instruction->name()).second) << "two instructions named " << instruction->name();
  EXPECT_TRUE(names.count("add.1") && names.count("add"));
}

// A caller's own table: tracing finds the target there and only there.
TEST(FrontendTracing, KernelCallUsesTheTracersTable) {
  CustomCallTable table;
  ASSERT_TRUE(table.add({.name = "local_only", .signature = CustomCallSignature{.input_output_aliases = {{0, 0}}}}).ok());
  auto fn = [](std::vector<Tensor>& a) { return call_kernel("local_only", {a[0]}); };
  StatusOr<TracedFunction> traced = trace_function(fn, {f32({4})}, "k", {}, &table);
  ASSERT_TRUE(traced.ok()) << traced.status().to_string();
  EXPECT_EQ(traced->module->entry()->root()->operand(0)->custom_call.output_to_operand_aliasing.size(), 1u);
  StatusOr<TracedFunction> global = trace_function(fn, {f32({4})}, "k");
  ASSERT_FALSE(global.ok());
  EXPECT_NE(global.status().message().find("no kernel named \"local_only\" is registered"), std::string::npos)
      << global.status().message();
}

TEST(FrontendTracing, MutationBecomesAWriteBackAlias) {
  declare_scale_signature();
  auto fn = [](std::vector<Tensor>& a) {
    call_kernel_mutating("frontend_test_scale", {a[0]});
    return std::vector<Tensor>{};
  };
  StatusOr<TracedFunction> traced = trace_function(fn, {f32({4})}, "m");
  ASSERT_TRUE(traced.ok()) << traced.status().to_string();
  EXPECT_EQ(traced->mutated_parameters, std::vector<int64_t>{0});
  ASSERT_EQ(traced->module->config().input_output_alias.size(), 1u);
  EXPECT_EQ(traced->module->config().input_output_alias[0].parameter_number, 0);
  EXPECT_EQ(traced->module->config().input_output_alias[0].output_index, ShapeIndex{0});
}

TEST(FrontendTracing, UndeclaredMutationIsAnError) {
  declare_scale_signature();
  auto fn = [](std::vector<Tensor>& a) {
    call_kernel_mutating("frontend_test_scale", {a[0], a[1]}, std::vector<int64_t>{1});
    return std::vector<Tensor>{};
  };
  StatusOr<TracedFunction> traced = trace_function(fn, {f32({4}), f32({4})}, "m");
  ASSERT_FALSE(traced.ok());
  EXPECT_NE(traced.status().message().find("input 1 is declared mutated but the kernel does not alias it"),
            std::string::npos)
      << traced.status().message();
}

}  // namespace
}  // namespace insitu
