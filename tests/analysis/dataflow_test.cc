#include "test_util.h"
#include "insitu/analysis/dataflow.h"

#include <gtest/gtest.h>

#include "insitu/ir/parser.h"

namespace insitu {
namespace {


const Instruction* find(const Module& module, std::string_view computation, std::string_view name) {
  const Instruction* instruction = module.find_computation(computation)->find_instruction(name);
  EXPECT_NE(instruction, nullptr) << name;
  return instruction;
}

bool linked(const Dataflow& dataflow, ValueId a, ValueId b, LinkKind kind) {
  for (const MustShareLink& link : dataflow.links())
    if (link.kind == kind && ((link.a == a && link.b == b) || (link.a == b && link.b == a))) return true;
  return false;
}

constexpr std::string_view kDecodeLoop = R"(
HloModule decode, input_output_alias={ {}: (0, {}, may-alias) }

cond {
  s = (s32[], f32[4,2]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  n = s32[] constant(4)
  ROOT lt = pred[] compare(i, n), direction=LT
}

body {
  s = (s32[], f32[4,2]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  cache = f32[4,2] get-tuple-element(s), index=1
  row = f32[1,2] constant({ {1, 2} })
  zero = s32[] constant(0)
  updated = f32[4,2] dynamic-update-slice(cache, row, i, zero)
  one = s32[] constant(1)
  next = s32[] add(i, one)
  ROOT out = (s32[], f32[4,2]) tuple(next, updated)
}

ENTRY main {
  cache = f32[4,2] parameter(0)
  zero = s32[] constant(0)
  init = (s32[], f32[4,2]) tuple(zero, cache)
  loop = (s32[], f32[4,2]) while(init), condition=cond, body=body
  ROOT result = f32[4,2] get-tuple-element(loop), index=1
}
)";

TEST(DataflowTest, ForwardersPassValuesThrough) {
  auto module = parse_text(kDecodeLoop);
  Dataflow dataflow = Dataflow::compute(*module);
  const Instruction* cache = find(*module, "main", "cache");
  const Instruction* init = find(*module, "main", "init");
  EXPECT_EQ(dataflow.value_at(init, {1}), dataflow.value_at(cache));
  const Instruction* loop = find(*module, "main", "loop");
  EXPECT_EQ(dataflow.value_at(module->entry()->root()), dataflow.value_at(loop, {1}));
  // The tuple and get-tuple-element define nothing: callees first, every leaf has one value.
  EXPECT_EQ(dataflow.analyzed_computations().back(), module->entry());
  EXPECT_EQ(dataflow.analyzed_computations().size(), 3u);
}

TEST(DataflowTest, UsesAreReadersNotForwarders) {
  auto module = parse_text(kDecodeLoop);
  Dataflow dataflow = Dataflow::compute(*module);
  const Value& cache = dataflow.value_of(find(*module, "main", "cache"));
  ASSERT_EQ(cache.uses.size(), 1u);  // the while reads it; the tuple only forwards it
  EXPECT_EQ(cache.uses[0].instruction->name(), "loop");
  EXPECT_EQ(cache.uses[0].operand_index, (ShapeIndex{1}));
  EXPECT_EQ(cache.positions.size(), 2u);  // parameter, init{1}
}

TEST(DataflowTest, LoopStateAndInPlaceLinks) {
  auto module = parse_text(kDecodeLoop);
  Dataflow dataflow = Dataflow::compute(*module);
  const Instruction* loop = find(*module, "main", "loop");
  ValueId state = dataflow.value_at(loop, {1});
  ValueId init = dataflow.value_at(find(*module, "main", "cache"));
  ValueId body_parameter = dataflow.value_at(module->find_computation("body")->parameter(0), {1});
  ValueId updated = dataflow.value_at(find(*module, "body", "updated"));
  EXPECT_TRUE(linked(dataflow, init, state, LinkKind::kWhileState));
  EXPECT_TRUE(linked(dataflow, state, body_parameter, LinkKind::kWhileState));
  EXPECT_TRUE(linked(dataflow, state, updated, LinkKind::kWhileState));
  // cache (gte of the body parameter) is the parameter's value; DUS overwrites it in place.
  EXPECT_TRUE(linked(dataflow, body_parameter, updated, LinkKind::kInPlace));
  // The entry result is aliased to parameter 0.
  EXPECT_TRUE(linked(dataflow, init, state, LinkKind::kInputOutputAlias));
}

TEST(DataflowTest, InPlacePairsOfEachOpcode) {
  auto module = parse_text(R"(
HloModule pairs

add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}

ENTRY main {
  x = f32[4] parameter(0)
  i = s32[1,1] parameter(1)
  u = f32[1] parameter(2)
  s = f32[4] scatter(x, i, u), update_window_dims={}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=add
  k = (f32[4], f32[4]) custom-call(x, s), custom_call_target="k", output_to_operand_aliasing={{1}: (0, {}), {0}: (1, {})}
  ROOT t = (f32[4], f32[4]) tuple(k, s)
}
)");
  const Instruction* scatter = find(*module, "main", "s");
  EXPECT_EQ(in_place_pairs(*scatter), (std::vector<InPlacePair>{{0, {}, {}}}));
  const Instruction* kernel = find(*module, "main", "k");
  EXPECT_EQ(in_place_pairs(*kernel), (std::vector<InPlacePair>{{0, {}, {1}}, {1, {}, {0}}}));
  const Instruction* x = find(*module, "main", "x");
  EXPECT_TRUE(in_place_pairs(*x).empty());
}

TEST(DataflowTest, ConditionalBranchesAreLinkedToOperandsAndResult) {
  auto module = parse_text(R"(
HloModule cond

keep {
  x = f32[4] parameter(0)
  ROOT y = f32[4] copy(x)
}

flip {
  x = f32[4] parameter(0)
  ROOT y = f32[4] negate(x)
}

ENTRY main {
  p = pred[] parameter(0)
  x = f32[4] parameter(1)
  ROOT c = f32[4] conditional(p, x, x), true_computation=keep, false_computation=flip
}
)");
  Dataflow dataflow = Dataflow::compute(*module);
  ValueId x = dataflow.value_at(find(*module, "main", "x"));
  ValueId c = dataflow.value_at(module->entry()->root());
  for (std::string_view branch : {"keep", "flip"}) {
    const Computation* computation = module->find_computation(branch);
    EXPECT_TRUE(linked(dataflow, x, dataflow.value_at(computation->parameter(0)), LinkKind::kConditionalOperand));
    EXPECT_TRUE(linked(dataflow, dataflow.value_at(computation->root()), c, LinkKind::kConditionalResult));
  }
  EXPECT_NE(dataflow.to_string().find("link %x ~ %x (conditional-operand at %c)"), std::string::npos)
      << dataflow.to_string();
}

}  // namespace
}  // namespace insitu
