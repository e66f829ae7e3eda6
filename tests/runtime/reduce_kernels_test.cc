// Native reduce against the reference evaluator, bit for bit: every simple combiner (add,
// multiply, maximum, minimum, and, or; either parameter order), f32/f64/f16/bf16/s32/s64 with
// NaN, infinities and integer extremes, reduced dimensions leading, middle, trailing, all and
// empty, big enough to split over threads; and what the simple-combiner kernel leaves to the
// combiner's scalar program or to the fallback.
#include <bit>

#include "insitu/evaluator/evaluator.h"
#include "insitu/evaluator/sum_order.h"
#include "insitu/ir/parser.h"
#include "insitu/runtime/cpu_level.h"
#include "insitu/support/str.h"
#include "kernel_test_util.h"

namespace insitu {
namespace {

using testing_runtime::random_literal;
using testing_runtime::view_of;

using Dimensions = std::vector<int64_t>;

std::string dims_text(const Dimensions& dims) { return str_join(dims, ","); }

// reduce(input, init) over `reduced` with to_apply ROOT = `op`(first, second).
std::string reduce_module(const std::string& type, const Dimensions& input, const Dimensions& reduced,
                          const std::string& op, bool accumulator_first) {
  Dimensions output;
  for (int64_t d = 0; d < static_cast<int64_t>(input.size()); ++d)
    if (std::find(reduced.begin(), reduced.end(), d) == reduced.end()) output.push_back(input[d]);
  const std::string operands = accumulator_first ? "acc, x" : "x, acc";
  return str_cat("HloModule r\n\ncombine {\n  acc = ", type, "[] parameter(0)\n  x = ", type,
                 "[] parameter(1)\n  ROOT r = ", type, "[] ", op, "(", operands, ")\n}\n\nENTRY main {\n  input = ", type,
                 "[", dims_text(input), "] parameter(0)\n  init = ", type, "[] parameter(1)\n  ROOT reduce = ", type, "[",
                 dims_text(output), "] reduce(input, init), dimensions={", dims_text(reduced),
                 "}, to_apply=combine\n}\n");
}

// Bit for bit, except that a NaN matches any NaN: which of two NaN operands an op returns
// (and so its sign) depends on how the compiler ordered them, in the evaluator too.
bool same_values(const Literal& actual, const Literal& expected) {
  if (!actual.shape().compatible(expected.shape())) return false;
  if (!is_floating(expected.shape().element_type())) return actual == expected;
  for (int64_t i = 0; i < expected.element_count(); ++i) {
    const double a = actual.get_double(i), e = expected.get_double(i);
    if (std::isnan(a) && std::isnan(e)) continue;
    if (std::bit_cast<uint64_t>(a) != std::bit_cast<uint64_t>(e)) return false;
  }
  return true;
}

bool expect_reduce_matches_on(const std::string& text, Literal input, Literal init);

// Runs the selected kernel on 1-3 threads; false when none was selected (the fallback would run).
bool expect_reduce_matches(const std::string& text, PrimitiveType type, const Dimensions& input_dims, uint32_t seed) {
  StatusOr<std::unique_ptr<Module>> module = parse_module(text);
  EXPECT_TRUE(module.ok()) << module.status().to_string();
  if (!module.ok()) return false;
  const Instruction* reduce = (*module)->entry()->root();
  std::mt19937 rng(seed);
  // The input has the parameter's layout (its bytes are row-major either way).
  Literal input(reduce->operand(0)->shape());
  {
    Literal values = random_literal(type, input_dims, rng);
    if (values.size_bytes() > 0)  // an empty array has no data pointer (memcpy from null is UB)
      std::memcpy(input.untyped_data(), values.untyped_data(), static_cast<size_t>(values.size_bytes()));
  }
  return expect_reduce_matches_on(text, input, random_literal(type, {}, rng));
}

// The same, on the given input (row-major bytes) and init.
bool expect_reduce_matches_on(const std::string& text, Literal input, Literal init) {
  StatusOr<std::unique_ptr<Module>> module = parse_module(text);
  EXPECT_TRUE(module.ok()) << module.status().to_string();
  if (!module.ok()) return false;
  const Instruction* reduce = (*module)->entry()->root();
  std::vector<const Literal*> pointers = {&input, &init};
  StatusOr<Literal> expected = evaluate_computation(*(*module)->entry(), pointers);
  EXPECT_TRUE(expected.ok()) << expected.status().to_string();
  if (!expected.ok()) return false;
  // every vector width this CPU has (the f32 row folds run per width), on 1-3 threads
  for (CpuLevel level : {CpuLevel::kBaseline, CpuLevel::kAvx2Fma, CpuLevel::kAvx512}) {
    if (level > detected_cpu_level()) continue;
    set_cpu_level_limit(level);
    for (int threads : {1, 2, 3}) {
      ThreadPool pool(threads);
      Literal out(reduce->shape());
      std::memset(out.untyped_data(), 0x5a, static_cast<size_t>(out.size_bytes()));  // all written
      std::vector<ArrayView> views = {ArrayView{static_cast<uint8_t*>(input.untyped_data()), &input.shape()},
                                      view_of(init)};
      if (!run_native_kernel(*reduce, views, view_of(out), pool)) {
        set_cpu_level_limit(CpuLevel::kAvx512);
        return false;
      }
      EXPECT_TRUE(same_values(out, *expected)) << text << "threads=" << threads << " level "
                                                << static_cast<int>(level) << "\nnative " << out.to_string()
                                                << "\nexpected " << expected->to_string();
    }
  }
  set_cpu_level_limit(CpuLevel::kAvx512);
  return true;
}

struct TypeCase {
  const char* name;
  PrimitiveType type;
};
constexpr TypeCase kFloatTypes[] = {{"f32", PrimitiveType::kF32}, {"f64", PrimitiveType::kF64},
                                    {"f16", PrimitiveType::kF16}, {"bf16", PrimitiveType::kBF16}};
constexpr TypeCase kIntTypes[] = {{"s32", PrimitiveType::kS32}, {"s64", PrimitiveType::kS64}};

const std::vector<std::pair<Dimensions, Dimensions>> kShapes = {
    {{6, 7, 5}, {2}},        // trailing: contiguous runs
    {{6, 7, 5}, {1, 2}},     // trailing pair
    {{6, 7, 5}, {0}},        // leading: the innermost dimension is kept
    {{6, 7, 5}, {1}},        // middle
    {{6, 7, 5}, {0, 2}},     // leading and trailing
    {{6, 7, 5}, {0, 1, 2}},  // everything: one output
    {{4, 0, 3}, {1}},        // empty reduced dimension: outputs are the init value
    {{900, 40}, {1}},        // big enough to split over threads, either way
    {{40, 900}, {0}},
    {{37, 29}, {1}},         // f32 sums: 16 rows side by side twice, 5 after; 5 tail columns
    {{6, 40, 5}, {0, 2}},    // rows of several runs, 16 side by side
    {{9}, {}},               // nothing reduced: each output folds one element
};

// Finite values in [-4, 4) (random_literal's NaNs and infinities would make every long sum NaN,
// which any order matches).
Literal finite_literal(PrimitiveType type, const Dimensions& dims, std::mt19937& rng) {
  Literal literal(Shape::array(type, dims));
  std::uniform_real_distribution<double> real(-4.0, 4.0);
  dispatch_element_type(type, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_floating_point_v<T>) {
      for (T& value : literal.data<T>()) value = static_cast<T>(real(rng));
    } else if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) {
      for (T& value : literal.data<T>()) value = T::from_float(static_cast<float>(real(rng)));
    }
  });
  return literal;
}

