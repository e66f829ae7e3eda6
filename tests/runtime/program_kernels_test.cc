// Sort and reduce whose to_apply runs as a scalar program over the native kernels (sort with
// JAX's NaN-canonicalizing total-order comparator, key/value sorts, a comparator that is not a
// strict weak order; argmax/argmin as a variadic reduce with ties and NaN; a two-input reduce
// over several dimensions), end to end through Executable against the reference evaluator,
// bit for bit, on 1 and 2 threads, with no instruction left to the fallback.
#include "executable_test_util.h"
#include "insitu/runtime/kernels.h"
#include "insitu/support/str.h"
#include "kernel_test_util.h"

namespace insitu {
namespace {

using testing_runtime::compile;
using testing_runtime::Compiled;
using testing_runtime::flatten;
using testing_runtime::to_handles;

// Arguments with NaN, infinities, -0 and ties mixed in (make_arguments gives plain values).
std::vector<Literal> special_arguments(const Module& module, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<Literal> arguments;
  for (const Instruction* parameter : module.entry()->parameters()) {
    Literal argument(parameter->shape());
    dispatch_element_type(argument.shape().element_type(), [&](auto tag) {
      using T = decltype(tag);
      for (auto& value : argument.template data<T>()) {
        const unsigned pick = rng() % 12;
        if constexpr (std::is_floating_point_v<T>) {
          value = pick == 0   ? std::numeric_limits<T>::quiet_NaN()
                  : pick == 1 ? -std::numeric_limits<T>::infinity()
                  : pick == 2 ? T(-0.0)
                  : pick == 3 ? T(0.0)
                              : static_cast<T>(static_cast<int>(rng() % 7) - 3);  // ties
        } else if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
          value = static_cast<T>(static_cast<int>(rng() % 9) - 4);
        }
      }
    });
    arguments.push_back(std::move(argument));
  }
  return arguments;
}

void expect_native_matches_evaluator(const char* text) {
  Compiled compiled = compile(text);
  ASSERT_TRUE(compiled.executable != nullptr);
  for (uint32_t seed : {1u, 2u, 3u}) {
    const std::vector<Literal> arguments = special_arguments(*compiled.original, seed);
    StatusOr<Literal> expected = evaluate_module(*compiled.original, arguments);
    ASSERT_TRUE(expected.ok()) << expected.status().to_string();
    std::vector<Literal> expected_leaves;
    flatten(*expected, expected_leaves);
    for (int threads : {1, 2}) {
      ExecutionStats stats;
      StatusOr<std::vector<BufferHandle>> results =
          compiled.executable->execute(to_handles(arguments), {.threads = threads, .stats = &stats});
      ASSERT_TRUE(results.ok()) << results.status().to_string();
      ASSERT_EQ(results->size(), expected_leaves.size());
      for (size_t i = 0; i < expected_leaves.size(); ++i) {
        Literal actual = *(*results)[i].to_literal();
        EXPECT_TRUE(actual == expected_leaves[i]) << "result " << i << " seed " << seed << " threads " << threads
                                                  << ": runtime " << actual.to_string() << " evaluator "
                                                  << expected_leaves[i].to_string();
      }
      EXPECT_EQ(stats.fallback_ops_executed, 0) << text;
    }
  }
}

TEST(RuntimeProgramKernels, JaxFloatSortAndKeyValueSortMatchEvaluator) {
  expect_native_matches_evaluator(R"(
HloModule sorts

canonical_less {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  nan = f32[] constant(nan)
  zero = f32[] constant(0)
  a_zero = pred[] compare(a, zero), direction=EQ
  a0 = f32[] select(a_zero, zero, a)
  a_nan = pred[] compare(a, a), direction=NE
  ca = f32[] select(a_nan, nan, a0)
  b_zero = pred[] compare(b, zero), direction=EQ
  b0 = f32[] select(b_zero, zero, b)
  b_nan = pred[] compare(b, b), direction=NE
  cb = f32[] select(b_nan, nan, b0)
  ROOT lt = pred[] compare(ca, cb), direction=LT, type=TOTALORDER
}

key_less {
  ka = s32[] parameter(0)
  kb = s32[] parameter(1)
  va = f32[] parameter(2)
  vb = f32[] parameter(3)
  ROOT lt = pred[] compare(ka, kb), direction=LT
}

partial_greater {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT gt = pred[] compare(a, b), direction=GT
}

ENTRY main {
  x = f32[40] parameter(0)
  k = s32[7,9] parameter(1)
  v = f32[7,9] parameter(2)
  m = f32[6,50] parameter(3)
  sorted = f32[40] sort(x), dimensions={0}, is_stable=true, to_apply=canonical_less
  pairs = (s32[7,9], f32[7,9]) sort(k, v), dimensions={0}, is_stable=true, to_apply=key_less
  keys = s32[7,9] get-tuple-element(pairs), index=0
  values = f32[7,9] get-tuple-element(pairs), index=1
  rows = f32[6,50] sort(m), dimensions={1}, to_apply=partial_greater
  ROOT t = (f32[40], s32[7,9], f32[7,9], f32[6,50]) tuple(sorted, keys, values, rows)
}
)");
}

TEST(RuntimeProgramKernels, ArgmaxAndTwoInputReducesMatchEvaluator) {
  expect_native_matches_evaluator(R"(
HloModule argmax

argmax {
  a = f32[] parameter(0)
  ia = s32[] parameter(1)
  b = f32[] parameter(2)
  ib = s32[] parameter(3)
  gt = pred[] compare(a, b), direction=GT
  a_nan = pred[] compare(a, a), direction=NE
  pick_a = pred[] or(gt, a_nan)
  value = f32[] select(pick_a, a, b)
  eq = pred[] compare(a, b), direction=EQ
  lower = pred[] compare(ia, ib), direction=LT
  tie = pred[] and(eq, lower)
  pick_index = pred[] or(pick_a, tie)
  index = s32[] select(pick_index, ia, ib)
  ROOT r = (f32[], s32[]) tuple(value, index)
}

sum_and_max {
  s = f32[] parameter(0)
  m = s32[] parameter(1)
  x = f32[] parameter(2)
  y = s32[] parameter(3)
  sum = f32[] add(s, x)
  max = s32[] maximum(m, y)
  ROOT r = (f32[], s32[]) tuple(sum, max)
}

ENTRY main {
  x = f32[9,33] parameter(0)
  y = s32[4,5,6] parameter(1)
  z = f32[4,5,6] parameter(2)
  iota = s32[9,33] iota(), iota_dimension=1
  ninf = f32[] constant(-inf)
  zero = s32[] constant(0)
  best = (f32[9], s32[9]) reduce(x, iota, ninf, zero), dimensions={1}, to_apply=argmax
  columns = (f32[33], s32[33]) reduce(x, iota, ninf, zero), dimensions={0}, to_apply=argmax
  f0 = f32[] constant(0.5)
  low = s32[] constant(-100)
  both = (f32[5], s32[5]) reduce(z, y, f0, low), dimensions={0,2}, to_apply=sum_and_max
  b0 = f32[9] get-tuple-element(best), index=0
  b1 = s32[9] get-tuple-element(best), index=1
  c1 = s32[33] get-tuple-element(columns), index=1
  s0 = f32[5] get-tuple-element(both), index=0
  s1 = s32[5] get-tuple-element(both), index=1
  ROOT t = (f32[9], s32[9], s32[33], f32[5], s32[5]) tuple(b0, b1, c1, s0, s1)
}
)");
}

// top_k by a key/index sort: the sort's operands (negated keys, an iota) die at the sort, so
// buffer assignment lets each result take its operand's buffer and the kernel sorts in place.
TEST(RuntimeProgramKernels, SortWritesOverOperandsThatDieAtIt) {
  const char* text = R"(
HloModule topk

greater {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ia = s32[] parameter(2)
  ib = s32[] parameter(3)
  ROOT lt = pred[] compare(a, b), direction=LT, type=TOTALORDER
}

ENTRY main {
  x = f32[4,10] parameter(0)
  keys = f32[4,10] negate(x)
  iota = s32[4,10] iota(), iota_dimension=1
  sorted = (f32[4,10], s32[4,10]) sort(keys, iota), dimensions={1}, is_stable=true, to_apply=greater
  values = f32[4,10] get-tuple-element(sorted), index=0
  indices = s32[4,10] get-tuple-element(sorted), index=1
  top = f32[4,3] slice(values), slice={[0:4], [0:3]}
  top_indices = s32[4,3] slice(indices), slice={[0:4], [0:3]}
  ROOT t = (f32[4,3], s32[4,3]) tuple(top, top_indices)
}
)";
  expect_native_matches_evaluator(text);
  Compiled compiled = compile(text);
  ASSERT_TRUE(compiled.executable != nullptr);
  const BufferAssignment& assignment = compiled.executable->assignment();
  const Computation* entry = compiled.optimized->entry();
  auto slice_of = [&](std::string_view name, const ShapeIndex& index = {}) {
    const Instruction* instruction = entry->find_instruction(name);
    EXPECT_NE(instruction, nullptr) << name;
    return instruction == nullptr ? std::nullopt : assignment.slice_at(instruction, index);
  };
  EXPECT_EQ(slice_of("sorted", {0}), slice_of("keys"));
  EXPECT_EQ(slice_of("sorted", {1}), slice_of("iota"));
}

