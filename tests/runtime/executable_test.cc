// End-to-end: HLO -> optimize (copy insertion, buffer assignment) -> Executable, compared with
// the reference evaluator on the same inputs; donation, aliasing and copy protection.
#include "executable_test_util.h"

namespace insitu {
namespace {

using testing_runtime::compile;
using testing_runtime::Compiled;
using testing_runtime::flatten;
using testing_runtime::make_arguments;
using testing_runtime::read_text;
using testing_runtime::to_handles;

// Runs the module on the runtime (with `threads`) and the evaluator; results must be equal.
void expect_matches_evaluator(const Compiled& compiled, uint32_t seed, int threads, ExecuteOptions options = {}) {
  ASSERT_TRUE(compiled.executable != nullptr);
  const std::vector<Literal> arguments = make_arguments(*compiled.original, seed);
  StatusOr<Literal> expected = evaluate_module(*compiled.original, arguments);
  ASSERT_TRUE(expected.ok()) << expected.status().to_string();
  std::vector<Literal> expected_leaves;
  flatten(*expected, expected_leaves);
  options.threads = threads;
  StatusOr<std::vector<BufferHandle>> results = compiled.executable->execute(to_handles(arguments), options);
  ASSERT_TRUE(results.ok()) << results.status().to_string();
  ASSERT_EQ(results->size(), expected_leaves.size());
  for (size_t i = 0; i < expected_leaves.size(); ++i) {
    Literal actual = *(*results)[i].to_literal();
    EXPECT_TRUE(actual == expected_leaves[i]) << "result " << i << ": runtime " << actual.to_string()
                                              << " evaluator " << expected_leaves[i].to_string();
  }
}

class RuntimeCorpus : public ::testing::TestWithParam<const char*> {};

TEST_P(RuntimeCorpus, MatchesEvaluator) {
  const std::string text = read_text(std::string(INSITU_SOURCE_DIR) + "/tests/corpus/" + GetParam() + ".hlo");
  ASSERT_FALSE(text.empty());
  Compiled compiled = compile(text);
  for (int threads : {1, 4}) {
    for (uint32_t seed : {1u, 2u}) {
      SCOPED_TRACE(testing::Message() << GetParam() << " threads=" << threads << " seed=" << seed);
      // Seed 1 donates only what must be donated (may-alias parameters get copy protection);
      // seed 2 donates everything (aliased parameters are written in place).
      ASSERT_TRUE(compiled.executable != nullptr);
      ExecuteOptions options;
      for (const Executable::Argument& argument : compiled.executable->arguments())
        options.donate.push_back(seed == 2 || argument.must_alias);
      expect_matches_evaluator(compiled, seed, threads, options);
    }
  }
}

// custom_call_* and the seed run in custom_call_test.cc with registered kernels.
INSTANTIATE_TEST_SUITE_P(
    Corpus, RuntimeCorpus,
    ::testing::Values("kv_cache_decode", "prefix_sum_while", "while_counter_accumulator", "cond_inside_scan",
                      "conditional_indexed", "conditional_pred", "matmul_bias_relu", "softmax", "layernorm",
                      "scatter_add", "sort_comparator", "topk_sort_slice", "embedding_gather", "iota_pad_concatenate",
                      "reverse_slice_dynamic", "map_and_call", "fusion_loop", "clamp_select_compare",
                      "bitcast_convert_bits", "batched_dot", "argmax_variadic_reduce", "cumsum_reduce_window",
                      "reduce_window_maxpool", "opt_barrier", "copy_start_done", "donated_tuple_params",
                      "element_types", "typed_constants", "complex_ops", "control_predecessors",
                      "stack_frames", "frontend_attributes_sharding",
                      "tiled_entry_layout", "nested_tuples", "bitcast_reshape_transpose"),
    [](const ::testing::TestParamInfo<const char*>& info) { return std::string(info.param); });

}  // namespace
}  // namespace insitu

