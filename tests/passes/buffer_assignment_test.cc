// Buffer assignment on modules that need no copies (input_output_alias written directly):
// allocation kinds, liveness reuse, in-place sharing, loop state, peak memory, dumps.
#include "insitu/passes/buffer_assignment.h"

#include "buffer_assignment_test_util.h"
#include "pass_test_util.h"

namespace insitu {
namespace {

using testing::assign_or_die;
using testing::find;
using testing::parse_checks;
using testing::slice_of;

TEST(BufferAssignmentTest, ClassifiesParametersOutputsConstantsAndTemps) {
  auto module = parse_verified(R"(
HloModule m, input_output_alias={ {0}: (0, {}, may-alias) }
ENTRY %main (p0: f32[4], p1: f32[4]) -> (f32[4], f32[4]) {
  %p0 = f32[4] parameter(0)
  %p1 = f32[4] parameter(1)
  %a = f32[4] add(%p0, %p1)
  %r = f32[4] reverse(%a), dimensions={0}
  %m = f32[4] multiply(%r, %p1)
  %c = f32[4] constant({1, 2, 3, 4})
  %s = f32[4] subtract(%p0, %c)
  ROOT %t = (f32[4], f32[4]) tuple(%s, %m)
})");
  ASSERT_NE(module, nullptr);
  BufferAssignment assignment = assign_or_die(*module);
  const auto& allocations = assignment.allocations();
  ASSERT_EQ(allocations.size(), 5u);
  // parameter 0, aliased to output {0}: %s is written into it
  EXPECT_EQ(allocations[0].kind, AllocationKind::kParameter);
  EXPECT_EQ(allocations[0].parameter_number, 0);
  EXPECT_TRUE(allocations[0].maybe_live_out);
  EXPECT_EQ(allocations[0].output_index, ShapeIndex{0});
  EXPECT_EQ(slice_of(assignment, *module, "s"), (BufferSlice{0, 0, 16}));
  EXPECT_EQ(slice_of(assignment, *module, "p0"), (BufferSlice{0, 0, 16}));
  // parameter 1: read only, not live out
  EXPECT_EQ(allocations[1].kind, AllocationKind::kParameter);
  EXPECT_EQ(allocations[1].parameter_number, 1);
  EXPECT_FALSE(allocations[1].maybe_live_out);
  EXPECT_EQ(allocations[2].kind, AllocationKind::kConstant);
  EXPECT_EQ(slice_of(assignment, *module, "c").allocation, 2);
  EXPECT_EQ(allocations[3].kind, AllocationKind::kOutput);
  EXPECT_EQ(allocations[3].output_index, ShapeIndex{1});
  EXPECT_EQ(slice_of(assignment, *module, "m"), (BufferSlice{3, 0, 16}));
  // %r dies at %m (elementwise), so it lives in %m's output buffer; %a is the one temp
  EXPECT_EQ(slice_of(assignment, *module, "r"), (BufferSlice{3, 0, 16}));
  EXPECT_EQ(allocations[4].kind, AllocationKind::kTemp);
  EXPECT_EQ(assignment.temp_bytes(), 16);
  EXPECT_EQ(slice_of(assignment, *module, "a"), (BufferSlice{4, 0, 16}));
  // the tuple is not materialized; its leaves are the operands' slices
  EXPECT_EQ(assignment.slice_at(find(*module, "t"), {1}), slice_of(assignment, *module, "m"));
}

TEST(BufferAssignmentTest, TempsReuseBytesOnlyWhenLiveRangesDoNotOverlap) {
  auto module = parse_verified(R"(
HloModule m
ENTRY %main (p: f32[4]) -> f32[4] {
  %p = f32[4] parameter(0)
  %a = f32[4] reverse(%p), dimensions={0}
  %b = f32[4] reverse(%a), dimensions={0}
  %c = f32[4] reverse(%b), dimensions={0}
  ROOT %d = f32[4] reverse(%c), dimensions={0}
})");
  ASSERT_NE(module, nullptr);
  BufferAssignment assignment = assign_or_die(*module);
  BufferSlice a = slice_of(assignment, *module, "a");
  BufferSlice b = slice_of(assignment, *module, "b");
  BufferSlice c = slice_of(assignment, *module, "c");
  EXPECT_EQ(a.allocation, b.allocation);
  EXPECT_EQ(a.offset, c.offset);  // %a dies at %b, %c starts after it
  EXPECT_NE(a.offset, b.offset);  // %a is read by %b while %b is written
  EXPECT_NE(b.offset, c.offset);
  EXPECT_EQ(assignment.temp_bytes(), 32);
  // p (16) + two temps live at once (32); %d (output) starts where %c is its only live temp
  EXPECT_EQ(assignment.peak_memory_bytes(), 48);
}

TEST(BufferAssignmentTest, DynamicUpdateSliceSharesTheDonatedParameter) {
  auto module = parse_verified(R"(
HloModule m, input_output_alias={ {}: (0, {}, may-alias) }
ENTRY %main (cache: f32[8,4], row: f32[1,4], i: s32[]) -> f32[8,4] {
  %cache = f32[8,4] parameter(0)
  %row = f32[1,4] parameter(1)
  %i = s32[] parameter(2)
  %zero = s32[] constant(0)
  ROOT %u = f32[8,4] dynamic-update-slice(%cache, %row, %i, %zero)
})");
  ASSERT_NE(module, nullptr);
  BufferAssignment assignment = assign_or_die(*module);
  EXPECT_EQ(slice_of(assignment, *module, "u"), (BufferSlice{0, 0, 128}));
  EXPECT_EQ(slice_of(assignment, *module, "cache"), (BufferSlice{0, 0, 128}));
  EXPECT_EQ(assignment.allocations().size(), 4u);  // cache, row, i, zero
  EXPECT_EQ(assignment.temp_bytes(), 0);
  EXPECT_EQ(assignment.peak_memory_bytes(), 128 + 16 + 4 + 4);

  std::string dump = assignment.to_string();
  std::string failure = golden::match_checks(dump, parse_checks(R"(
CHECK: BufferAssignment:
CHECK-NEXT: allocation 0: size 128, parameter 0, shape |f32[8,4]| at ShapeIndex {}, maybe-live-out:
CHECK-NEXT:  value: <0 cache @0> (size=128,offset=0): f32[8,4]{1,0}
CHECK-NEXT:  value: <4 u @0> (size=128,offset=0): f32[8,4]{1,0}
CHECK-NEXT: allocation 1: size 16, parameter 1, shape |f32[1,4]| at ShapeIndex {}:
CHECK: allocation 3: size 4, constant:
CHECK-NEXT:  value: <3 zero @0> (size=4,offset=0): s32[]
CHECK: Total bytes used: 152 (152B)
CHECK: Used values:
CHECK-NEXT: <0 cache @0>
CHECK-NEXT:  positions:
CHECK-NEXT:   cache
CHECK-NEXT:  uses:
CHECK-NEXT:   u, operand 0
CHECK-NEXT:  from instruction: %cache = f32[8,4]{1,0} parameter(0)
CHECK: HloLiveRange (max 5):
CHECK-NEXT:   InstructionSequence:
CHECK-NEXT:     0:cache
CHECK:     4:u
CHECK-NEXT:   BufferLiveRange:
CHECK-NEXT:     cache{}:0-5
CHECK:     u{}:4-5
CHECK: Live ranges at 0 (peak):
CHECK: Peak memory: 152 bytes
)"));
  EXPECT_EQ(failure, "") << dump;

  std::string report = assignment.memory_usage_report();
  failure = golden::match_checks(report, parse_checks(R"(
CHECK: Total bytes used: 152 (152B)
CHECK: Allocations sorted by size:
CHECK: cumulative_size; total_size - cumulative_size; allocation
CHECK-NEXT: ------
CHECK-NEXT:       128B( 84%);        24B; allocation 0: size 128B, parameter 0, shape |f32[8,4]| at ShapeIndex {}, maybe-live-out:
CHECK-NEXT:       144B( 95%);         8B; allocation 1: size 16B, parameter 1
CHECK: Allocations sorted by size with their values:
CHECK-NEXT: allocation 0: size 128B, parameter 0
CHECK-NEXT: cumulative_size;       size;       offset; used_by_n_values; shapes_list
CHECK-NEXT: ------
CHECK-NEXT:      128B(100%);       128B;            0;                2; 2×f32[8,4]
)"));
  EXPECT_EQ(failure, "") << report;
}

TEST(BufferAssignmentTest, WritingAnUndonatedParameterNeedsCopyInsertion) {
  auto module = parse_verified(R"(
HloModule m
ENTRY %main (cache: f32[8,4], row: f32[1,4], i: s32[]) -> f32[8,4] {
  %cache = f32[8,4] parameter(0)
  %row = f32[1,4] parameter(1)
  %i = s32[] parameter(2)
  %zero = s32[] constant(0)
  ROOT %u = f32[8,4] dynamic-update-slice(%cache, %row, %i, %zero)
})");
  ASSERT_NE(module, nullptr);
  auto assignment = assign_buffers(*module);
  ASSERT_FALSE(assignment.ok());
  EXPECT_NE(assignment.status().message().find("run copy-insertion"), std::string::npos)
      << assignment.status().message();
}

// A decode loop writing one row of a donated cache per iteration: the cache, the DUS and the
// loop state live in the parameter's buffer; peak = arguments + constants + small temps.
constexpr std::string_view kDecodeLoop = R"(
HloModule decode, is_scheduled=true, input_output_alias={ {}: (0, {}, may-alias) }

%body (state: (s32[], f32[8,4])) -> (s32[], f32[8,4]) {
  %state = (s32[], f32[8,4]) parameter(0)
  %i = s32[] get-tuple-element(%state), index=0
  %cache = f32[8,4] get-tuple-element(%state), index=1
  %one = s32[] constant(1)
  %zero = s32[] constant(0)
  %fi = f32[] convert(%i)
  %row = f32[1,4] broadcast(%fi), dimensions={}
  %updated = f32[8,4] dynamic-update-slice(%cache, %row, %i, %zero)
  %next = s32[] add(%i, %one)
  ROOT %t = (s32[], f32[8,4]) tuple(%next, %updated)
}

%cond (state.1: (s32[], f32[8,4])) -> pred[] {
  %state.1 = (s32[], f32[8,4]) parameter(0)
  %i.1 = s32[] get-tuple-element(%state.1), index=0
  %n = s32[] constant(8)
  ROOT %lt = pred[] compare(%i.1, %n), direction=LT
}

ENTRY %main (cache.0: f32[8,4], start: s32[]) -> f32[8,4] {
  %cache.0 = f32[8,4] parameter(0)
  %start = s32[] parameter(1)
  %zero.1 = s32[] constant(0)
  %i0 = s32[] add(%start, %zero.1)
  %init = (s32[], f32[8,4]) tuple(%i0, %cache.0)
  %w = (s32[], f32[8,4]) while(%init), condition=%cond, body=%body
  ROOT %out = f32[8,4] get-tuple-element(%w), index=1
}
)";

TEST(BufferAssignmentTest, LoopStateSharesOneSlice) {
  auto module = parse_verified(kDecodeLoop);
  ASSERT_NE(module, nullptr);
  BufferAssignment assignment = assign_or_die(*module);
  const BufferSlice cache = slice_of(assignment, *module, "cache.0");
  EXPECT_EQ(cache, (BufferSlice{0, 0, 128}));
  EXPECT_EQ(slice_of(assignment, *module, "state", {1}), cache);
  EXPECT_EQ(slice_of(assignment, *module, "state.1", {1}), cache);
  EXPECT_EQ(slice_of(assignment, *module, "updated"), cache);
  EXPECT_EQ(slice_of(assignment, *module, "w", {1}), cache);
  EXPECT_EQ(slice_of(assignment, *module, "out"), cache);
  // the counter: init, body parameter, next, while result in one temp slot
  const BufferSlice counter = slice_of(assignment, *module, "i0");
  EXPECT_EQ(assignment.allocations()[counter.allocation].kind, AllocationKind::kTemp);
  EXPECT_EQ(slice_of(assignment, *module, "state", {0}), counter);
  EXPECT_EQ(slice_of(assignment, *module, "next"), counter);
  EXPECT_EQ(slice_of(assignment, *module, "w", {0}), counter);
  // %row reads nothing of the cache: it is computed in a window of its own, the cache's bytes
  // at the update's starts (a dynamic view the runtime sets before %row runs)
  const BufferSlice row = slice_of(assignment, *module, "row");
  EXPECT_EQ(assignment.allocations()[row.allocation].kind, AllocationKind::kDynamicView);
  const ValueId row_value = assignment.dataflow().value_at(module->find_computation("body")->find_instruction("row"));
  EXPECT_TRUE(assignment.sets_own_window(row_value));
  EXPECT_EQ(assignment.placed_for(row_value)->name(), "updated");
}

TEST(BufferAssignmentTest, DecodeLoopPeakIsArgumentsPlusSmallTemps) {
  auto module = parse_verified(kDecodeLoop);
  ASSERT_NE(module, nullptr);
  BufferAssignment assignment = assign_or_die(*module);
  // No second cache-sized buffer anywhere.
  int64_t cache_sized = 0;
  for (const Allocation& allocation : assignment.allocations()) cache_sized += allocation.size >= 128;
  EXPECT_EQ(cache_sized, 1);
  // arguments 128 + 4, constants 4 x 4, and at %fi: counter 4 + %fi 4 (%row is written in the
  // cache's window)
  EXPECT_EQ(assignment.peak_memory_bytes(), 132 + 16 + 8);
  EXPECT_EQ(assignment.live_ranges().sequence()[assignment.peak_time()]->name(), "fi");
}

TEST(BufferAssignmentTest, ScalarBroadcastReadByElementwiseOpsIsNotMaterialized) {
  auto module = parse_verified(R"(
HloModule m
ENTRY %main (p: f32[4]) -> (f32[4], f32[4]) {
  %p = f32[4] parameter(0)
  %two = f32[] constant(2)
  %b = f32[4] broadcast(%two), dimensions={}
  %m = f32[4] multiply(%p, %b)
  %b2 = f32[4] broadcast(%two), dimensions={}
  %r = f32[4] reverse(%b2), dimensions={0}
  ROOT %t = (f32[4], f32[4]) tuple(%m, %r)
})");
  ASSERT_NE(module, nullptr);
  BufferAssignment assignment = assign_or_die(*module);
  EXPECT_FALSE(assignment.slice_at(find(*module, "b")).has_value());
  EXPECT_TRUE(assignment.slice_at(find(*module, "b2")).has_value());  // read by a reverse
  EXPECT_EQ(assignment.temp_bytes(), 16);
  // p 16 + constant 4 + m 16 + b2 16 + r 16 (at %r)
  EXPECT_EQ(assignment.peak_memory_bytes(), 68);
}

TEST(BufferAssignmentTest, ElementwiseChainWritesIntoItsDyingOperand) {
  auto module = parse_verified(R"(
HloModule m
ENTRY %main (p: f32[4]) -> (f32[4], pred[4]) {
  %p = f32[4] parameter(0)
  %a = f32[4] exponential(%p)
  %b = f32[4] negate(%a)
  %c = f32[4] abs(%b)
  %k = pred[4] compare(%c, %c), direction=EQ
  %d = f32[4] reverse(%c), dimensions={0}
  ROOT %t = (f32[4], pred[4]) tuple(%d, %k)
})");
  ASSERT_NE(module, nullptr);
  BufferAssignment assignment = assign_or_die(*module);
  const BufferSlice a = slice_of(assignment, *module, "a");
  EXPECT_EQ(slice_of(assignment, *module, "b"), a);  // %a dies at %b
  EXPECT_EQ(slice_of(assignment, *module, "c"), a);  // %b dies at %c
  // %p is the caller's: %a does not write into it
  EXPECT_NE(assignment.allocations()[a.allocation].kind, AllocationKind::kParameter);
  EXPECT_EQ(assignment.temp_bytes(), 16);
  // p 16 + a/b/c 16 + k 4 + d 16 (at %d)
  EXPECT_EQ(assignment.peak_memory_bytes(), 52);
}

TEST(BufferAssignmentTest, ElementwiseOpDoesNotTakeAnOperandThatStaysLive) {
  auto module = parse_verified(R"(
HloModule m
ENTRY %main (p: f32[4]) -> f32[4] {
  %p = f32[4] parameter(0)
  %a = f32[4] exponential(%p)
  %b = f32[4] negate(%a)
  ROOT %c = f32[4] add(%a, %b)
})");
  ASSERT_NE(module, nullptr);
  BufferAssignment assignment = assign_or_die(*module);
  // %b may not write over %a, which %c still reads; at %c both die, and %a (the first
  // operand) moves into %c's output buffer, %b is the one temp
  EXPECT_NE(slice_of(assignment, *module, "a"), slice_of(assignment, *module, "b"));
  EXPECT_EQ(slice_of(assignment, *module, "a"), slice_of(assignment, *module, "c"));
  EXPECT_EQ(assignment.temp_bytes(), 16);
}

// The runtime reads an unmaterialized broadcast's scalar at each elementwise reader, so the
// scalar's bytes must stay reserved until the last reader: %t (born after %b) may not take
// the bytes of %s (whose last dataflow use is %b). Found by shrinking a generated program.
TEST(BufferAssignmentTest, BroadcastScalarStaysLiveUntilItsLastElementwiseReader) {
  auto module = parse_verified(R"(
HloModule m
ENTRY %main (p: f32[], q: f32[4]) -> f32[4] {
  %p = f32[] parameter(0)
  %q = f32[4] parameter(1)
  %s = f32[] negate(%p)
  %b = f32[4] broadcast(%s), dimensions={}
  %t = f32[] exponential(%p)
  %v = f32[4] broadcast(%t), dimensions={}
  %w = f32[4] add(%b, %v)
  ROOT %r = f32[4] add(%w, %q)
})");
  ASSERT_NE(module, nullptr);
  BufferAssignment assignment = assign_or_die(*module);
  EXPECT_FALSE(assignment.slice_at(find(*module, "b")).has_value());
  EXPECT_FALSE(assignment.slice_at(find(*module, "v")).has_value());
  const BufferSlice s = slice_of(assignment, *module, "s");
  const BufferSlice t = slice_of(assignment, *module, "t");
  EXPECT_EQ(s.allocation, t.allocation);
  EXPECT_NE(s.offset, t.offset);  // both read by %w
  // %w dies at the root %r and lives in its output buffer; %s at 0, %t at 16 (aligned)
  EXPECT_EQ(slice_of(assignment, *module, "w"), slice_of(assignment, *module, "r"));
  EXPECT_EQ(assignment.temp_bytes(), 20);
}

// A loop-state scalar read through a broadcast whose elementwise reader runs after the state
// is updated in place (%s2 writes %s's buffer between %b and %x2): reading the scalar lazily
// would see the new state, so the broadcast is materialized and copies %s at %b.
TEST(BufferAssignmentTest, BroadcastOfAScalarUpdatedInPlaceBeforeItsReaderIsMaterialized) {
  auto module = parse_verified(R"(
HloModule m
%cond (st: (f32[], s32[], f32[4])) -> pred[] {
  %st = (f32[], s32[], f32[4]) parameter(0)
  %i = s32[] get-tuple-element(%st), index=1
  %n = s32[] constant(3)
  ROOT %lt = pred[] compare(%i, %n), direction=LT
}
%body (st: (f32[], s32[], f32[4])) -> (f32[], s32[], f32[4]) {
  %st = (f32[], s32[], f32[4]) parameter(0)
  %s = f32[] get-tuple-element(%st), index=0
  %i = s32[] get-tuple-element(%st), index=1
  %x = f32[4] get-tuple-element(%st), index=2
  %b = f32[4] broadcast(%s), dimensions={}
  %one = f32[] constant(1)
  %s2 = f32[] add(%s, %one)
  %bs2 = f32[4] broadcast(%s2), dimensions={}
  %y = f32[4] multiply(%x, %bs2)
  %x2 = f32[4] add(%b, %y)
  %onei = s32[] constant(1)
  %i2 = s32[] add(%i, %onei)
  ROOT %out = (f32[], s32[], f32[4]) tuple(%s2, %i2, %x2)
}
ENTRY %main (p: f32[], q: f32[4]) -> f32[4] {
  %p = f32[] parameter(0)
  %q = f32[4] parameter(1)
  %s0 = f32[] negate(%p)
  %x0 = f32[4] negate(%q)
  %zero = s32[] constant(0)
  %init = (f32[], s32[], f32[4]) tuple(%s0, %zero, %x0)
  %w = (f32[], s32[], f32[4]) while(%init), condition=%cond, body=%body
  ROOT %r = f32[4] get-tuple-element(%w), index=2
})");
  ASSERT_NE(module, nullptr);
  BufferAssignment assignment = assign_or_die(*module);
  EXPECT_EQ(slice_of(assignment, *module, "s2"), slice_of(assignment, *module, "s"));  // loop state
  ASSERT_TRUE(assignment.slice_at(find(*module, "b")).has_value());  // materialized
  const BufferSlice b = slice_of(assignment, *module, "b");
  EXPECT_NE(b, slice_of(assignment, *module, "s"));
  EXPECT_EQ(b.size, 16);
  // %bs2's reader %y runs before anything writes %s2's buffer again: read as the scalar
  EXPECT_FALSE(assignment.slice_at(find(*module, "bs2")).has_value());
}

}  // namespace
}  // namespace insitu