// A comparator with an op the register programs do not take (exponential) runs through the
// loop-fusion planner's one-element path instead, with the same results.
TEST(RuntimeProgramKernels, ComparatorOutsideTheRegisterSetUsesTheFusionPath) {
  const char* text = R"(
HloModule sort_by_clamped

clamped_less {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  lo = f32[] constant(-1)
  hi = f32[] constant(1)
  ca = f32[] clamp(lo, a, hi)
  cb = f32[] clamp(lo, b, hi)
  ROOT lt = pred[] compare(ca, cb), direction=LT
}

ENTRY main {
  x = f32[33] parameter(0)
  ROOT sorted = f32[33] sort(x), dimensions={0}, to_apply=clamped_less
}
)";
  expect_native_matches_evaluator(text);
  StatusOr<std::unique_ptr<Module>> module = parse_module(text);
  ASSERT_TRUE(module.ok());
  const Computation* comparator = (*module)->find_computation("clamped_less");
  ASSERT_NE(comparator, nullptr);
  EXPECT_EQ(plan_register_program(*comparator), nullptr);
  KernelPlanPtr plan = plan_scalar_program(*comparator);
  ASSERT_NE(plan, nullptr);
  EXPECT_FALSE(plan->is_register_program());
}

// A combiner with the floating-point functions, divides and converts runs on registers, with the
// evaluator's bits: jax's cumulative log-add-exp (reduce-window), and a reduce mixing them.
TEST(RuntimeProgramKernels, TranscendentalCombinersRunOnRegisters) {
  const char* text = R"(
HloModule logaddexp

log_add_exp {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  d = f32[] subtract(a, b)
  nan = pred[] compare(d, d), direction=NE
  s = f32[] add(a, b)
  m = f32[] maximum(a, b)
  ad = f32[] abs(d)
  n = f32[] negate(ad)
  e = f32[] exponential(n)
  l = f32[] log-plus-one(e)
  r = f32[] add(m, l)
  ROOT out = f32[] select(nan, s, r)
}

mixed {
  a = f64[] parameter(0)
  b = f64[] parameter(1)
  q = f64[] divide(a, b)
  t = f64[] tanh(q)
  i = s32[] convert(b)
  j = s32[] sign(i)
  f = f64[] convert(j)
  p = f64[] power(t, f)
  ROOT out = f64[] add(a, p)
}

ENTRY main {
  x = f32[5,9] parameter(0)
  ninf = f32[] constant(-inf)
  c = f32[5,9] reduce-window(x, ninf), window={size=1x9 pad=0_0x8_0}, to_apply=log_add_exp
  y = f64[4,7] parameter(1)
  zero = f64[] constant(0.5)
  r = f64[4] reduce(y, zero), dimensions={1}, to_apply=mixed
  ROOT t = (f32[5,9], f64[4]) tuple(c, r)
}
)";
  expect_native_matches_evaluator(text);
  StatusOr<std::unique_ptr<Module>> module = parse_module(text);
  ASSERT_TRUE(module.ok());
  for (const char* name : {"log_add_exp", "mixed"}) {
    const Computation* combiner = (*module)->find_computation(name);
    ASSERT_NE(combiner, nullptr);
    KernelPlanPtr plan = plan_register_program(*combiner);
    ASSERT_NE(plan, nullptr) << name;
    EXPECT_TRUE(plan->is_register_program()) << name;
  }
}

