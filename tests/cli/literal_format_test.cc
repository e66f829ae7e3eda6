// Tests for how `insitu run` prints results: small values as Literal::to_string, large arrays
// abbreviated as numpy does.
#include "cli/literal_format.h"

#include <gtest/gtest.h>

#include <numeric>

namespace insitu::cli {
namespace {

Literal iota_s32(std::vector<int64_t> dims) {
  Literal literal(Shape::array(PrimitiveType::kS32, std::move(dims)));
  std::span<int32_t> data = literal.data<int32_t>();
  std::iota(data.begin(), data.end(), 0);
  return literal;
}

TEST(LiteralFormatTest, SmallValuesPrintInFull) {
  Literal literal = iota_s32({1000});
  EXPECT_EQ(format_result(literal), literal.to_string());
  Literal tuple = Literal::tuple({Literal::scalar<float>(1.5f), iota_s32({2, 2})});
  EXPECT_EQ(format_result(tuple), tuple.to_string());
}

TEST(LiteralFormatTest, LargeVectorKeepsThreeAtEachEnd) {
  EXPECT_EQ(format_result(iota_s32({1001})), "s32[1001] {0, 1, 2, ..., 998, 999, 1000}");
}

TEST(LiteralFormatTest, LargeMatrixElidesRowsAndColumns) {
  EXPECT_EQ(format_result(iota_s32({40, 30})),
            "s32[40,30] {\n"
            "  { 0, 1, 2, ..., 27, 28, 29 },\n"
            "  { 30, 31, 32, ..., 57, 58, 59 },\n"
            "  { 60, 61, 62, ..., 87, 88, 89 },\n"
            "  ...,\n"
            "  { 1110, 1111, 1112, ..., 1137, 1138, 1139 },\n"
            "  { 1140, 1141, 1142, ..., 1167, 1168, 1169 },\n"
            "  { 1170, 1171, 1172, ..., 1197, 1198, 1199 }\n"
            "}");
  // A short dimension is kept whole.
  EXPECT_EQ(format_result(iota_s32({2, 600})),
            "s32[2,600] {\n"
            "  { 0, 1, 2, ..., 597, 598, 599 },\n"
            "  { 600, 601, 602, ..., 1197, 1198, 1199 }\n"
            "}");
}

TEST(LiteralFormatTest, PredAndFloatElementsUseLiteralSpelling) {
  Literal pred(Shape::array(PrimitiveType::kPred, {1200}));
  pred.data<bool>()[1] = true;
  pred.data<bool>()[1199] = true;
  EXPECT_EQ(format_result(pred), "pred[1200] {0, 1, 0, ..., 0, 0, 1}");
  Literal f32(Shape::array(PrimitiveType::kF32, {1001}));
  f32.data<float>()[0] = 0.5f;
  f32.data<float>()[1000] = -2.25f;
  EXPECT_EQ(format_result(f32), "f32[1001] {0.5, 0, 0, ..., 0, 0, -2.25}");
}

TEST(LiteralFormatTest, TuplesWithALargeLeafStayOnOneLine) {
  Literal tuple = Literal::tuple({Literal::scalar<int32_t>(7), iota_s32({1001})});
  EXPECT_EQ(format_result(tuple), "(s32[], s32[1001]) (7, {0, 1, 2, ..., 998, 999, 1000})");
}

TEST(LiteralFormatTest, RankFourKeepsIndexComments) {
  std::string text = format_result(iota_s32({2, 1, 2, 1000}));
  EXPECT_EQ(text.substr(0, 125),
            "s32[2,1,2,1000] {\n{ /*i0=0*/\n{ /*i1=0*/\n  { 0, 1, 2, ..., 997, 998, 999 },\n"
            "  { 1000, 1001, 1002, ..., 1997, 1998, 1999 }\n}\n},");
  EXPECT_NE(text.find("{ /*i0=1*/"), std::string::npos) << text;
  EXPECT_NE(text.find("{ 3000, 3001, 3002, ..., 3997, 3998, 3999 }"), std::string::npos) << text;
}

TEST(LiteralFormatTest, AbbreviatedLayoutMatchesLiteralToString) {
  // With nothing to elide (no dimension over 6), the abbreviating printer must produce exactly
  // Literal::to_string: the "..." is the only difference between the two forms.
  for (std::vector<int64_t> dims : std::vector<std::vector<int64_t>>{{5}, {1}, {2, 3}, {3, 1}, {2, 2, 2}, {2, 1, 3, 2}, {2, 2, 1, 1, 2}}) {
    Literal literal = iota_s32(dims);
    EXPECT_EQ(format_result(literal, /*abbreviate_above=*/0), literal.to_string());
  }
  Literal tuple = Literal::tuple({iota_s32({2, 2}), Literal::tuple({Literal::scalar<float>(2.5f)})});
  EXPECT_EQ(format_result(tuple, 0), tuple.to_string());
}

}  // namespace
}  // namespace insitu::cli
