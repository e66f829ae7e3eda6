// Golden cases for copy insertion (after scheduling and copy elimination): each states the
// copies it expects and their reasons, and every optimized module is checked against the
// reference evaluator on the same inputs.
#include <fstream>
#include <iterator>
#include <set>

#include "copy_test_util.h"
#include "insitu/passes/buffer_assignment.h"

namespace insitu {
namespace {

using copy_test::copy_reasons;
using copy_test::optimize;
using Reasons = std::vector<std::string>;

std::string detail_of_first_copy(const Module& module) {
  for (const Computation* computation : module.computations())
    for (const Instruction* instruction : computation->instructions())
      if (instruction->opcode() == Opcode::kCopy) return copy_detail(*instruction);
  return "";
}

constexpr std::string_view kDusDonated = R"(
HloModule dus_donated, input_output_alias={ {}: (0, {}, may-alias) }
ENTRY main {
  p = f32[8,4] parameter(0)
  u = f32[1,4] parameter(1)
  i = s32[] parameter(2)
  z = s32[] constant(0)
  ROOT d = f32[8,4] dynamic-update-slice(p, u, i, z)
}
)";

TEST(CopyInsertionTest, DusOnDonatedParameterNeedsNoCopy) {
  auto module = optimize(kDusDonated);
  EXPECT_EQ(copy_reasons(*module), Reasons{});
}

TEST(CopyInsertionTest, DusOnUndonatedParameterCopiesItOnce) {
  std::string text(kDusDonated);
  text.replace(text.find(", input_output_alias"), text.find("\n", 1) - text.find(", input_output_alias"), "");
  auto module = optimize(text);
  EXPECT_EQ(copy_reasons(*module), Reasons{"live-after-in-place-write"});
  EXPECT_NE(detail_of_first_copy(*module).find("parameter 0 (%p) is not donated"), std::string::npos)
      << detail_of_first_copy(*module);
  EXPECT_NE(detail_of_first_copy(*module).find("donate it"), std::string::npos);
}

TEST(CopyInsertionTest, InPlaceOperandReadAfterwardsIsCopiedOnce) {
  // %r needs both the old %p and the updated %d, so no order avoids the copy.
  auto module = optimize(R"(
HloModule read_after, input_output_alias={ {0}: (0, {}, may-alias) }
ENTRY main {
  p = f32[8] parameter(0)
  u = f32[2] parameter(1)
  z = s32[] constant(3)
  d = f32[8] dynamic-update-slice(p, u, z)
  r = f32[8] add(p, d)
  ROOT t = (f32[8], f32[8]) tuple(d, r)
}
)");
  EXPECT_EQ(copy_reasons(*module), Reasons{"live-after-in-place-write"});
  EXPECT_NE(detail_of_first_copy(*module).find("%p is read by %r after %d overwrites it in place"), std::string::npos)
      << detail_of_first_copy(*module);
}

// openxla/xla#20440: read x[0,0], then update x[0,0] in place on a donated x. The read is
// written after the update; the schedule moves it first.
constexpr std::string_view kReadThenUpdate = R"(
HloModule read_then_update, input_output_alias={ {0}: (0, {}, may-alias) }
ENTRY main {
  x = f32[4,4] parameter(0)
  z = s32[] constant(0)
  s = f32[1,1] slice(x), slice={[0:1], [0:1]}
  one = f32[1,1] constant({ {1} })
  upd = f32[1,1] add(s, one)
  d = f32[4,4] dynamic-update-slice(x, upd, z, z)
  old = f32[1,1] dynamic-slice(x, z, z), dynamic_slice_sizes={1,1}
  ROOT t = (f32[4,4], f32[1,1]) tuple(d, old)
}
)";

TEST(CopyInsertionTest, ReadBeforeInPlaceUpdateNeedsNoCopyAfterScheduling) {
  auto module = optimize(kReadThenUpdate);
  EXPECT_EQ(copy_reasons(*module), Reasons{});
}