// topk natively: ties keep the lower index, NaN is the largest, -0 sorts below 0; largest and
// smallest, floats and integers.
TEST(RuntimeProgramKernels, TopkMatchesEvaluator) {
  expect_native_matches_evaluator(R"(
HloModule topk

ENTRY main {
  x = f32[6,40] parameter(0)
  y = s32[3,17] parameter(1)
  big = (f32[6,5], s32[6,5]) topk(x), k=5, largest=true
  small = (f32[6,40], s32[6,40]) topk(x), k=40, largest=false
  ints = (s32[3,4], s32[3,4]) topk(y), k=4
  b0 = f32[6,5] get-tuple-element(big), index=0
  b1 = s32[6,5] get-tuple-element(big), index=1
  s0 = f32[6,40] get-tuple-element(small), index=0
  s1 = s32[6,40] get-tuple-element(small), index=1
  i0 = s32[3,4] get-tuple-element(ints), index=0
  i1 = s32[3,4] get-tuple-element(ints), index=1
  ROOT t = (f32[6,5], s32[6,5], f32[6,40], s32[6,40], s32[3,4], s32[3,4]) tuple(b0, b1, s0, s1, i0, i1)
}
)");
}

// cholesky and triangular-solve natively (linalg_kernels.cc) on positive-definite matrices
// built in the program (x x^T + 8 I, batched: one matrix per task on 2 threads), both
// triangles, every side and transpose, and on the raw arguments (NaN, infinities, matrices
// that are not positive definite: all-NaN results, bit for bit the evaluator's).
TEST(RuntimeProgramKernels, LinalgMatchesEvaluator) {
  expect_native_matches_evaluator(R"(
HloModule linalg

ENTRY main {
  x = f32[5,6,6] parameter(0)
  b = f32[5,6,3] parameter(1)
  c = f64[2,4,4] parameter(2)
  xxt = f32[5,6,6] dot(x, x), lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={0}, rhs_contracting_dims={2}
  eye = f32[6,6] iota(), iota_dimension=0
  eye2 = f32[6,6] iota(), iota_dimension=1
  diag = pred[6,6] compare(eye, eye2), direction=EQ
  eight = f32[] constant(8)
  zero = f32[] constant(0)
  e8 = f32[6,6] broadcast(eight), dimensions={}
  z = f32[6,6] broadcast(zero), dimensions={}
  d = f32[6,6] select(diag, e8, z)
  db = f32[5,6,6] broadcast(d), dimensions={1,2}
  spd = f32[5,6,6] add(xxt, db)
  lo = f32[5,6,6] cholesky(spd), lower=true
  up = f32[5,6,6] cholesky(spd), lower=false
  s1 = f32[5,6,3] triangular-solve(lo, b), left_side=true, lower=true, transpose_a=NO_TRANSPOSE
  s2 = f32[5,6,3] triangular-solve(lo, s1), left_side=true, lower=true, transpose_a=TRANSPOSE
  s3 = f32[5,6,3] triangular-solve(up, b), left_side=true, lower=false, unit_diagonal=true, transpose_a=ADJOINT
  bt = f32[5,3,6] transpose(b), dimensions={0,2,1}
  s4 = f32[5,3,6] triangular-solve(up, bt), left_side=false, lower=false, transpose_a=NO_TRANSPOSE
  s5 = f32[5,3,6] triangular-solve(lo, bt), left_side=false, lower=true, transpose_a=TRANSPOSE
  raw = f64[2,4,4] cholesky(c), lower=true
  rawsolve = f64[2,4,4] triangular-solve(c, c), left_side=true, lower=true, transpose_a=NO_TRANSPOSE
  ROOT t = (f32[5,6,6], f32[5,6,6], f32[5,6,3], f32[5,6,3], f32[5,3,6], f32[5,3,6], f64[2,4,4], f64[2,4,4]) tuple(lo, up, s2, s3, s4, s5, raw, rawsolve)
}
)");
}

