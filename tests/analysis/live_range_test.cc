// Live ranges: the flattened schedule (callees inside their caller's span), value ranges and
// buffer ranges (values unioned by must-share links).
#include "test_util.h"
#include "insitu/analysis/live_range.h"

#include <gtest/gtest.h>

#include "insitu/ir/parser.h"
#include "insitu/ir/verifier.h"

namespace insitu {
namespace {


const Instruction* find(const Module& module, std::string_view name) {
  for (const Computation* computation : module.computations())
    if (const Instruction* instruction = computation->find_instruction(name)) return instruction;
  INSITU_UNREACHABLE("no instruction " << name);
  return nullptr;
}

constexpr std::string_view kLoop = R"(
HloModule loop

%body (s: (s32[], f32[4])) -> (s32[], f32[4]) {
  %s = (s32[], f32[4]) parameter(0)
  %i = s32[] get-tuple-element(%s), index=0
  %x = f32[4] get-tuple-element(%s), index=1
  %one = s32[] constant(1)
  %next = s32[] add(%i, %one)
  %y = f32[4] negate(%x)
  %z = f32[4] abs(%y)
  ROOT %root = (s32[], f32[4]) tuple(%next, %z)
}

%cond (c: (s32[], f32[4])) -> pred[] {
  %c = (s32[], f32[4]) parameter(0)
  %ci = s32[] get-tuple-element(%c), index=0
  %n = s32[] constant(3)
  ROOT %lt = pred[] compare(%ci, %n), direction=LT
}

ENTRY %main (p: f32[4]) -> f32[4] {
  %p = f32[4] parameter(0)
  %zero = s32[] constant(0)
  %copy = f32[4] exponential(%p)
  %init = (s32[], f32[4]) tuple(%zero, %copy)
  %w = (s32[], f32[4]) while(%init), condition=%cond, body=%body
  %out = f32[4] get-tuple-element(%w), index=1
  ROOT %r = f32[4] sine(%out)
}
)";

TEST(LiveRangeTest, FlattensCalleesBeforeTheirCaller) {
  auto module = parse_verified(kLoop);
  ASSERT_NE(module, nullptr);
  Dataflow dataflow = Dataflow::compute(*module);
  LiveRanges live = LiveRanges::compute(*module, dataflow);
  std::vector<std::string> names;
  for (const Instruction* instruction : live.sequence()) names.push_back(instruction->name());
  const std::vector<std::string> expected = {"p", "zero", "copy", "init", "c",    "ci",   "n",   "lt", "s",
                                             "i", "x",    "one",  "next", "y",    "z",    "root", "w", "out", "r"};
  EXPECT_EQ(names, expected);
  EXPECT_EQ(live.schedule_end_time(), 19);
  EXPECT_EQ(live.time(find(*module, "w")), 16);
  EXPECT_EQ(live.computation_span(module->find_computation("cond")), (TimeInterval{4, 8}));
  EXPECT_EQ(live.computation_span(module->find_computation("body")), (TimeInterval{8, 16}));
}

TEST(LiveRangeTest, ValueRanges) {
  auto module = parse_verified(kLoop);
  ASSERT_NE(module, nullptr);
  Dataflow dataflow = Dataflow::compute(*module);
  LiveRanges live = LiveRanges::compute(*module, dataflow);
  // entry parameter: the whole program
  EXPECT_EQ(live.value_range(dataflow.value_at(find(*module, "p"))), (TimeInterval{0, 19}));
  // body temp: from its definition to its last use
  EXPECT_EQ(live.value_range(dataflow.value_at(find(*module, "y"))), (TimeInterval{13, 14}));
  // body root leaf: to the end of the body's span
  EXPECT_EQ(live.value_range(dataflow.value_at(find(*module, "z"))), (TimeInterval{14, 16}));
  // body parameter leaf: from the body's first time
  EXPECT_EQ(live.value_range(dataflow.value_at(find(*module, "s"), {1})), (TimeInterval{8, 13}));
  // entry root: to the end of the schedule
  EXPECT_EQ(live.value_range(dataflow.value_at(find(*module, "r"))), (TimeInterval{18, 19}));
  // condition result: to the end of the condition's span
  EXPECT_EQ(live.value_range(dataflow.value_at(find(*module, "lt"))), (TimeInterval{7, 8}));
}

TEST(LiveRangeTest, LoopStateBufferSpansTheWholeLoop) {
  auto module = parse_verified(kLoop);
  ASSERT_NE(module, nullptr);
  Dataflow dataflow = Dataflow::compute(*module);
  LiveRanges live = LiveRanges::compute(*module, dataflow);
  const BufferId state = live.buffer_of(dataflow.value_at(find(*module, "copy")));
  EXPECT_EQ(live.buffer_of(dataflow.value_at(find(*module, "s"), {1})), state);
  EXPECT_EQ(live.buffer_of(dataflow.value_at(find(*module, "c"), {1})), state);
  EXPECT_EQ(live.buffer_of(dataflow.value_at(find(*module, "z"))), state);
  EXPECT_EQ(live.buffer_of(dataflow.value_at(find(*module, "w"), {1})), state);
  EXPECT_NE(live.buffer_of(dataflow.value_at(find(*module, "y"))), state);  // a body temp
  // from %copy to the last read of the while result (%r reads %out)
  EXPECT_EQ(live.buffer_range(state), (TimeInterval{2, 18}));
  const std::vector<ValueId>& values = live.buffer_values(state);
  EXPECT_EQ(values.size(), 5u);  // copy, w{1}, s{1}, c{1}, z
}

TEST(LiveRangeTest, ConditionalBranchesAreLaidOutOneAfterAnother) {
  auto module = parse_verified(R"(
HloModule cond

%on_true (a: f32[2]) -> f32[2] {
  %a = f32[2] parameter(0)
  ROOT %ta = f32[2] negate(%a)
}

%on_false (b: f32[2]) -> f32[2] {
  %b = f32[2] parameter(0)
  ROOT %tb = f32[2] abs(%b)
}

ENTRY %main (pred: pred[], x: f32[2]) -> f32[2] {
  %pred = pred[] parameter(0)
  %x = f32[2] parameter(1)
  ROOT %k = f32[2] conditional(%pred, %x, %x), true_computation=%on_true, false_computation=%on_false
}
)");
  ASSERT_NE(module, nullptr);
  Dataflow dataflow = Dataflow::compute(*module);
  LiveRanges live = LiveRanges::compute(*module, dataflow);
  std::vector<std::string> names;
  for (const Instruction* instruction : live.sequence()) names.push_back(instruction->name());
  EXPECT_EQ(names, (std::vector<std::string>{"pred", "x", "a", "ta", "b", "tb", "k"}));
  const TimeInterval ta = live.value_range(dataflow.value_at(find(*module, "ta")));
  const TimeInterval b = live.value_range(dataflow.value_at(find(*module, "b")));
  EXPECT_EQ(ta, (TimeInterval{3, 4}));  // to the end of its branch
  EXPECT_EQ(b, (TimeInterval{4, 5}));
  // the branch roots and the result are one buffer
  EXPECT_EQ(live.buffer_of(dataflow.value_at(find(*module, "ta"))), live.buffer_of(dataflow.value_at(find(*module, "k"))));
  EXPECT_EQ(live.buffer_of(dataflow.value_at(find(*module, "tb"))), live.buffer_of(dataflow.value_at(find(*module, "k"))));
}

}  // namespace
}  // namespace insitu
