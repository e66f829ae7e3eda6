// CUDA kernels of single ops on the emulated device (emulated_device.h), each against the
// reference evaluator on inputs chosen for the op's edge cases: multi-output fusions and clamp,
// scatter in place, integer arithmetic with XLA's rules, gather.
#include <limits>

#include "emulated_device.h"

namespace insitu::cuda {
namespace {

using namespace testing;

// A multi-output fusion (the fusion pass makes Adam's m, v and p updates one) is one kernel
// writing every output; an integer clamp whose low bound is above its high bound gives the
// high bound, as XLA's min(max(x, lo), hi) does (the kernel gave lo for x < lo).
TEST(CudaExecutor, MultiOutputFusionAndAClampWithCrossedBoundsMatchTheEvaluator) {
  EmulatedDevice device;
  StatusOr<OnDevice> on = compile_on(device, R"(
HloModule cases

ENTRY main {
  m = f32[4,50] parameter(0)
  g = f32[4,50] parameter(1)
  p = f32[4,50] parameter(2)
  x = s32[7] parameter(3)
  half = f32[] constant(0.5)
  h = f32[4,50] broadcast(half), dimensions={}
  m2 = f32[4,50] multiply(m, h)
  m3 = f32[4,50] add(m2, g)
  e = f32[4,50] exponential(m3)
  p2 = f32[4,50] subtract(p, e)
  lo = s32[] constant(1)
  hi = s32[] constant(-5)
  c = s32[7] clamp(lo, x, hi)
  ROOT r = (f32[4,50], f32[4,50], s32[7]) tuple(p2, m3, c)
}
)");
  ASSERT_TRUE(on.ok()) << on.status().to_string();
  int multi_output = 0;
  for (const DeviceStep& step : on->executable->plan().steps)
    multi_output += step.instruction->opcode() == Opcode::kFusion && step.instruction->shape().is_tuple();
  EXPECT_EQ(multi_output, 1);
  std::vector<Literal> arguments = random_arguments(*on->written, 5);
  int32_t* x = arguments[3].data<int32_t>().data();
  for (int i = 0; i < 7; ++i) x[i] = i - 3;  // below, between and above both bounds
  StatusOr<BothResults> run = run_both(*on, arguments);
  ASSERT_TRUE(run.ok()) << run.status().to_string();
  const Literal &actual = run->actual, &expected = run->expected;
  EXPECT_EQ(differs(actual, expected), "");
  for (int i = 0; i < 7; ++i) EXPECT_EQ(expected.element(2).data<int32_t>()[i], -5);
}


// Scatters in place: duplicate indices combine in the evaluator's order (a float sum's rounding
// depends on it), a window that does not fit is dropped, a combiner reading (update, current)
// and integer sums that wrap; a window overlapping another in part is a located refusal.
TEST(CudaExecutor, ScattersCombineDuplicatesInTheEvaluatorsOrder) {
  EmulatedDevice device;
  StatusOr<OnDevice> on = compile_on(device, R"(
HloModule scatters

add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}

max_first {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT m = f32[] maximum(b, a)
}

add_s32 {
  a = s32[] parameter(0)
  b = s32[] parameter(1)
  ROOT s = s32[] add(a, b)
}

ENTRY main {
  table = f32[6,5] parameter(0)
  rows = s32[9,1] parameter(1)
  updates = f32[9,5] parameter(2)
  counts = s32[4] parameter(3)
  at = s32[5,1] parameter(4)
  big = s32[5] parameter(5)
  summed = f32[6,5] scatter(table, rows, updates), update_window_dims={1}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=add
  maxed = f32[6,5] scatter(summed, rows, updates), update_window_dims={1}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=max_first
  wrapped = s32[4] scatter(counts, at, big), update_window_dims={}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=add_s32
  ROOT r = (f32[6,5], s32[4]) tuple(maxed, wrapped)
}
)");
  ASSERT_TRUE(on.ok()) << on.status().to_string();
  std::vector<Literal> arguments = random_arguments(*on->written, 13);
  const int32_t rows[] = {2, 5, 2, -1, 6, 2, 0, 5, 2};  // 2 four times, 5 twice; -1 and 6 dropped
  std::copy(std::begin(rows), std::end(rows), arguments[1].data<int32_t>().data());
  float* updates = arguments[2].data<float>().data();
  for (int i = 0; i < 45; ++i) updates[i] = (i % 3 == 0) ? 1e8f : 1.0f / static_cast<float>(1 + i);  // order shows
  const int32_t at[] = {1, 1, 3, 4, 1};
  std::copy(std::begin(at), std::end(at), arguments[4].data<int32_t>().data());
  for (int32_t& value : arguments[5].data<int32_t>()) value = 2147483000;  // sums wrap
  StatusOr<BothResults> run = run_both(*on, arguments);
  ASSERT_TRUE(run.ok()) << run.status().to_string();
  const Literal &actual = run->actual, &expected = run->expected;
  EXPECT_TRUE(actual.element(0) == expected.element(0)) << "bit for bit: " << differs(actual, expected);
  EXPECT_TRUE(actual.element(1) == expected.element(1)) << differs(actual, expected);

