// The native dot kernel against the reference evaluator for general dimension numbers (matmul,
// batches, contracting dimension 0, two contracting dimensions, the decode-step einsums) on 1, 2
// and 3 threads: bit for bit where it runs its own loop, within library_gemm.h's stated
// tolerance where the product is large enough for the GEMM library; other element types are
// left to the fallback.
#include <bit>
#include <memory>

#include "insitu/runtime/library_gemm.h"
#include "insitu/support/str.h"
#include "kernel_test_util.h"

namespace insitu {
namespace {

using testing_runtime::random_literal;
using testing_runtime::view_of;

using Dimensions = std::vector<int64_t>;

struct DotCase {
  Dimensions lhs, rhs, result;
  DotDimensionNumbers numbers;
};

std::unique_ptr<Instruction> make_dot(const DotCase& c, PrimitiveType type = PrimitiveType::kF32) {
  auto dot = std::make_unique<Instruction>(Opcode::kDot, "dot", Shape::array(type, c.result));
  dot->dot_dimension_numbers = c.numbers;
  return dot;
}

// Finite values, with exact zeros and -0 mixed in.
Literal finite_literal(Dimensions dimensions, std::mt19937& rng) {
  Literal literal(Shape::array(PrimitiveType::kF32, std::move(dimensions)));
  std::uniform_real_distribution<float> real(-4.0f, 4.0f);
  for (float& value : literal.data<float>()) {
    const unsigned pick = rng() % 16;
    value = pick == 0 ? 0.0f : pick == 1 ? -0.0f : real(rng);
  }
  return literal;
}

Literal evaluate_dot(const Instruction& dot, const Literal& lhs, const Literal& rhs) {
  const Literal* operands[] = {&lhs, &rhs};
  StatusOr<Literal> result = eval::evaluate_dot(dot, operands);
  EXPECT_TRUE(result.ok()) << result.status().to_string();
  return result.ok() ? std::move(result).value() : Literal();
}

// Bit-identical, except that where the evaluator gives NaN the kernel must give a NaN (which
// of two NaN payloads an addition keeps depends on how the compiler ordered its operands).
void expect_same_bits(const Literal& actual, const Literal& expected, bool allow_any_nan, const std::string& what) {
  ASSERT_TRUE(actual.shape().compatible(expected.shape())) << what;
  std::span<const float> a = const_cast<Literal&>(actual).data<float>();
  std::span<const float> e = const_cast<Literal&>(expected).data<float>();
  int64_t mismatches = 0;
  for (size_t i = 0; i < e.size(); ++i) {
    if (allow_any_nan && std::isnan(e[i]) && std::isnan(a[i])) continue;
    if (std::bit_cast<uint32_t>(a[i]) != std::bit_cast<uint32_t>(e[i]) && mismatches++ < 3)
      ADD_FAILURE() << what << " element " << i << ": native " << a[i] << " evaluator " << e[i];
  }
  EXPECT_EQ(mismatches, 0) << what;
}

// The operand's absolute values, as f32.
Literal absolute_f32(const Literal& operand) {
  Literal result(Shape::array(PrimitiveType::kF32, operand.shape().dimensions()));
  std::span<float> out = result.data<float>();
  dispatch_element_type(operand.shape().element_type(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, float>) {
      std::span<const float> in = const_cast<Literal&>(operand).data<float>();
      for (size_t i = 0; i < in.size(); ++i) out[i] = std::fabs(in[i]);
    } else if constexpr (kIsSmallFloat<T>) {
      std::span<const T> in = const_cast<Literal&>(operand).data<T>();
      for (size_t i = 0; i < in.size(); ++i) out[i] = std::fabs(in[i].to_float());
    } else {
      ADD_FAILURE() << "absolute_f32: unexpected operand type";
    }
  });
  return result;
}

// Within library_gemm.h's bound (kernel_test_util.h), the magnitudes from the evaluator on
// |lhs| and |rhs|.
void expect_within_gemm_tolerance(const Instruction& dot, const Literal& lhs, const Literal& rhs,
                                  const Literal& actual, const Literal& expected, const std::string& what) {
  const DotDimensionNumbers& numbers = dot.dot_dimension_numbers;
  int64_t k = 1;
  for (int64_t d : numbers.lhs_contracting_dimensions) k *= lhs.shape().dimensions()[d];
  std::unique_ptr<Instruction> absolute_dot = std::make_unique<Instruction>(
      Opcode::kDot, "dot", Shape::array(PrimitiveType::kF32, dot.shape().dimensions()));
  absolute_dot->dot_dimension_numbers = numbers;
  const Literal magnitude = evaluate_dot(*absolute_dot, absolute_f32(lhs), absolute_f32(rhs));
  testing_runtime::expect_within_gemm_tolerance(actual, expected, magnitude, k, what);
}

// Whether the dot kernel may hand this product to the GEMM library (library_gemm.h): then the
// result is checked within the library's tolerance, else bit for bit.
bool may_run_on_library(const DotCase& c) {
  int64_t work = 1;
  for (int64_t d : c.result) work *= d;
  for (int64_t d : c.numbers.lhs_contracting_dimensions) work *= c.lhs[d];
  return kernels::library_gemm_available() && work >= kernels::kLibraryGemmMinimumWork;
}

void expect_native_matches(const DotCase& c, uint32_t seed, bool specials = false) {
  std::mt19937 rng(seed);
  const std::unique_ptr<Instruction> dot_owner = make_dot(c);
  const Instruction& dot = *dot_owner;
  Literal lhs = specials ? random_literal(PrimitiveType::kF32, c.lhs, rng) : finite_literal(c.lhs, rng);
  Literal rhs = specials ? random_literal(PrimitiveType::kF32, c.rhs, rng) : finite_literal(c.rhs, rng);
  const Literal expected = evaluate_dot(dot, lhs, rhs);
  const bool library = may_run_on_library(c);
  ASSERT_FALSE(library && specials) << "keep NaN and infinity cases below the library's size";
  for (int threads : {1, 2, 3}) {
    ThreadPool pool(threads);
    Literal out(dot.shape());
    for (float& value : out.data<float>()) value = 7.0f;  // every element must be written
    const ArrayView views[] = {view_of(lhs), view_of(rhs)};
    ASSERT_TRUE(run_native_kernel(dot, views, view_of(out), pool));
    const std::string what = str_cat(dot.to_string(), " threads=", threads);
    if (library) expect_within_gemm_tolerance(dot, lhs, rhs, out, expected, what);
    else expect_same_bits(out, expected, specials, what);
  }
}

TEST(RuntimeDotKernel, MatmulMatchesEvaluator) {
  expect_native_matches({{7, 13}, {13, 5}, {7, 5}, {{}, {1}, {}, {0}}}, 1);
  expect_native_matches({{64, 300}, {300, 700}, {64, 700}, {{}, {1}, {}, {0}}}, 2);  // parallel, column blocks
  expect_native_matches({{1, 257}, {257, 1100}, {1, 1100}, {{}, {1}, {}, {0}}}, 3);   // one row, split by columns
  expect_native_matches({{40, 96}, {50, 96}, {40, 50}, {{}, {1}, {}, {1}}}, 4);       // rhs transposed
  expect_native_matches({{96}, {96}, {}, {{}, {0}, {}, {0}}}, 5);                     // vector dot
  expect_native_matches({{6, 4}, {4, 9}, {6, 4, 4, 9}, {{}, {}, {}, {}}}, 6);           // outer product
}

TEST(RuntimeDotKernel, BatchedWithTwoBatchDimensionsMatchesEvaluator) {
  expect_native_matches({{3, 2, 5, 7}, {3, 2, 7, 4}, {3, 2, 5, 4}, {{0, 1}, {3}, {0, 1}, {2}}}, 7);
  // Batch dimensions listed out of order and not leading in rhs.
  expect_native_matches({{4, 6, 3, 5}, {5, 3, 2, 4}, {3, 4, 6, 2}, {{2, 0}, {3}, {1, 3}, {0}}}, 8);
}

TEST(RuntimeDotKernel, ContractingDimensionZeroMatchesEvaluator) {
  expect_native_matches({{33, 6}, {33, 9}, {6, 9}, {{}, {0}, {}, {0}}}, 9);
  expect_native_matches({{300, 20, 3}, {2, 300}, {20, 3, 2}, {{}, {0}, {}, {1}}}, 10);
}

TEST(RuntimeDotKernel, TwoContractingDimensionsMatchEvaluator) {
  // Contracting pairs listed in an order that is not row-major in rhs.
  expect_native_matches({{5, 6, 7}, {7, 3, 6}, {5, 3}, {{}, {1, 2}, {}, {2, 0}}}, 11);
  expect_native_matches({{2, 9, 11, 4}, {2, 11, 9, 8}, {2, 4, 8}, {{0}, {1, 2}, {0}, {2, 1}}}, 12);
}

TEST(RuntimeDotKernel, DecodeStepEinsumsMatchEvaluator) {
  // "lhd,lhtd->lht": the query against every cached key.
  expect_native_matches({{2, 4, 64}, {2, 4, 300, 64}, {2, 4, 300}, {{0, 1}, {2}, {0, 1}, {3}}}, 13);
  // "lht,lhtd->lhd": the attention weights against every cached value.
  expect_native_matches({{2, 4, 300}, {2, 4, 300, 64}, {2, 4, 64}, {{0, 1}, {2}, {0, 1}, {2}}}, 14);
}

TEST(RuntimeDotKernel, NanInfinityAndNegativeZeroMatchEvaluator) {
  expect_native_matches({{9, 31}, {31, 12}, {9, 12}, {{}, {1}, {}, {0}}}, 15, true);
  expect_native_matches({{3, 40}, {3, 7, 40}, {3, 7}, {{0}, {1}, {0}, {2}}}, 16, true);
  // Contiguous contraction: eight results side by side, then the rest one by one.
  expect_native_matches({{3, 40}, {3, 21, 40}, {3, 21}, {{0}, {1}, {0}, {2}}}, 20, true);
}

TEST(RuntimeDotKernel, EmptyAndZeroLengthContractionsMatchEvaluator) {
  expect_native_matches({{4, 0}, {0, 5}, {4, 5}, {{}, {1}, {}, {0}}}, 17);  // sums of nothing are +0
  expect_native_matches({{0, 3}, {3, 5}, {0, 5}, {{}, {1}, {}, {0}}}, 18);
}

// Products large enough for the GEMM library, in every operand layout it reads in place (either
// operand transposed, batch dimensions not leading, a transposed lhs copied to row-major) and one
// it cannot (two contracting dimensions in an order that is not row-major in rhs: the kernel's
// own loop, nothing copied).
TEST(RuntimeDotKernel, LibrarySizedProductsMatchEvaluatorWithinTolerance) {
  expect_native_matches({{96, 200}, {200, 130}, {96, 130}, {{}, {1}, {}, {0}}}, 31);
  expect_native_matches({{200, 96}, {200, 130}, {96, 130}, {{}, {0}, {}, {0}}}, 32);  // lhs transposed
  expect_native_matches({{96, 200}, {130, 200}, {96, 130}, {{}, {1}, {}, {1}}}, 33);  // rhs transposed
  expect_native_matches({{200, 96}, {130, 200}, {96, 130}, {{}, {0}, {}, {1}}}, 34);  // both
  expect_native_matches({{3, 40, 5, 64}, {5, 64, 3, 50}, {3, 5, 40, 50}, {{0, 2}, {3}, {2, 0}, {1}}}, 35);
  expect_native_matches({{1, 768}, {768, 2304}, {1, 768 * 3}, {{}, {1}, {}, {0}}}, 36);  // a decode matvec
  expect_native_matches({{16, 24, 30}, {30, 24, 40}, {16, 40}, {{}, {1, 2}, {}, {1, 0}}}, 37);
  // a tall result (split by rows over threads) whose lhs is transposed with columns 2,100 apart:
  // copied to row-major 512 rows at a time, a tail of 52
  expect_native_matches({{40, 2100}, {40, 70}, {2100, 70}, {{}, {0}, {}, {0}}}, 39);
  // the same with a contracted length that is not a multiple of the 8 x 8 tiles the copy transposes
  expect_native_matches({{43, 2101}, {43, 70}, {2101, 70}, {{}, {0}, {}, {0}}}, 40);
  // wide results (library_gemm.cc's calls of at most 2,048 columns: three on one thread, two
  // each on two and three), rhs row-major and transposed
  expect_native_matches({{8, 64}, {64, 5000}, {8, 5000}, {{}, {1}, {}, {0}}}, 45);
  expect_native_matches({{8, 64}, {5000, 64}, {8, 5000}, {{}, {1}, {}, {1}}}, 46);
  // long contractions (library_gemm.cc's chunks of 2,048, summed in order): a remainder chunk,
  // rhs transposed, lhs transposed, and batched (chunks of each batch side by side)
  expect_native_matches({{20, 5000}, {5000, 30}, {20, 30}, {{}, {1}, {}, {0}}}, 41);
  expect_native_matches({{20, 6200}, {30, 6200}, {20, 30}, {{}, {1}, {}, {1}}}, 42);
  expect_native_matches({{4200, 20}, {4200, 30}, {20, 30}, {{}, {0}, {}, {0}}}, 43);
  expect_native_matches({{3, 9, 4500}, {3, 4500, 10}, {3, 9, 10}, {{0}, {2}, {0}, {1}}}, 44);
}

// bf16, f16 and 8-bit float operands into an f32 result at the library's size: converted to
// f32 exactly, then the library's f32 product. (An f8 dot of XLA's tests, 128x5120x10240, ran
// through the evaluator for over a minute before the f8s were convertible operands.)
TEST(RuntimeDotKernel, LibrarySizedHalfPrecisionProductsMatchEvaluatorWithinTolerance) {
  std::mt19937 rng(38);
  ThreadPool pool(2);
  const DotCase matmul{{64, 128}, {128, 96}, {64, 96}, {{}, {1}, {}, {0}}};
  ASSERT_TRUE(may_run_on_library(matmul) || !kernels::library_gemm_available());
  for (PrimitiveType type : {PrimitiveType::kBF16, PrimitiveType::kF16, PrimitiveType::kF8E4M3FN,
                             PrimitiveType::kF8E5M2}) {
    SCOPED_TRACE(primitive_type_name(type));
    auto finite_half = [&](const Dimensions& dimensions) {
      const Literal values = finite_literal(dimensions, rng);
      Literal result(Shape::array(type, dimensions));
      std::span<const float> in = const_cast<Literal&>(values).data<float>();
      dispatch_element_type(type, [&](auto tag) {
        using T = decltype(tag);
        if constexpr (kIsSmallFloat<T>) {
          std::span<T> out = result.data<T>();
          for (size_t i = 0; i < in.size(); ++i) out[i] = T::from_float(in[i]);
        }
      });
      return result;
    };
    Literal lhs = finite_half(matmul.lhs), rhs = finite_half(matmul.rhs);
    const std::unique_ptr<Instruction> dot = make_dot(matmul, PrimitiveType::kF32);
    const Literal expected = evaluate_dot(*dot, lhs, rhs);
    Literal out(dot->shape());
    const ArrayView views[] = {view_of(lhs), view_of(rhs)};
    ASSERT_TRUE(run_native_kernel(*dot, views, view_of(out), pool));
    expect_within_gemm_tolerance(*dot, lhs, rhs, out, expected, dot->to_string());
  }
}

// Mixed precision and integer dots: operands converted to the result type (as the evaluator
// does), then f32 or wrapping integer arithmetic, bit for bit the evaluator's.
TEST(RuntimeDotKernel, MixedPrecisionAndIntegerDotsMatchEvaluator) {
  std::mt19937 rng(23);
  ThreadPool pool(2);
  const DotCase matmul{{5, 9}, {9, 4}, {5, 4}, {{}, {1}, {}, {0}}};
  const std::pair<PrimitiveType, PrimitiveType> cases[] = {
      {PrimitiveType::kBF16, PrimitiveType::kF32}, {PrimitiveType::kF16, PrimitiveType::kF32},
      {PrimitiveType::kS8, PrimitiveType::kS32},   {PrimitiveType::kS32, PrimitiveType::kS32},
      {PrimitiveType::kS16, PrimitiveType::kS64},  {PrimitiveType::kF8E4M3FN, PrimitiveType::kF32},
      {PrimitiveType::kF4E2M1FN, PrimitiveType::kF32}, {PrimitiveType::kS4, PrimitiveType::kS32},
      {PrimitiveType::kU2, PrimitiveType::kS64}};
  for (const auto& [operand_type, result_type] : cases) {
    SCOPED_TRACE(str_cat(primitive_type_name(operand_type), " -> ", primitive_type_name(result_type)));
    Literal lhs = random_literal(operand_type, matmul.lhs, rng), rhs = random_literal(operand_type, matmul.rhs, rng);
    const std::unique_ptr<Instruction> dot = make_dot(matmul, result_type);
    const Literal expected = evaluate_dot(*dot, lhs, rhs);
    Literal out(dot->shape());
    const ArrayView views[] = {view_of(lhs), view_of(rhs)};
    ASSERT_TRUE(run_native_kernel(*dot, views, view_of(out), pool));
    if (result_type == PrimitiveType::kF32) {
      expect_same_bits(out, expected, /*allow_any_nan=*/true, dot->to_string());
    } else {
      ASSERT_EQ(out.size_bytes(), expected.size_bytes());
      EXPECT_EQ(std::memcmp(out.untyped_data(), expected.untyped_data(), out.size_bytes()), 0)
          << out.values_to_string() << "\nvs\n" << expected.values_to_string();
    }
  }
}

TEST(RuntimeDotKernel, OtherTypesAndMismatchedShapesAreLeftToTheFallback) {
  std::mt19937 rng(19);
  ThreadPool pool(1);
  const DotCase matmul{{3, 4}, {4, 5}, {3, 5}, {{}, {1}, {}, {0}}};
  for (PrimitiveType type : {PrimitiveType::kF64, PrimitiveType::kBF16}) {
    Literal lhs = random_literal(type, matmul.lhs, rng), rhs = random_literal(type, matmul.rhs, rng);
    const std::unique_ptr<Instruction> dot_owner = make_dot(matmul, type);
    const Instruction& dot = *dot_owner;
    Literal out(dot.shape());
    const ArrayView views[] = {view_of(lhs), view_of(rhs)};
    EXPECT_FALSE(run_native_kernel(dot, views, view_of(out), pool)) << primitive_type_name(type);
  }
  // f32 operands into an f64 result: the evaluator converts first; the kernel declines.
  Literal lhs = finite_literal(matmul.lhs, rng), rhs = finite_literal(matmul.rhs, rng);
  const std::unique_ptr<Instruction> wide_owner = make_dot(matmul, PrimitiveType::kF64);
  const Instruction& wide = *wide_owner;
  Literal wide_out(wide.shape());
  const ArrayView views[] = {view_of(lhs), view_of(rhs)};
  EXPECT_FALSE(run_native_kernel(wide, views, view_of(wide_out), pool));
  // Contracting sizes that differ: left to the fallback, which reports the error.
  const std::unique_ptr<Instruction> bad_owner = make_dot({{3, 4}, {4, 5}, {3, 5}, {{}, {0}, {}, {0}}});
  const Instruction& bad = *bad_owner;
  Literal out(bad.shape());
  EXPECT_FALSE(run_native_kernel(bad, views, view_of(out), pool));
}

}  // namespace
}  // namespace insitu
