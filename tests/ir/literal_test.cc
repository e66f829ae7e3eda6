// Literal's storage (ir/literal.h): zeros however it was allocated (calloc's below 2 MiB, fresh
// huge-page-advised pages above), copies and moves of both, and every size around the switch.
#include "insitu/ir/literal.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <utility>

namespace insitu {
namespace {

TEST(LiteralStorage, NewArraysAreZeroAndCopiesAreTheirOwn) {
  // 2 MiB is the switch: sizes just under, at and over it, and an empty one
  for (int64_t elements : {int64_t{0}, int64_t{1}, (int64_t{2} << 20) / 4 - 1, (int64_t{2} << 20) / 4,
                           (int64_t{2} << 20) / 4 + 1, int64_t{3} << 20}) {
    SCOPED_TRACE(elements);
    Literal literal(Shape::array(PrimitiveType::kF32, {elements}));
    ASSERT_EQ(literal.size_bytes(), elements * 4);
    std::span<const float> values = literal.data<float>();
    EXPECT_TRUE(std::all_of(values.begin(), values.end(), [](float v) { return v == 0.0f; }));
    if (elements < 2) continue;  // the checks below write the first and the last element
    literal.data<float>()[elements - 1] = 7.0f;
    Literal copy = literal;
    EXPECT_EQ(copy, literal);
    copy.data<float>()[0] = 1.0f;
    EXPECT_EQ(literal.data<float>()[0], 0.0f);  // its own bytes
    Literal moved = std::move(copy);
    EXPECT_EQ(moved.data<float>()[elements - 1], 7.0f);
    EXPECT_EQ(moved.data<float>()[0], 1.0f);
  }
}

TEST(LiteralStorage, BigArraysAreAlignedToTheirElements) {
  Literal literal(Shape::array(PrimitiveType::kF64, {1 << 20}));
  EXPECT_EQ(reinterpret_cast<uintptr_t>(literal.untyped_data()) % 64, 0u);
}

}  // namespace
}  // namespace insitu