  StatusOr<OnDevice> refused = compile_on(device, R"(
HloModule overlapping

add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}

ENTRY main {
  x = f32[10] parameter(0)
  starts = s32[2,1] parameter(1)
  windows = f32[2,3] parameter(2)
  ROOT y = f32[10] scatter(x, starts, windows), update_window_dims={1}, inserted_window_dims={}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=add
}
)");
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("a window of extent 3 along scattered operand dimension 0"),
            std::string::npos)
      << refused.status().to_string();
}

// Integer arithmetic with XLA's rules, as the evaluator computes it: x / 0 = -1, MIN / -1 = MIN,
// x % 0 = x, MIN % -1 = 0, shifts by the width or more (negative amounts too) shift all out,
// sums and products wrap, leading zeros and set bits count the value's own bits (0 has 32
// leading zeros); on s32 and u32 (a layout other than row-major changes nothing: it is
// metadata, as on the CPU).
TEST(CudaExecutor, IntegerEdgeCasesFollowTheEvaluator) {
  EmulatedDevice device;
  StatusOr<OnDevice> on = compile_on(device, R"(
HloModule integers

ENTRY main {
  a = s32[12] parameter(0)
  b = s32[12] parameter(1)
  ua = u32[12] parameter(2)
  ub = u32[12] parameter(3)
  q = s32[12] divide(a, b)
  r = s32[12] remainder(a, b)
  l = s32[12] shift-left(a, b)
  sl = s32[12] shift-right-logical(a, b)
  sa = s32[12] shift-right-arithmetic(a, b)
  m = s32[12] multiply(a, a)
  s = s32[12] add(a, b)
  x = s32[12] xor(a, b)
  uq = u32[12] divide(ua, ub)
  ur = u32[12] remainder(ua, ub)
  usa = u32[12] shift-right-arithmetic(ua, ub)
  zeros = s32[12] count-leading-zeros(a)
  ones = u32[12] popcnt(ua)
  t = s32[3,4]{0,1} reshape(q)
  tt = s32[4,3]{0,1} transpose(t), dimensions={1,0}
  ROOT out = (s32[12], s32[12], s32[12], s32[12], s32[12], s32[12], s32[12], s32[12], u32[12], u32[12], u32[12], s32[4,3]{0,1}, s32[12], u32[12]) tuple(q, r, l, sl, sa, m, s, x, uq, ur, usa, tt, zeros, ones)
}
)");
  ASSERT_TRUE(on.ok()) << on.status().to_string();
  std::vector<Literal> arguments = random_arguments(*on->written, 1);
  const int32_t a[] = {7, -7, INT32_MIN, INT32_MIN, 5, -5, 1, -1, INT32_MAX, 123456789, -8, 0};
  const int32_t b[] = {0, 2, -1, 0, 31, 32, -1, 33, 1, 7, 2, 0};
  std::copy(std::begin(a), std::end(a), arguments[0].data<int32_t>().data());
  std::copy(std::begin(b), std::end(b), arguments[1].data<int32_t>().data());
  for (int i = 0; i < 12; ++i) {
    arguments[2].data<uint32_t>()[i] = static_cast<uint32_t>(a[i]);
    arguments[3].data<uint32_t>()[i] = static_cast<uint32_t>(b[i]);
  }
  StatusOr<BothResults> run = run_both(*on, arguments);
  ASSERT_TRUE(run.ok()) << run.status().to_string();
  EXPECT_EQ(not_identical(run->actual, run->expected), "");
}

