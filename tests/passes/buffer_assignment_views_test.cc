// Buffer assignment's views: slices, reshapes and dynamic slices read in their operand's bytes
// where the layout allows, and materialized where it does not or where the operand is written
// before the view's last reader.
#include "insitu/passes/buffer_assignment.h"

#include "buffer_assignment_test_util.h"
#include "pass_test_util.h"

namespace insitu {
namespace {

using testing::assign_or_die;
using testing::find;
using testing::slice_of;

// The decode step's cache[0]/cache[1]: a contiguous slice of the cache and a row-major reshape
// of it are read by the dot in the cache's own bytes; nothing is copied and no temp holds them.
TEST(BufferAssignmentTest, ContiguousSliceAndRowMajorReshapeAreViewsIntoTheirOperand) {
  auto module = parse_verified(R"(
HloModule m, input_output_alias={ {0}: (0, {}, may-alias) }
ENTRY %main (cache: f32[2,3,4], row: f32[1,1,4], q: f32[4]) -> (f32[2,3,4], f32[3], f32[8]) {
  %cache = f32[2,3,4] parameter(0)
  %row = f32[1,1,4] parameter(1)
  %q = f32[4] parameter(2)
  %zero = s32[] constant(0)
  %one = s32[] constant(1)
  %new = f32[2,3,4] dynamic-update-slice(%cache, %row, %one, %one, %zero)
  %values = f32[1,3,4] slice(%new), slice={[1:2], [0:3], [0:4]}
  %v = f32[3,4] reshape(%values)
  %middle = f32[1,2,4] slice(%new), slice={[0:1], [1:3], [0:4]}
  %m = f32[8] reshape(%middle)
  %dot = f32[3] dot(%v, %q), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %mid = f32[8] negate(%m)
  ROOT %t = (f32[2,3,4], f32[3], f32[8]) tuple(%new, %dot, %mid)
})");
  ASSERT_NE(module, nullptr);
  BufferAssignment assignment = assign_or_die(*module);
  const BufferSlice cache = slice_of(assignment, *module, "cache");
  EXPECT_EQ(slice_of(assignment, *module, "new"), cache);
  // [1:2] of [2,3,4] f32 starts at element 12 (byte 48); [0:1][1:3] at element 4 (byte 16)
  EXPECT_EQ(slice_of(assignment, *module, "values"), (BufferSlice{cache.allocation, 48, 48}));
  EXPECT_EQ(slice_of(assignment, *module, "v"), (BufferSlice{cache.allocation, 48, 48}));
  EXPECT_EQ(slice_of(assignment, *module, "middle"), (BufferSlice{cache.allocation, 16, 32}));
  EXPECT_EQ(slice_of(assignment, *module, "m"), (BufferSlice{cache.allocation, 16, 32}));
  for (const char* view : {"values", "v", "middle", "m"})
    EXPECT_TRUE(assignment.is_view(assignment.dataflow().value_at(find(*module, view)))) << view;
  EXPECT_FALSE(assignment.is_view(assignment.dataflow().value_at(find(*module, "new"))));
  EXPECT_EQ(assignment.temp_bytes(), 0);
  EXPECT_NE(assignment.to_string().find(" view: "), std::string::npos);
}

// Slices that are not one contiguous range, and reshapes that reorder elements (a column-major
// operand), are copies with buffers of their own.
// A dynamic-slice whose result is contiguous for every start (a stacked layer's weights: sizes
// 1, then whole trailing dimensions) is a view at an offset known at run time: a kDynamicView
// allocation of no bytes, which a reshape of it views too. A window that is not one run of
// the operand (two rows of a column range) is copied as before.
TEST(BufferAssignmentTest, ContiguousDynamicSliceIsAViewAtARunTimeOffset) {
  auto module = parse_verified(R"(
HloModule m
ENTRY %main (w: f32[4,3,5], i: s32[], x: f32[3]) -> (f32[5], f32[2,2]) {
  %w = f32[4,3,5] parameter(0)
  %i = s32[] parameter(1)
  %x = f32[3] parameter(2)
  %zero = s32[] constant(0)
  %layer = f32[1,3,5] dynamic-slice(%w, %i, %zero, %zero), dynamic_slice_sizes={1,3,5}
  %m = f32[3,5] reshape(%layer)
  %y = f32[5] dot(%x, %m), lhs_contracting_dims={0}, rhs_contracting_dims={0}
  %window = f32[1,2,2] dynamic-slice(%w, %i, %i, %i), dynamic_slice_sizes={1,2,2}
  %n = f32[2,2] reshape(%window)
  %z = f32[2,2] negate(%n)
  ROOT %t = (f32[5], f32[2,2]) tuple(%y, %z)
})");
  ASSERT_NE(module, nullptr);
  BufferAssignment assignment = assign_or_die(*module);
  const BufferSlice layer = slice_of(assignment, *module, "layer");
  EXPECT_EQ(assignment.allocations()[layer.allocation].kind, AllocationKind::kDynamicView);
  EXPECT_EQ(assignment.allocations()[layer.allocation].size, 0);
  EXPECT_EQ(layer, (BufferSlice{layer.allocation, 0, 60}));
  EXPECT_EQ(slice_of(assignment, *module, "m"), layer);
  for (const char* view : {"layer", "m"})
    EXPECT_TRUE(assignment.is_view(assignment.dataflow().value_at(find(*module, view)))) << view;
  EXPECT_FALSE(assignment.is_view(assignment.dataflow().value_at(find(*module, "window"))));
  EXPECT_NE(assignment.allocations()[slice_of(assignment, *module, "window").allocation].kind,
            AllocationKind::kDynamicView);
}

// A dynamic view carried unchanged through a while loop as its state (a Pallas kernel body's
// inner loop over a block it read) is that loop state too: the loop's parameter, the body's
// pass-through root and the loop result read the block where it lies. A dynamic-slice of that
// view inside the loop (the loop's slice of the block) is a view of the view, based at run
// time on it. A loop that writes the state it got holds a buffer of its own.
TEST(BufferAssignmentTest, DynamicViewCarriedThroughALoopAndSlicedInItIsReadInPlace) {
  auto module = parse_verified(R"(
HloModule m

%body (s: (s32[], f32[8,4], f32[4])) -> (s32[], f32[8,4], f32[4]) {
  %s = (s32[], f32[8,4], f32[4]) parameter(0)
  %j = s32[] get-tuple-element(%s), index=0
  %block = f32[8,4] get-tuple-element(%s), index=1
  %acc = f32[4] get-tuple-element(%s), index=2
  %zero = s32[] constant(0)
  %row = f32[1,4] dynamic-slice(%block, %j, %zero), dynamic_slice_sizes={1,4}
  %flat = f32[4] reshape(%row)
  %sum = f32[4] add(%acc, %flat)
  %one = s32[] constant(1)
  %next = s32[] add(%j, %one)
  ROOT %out = (s32[], f32[8,4], f32[4]) tuple(%next, %block, %sum)
}

%cond (c: (s32[], f32[8,4], f32[4])) -> pred[] {
  %c = (s32[], f32[8,4], f32[4]) parameter(0)
  %k = s32[] get-tuple-element(%c), index=0
  %n = s32[] constant(8)
  ROOT %more = pred[] compare(%k, %n), direction=LT
}

%writes (s: (s32[], f32[8,4], f32[4])) -> (s32[], f32[8,4], f32[4]) {
  %s = (s32[], f32[8,4], f32[4]) parameter(0)
  %j = s32[] get-tuple-element(%s), index=0
  %block = f32[8,4] get-tuple-element(%s), index=1
  %acc = f32[4] get-tuple-element(%s), index=2
  %twice = f32[8,4] add(%block, %block)
  %one = s32[] constant(1)
  %next = s32[] add(%j, %one)
  ROOT %out = (s32[], f32[8,4], f32[4]) tuple(%next, %twice, %acc)
}

%cond.1 (c: (s32[], f32[8,4], f32[4])) -> pred[] {
  %c = (s32[], f32[8,4], f32[4]) parameter(0)
  %k = s32[] get-tuple-element(%c), index=0
  %n = s32[] constant(8)
  ROOT %more = pred[] compare(%k, %n), direction=LT
}

ENTRY %main (cache: f32[3,8,4], h: s32[]) -> (f32[4], f32[8,4]) {
  %cache = f32[3,8,4] parameter(0)
  %h = s32[] parameter(1)
  %zero = s32[] constant(0)
  %head = f32[1,8,4] dynamic-slice(%cache, %h, %zero, %zero), dynamic_slice_sizes={1,8,4}
  %block = f32[8,4] reshape(%head)
  %start = f32[] constant(0)
  %acc = f32[4] broadcast(%start), dimensions={}
  %counter = s32[] constant(0)
  %init = (s32[], f32[8,4], f32[4]) tuple(%counter, %block, %acc)
  %loop = (s32[], f32[8,4], f32[4]) while(%init), condition=%cond, body=%body
  %total = f32[4] get-tuple-element(%loop), index=2
  %head2 = f32[1,8,4] dynamic-slice(%cache, %zero, %zero, %zero), dynamic_slice_sizes={1,8,4}
  %block2 = f32[8,4] reshape(%head2)
  %counter2 = s32[] constant(0)
  %acc2 = f32[4] broadcast(%start), dimensions={}
  %init2 = (s32[], f32[8,4], f32[4]) tuple(%counter2, %block2, %acc2)
  %loop2 = (s32[], f32[8,4], f32[4]) while(%init2), condition=%cond.1, body=%writes
  %written = f32[8,4] get-tuple-element(%loop2), index=1
  ROOT %t = (f32[4], f32[8,4]) tuple(%total, %written)
})");
  ASSERT_NE(module, nullptr);
  BufferAssignment assignment = assign_or_die(*module);
  const Dataflow& dataflow = assignment.dataflow();
  const Computation* body = module->find_computation("body");
  ASSERT_NE(body, nullptr);
  const BufferSlice head = slice_of(assignment, *module, "head");
  EXPECT_EQ(assignment.allocations()[head.allocation].kind, AllocationKind::kDynamicView);
  const ValueId carried = dataflow.value_at(body->parameter(0), {1});
  EXPECT_TRUE(assignment.is_view(carried));
  EXPECT_EQ(assignment.slice(carried)->allocation, head.allocation);
  const ValueId row = dataflow.value_at(body->find_instruction("row"));
  EXPECT_TRUE(assignment.is_view(row));  // a view of the view
  EXPECT_EQ(assignment.allocations()[assignment.slice(row)->allocation].kind, AllocationKind::kDynamicView);
  EXPECT_NE(assignment.slice(row)->allocation, head.allocation);
  // the loop that writes its state: a buffer of its own, which the reshape of the block fills
  EXPECT_FALSE(assignment.is_view(dataflow.value_at(find(*module, "block2"))));
  EXPECT_FALSE(assignment.is_view(dataflow.value_at(module->find_computation("writes")->parameter(0), {1})));
}

TEST(BufferAssignmentTest, StridedOrColumnSlicesAndReorderingReshapesAreNotViews) {
  auto module = parse_verified(R"(
HloModule m
ENTRY %main (p: f32[4,6], c: f32[4,6]{0,1}) -> (f32[4,2], f32[2,6], f32[24]) {
  %p = f32[4,6] parameter(0)
  %c = f32[4,6]{0,1} parameter(1)
  %columns = f32[4,2] slice(%p), slice={[0:4], [1:3]}
  %strided = f32[2,6] slice(%p), slice={[0:4:2], [0:6]}
  %flat = f32[24] reshape(%c)
  %a = f32[4,2] negate(%columns)
  %b = f32[2,6] negate(%strided)
  %d = f32[24] negate(%flat)
  ROOT %t = (f32[4,2], f32[2,6], f32[24]) tuple(%a, %b, %d)
})");
  ASSERT_NE(module, nullptr);
  BufferAssignment assignment = assign_or_die(*module);
  for (const char* copy : {"columns", "strided", "flat"}) {
    const ValueId value = assignment.dataflow().value_at(find(*module, copy));
    EXPECT_FALSE(assignment.is_view(value)) << copy;
    EXPECT_NE(slice_of(assignment, *module, copy).allocation, slice_of(assignment, *module, "p").allocation) << copy;
  }
}

// A view read after its operand's buffer is updated in place would see the new bytes: the slice
// is materialized (copied at its own time) instead. A view that is an entry result, or whose
// reader writes in place through it, has a buffer of its own too.
TEST(BufferAssignmentTest, ViewOfABufferWrittenBeforeItsLastReaderIsMaterialized) {
  auto module = parse_verified(R"(
HloModule m, input_output_alias={ {0}: (0, {}, may-alias) }
ENTRY %main (x: f32[4,3], row: f32[1,3]) -> (f32[4,3], f32[1,3], f32[2,3], f32[3,3]) {
  %x = f32[4,3] parameter(0)
  %row = f32[1,3] parameter(1)
  %first = f32[1,3] slice(%x), slice={[0:1], [0:3]}
  %zero = s32[] constant(0)
  %x2 = f32[4,3] dynamic-update-slice(%x, %row, %zero, %zero)
  %late = f32[1,3] negate(%first)
  %out = f32[2,3] slice(%x2), slice={[1:3], [0:3]}
  %tail = f32[3,3] slice(%x2), slice={[1:4], [0:3]}
  %tail2 = f32[3,3] dynamic-update-slice(%tail, %row, %zero, %zero)
  ROOT %t = (f32[4,3], f32[1,3], f32[2,3], f32[3,3]) tuple(%x2, %late, %out, %tail2)
})");
  ASSERT_NE(module, nullptr);
  BufferAssignment assignment = assign_or_die(*module);
  for (const char* copy : {"first", "out", "tail"}) {
    const ValueId value = assignment.dataflow().value_at(find(*module, copy));
    EXPECT_FALSE(assignment.is_view(value)) << copy;
    EXPECT_NE(slice_of(assignment, *module, copy).allocation, slice_of(assignment, *module, "x").allocation) << copy;
  }
}

}  // namespace
}  // namespace insitu