// The LAPACK custom calls natively (lapack_kernels.cc), batched, in place where the call
// aliases an output to its operand, bit for bit the evaluator's, no fallback.
TEST(RuntimeProgramKernels, LapackCustomCallsMatchEvaluator) {
  expect_native_matches_evaluator(R"(
HloModule lapack

ENTRY main {
  x = f32[3,4,4] parameter(0)
  b = f32[3,4,2] parameter(1)
  w = f64[2,5,3] parameter(2)
  xxt = f32[3,4,4] dot(x, x), lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={0}, rhs_contracting_dims={2}
  chol = (f32[3,4,4]{1,2,0}, s32[3]) custom-call(xxt), custom_call_target="lapack_spotrf_ffi", output_to_operand_aliasing={{0}: (0, {})}, api_version=API_VERSION_TYPED_FFI, backend_config={uplo = 76 : ui8}
  l = f32[3,4,4] get-tuple-element(chol), index=0
  solve = f32[3,4,2] custom-call(l, b), custom_call_target="lapack_strsm_ffi", output_to_operand_aliasing={{}: (1, {})}, api_version=API_VERSION_TYPED_FFI, backend_config={diag = 78 : ui8, side = 76 : ui8, trans_x = 84 : ui8, uplo = 85 : ui8}
  lu = (f32[3,4,4], s32[3,4], s32[3]) custom-call(x), custom_call_target="lapack_sgetrf_ffi", output_to_operand_aliasing={{0}: (0, {})}, api_version=API_VERSION_TYPED_FFI, backend_config={}
  qr = (f64[2,5,3], f64[2,3]) custom-call(w), custom_call_target="lapack_dgeqrf_ffi", output_to_operand_aliasing={{0}: (0, {})}, api_version=API_VERSION_TYPED_FFI, backend_config={}
  r = f64[2,5,3] get-tuple-element(qr), index=0
  tau = f64[2,3] get-tuple-element(qr), index=1
  q = f64[2,5,3] custom-call(r, tau), custom_call_target="lapack_dorgqr_ffi", output_to_operand_aliasing={{}: (0, {})}, api_version=API_VERSION_TYPED_FFI, backend_config={}
  eigh = (f32[3,4,4], f32[3,4], s32[3]) custom-call(xxt), custom_call_target="lapack_ssyevd_ffi", output_to_operand_aliasing={{0}: (0, {})}, api_version=API_VERSION_TYPED_FFI, backend_config={mode = 86 : ui8, uplo = 85 : ui8}
  svd = (f64[2,5,3], f64[2,3], f64[2,5,3], f64[2,3,3], s32[2]) custom-call(w), custom_call_target="lapack_dgesdd_ffi", output_to_operand_aliasing={{0}: (0, {})}, api_version=API_VERSION_TYPED_FFI, backend_config={mode = 83 : ui8}
  ROOT t = ((f32[3,4,4]{1,2,0}, s32[3]), f32[3,4,2], (f32[3,4,4], s32[3,4], s32[3]), f64[2,5,3], (f32[3,4,4], f32[3,4], s32[3]), (f64[2,5,3], f64[2,3], f64[2,5,3], f64[2,3,3], s32[2])) tuple(chol, solve, lu, q, eigh, svd)
}
)");
}