// Gathers: rows of a table (an embedding lookup), 2x3 windows from a two-number start, and a
// batched pick along one dimension (operand_batching_dims, as a cross-entropy gradient has);
// starts out of range (negative, past the end) are clamped so the slice stays inside.
TEST(CudaExecutor, GathersClampStartsAsTheEvaluatorDoes) {
  EmulatedDevice device;
  StatusOr<OnDevice> on = compile_on(device, R"(
HloModule gathers

ENTRY main {
  table = f32[12,6] parameter(0)
  ids = s32[2,3,1] parameter(1)
  x = f32[5,6] parameter(2)
  corners = s32[3,2] parameter(3)
  logits = f32[5,7] parameter(4)
  labels = s32[5,1,1] parameter(5)
  rows = f32[2,3,6] gather(table, ids), offset_dims={2}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=2, slice_sizes={1,6}
  windows = f32[3,2,3] gather(x, corners), offset_dims={1,2}, collapsed_slice_dims={}, start_index_map={0,1}, index_vector_dim=1, slice_sizes={2,3}
  picked = f32[5,1] gather(logits, labels), offset_dims={}, collapsed_slice_dims={1}, start_index_map={1}, operand_batching_dims={0}, start_indices_batching_dims={0}, index_vector_dim=2, slice_sizes={1,1}
  ROOT r = (f32[2,3,6], f32[3,2,3], f32[5,1]) tuple(rows, windows, picked)
}
)");
  ASSERT_TRUE(on.ok()) << on.status().to_string();
  std::vector<Literal> arguments = random_arguments(*on->written, 21);
  const int32_t ids[] = {0, 11, -3, 12, 5, 40};
  std::copy(std::begin(ids), std::end(ids), arguments[1].data<int32_t>().data());
  const int32_t corners[] = {0, 0, 4, 5, -1, 2};  // the second and third clamped to (3, 3) and (0, 2)
  std::copy(std::begin(corners), std::end(corners), arguments[3].data<int32_t>().data());
  const int32_t labels[] = {0, 6, 7, -1, 3};
  std::copy(std::begin(labels), std::end(labels), arguments[5].data<int32_t>().data());
  StatusOr<BothResults> run = run_both(*on, arguments);
  ASSERT_TRUE(run.ok()) << run.status().to_string();
  const Literal &actual = run->actual, &expected = run->expected;
  for (int64_t k = 0; k < 3; ++k) EXPECT_TRUE(actual.element(k) == expected.element(k)) << "output " << k;
}

// Pads: edges that grow and edges that crop (negative), with interior padding between
// elements, in two dimensions at once.
TEST(CudaExecutor, PadsGrowCropAndInterleaveAsTheEvaluatorDoes) {
  EmulatedDevice device;
  StatusOr<OnDevice> on = compile_on(device, R"(
HloModule pads

ENTRY main {
  x = f32[4,5] parameter(0)
  zero = f32[] constant(0.5)
  grown = f32[9,8] pad(x, zero), padding=2_3_0x1_2_0
  cropped = f32[3,7] pad(x, zero), padding=-1_0_0x-2_0_1
  interleaved = f32[12,13] pad(x, zero), padding=1_1_2x0_0_2
  ROOT r = (f32[9,8], f32[3,7], f32[12,13]) tuple(grown, cropped, interleaved)
}
)");
  ASSERT_TRUE(on.ok()) << on.status().to_string();
  std::vector<Literal> arguments = random_arguments(*on->written, 3);
  StatusOr<BothResults> run = run_both(*on, arguments);
  ASSERT_TRUE(run.ok()) << run.status().to_string();
  const Literal &actual = run->actual, &expected = run->expected;
  for (int64_t k = 0; k < 3; ++k) EXPECT_TRUE(actual.element(k) == expected.element(k)) << "output " << k;
}

