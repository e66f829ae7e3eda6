// End-to-end evaluator tests over HLO text: control flow (while, conditional, call, fusion),
// tuples and custom calls through the registry. Each test states the values it expects.
#include <gtest/gtest.h>

#include "insitu/evaluator/evaluator.h"
#include "insitu/ir/parser.h"

namespace insitu {
namespace {

Literal run(std::string_view text, std::vector<Literal> arguments, const EvaluatorOptions& options = {}) {
  auto module = parse_module(text);
  EXPECT_TRUE(module.ok()) << module.status().to_string();
  if (!module.ok()) return Literal();
  auto result = evaluate_module(**module, arguments, options);
  EXPECT_TRUE(result.ok()) << result.status().to_string();
  return result.ok() ? std::move(result).value() : Literal();
}

Status run_error(std::string_view text, std::vector<Literal> arguments, const EvaluatorOptions& options = {}) {
  auto module = parse_module(text);
  EXPECT_TRUE(module.ok()) << module.status().to_string();
  if (!module.ok()) return module.status();
  auto result = evaluate_module(**module, arguments, options);
  EXPECT_FALSE(result.ok());
  return result.ok() ? Status() : result.status();
}

constexpr std::string_view kCountingLoop = R"(
HloModule loop

cond {
  state = (s32[], s32[4]) parameter(0)
  i = s32[] get-tuple-element(state), index=0
  n = s32[] constant(4)
  ROOT lt = pred[] compare(i, n), direction=LT
}

body {
  state = (s32[], s32[4]) parameter(0)
  i = s32[] get-tuple-element(state), index=0
  cache = s32[4] get-tuple-element(state), index=1
  one = s32[] constant(1)
  next = s32[] add(i, one)
  row = s32[1] broadcast(next), dimensions={}
  updated = s32[4] dynamic-update-slice(cache, row, i)
  ROOT out = (s32[], s32[4]) tuple(next, updated)
}

ENTRY main {
  zero = s32[] constant(0)
  cache = s32[4] parameter(0)
  init = (s32[], s32[4]) tuple(zero, cache)
  loop = (s32[], s32[4]) while(init), condition=cond, body=body
  ROOT result = s32[4] get-tuple-element(loop), index=1
}
)";

TEST(ControlFlowTest, WhileWritesOneRowPerIteration) {
  Literal result = run(kCountingLoop, {Literal::vector<int32_t>({0, 0, 0, 0})});
  EXPECT_EQ(result, Literal::vector<int32_t>({1, 2, 3, 4}));
}

TEST(ControlFlowTest, WhileIterationLimitIsAnError) {
  EvaluatorOptions options;
  options.max_while_iterations = 2;
  Status status = run_error(kCountingLoop, {Literal::vector<int32_t>({0, 0, 0, 0})}, options);
  EXPECT_NE(status.message().find("ran more than 2 iterations"), std::string::npos) << status.to_string();
}

constexpr std::string_view kPredConditional = R"(
HloModule cond

on_true {
  x = f32[2] parameter(0)
  ROOT neg = f32[2] negate(x)
}

on_false {
  x = f32[2] parameter(0)
  ROOT same = f32[2] copy(x)
}

ENTRY main {
  p = pred[] parameter(0)
  x = f32[2] parameter(1)
  ROOT c = f32[2] conditional(p, x, x), true_computation=on_true, false_computation=on_false
}
)";

TEST(ControlFlowTest, PredConditionalTakesTrueBranchFirst) {
  Literal x = Literal::vector<float>({1.5f, -2.0f});
  EXPECT_EQ(run(kPredConditional, {Literal::scalar<bool>(true), x}), Literal::vector<float>({-1.5f, 2.0f}));
  EXPECT_EQ(run(kPredConditional, {Literal::scalar<bool>(false), x}), x);
}

constexpr std::string_view kIndexedConditional = R"(
HloModule indexed

b0 {
  x = s32[] parameter(0)
  ROOT r = s32[] constant(10)
}

b1 {
  x = s32[] parameter(0)
  ROOT r = s32[] add(x, x)
}

b2 {
  x = s32[] parameter(0)
  ROOT r = s32[] negate(x)
}

ENTRY main {
  i = s32[] parameter(0)
  x = s32[] parameter(1)
  ROOT c = s32[] conditional(i, x, x, x), branch_computations={b0, b1, b2}
}
)";