TEST(RuntimeReduceKernel, FloatCombinersMatchEvaluator) {
  uint32_t seed = 1;
  for (const TypeCase& t : kFloatTypes)
    for (const char* op : {"add", "multiply", "maximum", "minimum"})
      for (bool first : {true, false})
        for (const auto& [input, reduced] : kShapes)
          EXPECT_TRUE(expect_reduce_matches(reduce_module(t.name, input, reduced, op, first), t.type, input, seed++))
              << t.name << " " << op;
  // and the sums on finite data (random_literal's NaNs and infinities make a sum of more than a
  // few elements NaN, which any order matches)
  std::mt19937 rng(77);
  for (const TypeCase& t : kFloatTypes)
    for (bool first : {true, false})
      for (const auto& [input, reduced] : kShapes)
        EXPECT_TRUE(expect_reduce_matches_on(reduce_module(t.name, input, reduced, "add", first),
                                             finite_literal(t.type, input, rng), finite_literal(t.type, {}, rng)))
            << t.name << " add, finite";
}

// Floating sums of more than kSumBlock elements per output (evaluator/sum_order.h): whole
// arrays, rows, columns (the innermost dimension kept) and rows of several runs, blocks of full
// length and a short last one, more blocks than one 16-row group.
TEST(RuntimeReduceKernel, FloatSumsOfManyBlocksMatchEvaluator) {
  const std::vector<std::pair<Dimensions, Dimensions>> shapes = {
      {{3 * kSumBlock + 123}, {0}},  // whole, a short last block
      {{2, 2 * kSumBlock}, {1}},     // rows of exactly two blocks
      {{3, kSumBlock + 1}, {1}},     // one element past a block
      {{kSumBlock + 9, 3}, {0}},     // columns: the innermost dimension kept
      {{3, 2, 40000}, {0, 2}},       // rows of several runs: blocks across runs
      {{40, 5000}, {0, 1}},          // whole over two dimensions
  };
  std::mt19937 rng(900);
  for (const TypeCase& t : kFloatTypes)
    for (bool first : {true, false})
      for (const auto& [input, reduced] : shapes)
        EXPECT_TRUE(expect_reduce_matches_on(reduce_module(t.name, input, reduced, "add", first),
                                             finite_literal(t.type, input, rng), finite_literal(t.type, {}, rng)))
            << t.name << " " << dims_text(input);
  const Dimensions many = {20 * kSumBlock + 7};  // more full blocks than a group of 16 per worker
  EXPECT_TRUE(expect_reduce_matches_on(reduce_module("f32", many, {0}, "add", true),
                                       finite_literal(PrimitiveType::kF32, many, rng),
                                       finite_literal(PrimitiveType::kF32, {}, rng)));
}