// convolution natively on its direct loop (convolution_kernels.cc): NHWC and NCHW, strides,
// padding (negative too), both dilations, reversal, feature groups, batch groups; f64, f32 below
// the GEMM library's size, bf16, s32; large enough to split over 2 threads; bit for bit the
// evaluator's.
TEST(RuntimeProgramKernels, ConvolutionMatchesEvaluator) {
  expect_native_matches_evaluator(R"(
HloModule convolution

ENTRY main {
  x = f64[4,17,16,4] parameter(0)
  w = f64[3,3,4,6] parameter(1)
  g = f64[3,3,2,6] parameter(2)
  n = f64[2,3,7,7] parameter(3)
  k = f64[5,3,3,2] parameter(4)
  b = bf16[1,6,3] parameter(5)
  bk = bf16[2,3,4] parameter(6)
  i = s32[4,5,1] parameter(7)
  ik = s32[1,1,8] parameter(8)
  xs = f32[2,5,5,4] parameter(9)
  ws = f32[3,3,4,6] parameter(10)
  nhwc = f64[4,17,16,6] convolution(x, w), window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f
  strided = f64[4,7,6,6] convolution(x, w), window={size=3x3 stride=2x2 pad=0_-1x0_0 rhs_dilate=1x2}, dim_labels=b01f_01io->b01f
  grouped = f64[4,15,14,6] convolution(x, g), window={size=3x3}, dim_labels=b01f_01io->b01f, feature_group_count=2
  nchw = f64[2,5,13,7] convolution(n, k), window={size=3x2 pad=1_1x0_1 lhs_dilate=2x1 rhs_reversal=1x0}, dim_labels=bf01_oi01->bf01
  half = bf16[1,5,4] convolution(b, bk), window={size=2}, dim_labels=b0f_0io->b0f
  ints = s32[1,5,8] convolution(i, ik), window={size=1}, dim_labels=b0f_0io->b0f, batch_group_count=4
  small = f32[2,5,5,6] convolution(xs, ws), window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f
  ROOT t = (f64[4,17,16,6], f64[4,7,6,6], f64[4,15,14,6], f64[2,5,13,7], bf16[1,5,4], s32[1,5,8], f32[2,5,5,6]) tuple(nhwc, strided, grouped, nchw, half, ints, small)
}
)");
}