// A layout is metadata on the device, but a reduce folds in its input's layout order, as the
// evaluator does: a float product over a {0,1} input (dimension 0 fastest) rounds differently
// from the row-major order.
TEST(CudaExecutor, AReduceFoldsInItsInputsLayoutOrder) {
  EmulatedDevice device;
  StatusOr<OnDevice> on = compile_on(device, R"(
HloModule layout_order

times {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT m = f32[] multiply(a, b)
}

ENTRY main {
  x = f32[6,7]{0,1} parameter(0)
  one = f32[] constant(1)
  ROOT p = f32[] reduce(x, one), dimensions={0,1}, to_apply=times
}
)");
  ASSERT_TRUE(on.ok()) << on.status().to_string();
  std::vector<Literal> arguments = random_arguments(*on->written, 8);
  std::mt19937 rng(8);  // near 1, so the product stays finite; each step rounds
  for (float& value : arguments[0].data<float>()) value = 1.0f + static_cast<float>(rng() % 100000 + 1) * 0x1p-17f;
  StatusOr<BothResults> run = run_both(*on, arguments);
  ASSERT_TRUE(run.ok()) << run.status().to_string();
  const Literal &actual = run->actual, &expected = run->expected;
  EXPECT_TRUE(actual == expected) << actual.to_string() << " vs " << expected.to_string();
}

