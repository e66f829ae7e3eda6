// donor-matching: donors pair with the output their value flows into in place first, then with
// an equal-size output only where that costs no copy; unused donors are reported with a reason
// and a sentence saying what would make them usable. Results unchanged.
#include "insitu/passes/donor_matching.h"

#include <fstream>
#include <sstream>

#include "insitu/passes/layout_assignment.h"
#include "pass_test_util.h"
#include "test_kernels.h"

namespace insitu {
namespace {

using testing::expect_checks;

class DonorMatchingTest : public ::testing::Test {
 protected:
  void SetUp() override { testing::register_test_kernels(); }

  // Runs match_donors on a clone, checks verifier and evaluator, returns the module.
  std::unique_ptr<Module> match(const Module& before, bool expect_changed, DonorMatchingResult* out = nullptr) {
    auto result = testing::run_and_compare(
        before,
        [&](Module& module) -> StatusOr<bool> {
          INSITU_ASSIGN_OR_RETURN(DonorMatchingResult matched, match_donors(module));
          if (out) *out = matched;
          return matched.changed;
        },
        expect_changed);
    return result;
  }
};

std::string header(const Module& module) {
  std::string printed = print_module(module, {.long_form = false, .print_metadata = false});
  return printed.substr(0, printed.find('\n'));
}

TEST_F(DonorMatchingTest, DataflowPairsCrossedSameSizeDonors) {
  // Size-only pairing in order would give p0->{0}, p1->{1}: each DUS would then write into the
  // other parameter's buffer while that one is still needed, costing copies.
  auto module = parse_verified(R"(
HloModule m, buffer_donor={ (0, {}), (1, {}) }

ENTRY main {
  p0 = f32[8] parameter(0)
  p1 = f32[8] parameter(1)
  u = f32[2] parameter(2)
  i = s32[] parameter(3)
  d1 = f32[8] dynamic-update-slice(p1, u, i)
  d0 = f32[8] dynamic-update-slice(p0, u, i)
  ROOT t = (f32[8], f32[8]) tuple(d1, d0)
}
)");
  DonorMatchingResult result;
  auto after = match(*module, true, &result);
  EXPECT_EQ(header(*after), "HloModule m, input_output_alias={ {0}: (1, {}, may-alias), {1}: (0, {}, may-alias) }");
  EXPECT_TRUE(after->config().buffer_donors.empty());
  EXPECT_TRUE(result.unused.empty());
  ASSERT_EQ(result.added.size(), 2u);
  EXPECT_EQ(result.added[0].parameter_number, 0);
  EXPECT_EQ(result.added[0].output_index, ShapeIndex({1}));
}

TEST_F(DonorMatchingTest, ElementwiseOutputAfterEveryOtherReadIsCopyFree) {
  auto module = parse_verified(R"(
HloModule m, buffer_donor={ (0, {}) }

add {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT r = f32[] add(x, y)
}

ENTRY main {
  p0 = f32[4] parameter(0)
  p1 = f32[4] parameter(1)
  z = f32[] constant(0)
  s = f32[] reduce(p0, z), dimensions={0}, to_apply=add
  b = f32[4] broadcast(s), dimensions={}
  a = f32[4] add(p0, b)
  ROOT t = (f32[], f32[4]) tuple(s, a)
}
)");
  auto after = match(*module, true);
  EXPECT_EQ(header(*after), "HloModule m, input_output_alias={ {1}: (0, {}, may-alias) }");
}

TEST_F(DonorMatchingTest, UnorderedReaderMakesPairingCostACopy) {
  auto module = parse_verified(R"(
HloModule m, buffer_donor={ (0, {}) }

ENTRY main {
  p0 = f32[4] parameter(0)
  a = f32[4] negate(p0)
  b = f32[4] abs(p0)
  ROOT t = (f32[4], f32[4]) tuple(a, b)
}
)");
  DonorMatchingResult result;
  auto after = match(*module, true, &result);
  EXPECT_TRUE(after->config().input_output_alias.empty());
  ASSERT_EQ(after->config().buffer_donors.size(), 1u);
  ASSERT_EQ(result.unused.size(), 1u);
  EXPECT_EQ(result.unused[0].reason, DonorReason::kOutputNeedsCopy);
  EXPECT_EQ(result.unused[0].detail.rfind("%b still reads parameter 0 and is not ordered before %a, which writes output {0}", 0), 0u)
      << result.unused[0].detail;
  const auto& attributes = after->config().frontend_attributes;
  ASSERT_EQ(attributes.size(), 1u);
  EXPECT_EQ(attributes[0].first, "insitu_unused_donor:0:{}");
  EXPECT_EQ(attributes[0].second.rfind("output-needs-copy: %b still reads", 0), 0u);
  // the report survives printing and re-parsing, and reads back
  auto reparsed = parse_verified(print_module(*after));
  ASSERT_NE(reparsed, nullptr);
  std::vector<UnusedDonor> recorded = recorded_unused_donors(*reparsed);
  ASSERT_EQ(recorded.size(), 1u);
  EXPECT_EQ(recorded[0].parameter_number, 0);
  EXPECT_EQ(recorded[0].reason, DonorReason::kOutputNeedsCopy);
  EXPECT_EQ(recorded[0].detail, result.unused[0].detail);
  // a second run reports the same and changes nothing
  match(*after, false);
}

TEST_F(DonorMatchingTest, NoOutputOfTheDonorsSize) {
  auto module = parse_verified(R"(
HloModule m, buffer_donor={ (1, {1}) }

ENTRY main {
  p0 = f32[8] parameter(0)
  p1 = (s32[2], s32[4]) parameter(1)
  ROOT n = f32[8] negate(p0)
}
)");
  DonorMatchingResult result;
  auto after = match(*module, true, &result);
  ASSERT_EQ(result.unused.size(), 1u);
  EXPECT_EQ(result.unused[0].reason, DonorReason::kNoMatchingOutput);
  EXPECT_EQ(result.unused[0].detail,
            "no output of the entry result has parameter 1 {1}'s size (16 bytes in memory space S(0)); the outputs "
            "are {} f32[8]{0} (32 bytes). Returning a value of that size (e.g. an updated parameter 1 {1}) would "
            "make the donor usable.");
  EXPECT_EQ(after->config().frontend_attributes[0].first, "insitu_unused_donor:1:{1}");
}

TEST_F(DonorMatchingTest, OutputAlreadyAliased) {
  auto module = parse_verified(R"(
HloModule m, input_output_alias={ {}: (1, {}, may-alias) }, buffer_donor={ (0, {}) }

ENTRY main {
  p0 = s32[4] parameter(0)
  p1 = s32[4] parameter(1)
  ROOT a = s32[4] add(p0, p1)
}
)");
  DonorMatchingResult result;
  auto after = match(*module, true, &result);
  ASSERT_EQ(result.unused.size(), 1u);
  EXPECT_EQ(result.unused[0].reason, DonorReason::kOutputAlreadyAliased);
  EXPECT_EQ(after->config().input_output_alias.size(), 1u);
}

TEST_F(DonorMatchingTest, DonorReturnedUnchangedPairsTrivially) {
  auto module = parse_verified(R"(
HloModule m, buffer_donor={ (0, {}), (1, {}) }

ENTRY main {
  p0 = s32[4] parameter(0)
  p1 = s32[4] parameter(1)
  n = s32[4] negate(p1)
  ROOT t = (s32[4], s32[4]) tuple(n, p0)
}
)");
  auto after = match(*module, true);
  EXPECT_EQ(header(*after), "HloModule m, input_output_alias={ {0}: (1, {}, may-alias), {1}: (0, {}, may-alias) }");
}

TEST_F(DonorMatchingTest, WhileStateAndInPlaceCustomCallFlowToOutputs) {
  auto module = parse_verified(R"(
HloModule m, buffer_donor={ (0, {}), (1, {}) }

cond {
  s = (s32[], s32[8]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  n = s32[] constant(4)
  ROOT lt = pred[] compare(i, n), direction=LT
}

body {
  s = (s32[], s32[8]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  cache = s32[8] get-tuple-element(s), index=1
  one = s32[] constant(1)
  j = s32[] add(i, one)
  row = s32[2] broadcast(j), dimensions={}
  two = s32[] constant(2)
  at = s32[] multiply(i, two)
  updated = s32[8] dynamic-update-slice(cache, row, at)
  ROOT out = (s32[], s32[8]) tuple(j, updated)
}

ENTRY main {
  cache = s32[8] parameter(0)
  other = s32[8] parameter(1)
  zero = s32[] constant(0)
  init = (s32[], s32[8]) tuple(zero, cache)
  w = (s32[], s32[8]) while(init), condition=cond, body=body
  filled = s32[8] get-tuple-element(w), index=1
  bumped = s32[8] custom-call(other), custom_call_target="test_add_one_inplace", output_to_operand_aliasing={{}: (0, {})}
  ROOT t = (s32[8], s32[8]) tuple(bumped, filled)
}
)");
  auto after = match(*module, true);
  EXPECT_EQ(header(*after), "HloModule m, input_output_alias={ {0}: (1, {}, may-alias), {1}: (0, {}, may-alias) }");
}

TEST_F(DonorMatchingTest, NonElementwiseReaderCannotWriteIntoDonor) {
  auto module = parse_verified(R"(
HloModule m, buffer_donor={ (0, {}) }

ENTRY main {
  p0 = f32[2,2] parameter(0)
  ROOT t = f32[2,2] transpose(p0), dimensions={1,0}
}
)");
  DonorMatchingResult result;
  auto after = match(*module, true, &result);
  ASSERT_EQ(result.unused.size(), 1u);
  EXPECT_EQ(result.unused[0].reason, DonorReason::kOutputNeedsCopy);
  EXPECT_EQ(result.unused[0].detail.rfind("%t (transpose) reads parameter 0 while writing output {}", 0), 0u)
      << result.unused[0].detail;
}

TEST_F(DonorMatchingTest, NoDonorsIsUnchanged) {
  auto module = parse_verified(R"(
HloModule m

ENTRY main {
  p0 = f32[2] parameter(0)
  ROOT n = f32[2] negate(p0)
}
)");
  auto after = match(*module, false);
  EXPECT_TRUE(after->config().input_output_alias.empty());
}

TEST_F(DonorMatchingTest, SeedDonorThroughCustomCallWithoutAliasingIsExplained) {
  std::ifstream file(std::string(INSITU_SEED_DIR) + "/sync_tensors_graph.before_optimizations.hlo");
  std::stringstream text;
  text << file.rdbuf();
  auto module = parse_verified(text.str());
  ASSERT_NE(module, nullptr);
  ASSERT_TRUE(assign_layouts(*module).ok());
  DonorMatchingResult result;
  auto after = match(*module, true, &result);
  // not aliased: XLA would alias by size and then copy p0.1 (copy.3); insitu reports instead
  EXPECT_TRUE(after->config().input_output_alias.empty());
  ASSERT_EQ(after->config().buffer_donors.size(), 1u);
  ASSERT_EQ(result.unused.size(), 1u);
  EXPECT_EQ(result.unused[0].reason, DonorReason::kOutputNeedsCopy);
  EXPECT_EQ(result.unused[0].detail,
            "custom-call %custom-call.2 (target \"tpu_custom_call\") declares no output_to_operand_aliasing, so its "
            "output (output {0}) cannot be written into parameter 0's buffer while it still reads parameter 0 "
            "(operand 0). Writing output_to_operand_aliasing={{}: (0, {})} on the custom-call (with a kernel that "
            "writes in place) would make the donor usable. XLA would alias the donor to output {0} by size and then "
            "copy parameter 0 before the writer; insitu reports it instead of paying that hidden copy.");
  expect_checks(*after, R"(
CHECK: HloModule SyncTensorsGraph.4, buffer_donor={ (0, {}) }
CHECK-SAME: frontend_attributes={"insitu_unused_donor:0:{}"="output-needs-copy: custom-call %custom-call.2
)");
}

TEST_F(DonorMatchingTest, SeedWithDeclaredAliasingPairsInPlace) {
  auto module = parse_verified(R"(
HloModule fixed, buffer_donor={ (0, {}) }, entry_computation_layout={(s32[4]{0:T(128)})->(s32[4]{0:T(128)})}

ENTRY main {
  p0.1 = s32[4]{0} parameter(0)
  k = s32[4]{0} custom-call(p0.1), custom_call_target="test_add_one_inplace", operand_layout_constraints={s32[4]{0}}, output_to_operand_aliasing={{}: (0, {})}
  ROOT t = (s32[4]{0}) tuple(k)
}
)");
  ASSERT_TRUE(assign_layouts(*module).ok());
  auto after = match(*module, true);
  EXPECT_EQ(after->config().input_output_alias.size(), 1u);
  EXPECT_TRUE(after->config().buffer_donors.empty());
  EXPECT_TRUE(after->config().frontend_attributes.empty());
}

}  // namespace
}  // namespace insitu