// f32 convolutions at the GEMM library's size (patches times the kernel, convolution_kernels.cc)
// against the reference evaluator within library_gemm.h's tolerance: |runtime - evaluator| <=
// K * 2^-23 * (the evaluator on the arguments' absolute values), K the largest patch length.
// Covered: NHWC; stride with negative padding and window dilation; feature groups; batch groups;
// an OIHW kernel with reversal (patches in feature-major order); an HWOI kernel (no single
// matrix: one product per window position, accumulated); an input gradient's lhs dilation; a
// kernel gradient (batch and feature swapped, a window over the whole image: transposed
// patches); and an NCHW result, which stays on the direct loop. NHWC and the strided,
// window-dilated batch of 5 (slices of 3 and 2 images) run on the library's own convolution
// primitive. No instruction is left to the fallback.
TEST(RuntimeProgramKernels, LibraryConvolutionMatchesEvaluatorWithinTolerance) {
  constexpr int64_t kLargestPatch = 17 * 16 * 4;
  Compiled compiled = compile(R"(
HloModule convolution_library

ENTRY main {
  x = f32[4,17,16,8] parameter(0)
  w = f32[3,3,8,16] parameter(1)
  g = f32[3,3,4,16] parameter(2)
  o = f32[16,8,3,3] parameter(3)
  dy = f32[4,17,16,16] parameter(4)
  xb = f32[8,10,10,4] parameter(5)
  wb = f32[3,3,4,16] parameter(6)
  y = f32[2,8,9,9] parameter(7)
  wo = f32[3,3,16,8] parameter(8)
  x5 = f32[5,17,16,8] parameter(9)
  nhwc = f32[4,17,16,16] convolution(x, w), window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f
  strided = f32[4,7,6,16] convolution(x, w), window={size=3x3 stride=2x2 pad=0_-1x0_0 rhs_dilate=1x2}, dim_labels=b01f_01io->b01f
  grouped = f32[4,15,14,16] convolution(x, g), window={size=3x3}, dim_labels=b01f_01io->b01f, feature_group_count=2
  batched = f32[4,8,8,16] convolution(xb, wb), window={size=3x3}, dim_labels=b01f_01io->b01f, batch_group_count=2
  oihw = f32[4,17,16,16] convolution(x, o), window={size=3x3 pad=1_1x1_1 rhs_reversal=1x1}, dim_labels=b01f_oi01->b01f
  dilated = f32[4,33,31,16] convolution(x, w), window={size=3x3 pad=1_1x1_1 lhs_dilate=2x2}, dim_labels=b01f_01io->b01f
  kernel_grad = f32[3,3,8,16] convolution(x, dy), window={size=17x16 pad=1_1x1_1}, dim_labels=f01b_i01o->01bf
  nchw = f32[2,16,7,7] convolution(y, o), window={size=3x3}, dim_labels=bf01_oi01->bf01
  hwoi = f32[4,17,16,16] convolution(x, wo), window={size=3x3 pad=1_1x1_1 rhs_reversal=0x1}, dim_labels=b01f_01oi->b01f
  odd = f32[5,8,7,16] convolution(x5, w), window={size=3x3 stride=2x2 pad=0_0x1_0 rhs_dilate=1x2}, dim_labels=b01f_01io->b01f
  ROOT t = (f32[4,17,16,16], f32[4,7,6,16], f32[4,15,14,16], f32[4,8,8,16], f32[4,17,16,16], f32[4,33,31,16], f32[3,3,8,16], f32[2,16,7,7], f32[4,17,16,16], f32[5,8,7,16]) tuple(nhwc, strided, grouped, batched, oihw, dilated, kernel_grad, nchw, hwoi, odd)
}
)");
  ASSERT_TRUE(compiled.executable != nullptr);
  const std::vector<Literal> arguments = testing_runtime::make_arguments(*compiled.original, 5);
  std::vector<Literal> absolute;
  for (const Literal& argument : arguments) {
    Literal copy = argument;
    for (float& value : copy.data<float>()) value = std::fabs(value);
    absolute.push_back(std::move(copy));
  }
  StatusOr<Literal> expected = evaluate_module(*compiled.original, arguments);
  StatusOr<Literal> magnitude = evaluate_module(*compiled.original, absolute);
  ASSERT_TRUE(expected.ok() && magnitude.ok());
  std::vector<Literal> expected_leaves, magnitude_leaves;
  flatten(*expected, expected_leaves);
  flatten(*magnitude, magnitude_leaves);
  for (int threads : {1, 2}) {
    ExecutionStats stats;
    StatusOr<std::vector<BufferHandle>> results =
        compiled.executable->execute(to_handles(arguments), {.threads = threads, .stats = &stats});
    ASSERT_TRUE(results.ok()) << results.status().to_string();
    ASSERT_EQ(results->size(), expected_leaves.size());
    for (size_t i = 0; i < expected_leaves.size(); ++i)
      testing_runtime::expect_within_gemm_tolerance(*(*results)[i].to_literal(), expected_leaves[i],
                                                    magnitude_leaves[i], kLargestPatch,
                                                    str_cat("result ", i, " threads ", threads));
    EXPECT_EQ(stats.fallback_ops_executed, 0);
  }
}

