#include "insitu/ir/shape.h"

#include <gtest/gtest.h>

namespace insitu {
namespace {

TEST(ShapeTest, ArrayToString) {
  Shape shape = Shape::array(PrimitiveType::kF32, {2, 3});
  EXPECT_EQ(shape.to_string(), "f32[2,3]{1,0}");
  EXPECT_EQ(shape.to_string(false), "f32[2,3]");
  EXPECT_EQ(shape.byte_size(), 24);
}

TEST(ShapeTest, ScalarPrintsNoLayoutUnlessTiled) {
  Shape scalar = Shape::scalar(PrimitiveType::kS32);
  EXPECT_EQ(scalar.to_string(), "s32[]");
  scalar.mutable_layout().tiles.push_back(Tile{{256}});
  EXPECT_EQ(scalar.to_string(), "s32[]{:T(256)}");
}

TEST(ShapeTest, TiledMemorySpaceLayout) {
  Layout layout = Layout::descending(1);
  layout.tiles.push_back(Tile{{128}});
  layout.memory_space = 3;
  Shape shape = Shape::array(PrimitiveType::kS32, {4}, layout);
  EXPECT_EQ(shape.to_string(), "s32[4]{0:T(128)S(3)}");
  EXPECT_EQ(shape.byte_size(), 16) << "tiles do not pad: dense sizes as on XLA:CPU";
}

TEST(ShapeTest, TupleSubshapeAndLeaves) {
  Shape tuple = Shape::tuple({Shape::array(PrimitiveType::kF32, {4}),
                              Shape::tuple({Shape::scalar(PrimitiveType::kPred), Shape::token()})});
  EXPECT_EQ(tuple.to_string(), "(f32[4]{0}, (pred[], token[]))");
  ASSERT_NE(tuple.subshape({1, 0}), nullptr);
  EXPECT_EQ(tuple.subshape({1, 0})->element_type(), PrimitiveType::kPred);
  EXPECT_EQ(tuple.subshape({2}), nullptr);
  EXPECT_EQ(tuple.leaf_count(), 3);
}

}  // namespace
}  // namespace insitu
