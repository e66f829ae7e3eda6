// The explain library: one spelling of every copy, alias and unused donor for all surfaces.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "insitu/ir/parser.h"
#include "insitu/passes/explain.h"
#include "pass_test_util.h"

namespace insitu {
namespace {


// A copy the input program wrote has no recorded reason: it is user-copy, with a sentence.
TEST(Explain, ACopyWithoutARecordedReasonIsAUserCopy) {
  std::unique_ptr<Module> module = parse_verified(R"(HloModule m
ENTRY main {
  p = f32[4] parameter(0)
  ROOT c = f32[4] copy(p)
})");
  ASSERT_NE(module, nullptr);
  const Explanation explanation = explain_module(*module);
  ASSERT_EQ(explanation.copies.size(), 1u);
  EXPECT_EQ(explanation.copies[0].reason, CopyReason::kUserCopy);
  EXPECT_EQ(explanation.copies[0].detail, "a copy written in the input program");
  EXPECT_EQ(explanation.copied_bytes(), 16);
  EXPECT_FALSE(explanation.peak_memory_bytes.has_value());
  EXPECT_EQ(explanation_text(explanation),
            "module m: 1 copy (16 bytes)\ncopy %c in main: 16 bytes, user-copy\n  a copy written in the input program\n");
  nlohmann::json json = nlohmann::json::parse(explanation_json(explanation));
  EXPECT_TRUE(json["peak_memory_bytes"].is_null());
  EXPECT_EQ(json["copies"][0]["reason"], "user-copy");
}

// Donor matching's own result reaches the explanation, typed; the module records it too, so
// explaining the re-parsed module alone says the same.
TEST(Explain, UnusedDonorsComeFromDonorMatchingAndFromTheModule) {
  std::unique_ptr<Module> module = parse_verified(R"(HloModule m, buffer_donor={ (0, {}) }
ENTRY main {
  p = f32[8] parameter(0)
  ROOT r = f32[2] slice(p), slice={[0:2]}
})");
  ASSERT_NE(module, nullptr);
  StatusOr<OptimizedModule> optimized = optimize_module(std::move(module));
  ASSERT_TRUE(optimized.ok()) << optimized.status().to_string();
  ASSERT_EQ(optimized->donors.unused.size(), 1u);
  const Explanation explanation = explain_module(*optimized);
  ASSERT_EQ(explanation.unused_donors.size(), 1u);
  EXPECT_EQ(explanation.unused_donors[0].reason, DonorReason::kNoMatchingOutput);
  ASSERT_TRUE(explanation.peak_memory_bytes.has_value());
  const Explanation recorded = explain_module(*optimized->module);
  ASSERT_EQ(recorded.unused_donors.size(), 1u);
  EXPECT_EQ(recorded.unused_donors[0].detail, explanation.unused_donors[0].detail);
}

}  // namespace
}  // namespace insitu
