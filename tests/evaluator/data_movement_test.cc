// Data-movement ops of the reference evaluator, checked against values worked out by hand
// from XLA's semantics (operation_semantics.md, HloEvaluator).
#include <gtest/gtest.h>

#include <complex>

#include "insitu/evaluator/evaluator.h"
#include "insitu/evaluator/ops.h"
#include "insitu/ir/parser.h"

namespace insitu {
namespace {

using P = PrimitiveType;

Layout column_major() {
  Layout layout;
  layout.minor_to_major = {0, 1};
  return layout;
}

StatusOr<Literal> run(const Instruction& instruction, std::initializer_list<const Literal*> operands) {
  return eval::evaluate_data_movement(instruction, std::span<const Literal* const>(operands.begin(), operands.size()));
}

template <typename T>
std::vector<T> values(const Literal& literal) {
  auto data = literal.data<T>();
  return std::vector<T>(data.begin(), data.end());
}

std::vector<int32_t> range(int32_t n) {
  std::vector<int32_t> out(n);
  for (int32_t i = 0; i < n; ++i) out[i] = i;
  return out;
}

TEST(DataMovementTest, IotaF32OnDimensionOne) {
  Instruction iota(Opcode::kIota, "iota", Shape::array(P::kF32, {2, 3}));
  iota.iota_dimension = 1;
  StatusOr<Literal> result = run(iota, {});
  ASSERT_TRUE(result.ok()) << result.status().to_string();
  EXPECT_EQ(values<float>(*result), (std::vector<float>{0, 1, 2, 0, 1, 2}));
}

TEST(DataMovementTest, IotaPredBf16AndWrappingS8) {
  Instruction pred(Opcode::kIota, "iota", Shape::array(P::kPred, {3}));
  pred.iota_dimension = 0;
  EXPECT_EQ(values<bool>(*run(pred, {})), (std::vector<bool>{false, true, true}));

  Instruction bf16(Opcode::kIota, "iota", Shape::array(P::kBF16, {2, 2}));
  bf16.iota_dimension = 0;
  Literal result = *run(bf16, {});
  EXPECT_EQ(result.get<BFloat16>({1, 0}).to_float(), 1.0f);
  EXPECT_EQ(result.get<BFloat16>({0, 1}).to_float(), 0.0f);

  Instruction s8(Opcode::kIota, "iota", Shape::array(P::kS8, {130}));
  s8.iota_dimension = 0;
  EXPECT_EQ(run(s8, {})->data<int8_t>()[129], -127) << "iota wraps like a static_cast";
}

TEST(DataMovementTest, BroadcastIntoMiddleDimension) {
  Literal operand = Literal::vector<int32_t>({1, 2, 3});
  Instruction broadcast(Opcode::kBroadcast, "b", Shape::array(P::kS32, {2, 3, 2}));
  broadcast.dimensions = {1};
  EXPECT_EQ(values<int32_t>(*run(broadcast, {&operand})),
            (std::vector<int32_t>{1, 1, 2, 2, 3, 3, 1, 1, 2, 2, 3, 3}));
}

TEST(DataMovementTest, BroadcastScalarAndTransposingBroadcast) {
  Literal scalar = Literal::scalar<double>(2.5);
  Instruction broadcast(Opcode::kBroadcast, "b", Shape::array(P::kF64, {2, 2}));
  EXPECT_EQ(values<double>(*run(broadcast, {&scalar})), (std::vector<double>{2.5, 2.5, 2.5, 2.5}));

  // dimensions={1,0}: operand dim 0 goes to result dim 1.
  Literal matrix = Literal::from_values<int32_t>({2, 3}, range(6));
  Instruction transposing(Opcode::kBroadcast, "b", Shape::array(P::kS32, {3, 2}));
  transposing.dimensions = {1, 0};
  EXPECT_EQ(values<int32_t>(*run(transposing, {&matrix})), (std::vector<int32_t>{0, 3, 1, 4, 2, 5}));
}

TEST(DataMovementTest, ReshapeKeepsRowMajorValues) {
  Literal operand = Literal::from_values<int32_t>({2, 3}, range(6));
  Instruction reshape(Opcode::kReshape, "r", Shape::array(P::kS32, {3, 1, 2}));
  Literal result = *run(reshape, {&operand});
  EXPECT_EQ(result.shape().dimensions(), (std::vector<int64_t>{3, 1, 2}));
  EXPECT_EQ(result.get<int32_t>({2, 0, 0}), 4);
}

TEST(DataMovementTest, TransposeRank3) {
  Literal operand = Literal::from_values<int32_t>({2, 3, 4}, range(24));
  Instruction transpose(Opcode::kTranspose, "t", Shape::array(P::kS32, {4, 2, 3}));
  transpose.dimensions = {2, 0, 1};  // result dim i is operand dim dimensions[i]
  Literal result = *run(transpose, {&operand});
  for (int64_t i = 0; i < 4; ++i)
    for (int64_t j = 0; j < 2; ++j)
      for (int64_t k = 0; k < 3; ++k) EXPECT_EQ(result.get<int32_t>({i, j, k}), j * 12 + k * 4 + i);
}

TEST(DataMovementTest, StridedSlice) {
  Literal vector = Literal::vector<int32_t>(range(10));
  Instruction slice(Opcode::kSlice, "s", Shape::array(P::kS32, {3}));
  slice.slice = {{1, 8, 3}};
  EXPECT_EQ(values<int32_t>(*run(slice, {&vector})), (std::vector<int32_t>{1, 4, 7}));

  Literal matrix = Literal::from_values<int32_t>({4, 5}, range(20));
  Instruction slice2(Opcode::kSlice, "s", Shape::array(P::kS32, {2, 2}));
  slice2.slice = {{1, 4, 2}, {0, 5, 4}};  // rows 1,3; columns 0,4
  EXPECT_EQ(values<int32_t>(*run(slice2, {&matrix})), (std::vector<int32_t>{5, 9, 15, 19}));
}

TEST(DataMovementTest, DynamicSliceClampsStarts) {
  Literal operand = Literal::vector<int32_t>({10, 11, 12, 13, 14});
  Instruction ds(Opcode::kDynamicSlice, "ds", Shape::array(P::kS32, {3}));
  ds.dynamic_slice_sizes = {3};
  Literal past_end = Literal::scalar<int32_t>(4);
  EXPECT_EQ(values<int32_t>(*run(ds, {&operand, &past_end})), (std::vector<int32_t>{12, 13, 14}));
  Literal negative = Literal::scalar<int64_t>(-3);
  EXPECT_EQ(values<int32_t>(*run(ds, {&operand, &negative})), (std::vector<int32_t>{10, 11, 12}));
  Literal in_range = Literal::scalar<uint8_t>(1);
  EXPECT_EQ(values<int32_t>(*run(ds, {&operand, &in_range})), (std::vector<int32_t>{11, 12, 13}));
}

TEST(DataMovementTest, DynamicSlice2DWithMixedIndexTypes) {
  Literal operand = Literal::from_values<int32_t>({3, 4}, range(12));
  Instruction ds(Opcode::kDynamicSlice, "ds", Shape::array(P::kS32, {2, 2}));
  ds.dynamic_slice_sizes = {2, 2};
  Literal row = Literal::scalar<int8_t>(5);      // clamps to 1
  Literal column = Literal::scalar<uint32_t>(1);
  EXPECT_EQ(values<int32_t>(*run(ds, {&operand, &row, &column})), (std::vector<int32_t>{5, 6, 9, 10}));
}

TEST(DataMovementTest, DynamicUpdateSliceClampsStarts) {
  Literal operand = Literal::vector<int32_t>({0, 0, 0, 0, 0});
  Literal update = Literal::vector<int32_t>({7, 8});
  Instruction dus(Opcode::kDynamicUpdateSlice, "dus", Shape::array(P::kS32, {5}));
  Literal past_end = Literal::scalar<int32_t>(10);
  EXPECT_EQ(values<int32_t>(*run(dus, {&operand, &update, &past_end})), (std::vector<int32_t>{0, 0, 0, 7, 8}));
  Literal negative = Literal::scalar<int32_t>(-1);
  EXPECT_EQ(values<int32_t>(*run(dus, {&operand, &update, &negative})), (std::vector<int32_t>{7, 8, 0, 0, 0}));
  EXPECT_EQ(values<int32_t>(operand), (std::vector<int32_t>{0, 0, 0, 0, 0})) << "operand is not modified";
}

TEST(DataMovementTest, DynamicUpdateSlice2DComplex) {
  using C = std::complex<double>;
  Literal operand = Literal::from_values<C>({2, 3}, std::vector<C>(6, C(0, 0)));
  Literal update = Literal::from_values<C>({1, 2}, {C(1, 2), C(3, 4)});
  Instruction dus(Opcode::kDynamicUpdateSlice, "dus", Shape::array(P::kC128, {2, 3}));
  Literal row = Literal::scalar<int32_t>(1), column = Literal::scalar<int32_t>(2);  // column clamps to 1
  Literal result = *run(dus, {&operand, &update, &row, &column});
  EXPECT_EQ(values<C>(result), (std::vector<C>{0, 0, 0, 0, C(1, 2), C(3, 4)}));
}

TEST(DataMovementTest, NegativePadCrops) {
  Literal operand = Literal::vector<int32_t>({1, 2, 3, 4, 5});
  Literal zero = Literal::scalar<int32_t>(0);
  Instruction pad(Opcode::kPad, "p", Shape::array(P::kS32, {2}));
  pad.padding = {{-1, -2, 0}};
  EXPECT_EQ(values<int32_t>(*run(pad, {&operand, &zero})), (std::vector<int32_t>{2, 3}));
}

TEST(DataMovementTest, InteriorPadThenNegativeEdges) {
  Literal operand = Literal::vector<int32_t>({1, 2, 3});
  Literal nine = Literal::scalar<int32_t>(9);
  Instruction interior(Opcode::kPad, "p", Shape::array(P::kS32, {6}));
  interior.padding = {{1, 0, 1}};
  EXPECT_EQ(values<int32_t>(*run(interior, {&operand, &nine})), (std::vector<int32_t>{9, 1, 9, 2, 9, 3}));
  // 1 9 2 9 3, cropped by 2 on the left and 1 on the right.
  Instruction cropped(Opcode::kPad, "p", Shape::array(P::kS32, {2}));
  cropped.padding = {{-2, -1, 1}};
  EXPECT_EQ(values<int32_t>(*run(cropped, {&operand, &nine})), (std::vector<int32_t>{2, 9}));
}

TEST(DataMovementTest, Pad2D) {
  Literal operand = Literal::from_values<float>({2, 2}, {1, 2, 3, 4});
  Literal minus = Literal::scalar<float>(-1);
  Instruction pad(Opcode::kPad, "p", Shape::array(P::kF32, {3, 3}));
  pad.padding = {{0, 1, 0}, {1, 0, 0}};
  EXPECT_EQ(values<float>(*run(pad, {&operand, &minus})), (std::vector<float>{-1, 1, 2, -1, 3, 4, -1, -1, -1}));
}

TEST(DataMovementTest, ConcatenateOnDimensionOne) {
  Literal a = Literal::from_values<int32_t>({2, 2}, {1, 2, 3, 4});
  Literal b = Literal::from_values<int32_t>({2, 1}, {5, 6});
  Literal c = Literal::from_values<int32_t>({2, 0}, {});
  Instruction concatenate(Opcode::kConcatenate, "c", Shape::array(P::kS32, {2, 3}));
  concatenate.dimensions = {1};
  EXPECT_EQ(values<int32_t>(*run(concatenate, {&a, &c, &b})), (std::vector<int32_t>{1, 2, 5, 3, 4, 6}));
}

TEST(DataMovementTest, ReverseTwoDimensions) {
  Literal operand = Literal::from_values<int32_t>({2, 3}, range(6));
  Instruction reverse(Opcode::kReverse, "r", Shape::array(P::kS32, {2, 3}));
  reverse.dimensions = {0, 1};
  EXPECT_EQ(values<int32_t>(*run(reverse, {&operand})), (std::vector<int32_t>{5, 4, 3, 2, 1, 0}));

  Literal cube = Literal::from_values<int32_t>({2, 2, 2}, range(8));
  Instruction outer(Opcode::kReverse, "r", Shape::array(P::kS32, {2, 2, 2}));
  outer.dimensions = {0, 2};
  EXPECT_EQ(values<int32_t>(*run(outer, {&cube})), (std::vector<int32_t>{5, 4, 7, 6, 1, 0, 3, 2}));
}

TEST(DataMovementTest, BitcastWithDefaultLayoutsIsReshape) {
  Literal operand = Literal::from_values<int32_t>({2, 3}, range(6));
  Instruction bitcast(Opcode::kBitcast, "bc", Shape::array(P::kS32, {6}));
  EXPECT_EQ(values<int32_t>(*run(bitcast, {&operand})), range(6));

  Literal one = Literal::scalar<int32_t>(0x3f800000);
  Instruction as_float(Opcode::kBitcast, "bc", Shape::scalar(P::kF32));
  EXPECT_EQ(run(as_float, {&one})->data<float>()[0], 1.0f);
}

TEST(DataMovementTest, TransposeLikeBitcastWithNonDefaultLayouts) {
  // f32[2,3]{1,0} holds 0..5 in memory; read as f32[3,2]{0,1} (dimension 0 minor) that memory
  // is the transpose.
  Literal operand = Literal::from_values<float>({2, 3}, {0, 1, 2, 3, 4, 5});
  Instruction bitcast(Opcode::kBitcast, "bc", Shape::array(P::kF32, {3, 2}, column_major()));
  EXPECT_EQ(values<float>(*run(bitcast, {&operand})), (std::vector<float>{0, 3, 1, 4, 2, 5}));

  // An operand in column-major layout flattened: its memory order.
  Literal transposed_memory = Literal::from_values<float>({2, 3}, {0, 1, 2, 3, 4, 5});
  transposed_memory.set_shape_layouts(Shape::array(P::kF32, {2, 3}, column_major()));
  Instruction flatten(Opcode::kBitcast, "bc", Shape::array(P::kF32, {6}));
  EXPECT_EQ(values<float>(*run(flatten, {&transposed_memory})), (std::vector<float>{0, 3, 1, 4, 2, 5}));
}

TEST(DataMovementTest, MovesBytesOfEveryWidth) {
  Literal operand = Literal::vector<BFloat16>(
      {BFloat16::from_float(1), BFloat16::from_float(2), BFloat16::from_float(3), BFloat16::from_float(4)});
  Instruction reverse(Opcode::kReverse, "r", Shape::array(P::kBF16, {4}));
  reverse.dimensions = {0};
  Literal result = *run(reverse, {&operand});
  EXPECT_EQ(result.data<BFloat16>()[0].to_float(), 4.0f);
  EXPECT_EQ(result.data<BFloat16>()[3].to_float(), 1.0f);

  Literal flags = Literal::vector<bool>({true, false, true});
  Instruction slice(Opcode::kSlice, "s", Shape::array(P::kPred, {2}));
  slice.slice = {{1, 3, 1}};
  EXPECT_EQ(values<bool>(*run(slice, {&flags})), (std::vector<bool>{false, true}));
}

TEST(DataMovementTest, ErrorsAreLocatedStatuses) {
  Literal operand = Literal::vector<int32_t>({1, 2, 3});
  Literal start = Literal::scalar<int32_t>(0);

  Instruction ds(Opcode::kDynamicSlice, "ds", Shape::array(P::kS32, {2}));
  ds.set_location({7, 3});
  ds.dynamic_slice_sizes = {2};
  StatusOr<Literal> missing_index = run(ds, {&operand});
  ASSERT_FALSE(missing_index.ok());
  EXPECT_EQ(missing_index.status().location().line, 7);
  EXPECT_NE(missing_index.status().message().find("start indices"), std::string::npos)
      << missing_index.status().message();
  Literal float_start = Literal::scalar<float>(0);
  EXPECT_FALSE(run(ds, {&operand, &float_start}).ok());
  ds.dynamic_slice_sizes = {4};
  EXPECT_FALSE(run(ds, {&operand, &start}).ok()) << "slice larger than the operand";

  Instruction transpose(Opcode::kTranspose, "t", Shape::array(P::kS32, {3}));
  transpose.dimensions = {1};
  EXPECT_FALSE(run(transpose, {&operand}).ok());

  Instruction reshape(Opcode::kReshape, "r", Shape::array(P::kS32, {2, 2}));
  EXPECT_FALSE(run(reshape, {&operand}).ok());

  Instruction slice(Opcode::kSlice, "s", Shape::array(P::kS32, {2}));
  slice.slice = {{2, 5, 1}};
  EXPECT_FALSE(run(slice, {&operand}).ok()) << "limit past the dimension";

  Instruction wrong_result(Opcode::kReverse, "r", Shape::array(P::kS32, {4}));
  wrong_result.dimensions = {0};
  EXPECT_FALSE(run(wrong_result, {&operand}).ok());

  Instruction pad(Opcode::kPad, "p", Shape::array(P::kS32, {3}));
  pad.padding = {{-2, -2, 0}};
  EXPECT_FALSE(run(pad, {&operand, &start}).ok()) << "negative result size";
}

TEST(DataMovementTest, ParsedModuleThroughTheDispatcher) {
  // A KV-cache style update: write a row at a clamped position, then read a window back.
  constexpr std::string_view kText = R"(
HloModule cache

ENTRY main {
  cache = f32[4,2] parameter(0)
  row = f32[1,2] parameter(1)
  position = s32[] parameter(2)
  zero = s32[] constant(0)
  updated = f32[4,2] dynamic-update-slice(cache, row, position, zero)
  window = f32[2,2] dynamic-slice(updated, position, zero), dynamic_slice_sizes={2,2}
  ROOT flipped = f32[2,2] transpose(window), dimensions={1,0}
}
)";
  StatusOr<std::unique_ptr<Module>> module = parse_module(kText);
  ASSERT_TRUE(module.ok()) << module.status().to_string();
  std::vector<Literal> arguments;
  arguments.push_back(Literal::from_values<float>({4, 2}, {0, 1, 2, 3, 4, 5, 6, 7}));
  arguments.push_back(Literal::from_values<float>({1, 2}, {10, 11}));
  arguments.push_back(Literal::scalar<int32_t>(3));  // DUS keeps 3; dynamic-slice clamps it to 2
  StatusOr<Literal> result = evaluate_module(**module, arguments);
  ASSERT_TRUE(result.ok()) << result.status().to_string();
  EXPECT_EQ(values<float>(*result), (std::vector<float>{4, 10, 5, 11}));
}

}  // namespace
}  // namespace insitu