// fft natively (fft_kernels.cc): every type, 1-3 dimensions, radix-2 and direct lengths,
// batched over 2 threads; converts into complex and real/imag out of it (convert_kernels.cc);
// bit for bit the evaluator's.
TEST(RuntimeProgramKernels, FftMatchesEvaluator) {
  expect_native_matches_evaluator(R"(
HloModule fft

ENTRY main {
  x = f32[64,6,8] parameter(0)
  y = f64[3,5,7] parameter(1)
  rf = c64[64,6,5] fft(x), fft_type=RFFT, fft_length={6,8}
  ir = f32[64,6,8] fft(rf), fft_type=IRFFT, fft_length={6,8}
  f = c64[64,6,5] fft(rf), fft_type=FFT, fft_length={5}
  i = c64[64,6,5] fft(f), fft_type=IFFT, fft_length={64,6,5}
  ry = c128[3,5,4] fft(y), fft_type=RFFT, fft_length={3,5,7}
  iy = f64[3,5,7] fft(ry), fft_type=IRFFT, fft_length={3,5,7}
  cx = c64[64,6,8] convert(x)
  cc = c128[64,6,8] convert(cx)
  re = f32[64,6,5] real(rf)
  im = f64[3,5,4] imag(ry)
  ROOT t = (c64[64,6,5], f32[64,6,8], c64[64,6,5], c64[64,6,5], c128[3,5,4], f64[3,5,7], c128[64,6,8], f32[64,6,5], f64[3,5,4]) tuple(rf, ir, f, i, ry, iy, cc, re, im)
}
)");
}

// rng-bit-generator natively (rng_kernels.cc): both algorithms, every width, odd shapes, a
// 3-word philox state; width-changing bitcast-converts (how jax passes a u32[4] key) as byte
// copies; bit for bit the evaluator's.
TEST(RuntimeProgramKernels, RngBitGeneratorMatchesEvaluator) {
  expect_native_matches_evaluator(R"(
HloModule rng

ENTRY main {
  key = u32[4] parameter(0)
  k = u32[2,2] reshape(key)
  s = u64[2] bitcast-convert(k)
  s4 = u64[4] concatenate(s, s), dimensions={0}
  s3 = u64[3] slice(s4), slice={[1:4]}
  a = (u64[2], u32[3,5]) rng-bit-generator(s), algorithm=rng_three_fry
  b = (u64[2], u64[7]) rng-bit-generator(s), algorithm=rng_three_fry
  c = (u64[2], u8[9]) rng-bit-generator(s), algorithm=rng_philox
  d = (u64[3], u64[5]) rng-bit-generator(s3), algorithm=rng_philox
  e = (u64[2], u16[]) rng-bit-generator(s), algorithm=rng_default
  back = u32[2,2] bitcast-convert(s)
  ROOT t = ((u64[2], u32[3,5]), (u64[2], u64[7]), (u64[2], u8[9]), (u64[3], u64[5]), (u64[2], u16[]), u32[2,2]) tuple(a, b, c, d, e, back)
}
)");
}

}  // namespace
}  // namespace insitu
