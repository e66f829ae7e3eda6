// The fusion pass's other kinds at run time. Reduce fusions (kind=kInput): the fused elementwise
// input computed a chunk of whole rows at a time into scratch and folded by the reduce's own
// kernel, or, every dimension reduced, a sum block at a time and folded to partials. Sliced dots (kind=kCustom): a dot reading its strided dynamic-slice blocks where they
// lie. Every case runs natively (no evaluator fallback) and gives the evaluator's bits.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstring>

#include "executable_test_util.h"
#include "insitu/analysis/in_place.h"
#include "insitu/support/str.h"

namespace insitu {
namespace {

// In any computation: a row fusion (kind=kCustom, passes/row_fusion.h) holds the reduce
// fusions of a softmax or a layer norm.
int count_input_fusions(const Module& module) {
  int fusions = 0;
  for (const Computation* computation : module.computations())
    for (const Instruction* instruction : computation->instructions())
      fusions += instruction->opcode() == Opcode::kFusion && instruction->fusion_kind == "kInput";
  return fusions;
}

// Row sums and maxima of fused inputs: rows shorter than a block (300: several rows a block,
// 37 rows so the last chunk is short), rows of a block's pieces (5000), two reduced trailing
// dimensions (a row of 6 x 70 whose row scalar is constant along the whole row, and one that
// varies along it: gathered), a max with a NaN-aware fold, an s32 sum, an f16 sum (rounded per
// step) and a combiner of two ops (max of |x|), run as a scalar program.
TEST(RuntimeReduceFusion, RowsOfEveryLengthMatchTheEvaluator) {
  testing_runtime::Compiled compiled = testing_runtime::compile(R"(
HloModule reduce_fusions
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
max {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT m = f32[] maximum(a, b)
}
add_s32 {
  a = s32[] parameter(0)
  b = s32[] parameter(1)
  ROOT s = s32[] add(a, b)
}
max_abs {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT m = f32[] maximum(a, f32[] abs(b))
}
add_f16 {
  a = f16[] parameter(0)
  b = f16[] parameter(1)
  ROOT s = f16[] add(a, b)
}
ENTRY main {
  x = f32[37,300] parameter(0)
  mean = f32[37] parameter(1)
  y = f32[3,5000] parameter(2)
  z = f32[4,6,70] parameter(3)
  z_scale = f32[4] parameter(4)
  z_column = f32[70] parameter(5)
  i = s32[9,130] parameter(6)
  h = f16[5,200] parameter(7)
  zero = f32[] constant(0)
  ninf = f32[] constant(-inf)
  mb = f32[37,300] broadcast(mean), dimensions={0}
  d = f32[37,300] subtract(x, mb)
  dd = f32[37,300] multiply(d, d)
  var = f32[37] reduce(dd, zero), dimensions={1}, to_apply=add
  e = f32[3,5000] exponential(y)
  e_max = f32[3] reduce(e, ninf), dimensions={1}, to_apply=max
  zs = f32[4,6,70] broadcast(z_scale), dimensions={0}
  zc = f32[4,6,70] broadcast(z_column), dimensions={2}
  z1 = f32[4,6,70] multiply(z, zs)
  z2 = f32[4,6,70] add(z1, zc)
  z_sum = f32[4] reduce(z2, zero), dimensions={1,2}, to_apply=add
  i2 = s32[9,130] multiply(i, i)
  izero = s32[] constant(0)
  i_sum = s32[9] reduce(i2, izero), dimensions={1}, to_apply=add_s32
  hn = f16[5,200] negate(h)
  hzero = f16[] constant(0)
  h_sum = f16[5] reduce(hn, hzero), dimensions={1}, to_apply=add_f16
  t = f32[37,300] tanh(x)
  t_max = f32[37] reduce(t, zero), dimensions={1}, to_apply=max_abs
  ROOT out = (f32[37], f32[3], f32[4], s32[9], f16[5], f32[37]) tuple(var, e_max, z_sum, i_sum, h_sum, t_max)
})");
  ASSERT_TRUE(compiled.executable != nullptr);
  EXPECT_EQ(count_input_fusions(*compiled.optimized), 6);
  testing_runtime::expect_matches_evaluator_natively(compiled, 21);
}

// A reduce fusion whose init is a parameter (not a constant), and long rows whose chunk holds
// fewer than kSummedRows rows (8192 f32: 32 KiB a row): the scratch bound.
TEST(RuntimeReduceFusion, ParameterInitAndLongRowsMatchTheEvaluator) {
  testing_runtime::Compiled compiled = testing_runtime::compile(R"(
HloModule long_rows
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY main {
  x = f32[40,8192] parameter(0)
  m = f32[40] parameter(1)
  start = f32[] parameter(2)
  mb = f32[40,8192] broadcast(m), dimensions={0}
  e = f32[40,8192] exponential(f32[40,8192] subtract(x, mb))
  s = f32[40] reduce(e, start), dimensions={1}, to_apply=add
  ROOT out = (f32[40]) tuple(s)
})");
  ASSERT_TRUE(compiled.executable != nullptr);
  EXPECT_EQ(count_input_fusions(*compiled.optimized), 1);
  testing_runtime::expect_matches_evaluator_natively(compiled, 22);
}

// A softmax over rows of 300 (several a block) and of 5000 (a block's pieces): exp(x - max) is
// the reduce fusion's second output, written where the division reads it and summed from there.
TEST(RuntimeReduceFusion, InputAsSecondOutputMatchesTheEvaluator) {
  testing_runtime::Compiled compiled = testing_runtime::compile(R"(
HloModule softmax
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY main {
  x = f32[37,300] parameter(0)
  m = f32[37] parameter(1)
  mb = f32[37,300] broadcast(m), dimensions={0}
  e = f32[37,300] exponential(f32[37,300] subtract(x, mb))
  zero = f32[] constant(0)
  s = f32[37] reduce(e, zero), dimensions={1}, to_apply=add
  sb = f32[37,300] broadcast(s), dimensions={0}
  y = f32[37,300] divide(e, sb)
  w = f32[3,5000] parameter(2)
  we = f32[3,5000] exponential(w)
  ws = f32[3] reduce(we, zero), dimensions={1}, to_apply=add
  wb = f32[3,5000] broadcast(ws), dimensions={0}
  wy = f32[3,5000] multiply(we, wb)
  ROOT out = (f32[37,300], f32[3,5000], f32[37]) tuple(y, wy, s)
})");
  ASSERT_TRUE(compiled.executable != nullptr);
  EXPECT_EQ(count_input_fusions(*compiled.optimized), 2);
  testing_runtime::expect_matches_evaluator_natively(compiled, 23);
}

// The second output written over an operand that dies at the fusion (a transpose's result, read
// only there): the in-place contract pairs them (writes_elementwise_at), the rows are computed over
// the dot's values block by block and summed from there.
TEST(RuntimeReduceFusion, InputOutputWrittenOverADyingOperandMatchesTheEvaluator) {
  testing_runtime::Compiled compiled = testing_runtime::compile(R"(
HloModule over_operand
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY main {
  x = f32[700,64] parameter(0)
  d = f32[64,700] transpose(x), dimensions={1,0}
  t = f32[64,700] tanh(d)
  zero = f32[] constant(0)
  s = f32[64] reduce(t, zero), dimensions={1}, to_apply=add
  ROOT out = (f32[64,700], f32[64]) tuple(t, s)
})");
  ASSERT_TRUE(compiled.executable != nullptr);
  ASSERT_EQ(count_input_fusions(*compiled.optimized), 1);
  const Instruction* fusion = nullptr;
  for (const Instruction* instruction : compiled.optimized->entry()->instructions())
    if (instruction->opcode() == Opcode::kFusion) fusion = instruction;
  EXPECT_TRUE(writes_elementwise_at(*fusion, {1}));
  EXPECT_FALSE(writes_elementwise_at(*fusion, {0}));
  testing_runtime::expect_matches_evaluator_natively(compiled, 24);
}

// Whole reduces (every dimension reduced) of fused inputs, split into sum blocks
// (evaluator/sum_order.h): a squared deviation from row means (a broadcast along rows > 128, planned flat: no
// row scalars) over 4 blocks, the last short; 18 full f32 blocks (a group of 16 and a short one
// on one thread); `all(isfinite)` and `any(x > 1.99)` over preds; an s32 sum and maximum; f64
// and bf16 sums; a whole softmax whose exp is the second output, with a parameter init.
TEST(RuntimeReduceFusion, WholeReducesMatchTheEvaluator) {
  testing_runtime::Compiled compiled = testing_runtime::compile(R"(
HloModule whole_reduces
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
add_f64 {
  a = f64[] parameter(0)
  b = f64[] parameter(1)
  ROOT s = f64[] add(a, b)
}
add_bf16 {
  a = bf16[] parameter(0)
  b = bf16[] parameter(1)
  ROOT s = bf16[] add(b, a)
}
all {
  a = pred[] parameter(0)
  b = pred[] parameter(1)
  ROOT r = pred[] and(a, b)
}
any {
  a = pred[] parameter(0)
  b = pred[] parameter(1)
  ROOT r = pred[] or(a, b)
}
add_s32 {
  a = s32[] parameter(0)
  b = s32[] parameter(1)
  ROOT s = s32[] add(a, b)
}
max_s32 {
  a = s32[] parameter(0)
  b = s32[] parameter(1)
  ROOT m = s32[] maximum(a, b)
}
ENTRY main {
  g = f32[3,70000] parameter(0)
  m = f32[3] parameter(1)
  big = f32[18,65536] parameter(2)
  i = s32[300,300] parameter(3)
  h = f64[140000] parameter(4)
  b = bf16[140000] parameter(5)
  w = f32[2,70000] parameter(6)
  start = f32[] parameter(7)
  zero = f32[] constant(0)
  mb = f32[3,70000] broadcast(m), dimensions={0}
  d = f32[3,70000] subtract(g, mb)
  sq = f32[3,70000] multiply(d, d)
  norm = f32[] reduce(sq, zero), dimensions={0,1}, to_apply=add
  big2 = f32[18,65536] multiply(big, big)
  big_sum = f32[] reduce(big2, zero), dimensions={0,1}, to_apply=add
  finite = pred[3,70000] is-finite(g)
  true = pred[] constant(true)
  ok = pred[] reduce(finite, true), dimensions={0,1}, to_apply=all
  limit = f32[3,70000] broadcast(f32[] constant(1.99)), dimensions={}
  gt = pred[3,70000] compare(g, limit), direction=GT
  false = pred[] constant(false)
  some = pred[] reduce(gt, false), dimensions={0,1}, to_apply=any
  i2 = s32[300,300] multiply(i, i)
  izero = s32[] constant(0)
  i_sum = s32[] reduce(i2, izero), dimensions={0,1}, to_apply=add_s32
  i3 = s32[300,300] subtract(i, i2)
  imin = s32[] constant(-2147483648)
  i_max = s32[] reduce(i3, imin), dimensions={0,1}, to_apply=max_s32
  hn = f64[140000] negate(h)
  hzero = f64[] constant(0)
  h_sum = f64[] reduce(hn, hzero), dimensions={0}, to_apply=add_f64
  bn = bf16[140000] negate(b)
  bzero = bf16[] constant(0)
  b_sum = bf16[] reduce(bn, bzero), dimensions={0}, to_apply=add_bf16
  e = f32[2,70000] exponential(w)
  e_sum = f32[] reduce(e, start), dimensions={0,1}, to_apply=add
  eb = f32[2,70000] broadcast(e_sum), dimensions={}
  y = f32[2,70000] divide(e, eb)
  ROOT out = (f32[], f32[], pred[], pred[], s32[], s32[], f64[], bf16[], f32[2,70000]) tuple(norm, big_sum, ok, some, i_sum, i_max, h_sum, b_sum, y)
})");
  ASSERT_TRUE(compiled.executable != nullptr);
  EXPECT_EQ(count_input_fusions(*compiled.optimized), 9);
  testing_runtime::expect_matches_evaluator_natively(compiled, 25);
}

}  // namespace
}  // namespace insitu