// The order itself: block 0 from init, later blocks from -0.0, added in order. 2^53 then 2^16
// ones sums to 2^53 + 2^16 in blocks (one chain would lose every one: 2^53 + 1 rounds to 2^53);
// -0.0 everywhere stays -0.0 (a later block started from +0.0 would make it +0.0).
TEST(RuntimeReduceKernel, FloatSumsAddBlocksInOrder) {
  const Dimensions dims = {2 * kSumBlock};
  const std::string text = reduce_module("f64", dims, {0}, "add", true);
  Literal input(Shape::array(PrimitiveType::kF64, dims));
  double* x = input.data<double>().data();
  for (int64_t i = 0; i < 2 * kSumBlock; ++i) x[i] = i == 0 ? 9007199254740992.0 : i < kSumBlock ? 0.0 : 1.0;
  StatusOr<std::unique_ptr<Module>> module = parse_module(text);
  ASSERT_TRUE(module.ok());
  Literal zero = Literal::scalar<double>(0);
  std::vector<const Literal*> operands = {&input, &zero};
  StatusOr<Literal> sum = evaluate_computation(*(*module)->entry(), operands);
  ASSERT_TRUE(sum.ok()) << sum.status().to_string();
  EXPECT_EQ(sum->get_double(0), 9007199254740992.0 + 65536.0);
  EXPECT_TRUE(expect_reduce_matches_on(text, input, zero));

  for (int64_t i = 0; i < 2 * kSumBlock; ++i) x[i] = -0.0;
  Literal negative_zero = Literal::scalar<double>(-0.0);
  operands = {&input, &negative_zero};
  sum = evaluate_computation(*(*module)->entry(), operands);
  ASSERT_TRUE(sum.ok());
  EXPECT_TRUE(std::signbit(sum->get_double(0)));
  EXPECT_TRUE(expect_reduce_matches_on(text, input, negative_zero));
}

