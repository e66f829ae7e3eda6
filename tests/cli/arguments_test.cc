// Tests for binding `insitu run` arguments: parameter leaves, default values, .npy checks.
#include "test_util.h"
#include "cli/arguments.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "insitu/ir/npy.h"
#include "insitu/ir/parser.h"

namespace insitu::cli {
namespace {


constexpr const char* kModule = R"(HloModule m

ENTRY main {
  a = bf16[2] parameter(0)
  t = (s8[3], (f64[], token[]), u16[2]) parameter(1)
  ROOT r = bf16[2] copy(a)
}
)";

TEST(ArgumentsTest, LeavesAreDepthFirstArraysOnly) {
  std::unique_ptr<Module> module = parse_text(kModule);
  ASSERT_NE(module, nullptr);
  std::vector<ParameterLeaf> leaves = entry_parameter_leaves(*module);
  ASSERT_EQ(leaves.size(), 4u);
  EXPECT_EQ(leaves[0].to_string(), "parameter 0");
  EXPECT_EQ(leaves[1].to_string(), "parameter 1 {0}");
  EXPECT_EQ(leaves[2].to_string(), "parameter 1 {1,0}");
  EXPECT_EQ(leaves[3].to_string(), "parameter 1 {2}");
  EXPECT_EQ(leaves[2].shape.to_string(false), "f64[]");
}

TEST(ArgumentsTest, DefaultValuesFollowTheDocumentedPattern) {
  EXPECT_EQ(default_argument(Shape::array(PrimitiveType::kS32, {9})), Literal::vector<int32_t>({1, 2, 3, 4, 5, 6, 7, 1, 2}));
  EXPECT_EQ(default_argument(Shape::array(PrimitiveType::kPred, {3})), Literal::vector<bool>({true, false, true}));
  EXPECT_EQ(default_argument(Shape::array(PrimitiveType::kF32, {2, 2})), Literal::from_values<float>({2, 2}, {1, 2, 3, 4}));
  EXPECT_EQ(default_argument(Shape::array(PrimitiveType::kBF16, {2})).get<BFloat16>({1}).to_float(), 2.0f);
  EXPECT_EQ(default_argument(Shape::array(PrimitiveType::kC64, {2})),
            Literal::vector<std::complex<float>>({{1, 0}, {2, 0}}));
  EXPECT_EQ(default_argument(Shape::scalar(PrimitiveType::kU8)), Literal::scalar<uint8_t>(1));
}

TEST(ArgumentsTest, DefaultBindingBuildsTupleParameters) {
  std::unique_ptr<Module> module = parse_text(kModule);
  ASSERT_NE(module, nullptr);
  StatusOr<std::vector<Literal>> arguments = bind_arguments(*module, {});
  ASSERT_TRUE(arguments.ok()) << arguments.status().to_string();
  ASSERT_EQ(arguments->size(), 2u);
  const Literal& tuple = (*arguments)[1];
  EXPECT_EQ(tuple.shape().to_string(false), "(s8[3], (f64[], token[]), u16[2])");
  EXPECT_EQ(tuple.element(0), Literal::vector<int8_t>({1, 2, 3}));
  EXPECT_EQ(tuple.element(1).element(0), Literal::scalar<double>(1));
  EXPECT_TRUE(tuple.element(1).element(1).shape().is_token());
}

TEST(ArgumentsTest, Void2FilesFeedTwoByteParameters) {
  std::unique_ptr<Module> module = parse_text(kModule);
  ASSERT_NE(module, nullptr);
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / ("insitu_arguments_test_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  Literal bf16 = Literal::vector<BFloat16>({BFloat16::from_float(1.5f), BFloat16::from_float(-3)});
  std::vector<std::string> paths = {(dir / "a.npy").string(), (dir / "s8.npy").string(), (dir / "f64.npy").string(),
                                    (dir / "u16.npy").string()};
  ASSERT_TRUE(write_npy_file(paths[0], bf16).ok());  // written as '<V2'
  ASSERT_TRUE(write_npy_file(paths[1], Literal::vector<int8_t>({-1, 0, 1})).ok());
  ASSERT_TRUE(write_npy_file(paths[2], Literal::scalar<double>(0.25)).ok());
  ASSERT_TRUE(write_npy_file(paths[3], Literal::vector<uint16_t>({7, 8})).ok());
  StatusOr<std::vector<Literal>> arguments = bind_arguments(*module, paths);
  ASSERT_TRUE(arguments.ok()) << arguments.status().to_string();
  EXPECT_EQ((*arguments)[0], bf16);
  EXPECT_EQ((*arguments)[1].element(2), Literal::vector<uint16_t>({7, 8}));

  // An f16 ('<f2') file is not silently reinterpreted as bf16.
  ASSERT_TRUE(write_npy_file(paths[0], Literal::vector<Half>({Half::from_float(1), Half::from_float(2)})).ok());
  StatusOr<std::vector<Literal>> mismatch = bind_arguments(*module, paths);
  ASSERT_FALSE(mismatch.ok());
  EXPECT_EQ(mismatch.status().message(),
            "--arg 1 (" + paths[0] + "): parameter 0 expects bf16[2] but the file holds f16[2]");
  fs::remove_all(dir);
}

}  // namespace
}  // namespace insitu::cli