namespace insitu {
namespace {

// A dot of two strided blocks (a [64, 32] block of a [256, 96] matrix and a [32, 48] block of a
// [96, 160] one, at indices the runtime clamps as dynamic-slice does): one kCustom fusion whose
// GEMM reads the blocks where they lie, no block copied. Values small integers, so every order
// of the sums is exact and the result is the evaluator's bit for bit; starts out of range
// (clamped) included.
TEST(RuntimeSlicedDot, BlocksReadWhereTheyLieMatchTheEvaluator) {
  // {x rows, x columns = y rows, y columns, block rows, block depth, block columns}: a GEMM on
  // the library with s32 starts, and a product too small for it (the exact loops, at the
  // sources' strides) with s16 starts
  for (const std::array<int64_t, 6>& size : std::vector<std::array<int64_t, 6>>{{256, 96, 160, 64, 32, 48},
                                                                                 {16, 12, 10, 8, 4, 6}}) {
    const auto [xr, xc, yc, br, bk, bc] = size;
    const bool narrow = xr < 100;  // the small product's starts are s16 (read at their width)
    const std::string index_type = narrow ? "s16" : "s32";
    testing_runtime::Compiled compiled = testing_runtime::compile(str_cat(R"(
HloModule sliced_dot
ENTRY main {
  x = f32[)", xr, ",", xc, R"(] parameter(0)
  y = f32[)", xc, ",", yc, R"(] parameter(1)
  i = )", index_type, R"([] parameter(2)
  j = )", index_type, R"([] parameter(3)
  k = )", index_type, R"([] parameter(4)
  a = f32[)", br, ",", bk, R"(] dynamic-slice(x, i, k), dynamic_slice_sizes={)", br, ",", bk, R"(}
  b = f32[)", bk, ",", bc, R"(] dynamic-slice(y, k, j), dynamic_slice_sizes={)", bk, ",", bc, R"(}
  d = f32[)", br, ",", bc, R"(] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT out = (f32[)", br, ",", bc, R"(]) tuple(d)
})"));
    ASSERT_TRUE(compiled.executable != nullptr);
    int custom = 0, slices = 0;
    for (const Instruction* instruction : compiled.optimized->entry()->instructions()) {
      custom += instruction->opcode() == Opcode::kFusion && instruction->fusion_kind == "kCustom";
      slices += instruction->opcode() == Opcode::kDynamicSlice;
    }
    EXPECT_EQ(custom, 1);
    EXPECT_EQ(slices, 0);
    auto integers = [](int64_t rows, int64_t columns, int seed) {
      std::vector<float> values(static_cast<size_t>(rows * columns));
      for (size_t e = 0; e < values.size(); ++e) values[e] = static_cast<float>(static_cast<int>((e * 7 + seed) % 9) - 4);
      return Literal::from_values<float>({rows, columns}, values);
    };
    for (auto [i, j, k] : std::vector<std::array<int32_t, 3>>{{0, 0, 0}, {3, 5, 2}, {250, -3, 90}}) {
      auto start = [&](int32_t value) {
        return narrow ? Literal::scalar<int16_t>(static_cast<int16_t>(value)) : Literal::scalar<int32_t>(value);
      };
      const std::vector<Literal> arguments = {integers(xr, xc, 1), integers(xc, yc, 2), start(i), start(j), start(k)};
      StatusOr<Literal> expected = evaluate_module(*compiled.original, arguments);
      ASSERT_TRUE(expected.ok()) << expected.status().to_string();
      for (int threads : {1, 2}) {
        ExecutionStats stats;
        StatusOr<std::vector<BufferHandle>> results =
            compiled.executable->execute(testing_runtime::to_handles(arguments), {.threads = threads, .stats = &stats});
        ASSERT_TRUE(results.ok()) << results.status().to_string();
        EXPECT_TRUE(*(*results)[0].to_literal() == expected->element(0)) << xr << ": " << i << " " << j << " " << k;
        EXPECT_EQ(stats.fallback_ops_executed, 0);
        EXPECT_EQ(stats.bytes_copied, 0);
      }
    }
  }
}

// A dot accumulated into a window of a donated array, as a Pallas matmul step writes it
// (`o_ref[...] += jnp.dot(x, y)` after zeroing under pl.when): the window's read, a select of it
// against zero by a predicate (either order, or none), the add and the write-back become one
// kCustom fusion aliasing its output to the array, whose GEMM writes the window where it lies
// with beta 0 or 1. On the library (a [64, 48] window, depth 32; an [8, 12] window of depth
// 4,100, a long contraction) and the exact loops (a [4, 6] window), starts in range and clamped, both predicate values: the evaluator's bits (small
// integers sum exactly in any order), nothing copied, only the window written. The array
// starts as NaN where the predicate picks zero: beta 0 never reads it.
TEST(RuntimeSlicedDot, AccumulatedIntoAWindowInPlaceMatchesTheEvaluator) {
  // what the dot is added to: the window's old value or zero by the predicate (either order), or
  // the old value alone
  const std::vector<std::string> accumulations = {"select(p, w, zeros)", "select(p, zeros, w)", "w"};
  // (the third: a depth of 4,100, which the library sums in two chunks, the first into the window)
  for (const std::array<int64_t, 6>& size : std::vector<std::array<int64_t, 6>>{
           {256, 96, 160, 64, 32, 48}, {16, 12, 10, 4, 3, 6}, {24, 4200, 20, 8, 4100, 12}}) {
    for (const std::string& accumulation : accumulations) {
      const auto [xr, xc, yc, br, bk, bc] = size;
      SCOPED_TRACE(str_cat(xr, " ", accumulation));
      const std::string block = str_cat("f32[", br, ",", bc, "]");
      testing_runtime::Compiled compiled = testing_runtime::compile(str_cat(R"(
HloModule window_dot, input_output_alias={ {}: (0, {}, must-alias) }
ENTRY main {
  o = f32[)", xr, ",", yc, R"(] parameter(0)
  x = f32[)", xr, ",", xc, R"(] parameter(1)
  y = f32[)", xc, ",", yc, R"(] parameter(2)
  i = s32[] parameter(3)
  j = s32[] parameter(4)
  k = s32[] parameter(5)
  first = pred[] parameter(6)
  a = f32[)", br, ",", bk, R"(] dynamic-slice(x, i, k), dynamic_slice_sizes={)", br, ",", bk, R"(}
  b = f32[)", bk, ",", bc, R"(] dynamic-slice(y, k, j), dynamic_slice_sizes={)", bk, ",", bc, R"(}
  d = )", block, R"( dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  w = )", block, R"( dynamic-slice(o, i, j), dynamic_slice_sizes={)", br, ",", bc, R"(}
  zero = f32[] constant(0)
  zeros = )", block, R"( broadcast(zero), dimensions={}
  p = pred[)", br, ",", bc, R"(] broadcast(first), dimensions={}
  r = )", block, " add(d, ", block, " ", accumulation == "w" ? "w" : accumulation, R"()
  ROOT u = f32[)", xr, ",", yc, R"(] dynamic-update-slice(o, r, i, j)
})"));
      ASSERT_TRUE(compiled.executable != nullptr);
      int windows = 0, others = 0;
      for (const Instruction* instruction : compiled.optimized->entry()->instructions()) {
        const bool window = instruction->opcode() == Opcode::kFusion && instruction->fusion_kind == "kCustom" &&
                            instruction->fusion_output_to_operand_aliasing.size() == 1;
        windows += window;
        others += !window && instruction->opcode() != Opcode::kParameter;
      }
      EXPECT_EQ(windows, 1);
      EXPECT_EQ(others, 0);
      auto integers = [](int64_t rows, int64_t columns, int seed, bool nan) {
        std::vector<float> values(static_cast<size_t>(rows * columns));
        for (size_t e = 0; e < values.size(); ++e)
          values[e] = nan ? std::nanf("") : static_cast<float>(static_cast<int>((e * 7 + seed) % 9) - 4);
        return Literal::from_values<float>({rows, columns}, values);
      };
      for (auto [i, j, k] : std::vector<std::array<int32_t, 3>>{{0, 0, 0}, {3, 2, 5}, {250, -3, 90}}) {
        for (bool first : {false, true}) {
          SCOPED_TRACE(str_cat(i, " ", j, " ", k, " first=", first));
          // NaN where the zero is chosen (the first operand order picks w when `first`)
          const bool zero_chosen = accumulation != "w" && (first != (accumulation == accumulations[0]));
          const std::vector<Literal> arguments = {integers(xr, yc, 3, zero_chosen), integers(xr, xc, 1, false),
                                                  integers(xc, yc, 2, false), Literal::scalar<int32_t>(i),
                                                  Literal::scalar<int32_t>(j), Literal::scalar<int32_t>(k),
                                                  Literal::scalar<bool>(first)};
          StatusOr<Literal> expected = evaluate_module(*compiled.original, arguments);
          ASSERT_TRUE(expected.ok()) << expected.status().to_string();
          for (int threads : {1, 2}) {
            ExecutionStats stats;
            StatusOr<std::vector<BufferHandle>> results = compiled.executable->execute(
                testing_runtime::to_handles(arguments), {.donate = {true}, .threads = threads, .stats = &stats});
            ASSERT_TRUE(results.ok()) << results.status().to_string();
            StatusOr<Literal> read = (*results)[0].to_literal();
            ASSERT_TRUE(read.ok());
            const Literal& result = *read;
            EXPECT_EQ(std::memcmp(result.untyped_data(), expected->untyped_data(), result.size_bytes()), 0);
            EXPECT_EQ(stats.fallback_ops_executed, 0);
            EXPECT_EQ(stats.bytes_copied, 0);
            EXPECT_EQ(stats.bytes_written, br * bc * 4);
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace insitu