// f32 maximum and minimum over contiguous runs fold in lanes when the run holds no NaN: the same
// value as the in-order fold, +0 over -0 (max) and -0 over +0 (min) whichever comes first, a NaN
// anywhere (or as init) the in-order fold's, tails shorter than the lanes.
TEST(RuntimeReduceKernel, F32MaxMinRunsMatchTheInOrderFold) {
  constexpr float kInf = std::numeric_limits<float>::infinity();
  std::mt19937 rng(77);
  for (int64_t length : {1, 7, 8, 13, 29, 64, 1024})
    for (const char* op : {"maximum", "minimum"})
      for (bool first : {true, false})
        for (int kind = 0; kind < 5; ++kind) {
          const int64_t rows = 12;
          Literal input(Shape::array(PrimitiveType::kF32, {rows, length}));
          std::span<float> values = input.data<float>();
          std::uniform_real_distribution<float> uniform(-4.0f, 4.0f);
          for (int64_t i = 0; i < rows * length; ++i) {
            if (kind == 0) values[i] = uniform(rng);                       // finite
            if (kind == 1) values[i] = rng() % 2 ? 0.0f : -0.0f;           // zeros of both signs
            if (kind == 2) values[i] = rng() % 3 ? -0.0f : -1.0f;          // -0 is the max
            if (kind == 3) values[i] = uniform(rng);                       // with NaNs, below
            if (kind == 4) values[i] = rng() % 4 ? uniform(rng) : (rng() % 2 ? 1.0f : -1.0f) * kInf;  // +-inf
          }
          if (kind == 3)
            for (int64_t row = 0; row < rows; row += 2)
              values[row * length + static_cast<int64_t>(rng() % length)] = std::numeric_limits<float>::quiet_NaN();
          for (float init : {-std::numeric_limits<float>::infinity(), 0.0f, -0.0f,
                             std::numeric_limits<float>::quiet_NaN()}) {
            Literal init_literal(Shape::array(PrimitiveType::kF32, {}));
            init_literal.data<float>()[0] = init;
            EXPECT_TRUE(expect_reduce_matches_on(reduce_module("f32", {rows, length}, {1}, op, first), input,
                                                 init_literal))
                << op << " length " << length << " kind " << kind << " init " << init;
          }
        }
}

TEST(RuntimeReduceKernel, IntegerCombinersWrapAndMatchEvaluator) {
  uint32_t seed = 100;
  for (const TypeCase& t : kIntTypes)
    for (const char* op : {"add", "multiply", "maximum", "minimum", "and", "or"})
      for (bool first : {true, false})
        for (const auto& [input, reduced] : kShapes)
          EXPECT_TRUE(expect_reduce_matches(reduce_module(t.name, input, reduced, op, first), t.type, input, seed++))
              << t.name << " " << op;
}

// The kernel select_reduce picks for the root of `text`, as Executable::create calls it (views
// without addresses); null when none is selected.
KernelFn selected_reduce_kernel(const std::string& text) {
  StatusOr<std::unique_ptr<Module>> module = parse_module(text);
  EXPECT_TRUE(module.ok()) << module.status().to_string();
  if (!module.ok()) return nullptr;
  const Instruction* reduce = (*module)->entry()->root();
  const ArrayView operands[] = {ArrayView{nullptr, &reduce->operand(0)->shape()},
                                ArrayView{nullptr, &reduce->operand(1)->shape()}};
  const ArrayView out{nullptr, &reduce->shape()};
  SelectedKernel kernel = select_reduce(*reduce, operands, std::span<const ArrayView>(&out, 1));
  return kernel ? kernel->run : nullptr;
}

TEST(RuntimeReduceKernel, OtherReducesAreLeftToTheProgramOrTheFallback) {
  // What the simple-combiner kernel runs an f32 reduce with.
  const KernelFn simple_f32 = selected_reduce_kernel(reduce_module("f32", {4, 5}, {1}, "add", true));
  ASSERT_NE(simple_f32, nullptr);
  // A combiner that is more than one op: not the simple kernel; it runs as a scalar program.
  const std::string two_ops =
      "HloModule r\n\ncombine {\n  acc = f32[] parameter(0)\n  x = f32[] parameter(1)\n  m = f32[] multiply(x, x)\n"
      "  ROOT r = f32[] add(acc, m)\n}\n\nENTRY main {\n  input = f32[4,5] parameter(0)\n  init = f32[] parameter(1)\n"
      "  ROOT reduce = f32[4] reduce(input, init), dimensions={1}, to_apply=combine\n}\n";
  EXPECT_NE(selected_reduce_kernel(two_ops), simple_f32);
  EXPECT_TRUE(expect_reduce_matches(two_ops, PrimitiveType::kF32, {4, 5}, 7));
  // pred under and/or runs in the simple kernel (jnp.all/any); a whole reduction of many
  // elements folds in parallel chunks there (integers too), with the evaluator's values.
  const std::string pred_and = reduce_module("pred", {4, 5}, {1}, "and", true);
  EXPECT_NE(selected_reduce_kernel(pred_and), selected_reduce_kernel(two_ops));
  EXPECT_NE(selected_reduce_kernel(pred_and), nullptr);
  EXPECT_TRUE(expect_reduce_matches(pred_and, PrimitiveType::kPred, {4, 5}, 8));
  for (const char* op : {"and", "or"})
    EXPECT_TRUE(expect_reduce_matches(reduce_module("pred", {257, 300}, {0, 1}, op, true), PrimitiveType::kPred,
                                      {257, 300}, 9));
  for (const char* op : {"add", "maximum", "minimum", "multiply"})
    EXPECT_TRUE(expect_reduce_matches(reduce_module("s32", {257, 300}, {0, 1}, op, false), PrimitiveType::kS32,
                                      {257, 300}, 10));
  // A column-major input is walked in its layout order by the evaluator: left to it.
  const std::string column_major =
      "HloModule r\n\ncombine {\n  acc = f32[] parameter(0)\n  x = f32[] parameter(1)\n  ROOT r = f32[] add(acc, x)\n}"
      "\n\nENTRY main {\n  input = f32[4,5]{0,1} parameter(0)\n  init = f32[] parameter(1)\n"
      "  ROOT reduce = f32[4] reduce(input, init), dimensions={1}, to_apply=combine\n}\n";
  EXPECT_FALSE(expect_reduce_matches(column_major, PrimitiveType::kF32, {4, 5}, 9));
}

