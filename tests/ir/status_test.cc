// Status: a message read from a temporary Status is a value, so no reference can outlive it
// (ThreadSanitizer found `const std::string& m = result.status().message();` reading freed
// memory in a test).
#include "insitu/support/status.h"

#include <gtest/gtest.h>

#include <type_traits>

namespace insitu {
namespace {

static_assert(std::is_same_v<decltype(std::declval<Status>().message()), std::string>);
static_assert(std::is_same_v<decltype(std::declval<const Status&>().message()), const std::string&>);

TEST(StatusTest, MessageOfATemporaryOutlivesIt) {
  StatusOr<int> result = invalid_argument("a message long enough to live on the heap, not in the string");
  const std::string& message = result.status().message();  // bound to a value, extended
  EXPECT_EQ(message, "a message long enough to live on the heap, not in the string");
}

}  // namespace
}  // namespace insitu