TEST(CopyInsertionTest, ReadBeforeInPlaceUpdateCopiesOnceWithoutScheduling) {
  auto module = optimize(kReadThenUpdate, {.schedule = false});
  EXPECT_EQ(copy_reasons(*module), Reasons{"live-after-in-place-write"});
}

TEST(CopyInsertionTest, KvCacheDecodeLoopNeedsNoCopy) {
  // One row of the donated cache per iteration; the position is donated and returned too.
  auto module = optimize(R"(
HloModule kv_decode, input_output_alias={ {0}: (0, {}, may-alias), {1}: (2, {}, may-alias) }
body {
  s = (s32[], f32[8,4], f32[1,4]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  cache = f32[8,4] get-tuple-element(s), index=1
  row = f32[1,4] get-tuple-element(s), index=2
  z = s32[] constant(0)
  updated = f32[8,4] dynamic-update-slice(cache, row, i, z)
  one = s32[] constant(1)
  next = s32[] add(i, one)
  h = f32[] constant(0.5)
  half = f32[1,4] broadcast(h), dimensions={}
  next_row = f32[1,4] add(row, half)
  ROOT r = (s32[], f32[8,4], f32[1,4]) tuple(next, updated, next_row)
}
cond {
  s = (s32[], f32[8,4], f32[1,4]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  n = s32[] constant(8)
  ROOT lt = pred[] compare(i, n), direction=LT
}
ENTRY main {
  cache = f32[8,4] parameter(0)
  row = f32[1,4] parameter(1)
  pos = s32[] parameter(2)
  fresh_row = f32[1,4] negate(row)
  init = (s32[], f32[8,4], f32[1,4]) tuple(pos, cache, fresh_row)
  w = (s32[], f32[8,4], f32[1,4]) while(init), condition=cond, body=body
  out = f32[8,4] get-tuple-element(w), index=1
  end = s32[] get-tuple-element(w), index=0
  ROOT t = (f32[8,4], s32[]) tuple(out, end)
}
)");
  EXPECT_EQ(copy_reasons(*module), Reasons{});
}

TEST(CopyInsertionTest, CorpusKvCacheDecodeCopiesOnlyReadOnlyLoopState) {
  // tests/corpus/kv_cache_decode.hlo: the donated caches stay in place; the undonated position
  // and the undonated k/v rows need writable state buffers. The loop counter starts from a
  // constant that only the loop reads: it is materialized into the loop's buffer, no copy.
  std::ifstream file(std::string(INSITU_SOURCE_DIR) + "/tests/corpus/kv_cache_decode.hlo");
  std::string text((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  auto module = optimize(text);
  EXPECT_EQ(copy_reasons(*module), Reasons(3, "loop-carried"));
  for (const Computation* computation : module->computations())
    for (const Instruction* instruction : computation->instructions())
      if (instruction->opcode() == Opcode::kCopy) {
        EXPECT_NE(instruction->shape().to_string(false), "f32[8,4]");
      }
}

// jax-ml/jax#5986: a conditional inside a loop, one branch updating the state in place and one
// passing it through; both branch orders must be copy-free.
std::string conditional_in_loop(bool update_first) {
  std::string branches = update_first ? "true_computation=update, false_computation=pass"
                                      : "true_computation=pass, false_computation=update";
  return R"(
HloModule cond_in_loop, input_output_alias={ {0}: (0, {}, may-alias), {1}: (1, {}, may-alias) }
update {
  p = (f32[8], s32[]) parameter(0)
  a = f32[8] get-tuple-element(p), index=0
  i = s32[] get-tuple-element(p), index=1
  v = f32[1] constant({5})
  ROOT d = f32[8] dynamic-update-slice(a, v, i)
}
pass {
  p = (f32[8], s32[]) parameter(0)
  ROOT a = f32[8] get-tuple-element(p), index=0
}
body {
  s = (s32[], f32[8]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  acc = f32[8] get-tuple-element(s), index=1
  two = s32[] constant(2)
  r = s32[] remainder(i, two)
  zero = s32[] constant(0)
  even = pred[] compare(r, zero), direction=EQ
  op = (f32[8], s32[]) tuple(acc, i)
  c = f32[8] conditional(even, op, op), )" +
         branches + R"(
  one = s32[] constant(1)
  next = s32[] add(i, one)
  ROOT t = (s32[], f32[8]) tuple(next, c)
}
cond {
  s = (s32[], f32[8]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  n = s32[] constant(6)
  ROOT lt = pred[] compare(i, n), direction=LT
}
ENTRY main {
  acc = f32[8] parameter(0)
  i = s32[] parameter(1)
  init = (s32[], f32[8]) tuple(i, acc)
  w = (s32[], f32[8]) while(init), condition=cond, body=body
  a = f32[8] get-tuple-element(w), index=1
  n = s32[] get-tuple-element(w), index=0
  ROOT t = (f32[8], s32[]) tuple(a, n)
}
)";
}

TEST(CopyInsertionTest, ConditionalInLoopUpdateBranchFirstNeedsNoCopy) {
  auto module = optimize(conditional_in_loop(/*update_first=*/true));
  EXPECT_EQ(copy_reasons(*module), Reasons{});
}

TEST(CopyInsertionTest, ConditionalInLoopPassBranchFirstNeedsNoCopy) {
  auto module = optimize(conditional_in_loop(/*update_first=*/false));
  EXPECT_EQ(copy_reasons(*module), Reasons{});
}

TEST(CopyInsertionTest, OneBufferAsTwoOperandsOfInPlaceCustomCallCopiesOnce) {
  auto module = optimize(R"(
HloModule overlap, input_output_alias={ {}: (0, {}, may-alias) }
ENTRY main {
  p = f32[4] parameter(0)
  ROOT cc = f32[4] custom-call(p, p), custom_call_target="add_in_place", output_to_operand_aliasing={{}: (0, {})}
}
)");
  EXPECT_EQ(copy_reasons(*module), Reasons{"operand-overlap"});
  // The read-only operand is the copy; the write still lands in %p's buffer.
  const Instruction* call = module->entry()->root();
  EXPECT_EQ(call->operand(0)->name(), "p");
  EXPECT_EQ(call->operand(1)->opcode(), Opcode::kCopy);
}

TEST(CopyInsertionTest, ReturningUnaliasedParameterCopiesOnce) {
  auto module = optimize(R"(
HloModule return_parameter
ENTRY main {
  ROOT p = f32[4] parameter(0)
}
)");
  EXPECT_EQ(copy_reasons(*module), Reasons{"read-only-live-out"});
  EXPECT_EQ(module->entry()->root()->opcode(), Opcode::kCopy);
}

TEST(CopyInsertionTest, ReturningAliasedParameterNeedsNoCopy) {
  auto module = optimize(R"(
HloModule return_donated, input_output_alias={ {}: (0, {}, may-alias) }
ENTRY main {
  ROOT p = f32[4] parameter(0)
}
)");
  EXPECT_EQ(copy_reasons(*module), Reasons{});
}

TEST(CopyInsertionTest, ReturningConstantCopiesOnce) {
  auto module = optimize(R"(
HloModule return_constant
ENTRY main {
  p = f32[2] parameter(0)
  c = f32[2] constant({1, 2})
  ROOT t = (f32[2], f32[2]) tuple(c, p)
}
)");
  EXPECT_EQ(copy_reasons(*module), Reasons({"read-only-live-out", "read-only-live-out"}));
}

TEST(CopyInsertionTest, ReturningOneValueTwiceCopiesOnce) {
  auto module = optimize(R"(
HloModule twice
ENTRY main {
  p = f32[4] parameter(0)
  n = f32[4] negate(p)
  ROOT t = (f32[4], f32[4]) tuple(n, n)
}
)");
  EXPECT_EQ(copy_reasons(*module), Reasons{"non-distinct-output"});
}

TEST(CopyInsertionTest, WhileInitReadAfterLoopCopiesOnce) {
  auto module = optimize(R"(
HloModule init_read_after
body {
  s = (s32[], f32[4]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  x = f32[4] get-tuple-element(s), index=1
  one = s32[] constant(1)
  next = s32[] add(i, one)
  y = f32[4] multiply(x, x)
  ROOT r = (s32[], f32[4]) tuple(next, y)
}
cond {
  s = (s32[], f32[4]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  n = s32[] constant(4)
  ROOT lt = pred[] compare(i, n), direction=LT
}
ENTRY main {
  p = f32[4] parameter(0)
  c = s32[] parameter(1)
  i0 = s32[] add(c, c)
  x0 = f32[4] negate(p)
  init = (s32[], f32[4]) tuple(i0, x0)
  w = (s32[], f32[4]) while(init), condition=cond, body=body
  x = f32[4] get-tuple-element(w), index=1
  ROOT sum = f32[4] add(x, x0)
}
)");
  EXPECT_EQ(copy_reasons(*module), Reasons{"loop-carried"});
}

TEST(CopyInsertionTest, SwappedLoopStateIsCopiedAndStillCorrect) {
  auto module = optimize(R"(
HloModule swap, input_output_alias={ {0}: (0, {}, may-alias), {1}: (1, {}, may-alias) }
body {
  s = (s32[], f32[4], f32[4]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  a = f32[4] get-tuple-element(s), index=1
  b = f32[4] get-tuple-element(s), index=2
  one = s32[] constant(1)
  next = s32[] add(i, one)
  ROOT r = (s32[], f32[4], f32[4]) tuple(next, b, a)
}
cond {
  s = (s32[], f32[4], f32[4]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  n = s32[] constant(5)
  ROOT lt = pred[] compare(i, n), direction=LT
}
ENTRY main {
  a = f32[4] parameter(0)
  b = f32[4] parameter(1)
  c = s32[] parameter(2)
  i0 = s32[] add(c, c)
  init = (s32[], f32[4], f32[4]) tuple(i0, a, b)
  w = (s32[], f32[4], f32[4]) while(init), condition=cond, body=body
  x = f32[4] get-tuple-element(w), index=1
  y = f32[4] get-tuple-element(w), index=2
  ROOT t = (f32[4], f32[4]) tuple(x, y)
}
)");
  // A swap of two buffers needs a temporary: three copies, all loop-carried.
  EXPECT_EQ(copy_reasons(*module), Reasons(3, "loop-carried"));
}

TEST(CopyInsertionTest, AliasedOutputWrittenWhileCustomCallReadsParameterCopiesIt) {
  // The seed's copy.3: output {0} is aliased to p0, the custom call reads p0 and declares no
  // output_to_operand_aliasing.
  auto module = optimize(R"(
HloModule seed_shape, input_output_alias={ {0}: (0, {}, may-alias) }
ENTRY main {
  p0 = f32[4] parameter(0)
  name = f32[4] custom-call(p0), custom_call_target="plus_one"
  ROOT t = (f32[4]) tuple(name)
}
)");
  EXPECT_EQ(copy_reasons(*module), Reasons{"live-after-in-place-write"});
  const std::string detail = detail_of_first_copy(*module);
  EXPECT_NE(detail.find("aliased to output {0}"), std::string::npos) << detail;
  EXPECT_NE(detail.find("declares no output_to_operand_aliasing"), std::string::npos) << detail;
  EXPECT_EQ(module->entry()->find_instruction("name")->operand(0)->opcode(), Opcode::kCopy);
}

TEST(CopyInsertionTest, CustomCallDeclaringItsAliasNeedsNoCopy) {
  auto module = optimize(R"(
HloModule seed_fixed, input_output_alias={ {0}: (0, {}, may-alias) }
ENTRY main {
  p0 = f32[4] parameter(0)
  name = f32[4] custom-call(p0, p0), custom_call_target="add_in_place", output_to_operand_aliasing={{}: (0, {})}
  ROOT t = (f32[4]) tuple(name)
}
)");
  // Only the overlap of the two operands remains.
  EXPECT_EQ(copy_reasons(*module), Reasons{"operand-overlap"});
}

// Differential seeds 241, 1358, ... (shrunk): one undonated parameter at both leaves of a
// conditional operand; one branch nests a conditional whose branch updates leaf {1} in place
// while its other branch returns leaf {0}, so the inner result gets a fresh buffer and no
// occupant of the outer branch's parameter {1} records the write. The outer conditional must
// still see that its branch updates parameter {1} and copy the read-only %p there.
TEST(CopyInsertionTest, NestedConditionalUpdatingUndonatedParameterCopiesIt) {
  auto module = optimize(R"(
HloModule nested_conditional_writes_parameter
inner_writes {
  arg = (s32[4], s32[4]) parameter(0)
  x = s32[4] get-tuple-element(arg), index=0
  y = s32[4] get-tuple-element(arg), index=1
  i = s32[] constant(1)
  window = s32[1] dynamic-slice(x, i), dynamic_slice_sizes={1}
  dus = s32[4] dynamic-update-slice(y, window, i)
  ROOT out = (s32[4], s32[4]) tuple(x, dus)
}
inner_passes {
  arg = (s32[4], s32[4]) parameter(0)
  x = s32[4] get-tuple-element(arg), index=0
  ROOT out = (s32[4], s32[4]) tuple(x, x)
}
outer_passes {
  arg = (s32[4], s32[4]) parameter(0)
  x = s32[4] get-tuple-element(arg), index=0
  ROOT out = (s32[4], s32[4]) tuple(x, x)
}
outer_nests {
  arg = (s32[4], s32[4]) parameter(0)
  zero = s32[] constant(0)
  inner = (s32[4], s32[4]) conditional(zero, arg, arg), branch_computations={inner_writes, inner_passes}
  r = s32[4] get-tuple-element(inner), index=0
  ROOT out = (s32[4], s32[4]) tuple(r, r)
}
ENTRY main {
  p = s32[4] parameter(0)
  args = (s32[4], s32[4]) tuple(p, p)
  one = s32[] constant(1)
  outer = (s32[4], s32[4]) conditional(one, args, args), branch_computations={outer_passes, outer_nests}
  r = s32[4] get-tuple-element(outer), index=0
  ROOT result = (s32[4], s32[4]) tuple(r, p)
}
)");
  ASSERT_NE(module, nullptr);
  // Both inner branches return a buffer of their own at {1}; %outer_nests gets a copy of %p at
  // {1}; both outputs return %p.
  EXPECT_EQ(copy_reasons(*module), Reasons({"conditional-branch", "conditional-branch", "conditional-branch",
                                            "read-only-live-out", "read-only-live-out"}));
  const Instruction* outer = module->entry()->find_instruction("outer");
  const Instruction* nests_operand = outer->operand(2);
  ASSERT_EQ(nests_operand->opcode(), Opcode::kTuple);
  EXPECT_EQ(nests_operand->operand(0)->name(), "p");
  ASSERT_EQ(nests_operand->operand(1)->opcode(), Opcode::kCopy);
  const std::string detail = copy_detail(*nests_operand->operand(1));
  EXPECT_NE(detail.find("branch %outer_nests of %outer updates its parameter {1} in place, but parameter 0 (%p) "
                        "is not donated"),
            std::string::npos)
      << detail;
  // Buffer assignment used to reject the module: %dus wrote into %p.
  StatusOr<BufferAssignment> buffers = assign_buffers(*module);
  EXPECT_TRUE(buffers.ok()) << buffers.status().to_string();
}

TEST(CopyInsertionTest, CopyReasonsSurvivePrinting) {
  auto module = optimize(R"(
HloModule twice
ENTRY main {
  p = f32[4] parameter(0)
  n = f32[4] negate(p)
  ROOT t = (f32[4], f32[4]) tuple(n, n)
}
)");
  std::string text = print_module(*module);
  EXPECT_NE(text.find("insitu_copy_reason=\"non-distinct-output\""), std::string::npos) << text;
  auto reparsed = parse_module(text);
  ASSERT_TRUE(reparsed.ok()) << reparsed.status().to_string();
  EXPECT_EQ(copy_reasons(**reparsed), Reasons{"non-distinct-output"});
}

// A tuple parameter of n leaves returned as is, in both spellings (the parameter itself as the
// root; a tuple of its get-tuple-elements): one copy per leaf, each with R4's reason, and the
// module still matches the evaluator (optimize checks it). 3,000 leaves used to take minutes:
// one recomputation of the dataflow per copy, and a module clone per copy in copy elimination.
// Now R4 reports every read-only leaf at once and they are inserted as one edit.
std::string wide_tuple_module(int64_t n, bool through_elements) {
  std::string tuple = "(";
  for (int64_t i = 0; i < n; ++i) tuple += i == 0 ? "f32[2]" : ", f32[2]";
  tuple += ")";
  if (!through_elements) return "HloModule wide\nENTRY main {\n  ROOT p = " + tuple + " parameter(0)\n}\n";
  std::string text = "HloModule wide\nENTRY main {\n  p = " + tuple + " parameter(0)\n";
  std::string root = "  ROOT r = " + tuple + " tuple(";
  for (int64_t i = 0; i < n; ++i) {
    text += "  g" + std::to_string(i) + " = f32[2] get-tuple-element(p), index=" + std::to_string(i) + "\n";
    root += (i == 0 ? "g" : ", g") + std::to_string(i);
  }
  return text + root + ")\n}\n";
}

TEST(CopyInsertionTest, WideTupleReturnedAsIsGetsOneCopyPerLeafInOneBatch) {
  for (bool through_elements : {false, true}) {
    auto module = optimize(wide_tuple_module(3000, through_elements));
    ASSERT_TRUE(module != nullptr);
    EXPECT_EQ(copy_reasons(*module), Reasons(3000, "read-only-live-out")) << "through_elements=" << through_elements;
    // Each leaf is copied from its own element, and every root operand is a distinct copy.
    const Instruction* root = module->entry()->root();
    ASSERT_EQ(root->opcode(), Opcode::kTuple);
    std::set<const Instruction*> seen;
    for (int64_t i = 0; i < root->operand_count(); ++i) {
      const Instruction* copy = root->operand(i);
      ASSERT_EQ(copy->opcode(), Opcode::kCopy) << i;
      EXPECT_EQ(copy->operand(0)->tuple_index, i);
      EXPECT_TRUE(seen.insert(copy).second);
    }
  }
}

// The same parameter leaf returned twice, beside a constant: two copies of the leaf and one of
// the constant, batched together.
TEST(CopyInsertionTest, LeafReturnedTwiceAndAConstantAreEachCopied) {
  auto module = optimize(R"(
HloModule twice
ENTRY main {
  p = (f32[2], f32[3]) parameter(0)
  a = f32[2] get-tuple-element(p), index=0
  c = f32[3] constant({1, 2, 3})
  ROOT r = (f32[2], f32[2], f32[3]) tuple(a, a, c)
}
)");
  ASSERT_TRUE(module != nullptr);
  EXPECT_EQ(copy_reasons(*module), Reasons(3, "read-only-live-out"));
}

}  // namespace
}  // namespace insitu