// reduce-window(input, init) with `window` and to_apply ROOT = `op`(acc, x).
std::string reduce_window_module(const std::string& type, const Dimensions& input, const Dimensions& output,
                                 const std::string& window, const std::string& op) {
  return str_cat("HloModule w\n\ncombine {\n  acc = ", type, "[] parameter(0)\n  x = ", type,
                 "[] parameter(1)\n  ROOT r = ", type, "[] ", op, "(acc, x)\n}\n\nENTRY main {\n  input = ", type, "[",
                 dims_text(input), "] parameter(0)\n  init = ", type, "[] parameter(1)\n  ROOT w = ", type, "[",
                 dims_text(output), "] reduce-window(input, init), window={", window, "}, to_apply=combine\n}\n");
}

TEST(RuntimeReduceWindowKernel, WindowsPaddingStridesAndDilationsMatchEvaluator) {
  struct Case {
    Dimensions input, output;
    const char* window;
  };
  const Case cases[] = {
      {{4, 9}, {4, 9}, "size=1x9 pad=0_0x8_0"},          // jnp.cumsum along axis 1
      {{4, 9}, {4, 9}, "size=4x1 pad=3_0x0_0"},          // along axis 0
      {{6, 8}, {3, 4}, "size=2x2 stride=2x2"},           // pooling
      {{5, 7}, {5, 4}, "size=3x3 stride=1x2 pad=1_1x1_1"},
      {{4, 5}, {6, 5}, "size=2x1 pad=0_0x0_0 lhs_dilate=2x1"},  // base dilation: holes
      {{9, 6}, {5, 6}, "size=3x1 rhs_dilate=2x1"},       // window dilation
      {{120, 100}, {120, 100}, "size=1x5 pad=0_0x2_2"},  // big enough for threads
  };
  uint32_t seed = 500;
  for (const Case& c : cases)
    for (const char* op : {"add", "maximum", "minimum", "multiply"})
      for (const auto& [name, type] : {std::pair{"f32", PrimitiveType::kF32}, std::pair{"s32", PrimitiveType::kS32},
                                       std::pair{"bf16", PrimitiveType::kBF16}}) {
        const std::string text = reduce_window_module(name, c.input, c.output, c.window, op);
        StatusOr<std::unique_ptr<Module>> module = parse_module(text);
        ASSERT_TRUE(module.ok()) << module.status().to_string() << text;
        const Instruction* window = (*module)->entry()->root();
        std::mt19937 rng(seed++);
        Literal input = random_literal(type, c.input, rng);
        Literal init = random_literal(type, {}, rng);
        std::vector<const Literal*> pointers = {&input, &init};
        StatusOr<Literal> expected = evaluate_computation(*(*module)->entry(), pointers);
        ASSERT_TRUE(expected.ok()) << expected.status().to_string();
        for (int threads : {1, 2}) {
          ThreadPool pool(threads);
          Literal out(window->shape());
          std::vector<ArrayView> views = {view_of(input), view_of(init)};
          ASSERT_TRUE(run_native_kernel(*window, views, view_of(out), pool)) << text;
          EXPECT_TRUE(same_values(out, *expected)) << text << "threads=" << threads;
        }
      }
}

}  // namespace
}  // namespace insitu