namespace insitu {
namespace {

// A layer of hot ops runs entirely on native kernels (no evaluator fallback), on 1 and 2
// threads, with arrays big enough for the parallel path, and matches the evaluator.
TEST(RuntimeExecutable, HotOpsRunNativelyAndMatchEvaluator) {
  testing_runtime::Compiled compiled = testing_runtime::compile(R"(
HloModule hot, input_output_alias={ {1}: (1, {}, may-alias) }
ENTRY main {
  x = f32[256,512] parameter(0)
  cache = f32[64,512] parameter(1)
  position = s32[] parameter(2)
  half = f32[] constant(0.5)
  halves = f32[256,512] broadcast(half), dimensions={}
  scaled = f32[256,512] multiply(x, halves)
  e = f32[256,512] exponential(scaled)
  t = f32[256,512] tanh(e)
  zero = f32[] constant(0)
  zeros = f32[256,512] broadcast(zero), dimensions={}
  positive = pred[256,512] compare(x, zeros), direction=GT
  chosen = f32[256,512] select(positive, t, x)
  as_bf16 = bf16[256,512] convert(chosen)
  back = f32[256,512] convert(as_bf16)
  transposed = f32[512,256] transpose(back), dimensions={1,0}
  row = f32[1,512] slice(back), slice={[3:4], [0:512]}
  i0 = s32[] constant(0)
  updated = f32[64,512] dynamic-update-slice(cache, row, position, i0)
  window = f32[8,512] dynamic-slice(updated, position, i0), dynamic_slice_sizes={8,512}
  iota = s32[8,512] iota(), iota_dimension=1
  joined = f32[72,512] concatenate(updated, window), dimensions={0}
  ROOT out = (f32[512,256], f32[64,512], f32[72,512], s32[8,512]) tuple(transposed, updated, joined, iota)
})");
  ASSERT_TRUE(compiled.executable != nullptr);
  for (int threads : {1, 2}) {
    const std::vector<Literal> arguments = testing_runtime::make_arguments(*compiled.original, 7);
    StatusOr<Literal> expected = evaluate_module(*compiled.original, arguments);
    ASSERT_TRUE(expected.ok()) << expected.status().to_string();
    ExecutionStats stats;
    StatusOr<std::vector<BufferHandle>> results = compiled.executable->execute(
        testing_runtime::to_handles(arguments), {.donate = {false, true, false}, .threads = threads, .stats = &stats});
    ASSERT_TRUE(results.ok()) << results.status().to_string();
    ASSERT_EQ(results->size(), 4u);
    for (size_t i = 0; i < 4; ++i)
      EXPECT_TRUE(*(*results)[i].to_literal() == expected->element(i)) << "result " << i << " threads=" << threads;
    EXPECT_EQ(stats.fallback_ops_executed, 0);
    EXPECT_EQ(stats.bytes_copied, 0);
  }
}

// Loop fusion over several 8192-element blocks and a short last one, split over threads: every
// kind of broadcast the fused kernel gathers (a repeated element per row, a contiguous row,
// runs that cross two dimensions, a scalar), compare/select/convert inside, and a fusion writing its
// result over an operand that dies at it. All bit for bit the evaluator's, no fallback.
TEST(RuntimeExecutable, LoopFusionsOverManyBlocksMatchEvaluator) {
  testing_runtime::Compiled compiled = testing_runtime::compile(R"(
HloModule fused
ENTRY main {
  x = f32[3,12000] parameter(0)
  per_row = f32[3] parameter(1)
  per_column = f32[12000] parameter(2)
  plane = f32[4,50] parameter(3)
  scale = f32[] parameter(4)
  rows = f32[4,200] parameter(5)
  cube = f32[4,50,200] parameter(6)
  n = f32[3,12000] negate(x)
  b_row = f32[3,12000] broadcast(per_row), dimensions={0}
  b_column = f32[3,12000] broadcast(per_column), dimensions={1}
  b_scale = f32[3,12000] broadcast(scale), dimensions={}
  a = f32[3,12000] multiply(n, b_row)
  b = f32[3,12000] add(a, b_column)
  d = f32[3,12000] multiply(b, b_scale)
  zero = f32[] constant(0)
  zeros = f32[3,12000] broadcast(zero), dimensions={}
  positive = pred[3,12000] compare(d, zeros), direction=GT
  e = f32[3,12000] exponential(d)
  chosen = f32[3,12000] select(positive, d, e)
  as_int = s32[3,12000] convert(chosen)
  twice = s32[3,12000] add(as_int, as_int)
  b_plane = f32[4,50,200] broadcast(plane), dimensions={0,1}
  b_rows = f32[4,50,200] broadcast(rows), dimensions={0,2}
  m = f32[4,50,200] multiply(cube, b_plane)
  s = f32[4,50,200] subtract(m, b_rows)
  ROOT out = (f32[3,12000], s32[3,12000], f32[4,50,200]) tuple(chosen, twice, s)
})");
  ASSERT_TRUE(compiled.executable != nullptr);
  int fusions = 0;
  for (const Instruction* instruction : compiled.optimized->entry()->instructions())
    fusions += instruction->opcode() == Opcode::kFusion;
  EXPECT_GE(fusions, 1);
  testing_runtime::expect_matches_evaluator_natively(compiled, 11);
}

// Iotas inside a fusion, their indices computed per block: a causal mask from a row and a
// column iota (s32, and u8 and s64 ones), over blocks of whole rows (130 long, read with a row
// max) and over plain blocks (the last dimension 3000 long, two blocks and a tail). Bit for bit
// the evaluator's; the iotas have no buffers of their own.
TEST(RuntimeExecutable, IotasInsideFusionsMatchEvaluator) {
  testing_runtime::Compiled compiled = testing_runtime::compile(R"(
HloModule iotas
ENTRY main {
  x = f32[2,3,40,130] parameter(0)
  m = f32[2,3,40] parameter(1)
  y = f32[5,3000] parameter(2)
  rows = s32[2,3,40,130] iota(), iota_dimension=2
  cols = s32[2,3,40,130] iota(), iota_dimension=3
  keep = pred[2,3,40,130] compare(cols, rows), direction=LE
  ninf = f32[] constant(-inf)
  nb = f32[2,3,40,130] broadcast(ninf), dimensions={}
  masked = f32[2,3,40,130] select(keep, x, nb)
  mb = f32[2,3,40,130] broadcast(m), dimensions={0,1,2}
  shifted = f32[2,3,40,130] subtract(masked, mb)
  e = f32[2,3,40,130] exponential(shifted)
  small = u8[5,3000] iota(), iota_dimension=1
  big = s64[5,3000] iota(), iota_dimension=0
  small_f = f32[5,3000] convert(small)
  big_f = f32[5,3000] convert(big)
  sum = f32[5,3000] add(small_f, big_f)
  z = f32[5,3000] multiply(y, sum)
  ROOT out = (f32[2,3,40,130], f32[5,3000]) tuple(e, z)
})");
  ASSERT_TRUE(compiled.executable != nullptr);
  for (const Instruction* instruction : compiled.optimized->entry()->instructions())
    EXPECT_NE(instruction->opcode(), Opcode::kIota) << instruction->name() << " was not fused";
  testing_runtime::expect_matches_evaluator_natively(compiled, 13);
}

// A fused chain whose scratch slots are reused once their values die, by values of the same
// width only: f32 and f64 values and preds interleaved, a value kept from the first op to the
// last (its slot never reused while live), and a multi-output fusion's middle output (kept until
// the block ends and copied out). Several blocks and a short last one; bit for bit the evaluator's.
TEST(RuntimeExecutable, FusedChainsReuseScratchSlotsOfDeadValues) {
  testing_runtime::Compiled compiled = testing_runtime::compile(R"(
HloModule slots
ENTRY main {
  x = f32[5,3001] parameter(0)
  y = f32[5,3001] parameter(1)
  half = f32[] constant(0.5)
  h = f32[5,3001] broadcast(half), dimensions={}
  early = f32[5,3001] multiply(x, h)
  a1 = f32[5,3001] add(early, y)
  a2 = f32[5,3001] multiply(a1, a1)
  w1 = f64[5,3001] convert(a2)
  w2 = f64[5,3001] multiply(w1, w1)
  n1 = f32[5,3001] convert(w2)
  c = pred[5,3001] compare(n1, a2), direction=GT
  a3 = f32[5,3001] subtract(n1, y)
  w3 = f64[5,3001] convert(a3)
  w4 = f64[5,3001] add(w3, w2)
  n2 = f32[5,3001] convert(w4)
  s = f32[5,3001] select(c, n2, a3)
  last = f32[5,3001] add(s, early)
  ROOT out = (f32[5,3001], f64[5,3001], f32[5,3001]) tuple(a2, w4, last)
})");
  ASSERT_TRUE(compiled.executable != nullptr);
  testing_runtime::expect_matches_evaluator_natively(compiled, 12);
}

}  // namespace
// Broadcasts constant along rows of at least 128 (a row's max, mean or sum stretched over it)
// are read as a scalar per row: rows shorter than a block (300, 200) run several whole rows a
// block (the ops reading a row scalar once per row, a short last block), rows of exactly two
// blocks (4096) and of a block and a tail (2500) run as pieces; 2-D and 3-D results, row scalars
// with one source element per row and ones repeated across rows (c_scale, d_scale), single- and
// multi-output fusions, a row scalar on either side of an op. Bit for bit the evaluator's.
TEST(RuntimeExecutable, RowConstantBroadcastsRunAsScalarsPerRow) {
  testing_runtime::Compiled compiled = testing_runtime::compile(R"(
HloModule rows
ENTRY main {
  a = f32[7,300] parameter(0)
  a_max = f32[7] parameter(1)
  b = f32[3,4096] parameter(2)
  b_sum = f32[3] parameter(3)
  c = f32[2,3,2500] parameter(4)
  c_mean = f32[2,3] parameter(5)
  c_scale = f32[2] parameter(6)
  a_b = f32[7,300] broadcast(a_max), dimensions={0}
  a_shifted = f32[7,300] subtract(a, a_b)
  a_exp = f32[7,300] exponential(a_shifted)
  a_left = f32[7,300] subtract(a_b, a)
  b_b = f32[3,4096] broadcast(b_sum), dimensions={0}
  b_div = f32[3,4096] divide(b, b_b)
  b_neg = f32[3,4096] negate(b_div)
  c_b = f32[2,3,2500] broadcast(c_mean), dimensions={0,1}
  c_s = f32[2,3,2500] broadcast(c_scale), dimensions={0}
  c_centred = f32[2,3,2500] subtract(c, c_b)
  c_scaled = f32[2,3,2500] multiply(c_centred, c_s)
  d = f32[3,5,200] parameter(7)
  d_scale = f32[3] parameter(8)
  d_s = f32[3,5,200] broadcast(d_scale), dimensions={0}
  d_scaled = f32[3,5,200] multiply(d, d_s)
  d_exp = f32[3,5,200] exponential(d_scaled)
  ROOT out = (f32[7,300], f32[7,300], f32[7,300], f32[3,4096], f32[3,4096], f32[2,3,2500], f32[3,5,200]) tuple(a_shifted, a_exp, a_left, b_div, b_neg, c_scaled, d_exp)
})");
  ASSERT_TRUE(compiled.executable != nullptr);
  testing_runtime::expect_matches_evaluator_natively(compiled, 5);
}

// An f32 add, subtract or multiply that one arithmetic op alone reads runs inside it (fusion_plan.cc
// fold_pairs): (x - mean) * rstd over rows of 300 (several a block) and of 4096 (pieces of one),
// (x - mean)^2 (the same value twice), a quotient with the pair on its right, a product divided
// by a block, a sum read twice (not folded), exp(x - max) per row, tanh(x * 2), erf(d - c),
// (x + w) - mean (two blocks, then a row scalar), (2 - c) * 2, exp(2 * d). Bit for bit the
// evaluator's.
TEST(RuntimeExecutable, ArithmeticPairsRunAsOnePass) {
  testing_runtime::Compiled compiled = testing_runtime::compile(R"(
HloModule pairs
ENTRY main {
  a = f32[7,300] parameter(0)
  a_mean = f32[7] parameter(1)
  a_rstd = f32[7] parameter(2)
  b = f32[3,4096] parameter(3)
  b_mean = f32[3] parameter(4)
  c = f32[5,200] parameter(5)
  d = f32[5,200] parameter(6)
  m = f32[7,300] broadcast(a_mean), dimensions={0}
  r = f32[7,300] broadcast(a_rstd), dimensions={0}
  centred = f32[7,300] subtract(a, m)
  normed = f32[7,300] multiply(centred, r)
  bm = f32[3,4096] broadcast(b_mean), dimensions={0}
  bc = f32[3,4096] subtract(b, bm)
  squared = f32[3,4096] multiply(bc, bc)
  sum = f32[5,200] add(c, d)
  two = f32[] constant(2)
  twos = f32[5,200] broadcast(two), dimensions={}
  quotient = f32[5,200] divide(twos, sum)
  product = f32[5,200] multiply(c, d)
  ratio = f32[5,200] divide(product, d)
  shared = f32[5,200] add(c, twos)
  twice = f32[5,200] multiply(shared, c)
  again = f32[5,200] subtract(twice, shared)
  shifted = f32[7,300] subtract(a, r)
  e = f32[7,300] exponential(shifted)
  scaled = f32[5,200] multiply(c, twos)
  t = f32[5,200] tanh(scaled)
  both = f32[5,200] subtract(d, c)
  g = f32[5,200] erf(both)
  w = f32[7,300] parameter(7)
  biased = f32[7,300] add(a, w)
  lowered = f32[7,300] subtract(biased, m)
  complement = f32[5,200] subtract(twos, c)
  halved = f32[5,200] multiply(complement, twos)
  left = f32[5,200] multiply(twos, d)
  grown = f32[5,200] exponential(left)
  ROOT out = (f32[7,300], f32[3,4096], f32[5,200], f32[5,200], f32[5,200], f32[7,300], f32[5,200], f32[5,200], f32[7,300], f32[5,200], f32[5,200]) tuple(normed, squared, quotient, ratio, again, e, t, g, lowered, halved, grown)
})");
  ASSERT_TRUE(compiled.executable != nullptr);
  for (uint32_t seed : {5u, 6u}) testing_runtime::expect_matches_evaluator_natively(compiled, seed);
}

}  // namespace insitu
