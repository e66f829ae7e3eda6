// Every native kernel against the reference evaluator on random inputs, bit for bit, on one
// thread and on four (large arrays take the parallel path).
#include <bit>
#include <functional>
#include <limits>
#include <string>

#include "cpu_level_test_util.h"
#include "kernel_test_util.h"
#include "insitu/runtime/cpu_level.h"

namespace insitu {
namespace {

using testing_runtime::at_every_cpu_level;
using testing_runtime::evaluate;
using testing_runtime::random_literal;
using testing_runtime::splat;
using testing_runtime::view_of;

bool run_native(const Instruction& instruction, std::vector<Literal>& operands, const std::vector<bool>& scalar,
                Literal& out, ThreadPool& pool) {
  std::vector<ArrayView> views;
  for (size_t i = 0; i < operands.size(); ++i) views.push_back(view_of(operands[i], i < scalar.size() && scalar[i]));
  return run_native_kernel(instruction, views, view_of(out), pool);
}

// Runs the native kernel and the evaluator; scalar[i] marks operand i as an unmaterialized
// scalar broadcast (the evaluator gets it splatted to the result's dimensions).
void expect_same_as_evaluator(const Instruction& instruction, std::vector<Literal> operands,
                              const std::vector<bool>& scalar = {}, int threads = 1) {
  ThreadPool pool(threads);
  std::vector<Literal> expanded;
  for (size_t i = 0; i < operands.size(); ++i)
    expanded.push_back(i < scalar.size() && scalar[i] ? splat(operands[i], instruction.shape()) : operands[i]);
  std::vector<const Literal*> pointers;
  for (const Literal& operand : expanded) pointers.push_back(&operand);
  const Literal expected = evaluate(instruction, pointers);
  Literal out(instruction.shape());
  ASSERT_TRUE(run_native(instruction, operands, scalar, out, pool))
      << "no native path for " << opcode_name(instruction.opcode()) << " on " << instruction.shape().to_string();
  EXPECT_TRUE(out == expected) << opcode_name(instruction.opcode()) << " " << instruction.shape().to_string()
                               << " threads=" << threads;
}

const PrimitiveType kNumericTypes[] = {PrimitiveType::kF32, PrimitiveType::kF64, PrimitiveType::kS32,
                                       PrimitiveType::kS64, PrimitiveType::kBF16, PrimitiveType::kF16};

TEST(RuntimeElementwiseKernels, BinaryOpsMatchEvaluator) {
  std::mt19937 rng(1);
  for (PrimitiveType type : kNumericTypes) {
    for (Opcode opcode : {Opcode::kAdd, Opcode::kSubtract, Opcode::kMultiply, Opcode::kDivide, Opcode::kMaximum,
                          Opcode::kMinimum, Opcode::kRemainder, Opcode::kPower}) {
      Instruction op(opcode, "op", Shape::array(type, {7, 33}));
      expect_same_as_evaluator(op, {random_literal(type, {7, 33}, rng), random_literal(type, {7, 33}, rng)});
      // A scalar broadcast on either side, read as a scalar.
      expect_same_as_evaluator(op, {random_literal(type, {7, 33}, rng), random_literal(type, {}, rng)}, {false, true});
      expect_same_as_evaluator(op, {random_literal(type, {}, rng), random_literal(type, {7, 33}, rng)}, {true, false});
    }
  }
}

TEST(RuntimeElementwiseKernels, UnaryOpsMatchEvaluator) {
  std::mt19937 rng(2);
  for (PrimitiveType type : kNumericTypes) {
    std::vector<Opcode> opcodes = {Opcode::kNegate, Opcode::kAbs, Opcode::kSign};
    if (is_floating(type))
      opcodes.insert(opcodes.end(), {Opcode::kExp, Opcode::kLog, Opcode::kSqrt, Opcode::kRsqrt, Opcode::kTanh});
    for (Opcode opcode : opcodes) {
      Instruction op(opcode, "op", Shape::array(type, {301}));
      expect_same_as_evaluator(op, {random_literal(type, {301}, rng)});
    }
  }
}

TEST(RuntimeElementwiseKernels, BitwiseOpsOverPredAndIntegersMatchEvaluator) {
  std::mt19937 rng(21);
  for (PrimitiveType type : {PrimitiveType::kPred, PrimitiveType::kS8, PrimitiveType::kS32, PrimitiveType::kS64,
                             PrimitiveType::kU8, PrimitiveType::kU32, PrimitiveType::kU64}) {
    for (Opcode opcode : {Opcode::kAnd, Opcode::kOr, Opcode::kXor}) {
      Instruction op(opcode, "op", Shape::array(type, {5, 41}));
      expect_same_as_evaluator(op, {random_literal(type, {5, 41}, rng), random_literal(type, {5, 41}, rng)});
      expect_same_as_evaluator(op, {random_literal(type, {5, 41}, rng), random_literal(type, {}, rng)}, {false, true});
    }
    Instruction negation(Opcode::kNot, "not", Shape::array(type, {5, 41}));
    expect_same_as_evaluator(negation, {random_literal(type, {5, 41}, rng)});
    if (type == PrimitiveType::kPred) continue;
    // shift amounts in [-3, 70]: negative and >= the width shift everything out
    for (Opcode opcode : {Opcode::kShiftLeft, Opcode::kShiftRightLogical, Opcode::kShiftRightArithmetic}) {
      Instruction shift(opcode, "shift", Shape::array(type, {5, 41}));
      Literal amounts = random_literal(type, {5, 41}, rng);
      dispatch_element_type(type, [&](auto tag) {
        using T = decltype(tag);
        if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>)
          for (T& amount : amounts.data<T>()) amount = static_cast<T>(static_cast<int>(rng() % 74) - 3);
      });
      expect_same_as_evaluator(shift, {random_literal(type, {5, 41}, rng), std::move(amounts)});
    }
  }
}

TEST(RuntimeElementwiseKernels, IsFiniteMatchesEvaluator) {
  std::mt19937 rng(22);
  for (PrimitiveType type : {PrimitiveType::kF32, PrimitiveType::kF64, PrimitiveType::kBF16, PrimitiveType::kF16}) {
    Instruction finite(Opcode::kIsFinite, "finite", Shape::array(PrimitiveType::kPred, {301}));
    expect_same_as_evaluator(finite, {random_literal(type, {301}, rng)});
  }
}

// (compare's 4- and 8-byte loops and select's run at every CPU level: at_every_cpu_level)
TEST(RuntimeElementwiseKernels, CompareMatchesEvaluatorInEveryDirection) {
  at_every_cpu_level([] {
    std::mt19937 rng(3);
    std::vector<PrimitiveType> types(std::begin(kNumericTypes), std::end(kNumericTypes));
    types.insert(types.end(), {PrimitiveType::kPred, PrimitiveType::kS8, PrimitiveType::kU8, PrimitiveType::kU32,
                               PrimitiveType::kU64});
    for (PrimitiveType type : types) {
      std::vector<ComparisonType> kinds = {ComparisonType::kDefault};
      if (is_floating(type)) kinds.push_back(ComparisonType::kTotalOrder);
      if (is_unsigned_integral(type) || type == PrimitiveType::kPred) kinds.push_back(ComparisonType::kUnsigned);
      for (ComparisonType kind : kinds) {
        for (ComparisonDirection direction :
             {ComparisonDirection::kEq, ComparisonDirection::kNe, ComparisonDirection::kLt, ComparisonDirection::kLe,
              ComparisonDirection::kGt, ComparisonDirection::kGe}) {
          Instruction op(Opcode::kCompare, "op", Shape::array(PrimitiveType::kPred, {257}));
          op.comparison_direction = direction;
          op.comparison_type = kind;
          Literal a = random_literal(type, {257}, rng);
          Literal b = random_literal(type, {257}, rng);
          // Equal pairs too, so EQ/LE/GE see true.
          std::memcpy(b.untyped_data(), a.untyped_data(), static_cast<size_t>(a.size_bytes() / 2));
          expect_same_as_evaluator(op, {a, b});
          expect_same_as_evaluator(op, {a, random_literal(type, {}, rng)}, {false, true});
          expect_same_as_evaluator(op, {random_literal(type, {}, rng), b}, {true, false});
        }
      }
    }
  });
}

TEST(RuntimeElementwiseKernels, SelectMatchesEvaluator) {
  at_every_cpu_level([] {
    std::mt19937 rng(4);
    for (PrimitiveType type : {PrimitiveType::kF32, PrimitiveType::kBF16, PrimitiveType::kS64, PrimitiveType::kPred}) {
      Instruction op(Opcode::kSelect, "op", Shape::array(type, {5, 40}));
      expect_same_as_evaluator(op, {random_literal(PrimitiveType::kPred, {5, 40}, rng),
                                    random_literal(type, {5, 40}, rng), random_literal(type, {5, 40}, rng)});
      // Scalar pred (allowed by select itself; one operand copied whole) either way, a scalar
      // chosen operand (filled), and a scalar-broadcast on_false.
      for (bool pick : {true, false}) {
        expect_same_as_evaluator(op, {Literal::scalar(pick), random_literal(type, {5, 40}, rng),
                                      random_literal(type, {5, 40}, rng)});
        expect_same_as_evaluator(op,
                                 {Literal::scalar(pick), random_literal(type, {}, rng), random_literal(type, {}, rng)},
                                 {false, true, true});
      }
      expect_same_as_evaluator(op, {random_literal(PrimitiveType::kPred, {5, 40}, rng),
                                    random_literal(type, {5, 40}, rng), random_literal(type, {}, rng)},
                               {false, false, true});
      // Each scalar combination has its own loop (select_words).
      expect_same_as_evaluator(op, {random_literal(PrimitiveType::kPred, {5, 40}, rng), random_literal(type, {}, rng),
                                    random_literal(type, {5, 40}, rng)},
                               {false, true, false});
      expect_same_as_evaluator(op, {random_literal(PrimitiveType::kPred, {5, 40}, rng), random_literal(type, {}, rng),
                                    random_literal(type, {}, rng)},
                               {false, true, true});
    }
  });
}

// `where(ok, new, old)` written over old (an optimizer step skipped unless its gradients are
// finite, its state donated): a false pred leaves old as it is, a true one copies new over it.
TEST(RuntimeElementwiseKernels, SelectByAScalarPredOverItsOperand) {
  Instruction op(Opcode::kSelect, "op", Shape::array(PrimitiveType::kF32, {3000}));
  ThreadPool pool(2);
  for (bool pick : {false, true}) {
    Literal pred = Literal::scalar(pick);
    Literal fresh(Shape::array(PrimitiveType::kF32, {3000}));
    Literal state(Shape::array(PrimitiveType::kF32, {3000}));
    for (int64_t i = 0; i < 3000; ++i) {
      fresh.data<float>()[i] = static_cast<float>(i);
      state.data<float>()[i] = -static_cast<float>(i);
    }
    const Literal before = state;
    const std::vector<ArrayView> operands = {view_of(pred), view_of(fresh), view_of(state)};
    ASSERT_TRUE(run_native_kernel(op, operands, view_of(state), pool));
    EXPECT_TRUE(state == (pick ? fresh : before)) << pick;
  }
}

TEST(RuntimeElementwiseKernels, ClampMatchesEvaluatorWithScalarAndArrayBounds) {
  std::mt19937 rng(14);
  for (PrimitiveType type : {PrimitiveType::kF32, PrimitiveType::kF64, PrimitiveType::kS32}) {
    Instruction op(Opcode::kClamp, "op", Shape::array(type, {6, 35}));
    // rank-0 bounds (clamp's own broadcast) take the unit-stride loop; array bounds the general one
    expect_same_as_evaluator(op, {random_literal(type, {}, rng), random_literal(type, {6, 35}, rng),
                                  random_literal(type, {}, rng)},
                             {true, false, true});
    expect_same_as_evaluator(op, {random_literal(type, {6, 35}, rng), random_literal(type, {6, 35}, rng),
                                  random_literal(type, {6, 35}, rng)});
  }
}

TEST(RuntimeElementwiseKernels, ConvertMatchesEvaluatorBetweenCommonTypes) {
  std::mt19937 rng(5);
  const PrimitiveType types[] = {PrimitiveType::kPred, PrimitiveType::kS8,  PrimitiveType::kS32,
                                 PrimitiveType::kS64,  PrimitiveType::kU8,  PrimitiveType::kU32,
                                 PrimitiveType::kF16,  PrimitiveType::kBF16, PrimitiveType::kF32,
                                 PrimitiveType::kF64};
  for (PrimitiveType from : types) {
    for (PrimitiveType to : types) {
      Instruction op(Opcode::kConvert, "op", Shape::array(to, {211}));
      expect_same_as_evaluator(op, {random_literal(from, {211}, rng)});
    }
  }
}

// Every operand type to every result type, random bits over the whole range, either operand a
// scalar view; NaN, infinities and the saturating ends come from random_literal.
TEST(RuntimeElementwiseKernels, StochasticConvertMatchesEvaluator) {
  std::mt19937 rng(11);
  const std::pair<PrimitiveType, PrimitiveType> operands[] = {{PrimitiveType::kF16, PrimitiveType::kU16},
                                                             {PrimitiveType::kBF16, PrimitiveType::kU16},
                                                             {PrimitiveType::kF32, PrimitiveType::kU32},
                                                             {PrimitiveType::kF64, PrimitiveType::kU64}};
  for (const auto& [from, random] : operands) {
    for (PrimitiveType to : {PrimitiveType::kS8, PrimitiveType::kS16, PrimitiveType::kS32, PrimitiveType::kS64}) {
      Instruction op(Opcode::kStochasticConvert, "op", Shape::array(to, {301}));
      Literal bits(Shape::array(random, {301}));
      for (int64_t i = 0; i < 301; ++i) {
        const uint64_t value = (uint64_t{rng()} << 32) | rng();
        std::memcpy(bits.untyped_data() + i * byte_width(random), &value, static_cast<size_t>(byte_width(random)));
      }
      Literal x = random_literal(from, {301}, rng);
      Literal scaled = x;  // also values past s8 and s16's ends
      dispatch_element_type(from, [&](auto tag) {
        using T = decltype(tag);
        if constexpr (std::is_floating_point_v<T>) for (T& v : scaled.data<T>()) v *= T(40000);
        else if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>)
          for (T& v : scaled.data<T>()) v = T::from_float(v.to_float() * 100.0f);
      });
      expect_same_as_evaluator(op, {x, bits});
      expect_same_as_evaluator(op, {scaled, bits});
      expect_same_as_evaluator(op, {random_literal(from, {}, rng), bits}, {true, false});
      expect_same_as_evaluator(op, {x, random_literal(random, {}, rng)}, {false, true});
    }
  }
}