TEST(ControlFlowTest, IndexedConditionalOutOfRangeRunsLastBranch) {
  Literal x = Literal::scalar<int32_t>(7);
  EXPECT_EQ(run(kIndexedConditional, {Literal::scalar<int32_t>(0), x}), Literal::scalar<int32_t>(10));
  EXPECT_EQ(run(kIndexedConditional, {Literal::scalar<int32_t>(1), x}), Literal::scalar<int32_t>(14));
  EXPECT_EQ(run(kIndexedConditional, {Literal::scalar<int32_t>(2), x}), Literal::scalar<int32_t>(-7));
  EXPECT_EQ(run(kIndexedConditional, {Literal::scalar<int32_t>(9), x}), Literal::scalar<int32_t>(-7));
  EXPECT_EQ(run(kIndexedConditional, {Literal::scalar<int32_t>(-1), x}), Literal::scalar<int32_t>(-7));
}

TEST(ControlFlowTest, CallFusionTupleAndGetTupleElement) {
  constexpr std::string_view text = R"(
HloModule calls

fused {
  a = f32[3] parameter(0)
  b = f32[3] parameter(1)
  ROOT m = f32[3] multiply(a, b)
}

helper {
  a = f32[3] parameter(0)
  ROOT t = (f32[3], f32[3]) tuple(a, a)
}

ENTRY main {
  x = f32[3] parameter(0)
  pair = (f32[3], f32[3]) call(x), to_apply=helper
  first = f32[3] get-tuple-element(pair), index=0
  second = f32[3] get-tuple-element(pair), index=1
  ROOT f = f32[3] fusion(first, second), kind=kLoop, calls=fused
}
)";
  EXPECT_EQ(run(text, {Literal::vector<float>({1, 2, 3})}), Literal::vector<float>({1, 4, 9}));
}

constexpr std::string_view kInPlaceCustomCall = R"(
HloModule kernel

ENTRY main {
  x = s32[4] parameter(0)
  k = s32[4] custom-call(x), custom_call_target="increment_in_place", output_to_operand_aliasing={{}: (0, {})}
  ROOT t = (s32[4], s32[4]) tuple(k, x)
}
)";

TEST(ControlFlowTest, AliasedCustomCallUpdatesItsOperandValueInPlace) {
  CustomCallTable registry;
  ASSERT_TRUE(registry
                  .add({.name = "increment_in_place",
                        .evaluate = [](const Instruction&, std::span<const Literal* const>, Literal& result) {
                          for (int32_t& v : result.data<int32_t>()) v += 1;
                          return Status();
                        }})
                  .ok());
  EvaluatorOptions options;
  options.custom_calls = &registry;
  Literal result = run(kInPlaceCustomCall, {Literal::vector<int32_t>({1, 2, 3, 4})}, options);
  // The kernel saw its operand's value in the output buffer; the operand value itself (read
  // afterwards) is unchanged: values are immutable in the evaluator.
  EXPECT_EQ(result, Literal::tuple({Literal::vector<int32_t>({2, 3, 4, 5}), Literal::vector<int32_t>({1, 2, 3, 4})}));
}

TEST(ControlFlowTest, UnknownCustomCallTargetIsALocatedError) {
  CustomCallTable registry;
  EvaluatorOptions options;
  options.custom_calls = &registry;
  Status status = run_error(kInPlaceCustomCall, {Literal::vector<int32_t>({1, 2, 3, 4})}, options);
  EXPECT_EQ(status.location().line, 6);
  EXPECT_NE(status.message().find("no kernel is registered for target \"increment_in_place\""), std::string::npos)
      << status.message();
}

TEST(ControlFlowTest, DuplicateKernelNamesBothOrigins) {
  CustomCallTable registry;
  auto kernel = [](const Instruction&, std::span<const Literal* const>, Literal&) { return Status(); };
  ASSERT_TRUE(registry.add({.name = "k", .evaluate = kernel, .origin = "liba.so"}).ok());
  Status status = registry.add({.name = "k", .evaluate = kernel, .origin = "libb.so"});
  EXPECT_FALSE(status.ok());
  EXPECT_NE(status.message().find("liba.so"), std::string::npos);
  EXPECT_NE(status.message().find("libb.so"), std::string::npos);
}

TEST(ControlFlowTest, UnsupportedOpcodeIsALocatedErrorNamingIt) {
  constexpr std::string_view text = R"(
HloModule unsupported

ENTRY main {
  x = f32[4] parameter(0)
  ROOT f = f32[4] rng(f32[] constant(0), f32[] constant(1)), distribution=rng_uniform
}
)";
  // rng parses (its attributes are kept verbatim) but the evaluator must refuse it by name: its
  // values are the backend's choice, and insitu does not invent them.
  auto module = parse_module(text);
  ASSERT_TRUE(module.ok()) << module.status().to_string();
  auto result = evaluate_module(**module, std::vector<Literal>{Literal::vector<float>({1, 2, 3, 4})});
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().location().line, 6);
  EXPECT_NE(result.status().message().find("unsupported opcode 'rng'"), std::string::npos)
      << result.status().to_string();
}

}  // namespace
}  // namespace insitu
