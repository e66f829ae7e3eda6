// Native data-movement, dynamic-slice and dynamic-update-slice kernels against the reference
// evaluator, bit for bit, including clamped start indices and the parallel (row-split) path.
#include "kernel_test_util.h"

namespace insitu {
namespace {

using testing_runtime::evaluate;
using testing_runtime::random_literal;
using testing_runtime::view_of;

void expect_native_matches(const Instruction& instruction, std::vector<Literal> operands, int threads = 1,
                           bool in_place = false) {
  ThreadPool pool(threads);
  std::vector<const Literal*> pointers;
  for (const Literal& operand : operands) pointers.push_back(&operand);
  const Literal expected = evaluate(instruction, pointers);
  // In place: the output is operand 0's memory (dynamic-update-slice).
  Literal separate(instruction.shape());
  Literal& out = in_place ? operands[0] : separate;
  std::vector<ArrayView> views;
  for (Literal& operand : operands) views.push_back(view_of(operand));
  const ArrayView out_view = view_of(out);
  const Opcode opcode = instruction.opcode();
  ASSERT_TRUE(run_native_kernel(instruction, views, out_view, pool)) << opcode_name(opcode);
  EXPECT_TRUE(out == expected) << instruction.to_string() << " threads=" << threads;
}

TEST(RuntimeDataMovementKernels, SliceWithStridesMatchesEvaluator) {
  std::mt19937 rng(10);
  for (PrimitiveType type : {PrimitiveType::kF32, PrimitiveType::kS8, PrimitiveType::kF64, PrimitiveType::kBF16}) {
    Instruction slice(Opcode::kSlice, "slice", Shape::array(type, {3, 4, 5}));
    slice.slice = {{1, 7, 2}, {0, 4, 1}, {2, 17, 3}};
    expect_native_matches(slice, {random_literal(type, {7, 4, 17}, rng)});
  }
}

TEST(RuntimeDataMovementKernels, BroadcastMatchesEvaluator) {
  std::mt19937 rng(11);
  Instruction rows(Opcode::kBroadcast, "b", Shape::array(PrimitiveType::kF32, {3, 5}));
  rows.dimensions = {1};
  expect_native_matches(rows, {random_literal(PrimitiveType::kF32, {5}, rng)});
  Instruction columns(Opcode::kBroadcast, "b", Shape::array(PrimitiveType::kS64, {3, 5, 2}));
  columns.dimensions = {0};
  expect_native_matches(columns, {random_literal(PrimitiveType::kS64, {3}, rng)});
  Instruction transposing(Opcode::kBroadcast, "b", Shape::array(PrimitiveType::kF16, {4, 2, 3}));
  transposing.dimensions = {2, 0};
  expect_native_matches(transposing, {random_literal(PrimitiveType::kF16, {3, 4}, rng)});
  Instruction scalar(Opcode::kBroadcast, "b", Shape::array(PrimitiveType::kF32, {300, 400}));
  expect_native_matches(scalar, {random_literal(PrimitiveType::kF32, {}, rng)}, 4);
}

TEST(RuntimeDataMovementKernels, TransposeMatchesEvaluator) {
  std::mt19937 rng(12);
  Instruction transpose(Opcode::kTranspose, "t", Shape::array(PrimitiveType::kF32, {5, 3, 4}));
  transpose.dimensions = {2, 0, 1};
  expect_native_matches(transpose, {random_literal(PrimitiveType::kF32, {3, 4, 5}, rng)});
  Instruction big(Opcode::kTranspose, "t", Shape::array(PrimitiveType::kS32, {300, 257}));
  big.dimensions = {1, 0};
  expect_native_matches(big, {random_literal(PrimitiveType::kS32, {257, 300}, rng)}, 4);
  // Tiled (16 x 16; 4-byte elements 8 x 8 in registers, transpose_tiles.h): matrices whose sides
  // are not multiples of 16 or 8, batched swaps of the last two dimensions, a leading dimension
  // moved, 4- and 8-byte elements, 1-3 threads.
  struct Case {
    PrimitiveType type;
    std::vector<int64_t> from, permutation;
  };
  for (const Case& c : {Case{PrimitiveType::kF32, {37, 50}, {1, 0}}, Case{PrimitiveType::kF64, {3, 20, 33}, {0, 2, 1}},
                        Case{PrimitiveType::kS32, {17, 4, 40}, {1, 2, 0}}, Case{PrimitiveType::kF32, {2, 3, 18, 5}, {2, 0, 3, 1}},
                        Case{PrimitiveType::kF32, {2, 3, 18, 20}, {1, 0, 3, 2}}}) {
    std::vector<int64_t> to;
    for (int64_t d : c.permutation) to.push_back(c.from[d]);
    Instruction tiled(Opcode::kTranspose, "t", Shape::array(c.type, to));
    tiled.dimensions = c.permutation;
    const Literal operand = random_literal(c.type, c.from, rng);
    for (int threads : {1, 2, 3}) expect_native_matches(tiled, {operand}, threads);
  }
}

TEST(RuntimeDataMovementKernels, IotaMatchesEvaluator) {
  for (PrimitiveType type : {PrimitiveType::kF32, PrimitiveType::kS32, PrimitiveType::kBF16, PrimitiveType::kU8,
                             PrimitiveType::kPred}) {
    for (int64_t dimension : {0, 1, 2}) {
      Instruction iota(Opcode::kIota, "iota", Shape::array(type, {4, 300, 7}));
      iota.iota_dimension = dimension;
      expect_native_matches(iota, {});
    }
  }
}

TEST(RuntimeDataMovementKernels, ReverseMatchesEvaluator) {
  std::mt19937 rng(14);
  for (PrimitiveType type : {PrimitiveType::kF32, PrimitiveType::kS8, PrimitiveType::kF64}) {
    for (std::vector<int64_t> dimensions : {std::vector<int64_t>{1}, {0, 2}, {0, 1, 2}, {}}) {
      Instruction reverse(Opcode::kReverse, "reverse", Shape::array(type, {5, 6, 7}));
      reverse.dimensions = dimensions;
      expect_native_matches(reverse, {random_literal(type, {5, 6, 7}, rng)});
    }
  }
  Instruction big(Opcode::kReverse, "reverse", Shape::array(PrimitiveType::kF32, {300, 257}));
  big.dimensions = {0, 1};
  expect_native_matches(big, {random_literal(PrimitiveType::kF32, {300, 257}, rng)}, /*threads=*/2);
}

TEST(RuntimeDataMovementKernels, PadWithNegativeAndInteriorPaddingMatchesEvaluator) {
  std::mt19937 rng(15);
  struct Case {
    std::vector<int64_t> in, out;
    std::vector<PaddingDimension> padding;
  };
  const Case cases[] = {
      {{4, 3}, {7, 7}, {{1, 2, 0}, {2, 2, 0}}},         // edges
      {{4, 3}, {10, 5}, {{0, 0, 2}, {0, 0, 1}}},        // interior
      {{4, 3}, {3, 6}, {{-1, 0, 0}, {1, 0, 1}}},        // negative low crops
      {{5, 6}, {2, 7}, {{-2, -1, 0}, {-1, -3, 1}}},     // negative on both sides with interior
      {{4, 4, 3}, {5, 5, 7}, {{1, 0, 0}, {0, 1, 0}, {2, 2, 0}}},
      {{200, 170}, {400, 172}, {{1, 0, 1}, {1, 1, 0}}},  // big enough for threads
  };
  for (const Case& c : cases) {
    for (PrimitiveType type : {PrimitiveType::kF32, PrimitiveType::kS32}) {
      Instruction pad(Opcode::kPad, "pad", Shape::array(type, c.out));
      pad.padding = c.padding;
      expect_native_matches(pad, {random_literal(type, c.in, rng), random_literal(type, {}, rng)}, /*threads=*/2);
    }
  }
}

TEST(RuntimeDataMovementKernels, ConcatenateAndReshapeMatchEvaluator) {
  std::mt19937 rng(13);
  for (int64_t dimension : {0, 1}) {
    Instruction concatenate(Opcode::kConcatenate, "c",
                            Shape::array(PrimitiveType::kF32, {dimension == 0 ? 9 : 2, dimension == 1 ? 9 : 2}));
    concatenate.dimensions = {dimension};
    auto part = [&](int64_t size) {
      return random_literal(PrimitiveType::kF32, {dimension == 0 ? size : 2, dimension == 1 ? size : 2}, rng);
    };
    expect_native_matches(concatenate, {part(4), part(0), part(5)});
  }
  Instruction reshape(Opcode::kReshape, "r", Shape::array(PrimitiveType::kS16, {6, 5}));
  expect_native_matches(reshape, {random_literal(PrimitiveType::kS16, {2, 3, 5}, rng)});
}

TEST(RuntimeDynamicSliceKernels, DynamicSliceClampsLikeEvaluator) {
  std::mt19937 rng(14);
  for (int32_t start : {-5, 0, 2, 6, 100}) {
    Instruction slice(Opcode::kDynamicSlice, "ds", Shape::array(PrimitiveType::kF32, {2, 3}));
    slice.dynamic_slice_sizes = {2, 3};
    expect_native_matches(slice, {random_literal(PrimitiveType::kF32, {8, 7}, rng), Literal::scalar<int32_t>(start),
                                  Literal::scalar<int32_t>(start - 1)});
  }
}

TEST(RuntimeDynamicSliceKernels, DynamicUpdateSliceInPlaceTouchesOnlyTheUpdate) {
  std::mt19937 rng(15);
  for (int64_t start : {-3, 0, 4, 9, 1000}) {
    Instruction update(Opcode::kDynamicUpdateSlice, "dus", Shape::array(PrimitiveType::kBF16, {10, 6}));
    expect_native_matches(update,
                          {random_literal(PrimitiveType::kBF16, {10, 6}, rng),
                           random_literal(PrimitiveType::kBF16, {3, 4}, rng), Literal::scalar<int64_t>(start),
                           Literal::scalar<int64_t>(start / 2)},
                          1, /*in_place=*/true);
  }
  // A large update goes row-parallel; out of place the operand is copied first.
  Instruction big(Opcode::kDynamicUpdateSlice, "dus", Shape::array(PrimitiveType::kF32, {512, 256}));
  expect_native_matches(big,
                        {random_literal(PrimitiveType::kF32, {512, 256}, rng),
                         random_literal(PrimitiveType::kF32, {400, 200}, rng), Literal::scalar<int32_t>(50),
                         Literal::scalar<int32_t>(30)},
                        4, /*in_place=*/true);
  expect_native_matches(big,
                        {random_literal(PrimitiveType::kF32, {512, 256}, rng),
                         random_literal(PrimitiveType::kF32, {400, 200}, rng), Literal::scalar<int32_t>(7),
                         Literal::scalar<int32_t>(90)},
                        4, /*in_place=*/false);
}

TEST(RuntimeDataMovementKernels, ReshapeIsParallelMemcpy) {
  std::mt19937 rng(16);
  const int64_t n = kParallelBytes / 4 + 1001;
  Instruction reshape(Opcode::kReshape, "reshape", Shape::array(PrimitiveType::kF32, {n, 1}));
  Literal operand = random_literal(PrimitiveType::kF32, {n}, rng);
  Literal out(reshape.shape());
  ThreadPool pool(4);
  const ArrayView views[] = {view_of(operand)};
  ASSERT_TRUE(run_native_kernel(reshape, views, view_of(out), pool));
  EXPECT_EQ(std::memcmp(out.untyped_data(), operand.untyped_data(), out.size_bytes()), 0);
}

}  // namespace
}  // namespace insitu