TEST(RuntimeElementwiseKernels, LargeArraysGiveTheSameBitsOnFourThreads) {
  std::mt19937 rng(6);
  const int64_t n = 3 * kParallelElements + 17;  // uneven chunks
  for (PrimitiveType type : {PrimitiveType::kF32, PrimitiveType::kBF16}) {
    Instruction add(Opcode::kAdd, "add", Shape::array(type, {n}));
    expect_same_as_evaluator(add, {random_literal(type, {n}, rng), random_literal(type, {n}, rng)}, {}, 1);
    expect_same_as_evaluator(add, {random_literal(type, {n}, rng), random_literal(type, {n}, rng)}, {}, 4);
    Instruction exp(Opcode::kExp, "exp", Shape::array(type, {n}));
    expect_same_as_evaluator(exp, {random_literal(type, {n}, rng)}, {}, 4);
  }
  Instruction convert(Opcode::kConvert, "convert", Shape::array(PrimitiveType::kS32, {n}));
  expect_same_as_evaluator(convert, {random_literal(PrimitiveType::kF32, {n}, rng)}, {}, 4);
}

// The f32 functions run vectorized in a variant per instruction set (cpu_level.h); each
// variant this CPU has must give the evaluator's bits, on ordinary values and on the edges.
TEST(RuntimeElementwiseKernels, FloatFunctionsGiveTheEvaluatorsBitsAtEveryCpuLevel) {
  std::vector<float> values;
  for (uint64_t bits = 0; bits < (uint64_t{1} << 32); bits += 65521) values.push_back(std::bit_cast<float>(static_cast<uint32_t>(bits)));
  for (float x : {0.0f, -0.0f, 88.72f, 88.73f, -103.97f, -104.0f, 9.0f, -9.0f, 0.3466f, 1e-30f, 1.0f, 3.9192059f,
                  std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                  std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::denorm_min()})
    values.push_back(x);
  const int64_t n = static_cast<int64_t>(values.size());
  Literal input(Shape::array(PrimitiveType::kF32, {n}));
  std::memcpy(input.untyped_data(), values.data(), values.size() * sizeof(float));
  for (CpuLevel level : {CpuLevel::kBaseline, CpuLevel::kAvx2Fma, CpuLevel::kAvx512}) {
    if (level > detected_cpu_level()) continue;
    set_cpu_level_limit(level);
    for (Opcode opcode : {Opcode::kExp, Opcode::kExpm1, Opcode::kLog, Opcode::kTanh, Opcode::kLogistic, Opcode::kErf,
                          Opcode::kSqrt, Opcode::kRsqrt}) {
      SCOPED_TRACE(std::string(opcode_name(opcode)) + " at level " + std::to_string(static_cast<int>(level)));
      expect_same_as_evaluator(Instruction(opcode, "op", Shape::array(PrimitiveType::kF32, {n})), {input}, {}, 2);
    }
    // binary f32 and f64 loops run at every level too (divide, the four scalar cases), and the
    // exact unary ones (is-finite into pred, negate, abs, sign) on the edge values above
    std::mt19937 rng(15);
    for (PrimitiveType type : {PrimitiveType::kF32, PrimitiveType::kF64}) {
      const Literal edges = type == PrimitiveType::kF32 ? input : eval::convert_literal(input, PrimitiveType::kF64);
      for (Opcode opcode : {Opcode::kIsFinite, Opcode::kNegate, Opcode::kAbs, Opcode::kSign}) {
        SCOPED_TRACE(std::string(opcode_name(opcode)) + " at level " + std::to_string(static_cast<int>(level)));
        const PrimitiveType out = opcode == Opcode::kIsFinite ? PrimitiveType::kPred : type;
        expect_same_as_evaluator(Instruction(opcode, "op", Shape::array(out, {n})), {edges});
      }
      for (Opcode opcode : {Opcode::kAdd, Opcode::kDivide, Opcode::kMaximum, Opcode::kPower}) {
        SCOPED_TRACE(std::string(opcode_name(opcode)) + " at level " + std::to_string(static_cast<int>(level)));
        const Instruction op(opcode, "op", Shape::array(type, {1031}));
        expect_same_as_evaluator(op, {random_literal(type, {1031}, rng), random_literal(type, {1031}, rng)});
        expect_same_as_evaluator(op, {random_literal(type, {}, rng), random_literal(type, {1031}, rng)}, {true, false});
        expect_same_as_evaluator(op, {random_literal(type, {1031}, rng), random_literal(type, {}, rng)}, {false, true});
      }
    }
  }
  set_cpu_level_limit(CpuLevel::kAvx512);
}

TEST(RuntimeElementwiseKernels, OpsWithoutANativePathSayNo) {
  ThreadPool pool(1);
  Instruction power(Opcode::kAtan2, "atan2", Shape::array(PrimitiveType::kF32, {4}));
  Literal a(Shape::array(PrimitiveType::kF32, {4})), b(Shape::array(PrimitiveType::kF32, {4}));
  Literal out(power.shape());
  const ArrayView views[] = {view_of(a), view_of(b)};
  EXPECT_FALSE(run_native_kernel(power, views, view_of(out), pool));
  Instruction complex_add(Opcode::kAdd, "add", Shape::array(PrimitiveType::kC64, {4}));
  Literal c(complex_add.shape()), d(complex_add.shape()), e(complex_add.shape());
  const ArrayView complex_views[] = {view_of(c), view_of(d)};
  EXPECT_FALSE(run_native_kernel(complex_add, complex_views, view_of(e), pool));
}

}  // namespace
}  // namespace insitu