// Long rows take the split form (partials, then a finish): a row sum with an init that is not
// the identity (added once, not per partial), a column max over NaN and -inf, an integer sum
// over two dimensions of a column-major input, and a product (another order: within rounding).
TEST(CudaExecutor, LongRowsReduceInTwoKernelsAsTheEvaluatorDoes) {
  EmulatedDevice device;
  StatusOr<OnDevice> on = compile_on(device, R"(
HloModule long_rows

add_f {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
max_f {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT m = f32[] maximum(a, b)
}
add_s {
  a = s32[] parameter(0)
  b = s32[] parameter(1)
  ROOT s = s32[] add(a, b)
}
times_f {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT m = f32[] multiply(a, b)
}

ENTRY main {
  rows = f32[3,1000] parameter(0)
  columns = f32[600,5] parameter(1)
  cube = s32[20,3,30]{0,1,2} parameter(2)
  near_one = f32[2,300] parameter(3)
  five = f32[] constant(5)
  lowest = f32[] constant(-inf)
  zero = s32[] constant(0)
  one = f32[] constant(1)
  sums = f32[3] reduce(rows, five), dimensions={1}, to_apply=add_f
  maxima = f32[5] reduce(columns, lowest), dimensions={0}, to_apply=max_f
  totals = s32[3] reduce(cube, zero), dimensions={0,2}, to_apply=add_s
  products = f32[2] reduce(near_one, one), dimensions={1}, to_apply=times_f
  ROOT all = (f32[3], f32[5], s32[3], f32[2]) tuple(sums, maxima, totals, products)
}
)");
  ASSERT_TRUE(on.ok()) << on.status().to_string();
  const std::string plan = describe(on->executable->plan());
  for (const char* reduce : {"%sums", "%maxima", "%totals", "%products"})
    EXPECT_NE(plan.find(str_cat(reduce, ": kernel")), std::string::npos) << plan;
  EXPECT_EQ(std::count(plan.begin(), plan.end(), '('), 4) << "four split reduces:\n" << plan;
  std::vector<Literal> arguments = random_arguments(*on->written, 12);
  std::span<float> columns = arguments[1].data<float>();
  columns[5 * 17 + 2] = std::numeric_limits<float>::quiet_NaN();  // column 2 holds a NaN
  for (int64_t r = 0; r < 600; ++r) columns[5 * r + 4] = -std::numeric_limits<float>::infinity();
  std::mt19937 rng(12);
  // Multiples of 2^-12 below 1: any order of the double sum is exact, so it rounds as the
  // evaluator's does (NaN's sign would follow the order).
  for (float& value : arguments[0].data<float>()) value = static_cast<float>(static_cast<int>(rng() % 8193) - 4096) * 0x1p-12f;
  for (float& value : arguments[3].data<float>()) value = 1.0f + static_cast<float>(rng() % 1000) * 0x1p-14f;
  StatusOr<BothResults> run = run_both(*on, arguments);
  ASSERT_TRUE(run.ok()) << run.status().to_string();
  // sums (in double, rounded once), maxima and integers: exact
  EXPECT_EQ(not_identical(run->actual, run->expected, 3), "");
  EXPECT_EQ(differs(run->actual.element(3), run->expected.element(3)), "");
}

// A variadic reduce through a device function of its combiner: JAX's argmax (value and index
// pairs; NaN wins, ties keep the lower index), over rows holding ties, NaN and -inf.
TEST(CudaExecutor, AnArgmaxFoldsValueIndexPairsAsTheEvaluatorDoes) {
  EmulatedDevice device;
  StatusOr<OnDevice> on = compile_on(device, R"(
HloModule argmax

pick {
  a = f32[] parameter(0)
  i = s32[] parameter(1)
  b = f32[] parameter(2)
  j = s32[] parameter(3)
  gt = pred[] compare(a, b), direction=GT
  nan = pred[] compare(a, a), direction=NE
  keep = pred[] or(gt, nan)
  value = f32[] select(keep, a, b)
  eq = pred[] compare(a, b), direction=EQ
  lower = pred[] compare(i, j), direction=LT
  tie = pred[] and(eq, lower)
  first = pred[] or(keep, tie)
  index = s32[] select(first, i, j)
  ROOT r = (f32[], s32[]) tuple(value, index)
}

ENTRY main {
  x = f32[4,6] parameter(0)
  iota = s32[4,6] iota(), iota_dimension=1
  ninf = f32[] constant(-inf)
  zero = s32[] constant(0)
  r = (f32[4], s32[4]) reduce(x, iota, ninf, zero), dimensions={1}, to_apply=pick
  ROOT index = s32[4] get-tuple-element(r), index=1
}
)");
  ASSERT_TRUE(on.ok()) << on.status().to_string();
  std::vector<Literal> arguments = random_arguments(*on->written, 2);
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  const float x[] = {1, 3, 3, 2, 3, 0, -inf, -inf, -inf, -inf, -inf, -inf, 5, nan, 7, nan, 9, 9, 0, -0.0f, 0, -1, -2, -0.0f};
  std::copy(std::begin(x), std::end(x), arguments[0].data<float>().data());
  StatusOr<BothResults> run = run_both(*on, arguments);
  ASSERT_TRUE(run.ok()) << run.status().to_string();
  const Literal &actual = run->actual, &expected = run->expected;
  EXPECT_TRUE(actual == expected) << actual.to_string() << " vs " << expected.to_string();
  const int32_t want[] = {1, 0, 1, 0};
  for (int k = 0; k < 4; ++k) EXPECT_EQ(actual.data<int32_t>()[k], want[k]) << k;
}

// Sorts: a key/value sort with JAX's total-order comparator (NaN last, -0 before +0, ties kept
// in order: stable), along the first dimension of a 2-D array, and a descending sort.
TEST(CudaExecutor, SortsAreStableWithTheTotalOrder) {
  EmulatedDevice device;
  StatusOr<OnDevice> on = compile_on(device, R"(
HloModule sorts

ascending {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  i = s32[] parameter(2)
  j = s32[] parameter(3)
  ROOT lt = pred[] compare(a, b), direction=LT, type=TOTALORDER
}

descending {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT gt = pred[] compare(a, b), direction=GT
}

ENTRY main {
  keys = f32[9,3] parameter(0)
  values = s32[9,3] iota(), iota_dimension=0
  pairs = (f32[9,3], s32[9,3]) sort(keys, values), dimensions={0}, is_stable=true, to_apply=ascending
  down = f32[9,3] sort(keys), dimensions={1}, to_apply=descending
  k = f32[9,3] get-tuple-element(pairs), index=0
  v = s32[9,3] get-tuple-element(pairs), index=1
  ROOT r = (f32[9,3], s32[9,3], f32[9,3]) tuple(k, v, down)
}
)");
  ASSERT_TRUE(on.ok()) << on.status().to_string();
  std::vector<Literal> arguments = random_arguments(*on->written, 6);
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  const float column[] = {2, nan, -0.0f, 0.0f, 2, -inf, 1, -0.0f, 2};  // ties: 2 thrice, -0 twice
  for (int row = 0; row < 9; ++row)
    for (int c = 0; c < 3; ++c) arguments[0].data<float>()[row * 3 + c] = c == 0 ? column[row] : column[(row + 3 * c) % 9];
  StatusOr<BothResults> run = run_both(*on, arguments);
  ASSERT_TRUE(run.ok()) << run.status().to_string();
  EXPECT_EQ(not_identical(run->actual, run->expected, 3), "");
}

// Rows of 256 elements or more sort in stages (a bitonic network over a permutation, ties by
// position): rows of 700 padded to 1024 with a second operand that shows the order of ties,
// strided rows of 300 along dimension 0, and one row of exactly 256; bit for bit the
// evaluator's stable sort, NaNs, signed zeros and infinities included.
TEST(CudaExecutor, LongRowsSortInStagesAsTheEvaluatorsStableSort) {
  EmulatedDevice device;
  StatusOr<OnDevice> on = compile_on(device, R"(
HloModule long_sorts

ascending_pairs {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  i = s32[] parameter(2)
  j = s32[] parameter(3)
  ROOT lt = pred[] compare(a, b), direction=LT, type=TOTALORDER
}

ascending {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT lt = pred[] compare(a, b), direction=LT, type=TOTALORDER
}

descending {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT gt = pred[] compare(a, b), direction=GT
}

ENTRY main {
  keys = f32[2,700] parameter(0)
  tall = f32[300,3] parameter(1)
  one = f32[256] parameter(2)
  positions = s32[2,700] iota(), iota_dimension=1
  pairs = (f32[2,700], s32[2,700]) sort(keys, positions), dimensions={1}, is_stable=true, to_apply=ascending_pairs
  k = f32[2,700] get-tuple-element(pairs), index=0
  p = s32[2,700] get-tuple-element(pairs), index=1
  down = f32[300,3] sort(tall), dimensions={0}, is_stable=true, to_apply=descending
  up = f32[256] sort(one), dimensions={0}, is_stable=true, to_apply=ascending
  ROOT r = (f32[2,700], s32[2,700], f32[300,3], f32[256]) tuple(k, p, down, up)
}
)");
  ASSERT_TRUE(on.ok()) << on.status().to_string();
  int staged = 0;
  for (const DeviceStep& step : on->executable->plan().steps) staged += !step.stage.empty();
  EXPECT_EQ(staged, 3) << describe(on->executable->plan());
  std::vector<Literal> arguments = random_arguments(*on->written, 8);
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  const float specials[] = {nan, -0.0f, 0.0f, inf, -inf};
  float* keys = arguments[0].data<float>().data();
  for (int i = 0; i < 1400; ++i) keys[i] = i % 23 == 0 ? specials[(i / 23) % 5] : static_cast<float>(i * 7 % 5);
  float* tall = arguments[1].data<float>().data();
  for (int i = 0; i < 900; ++i) tall[i] = static_cast<float>(i * 13 % 17) - 8.0f;  // ties, no NaN (GT is no total order)
  float* one = arguments[2].data<float>().data();
  for (int i = 0; i < 256; ++i) one[i] = static_cast<float>((i * 37) % 64) * 0.5f;
  StatusOr<BothResults> run = run_both(*on, arguments);
  ASSERT_TRUE(run.ok()) << run.status().to_string();
  EXPECT_EQ(not_identical(run->actual, run->expected), "");
}

// Dots with no GEMM form run as a kernel summing each output element: a batch dimension in the
// middle of both operands and two contracting dimensions (an attention einsum's shapes), and an
// operand with two free dimensions.
// Dense layers on 3-D activations run as one GEMM each (free dimensions side by side
// flattened), plain and transposed on both sides; the emulated device runs the plan's GEMM
// kernel (a GPU, cuBLAS), against the evaluator.
TEST(CudaExecutor, SideBySideFreeDimensionsRunAsOneGemm) {
  EmulatedDevice device;
  StatusOr<OnDevice> on = compile_on(device, R"(
HloModule dense
ENTRY main {
  a = f32[3,4,5] parameter(0)
  b = f32[5,2,6] parameter(1)
  at = f32[5,3,4] parameter(2)
  bt = f32[2,6,5] parameter(3)
  d = f32[3,4,2,6] dot(a, b), lhs_contracting_dims={2}, rhs_contracting_dims={0}
  t = f32[3,4,2,6] dot(at, bt), lhs_contracting_dims={0}, rhs_contracting_dims={2}
  ROOT out = (f32[3,4,2,6], f32[3,4,2,6]) tuple(d, t)
}
)");
  ASSERT_TRUE(on.ok()) << on.status().to_string();
  const std::string plan = describe(on->executable->plan());
  EXPECT_NE(plan.find("%d: gemm f32 batch 1 m 12 n 12 k 5"), std::string::npos) << plan;
  EXPECT_NE(plan.find("%t: gemm f32 batch 1 m 12 n 12 k 5 A^T B^T"), std::string::npos) << plan;
  StatusOr<BothResults> run = run_both(*on, random_arguments(*on->written, 13));
  ASSERT_TRUE(run.ok()) << run.status().to_string();
  EXPECT_EQ(differs(run->actual, run->expected), "");
}

TEST(CudaExecutor, DotsWithoutAGemmFormSumEachOutputElement) {
  EmulatedDevice device;
  StatusOr<OnDevice> on = compile_on(device, R"(
HloModule dots

ENTRY main {
  q = f32[5,3,4,6] parameter(0)
  k = f32[4,3,6,7] parameter(1)
  x = f32[2,3,4] parameter(2)
  w = f32[4,5] parameter(3)
  scores = f32[3,5,7] dot(q, k), lhs_batch_dims={1}, rhs_batch_dims={1}, lhs_contracting_dims={2,3}, rhs_contracting_dims={0,2}
  projected = f32[2,3,5] dot(x, w), lhs_contracting_dims={2}, rhs_contracting_dims={0}
  ROOT r = (f32[3,5,7], f32[2,3,5]) tuple(scores, projected)
}
)");
  ASSERT_TRUE(on.ok()) << on.status().to_string();
  EXPECT_NE(describe(on->executable->plan()).find("%scores: kernel"), std::string::npos) << describe(on->executable->plan());
  std::vector<Literal> arguments = random_arguments(*on->written, 4);
  StatusOr<BothResults> run = run_both(*on, arguments);
  ASSERT_TRUE(run.ok()) << run.status().to_string();
  const Literal &actual = run->actual, &expected = run->expected;
  EXPECT_EQ(differs(actual, expected), "");  // within the tolerance of library GEMMs
}

// Attention's dots over [B, T, H, D] (batch dimensions B and H, not leading, not folding into
// one stride) are GEMMs batched over H, one call per B, at offsets; a weight gradient's two
// contracting dimensions side by side are one. The emulated device runs the plan's GEMM kernel
// per call (a GPU, cuBLAS), against the evaluator.
TEST(CudaExecutor, AttentionDotsAreOneGemmCallPerOuterBatchIndex) {
  EmulatedDevice device;
  StatusOr<OnDevice> on = compile_on(device, R"(
HloModule attention

ENTRY main {
  q = f32[2,5,3,4] parameter(0)
  k = f32[2,6,3,4] parameter(1)
  v = f32[2,6,3,4] parameter(2)
  scores = f32[2,3,5,6] dot(q, k), lhs_batch_dims={0,2}, lhs_contracting_dims={3}, rhs_batch_dims={0,2}, rhs_contracting_dims={3}
  attended = f32[2,3,5,4] dot(scores, v), lhs_batch_dims={0,1}, lhs_contracting_dims={3}, rhs_batch_dims={0,2}, rhs_contracting_dims={1}
  x = f32[2,5,4] parameter(3)
  g = f32[2,5,6] parameter(4)
  weights = f32[4,6] dot(x, g), lhs_contracting_dims={0,1}, rhs_contracting_dims={0,1}
  ROOT r = (f32[2,3,5,6], f32[2,3,5,4], f32[4,6]) tuple(scores, attended, weights)
}
)");
  ASSERT_TRUE(on.ok()) << on.status().to_string();
  const std::string plan = describe(on->executable->plan());
  EXPECT_NE(plan.find("%scores: gemm f32 batch 3 m 5 n 6 k 4 B^T, 2 calls"), std::string::npos) << plan;
  EXPECT_NE(plan.find("%attended: gemm f32 batch 3 m 5 n 4 k 6, 2 calls"), std::string::npos) << plan;
  EXPECT_NE(plan.find("%weights: gemm f32 batch 1 m 4 n 6 k 10 A^T\n"), std::string::npos) << plan;
  StatusOr<BothResults> run = run_both(*on, random_arguments(*on->written, 12));
  ASSERT_TRUE(run.ok()) << run.status().to_string();
  EXPECT_EQ(differs(run->actual, run->expected), "");
}

// topk: the k largest (or smallest) of each row in the total order (NaN above +inf, -0 below
// +0), ties in their row order, with their indices.
TEST(CudaExecutor, TopkPicksInTheEvaluatorsStableTotalOrder) {
  EmulatedDevice device;
  StatusOr<OnDevice> on = compile_on(device, R"(
HloModule topks

ENTRY main {
  x = f32[3,8] parameter(0)
  largest = (f32[3,4], s32[3,4]) topk(x), k=4, largest=true
  smallest = (f32[3,4], s32[3,4]) topk(x), k=4, largest=false
  lv = f32[3,4] get-tuple-element(largest), index=0
  li = s32[3,4] get-tuple-element(largest), index=1
  sv = f32[3,4] get-tuple-element(smallest), index=0
  si = s32[3,4] get-tuple-element(smallest), index=1
  ROOT r = (f32[3,4], s32[3,4], f32[3,4], s32[3,4]) tuple(lv, li, sv, si)
}
)");
  ASSERT_TRUE(on.ok()) << on.status().to_string();
  std::vector<Literal> arguments = random_arguments(*on->written, 12);
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  const float x[] = {3, 1, 3, 2, 3, 0, 1, 1,  -0.0f, 0.0f, -0.0f, 0.0f, nan, inf, -inf, 5,  7, 7, 7, 7, 7, 7, 7, 7};
  std::copy(std::begin(x), std::end(x), arguments[0].data<float>().data());
  StatusOr<BothResults> run = run_both(*on, arguments);
  ASSERT_TRUE(run.ok()) << run.status().to_string();
  EXPECT_EQ(not_identical(run->actual, run->expected, 4), "");
}

}  // namespace
}  // namespace insitu::cuda
