// Every frontend example (examples/frontend/programs.h) is correct with 1 and with 2 threads,
// and the in-place ones really write the caller's buffers without copies.
#include <gtest/gtest.h>

#include "examples/frontend/programs.h"

namespace insitu::examples {
namespace {

class FrontendExamples : public ::testing::TestWithParam<int> {};

void expect_in_place_without_copies(const StatusOr<ExampleResult>& result) {
  ASSERT_TRUE(result.ok()) << result.status().to_string();
  EXPECT_TRUE(result->correct) << result->report;
  EXPECT_TRUE(result->in_place) << result->report;
  EXPECT_EQ(result->copies, 0) << result->report;
  EXPECT_EQ(result->bytes_copied, 0) << result->report;
}

TEST_P(FrontendExamples, PlusOneMutating) { expect_in_place_without_copies(run_plus_one_mutating(GetParam())); }
TEST_P(FrontendExamples, PlusOneDonated) { expect_in_place_without_copies(run_plus_one_donated(GetParam())); }
TEST_P(FrontendExamples, KvCacheDecode) { expect_in_place_without_copies(run_kv_cache_decode(GetParam())); }
TEST_P(FrontendExamples, AdamStep) { expect_in_place_without_copies(run_adam_step(GetParam())); }
TEST_P(FrontendExamples, TiledGrid) {
  StatusOr<ExampleResult> result = run_tiled_grid(GetParam());
  ASSERT_TRUE(result.ok()) << result.status().to_string();
  EXPECT_TRUE(result->correct) << result->report;
  EXPECT_EQ(result->copies, 0) << result->report;
}

INSTANTIATE_TEST_SUITE_P(Threads, FrontendExamples, ::testing::Values(1, 2));

}  // namespace
}  // namespace insitu::examples
