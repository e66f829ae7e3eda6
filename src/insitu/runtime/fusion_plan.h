// The plan of a native kLoop fusion (fusion_kernels.cc runs it): one node per fused instruction
// saying where its block of values comes from (a scalar, a block of an operand, a broadcast
// gathered into scratch, a row scalar, or an op's elementwise kernel selected once here; an
// add, subtract or multiply only one op reads is folded into that op, kFolded), the
// scratch slot each intermediate takes (slots are reused once a value is dead, and a block's
// live values fit kScratchBudget so that they stay in L1 across a chain's ops), and the blocks
// the result is cut into (rows' pieces when a row scalar is read). Planned once per step at
// Executable::create; fails (false) for anything the block runner cannot run, and the step
// then runs the evaluator.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "insitu/ir/computation.h"
#include "insitu/runtime/kernels.h"

namespace insitu {
namespace fusion_kernel {

// Elements per block at most: with 8192 an Adam step over 1024 x 1024 took 0.82 ms, with 2048
// 0.72 ms (2 threads).
constexpr int64_t kBlock = 2048;
// A block's live intermediates together take at most this many bytes, so that they stay in L1
// across a chain's ops (scratch slots are reused once a value is dead): Adam's 16 ops kept 11
// values of 8 KiB (88 KiB, in L2) and ran 1.5x slower than in 24 KiB of blocks of 512.
constexpr int64_t kScratchBudget = 24 * 1024;
constexpr int64_t kMinBlock = 256;
// A reduce fusion's chunk (or a row fusion's, where no reduce fusion sets it) holds at least
// this many elements: rows computed and folded (or run through every member) at a time.
constexpr int64_t kChunkElements = 16 * 1024;
constexpr size_t kMaxOutputs = 64;  // of a multi-output fusion run natively
constexpr size_t kMaxBroadcastRank = 16;
constexpr size_t kMaxPrefetchStreams = 16;  // operands BlockRunner prefetches at most

// A broadcast whose value is constant along the result's rows at least this long (a row's
// mean, max or sum stretched over it) is read as a scalar per row rather than gathered: each op
// reading it then runs once per row, so shorter rows would pay more in calls than the gather
// costs.
constexpr int64_t kMinRowScalar = 128;

// kRowScalar: a broadcast constant along each row of the result, read as a scalar per row (a
// block then holds whole rows or a piece of one row).
// kIota: an integer iota, its block of indices computed into scratch.
// kFolded: an add, subtract or multiply computed inside the op that alone reads it (that node's
// pair loops, kernels.h select_pair_loops); it has no value of its own.
enum class NodeKind : uint8_t { kScalar, kBlock, kFull, kBroadcast, kRowScalar, kIota, kOp, kFolded };

// One fused instruction and where its block of values comes from.
struct Node {
  const Instruction* instruction = nullptr;
  NodeKind kind = NodeKind::kOp;
  const uint8_t* data = nullptr;        // kScalar constants: the element (operands bind per run)
  int64_t parameter = -1;               // kScalar/kBlock/kFull/kBroadcast/kRowScalar from a fusion parameter
  int64_t width = 0;                    // bytes per element
  std::vector<int64_t> source_strides;  // kBroadcast/kRowScalar: source stride per result dimension (0: repeated)
  bool per_row = false;                 // kRowScalar: the source holds one element per row, in row order
  bool reads_row_scalar = false;        // kOp: an operand is a kRowScalar (runs once per row)
  int64_t iota_stride = 0;              // kIota: result elements per step of its index
  int64_t iota_size = 0;                // kIota: the index's dimension's size
  std::vector<int> operands;            // kOp: node indices
  KernelFn run = nullptr;               // kOp: the elementwise kernel selected for its types
  const BlockLoops* loops = nullptr;    // kOp: its block loops, where it has them (run otherwise)
  // kOp: an op with an inner op folded in; operands are the inner op's two, then the op's other
  // operand (the first again where it has none); `run` and `loops` are unused.
  const PairLoops* pair = nullptr;
  int64_t scratch = -1;                 // kBroadcast/kOp (not the root): byte offset in the scratch
  int last_use = -1;                    // the last node reading this one (-1: none)
};

}  // namespace fusion_kernel

// Built once per fusion step (Executable::create); runs bind the operands' addresses.
struct LoopFusion final : KernelPlan {
  using Node = fusion_kernel::Node;
  std::vector<Node> nodes;
  int root = -1;                       // the node written straight into the result; -1: none
  std::vector<int> outputs;            // scalar programs and multi-output fusions: the root's nodes
  // Multi-output fusions, per output: the parameters read after its node (by ops, through their
  // block, scalar or broadcast nodes).
  std::vector<std::vector<int64_t>> read_after;
  int64_t scratch_bytes = 0;
  std::vector<int64_t> dimensions;     // the result's
  int64_t count = 0;                   // result elements
  // With row scalars, blocks never split a row across blocks unevenly: rows (the result's last
  // dimension, `row` long) shorter than `block` run `rows_per_block` whole rows a block (an op
  // reading a row scalar runs once per row of it, the others once per block); longer rows run
  // as pieces of at most `block`. Without, row is 0 and blocks run `block` apart.
  int64_t row = 0;
  int64_t rows_per_block = 1;
  int64_t block = 0;                   // elements per block at most (the scratch's budget)
  int64_t ops = 0;                     // kOp nodes (a block's prefetches are spread over them)
  int64_t block_length = 0;            // the length of every block but the tails
  std::vector<Shape> block_shapes;     // per node: 1-D, block_length long
  std::vector<Shape> tail_shapes;      // per node: the other length (the last block, a row's last piece)
  std::vector<Shape> row_shapes;       // per node: 1-D, `row` long (ops run per row of a block of rows)
};

namespace fusion_kernel {

using Plan = LoopFusion;

// Plans `body` over a result of `dimensions` (`count` elements): see fusion_plan.cc. With
// `last`, only the instructions up to it, `last` the root (a reduce fusion's input); with
// `reduced_row` (the product of the trailing dimensions a reduce folds), blocks tile rows that
// long (whole rows or a row's pieces), and a row scalar is constant along such a row. `flat`:
// blocks of a power of two tile the elements, no row scalars (a whole reduce: its sum blocks of
// kSumBlock elements are then whole blocks).
bool plan_computation(const Computation& body, std::span<const ArrayView> operands,
                      const std::vector<int64_t>& dimensions, int64_t count, bool scalar_program, Plan& plan,
                      const Instruction* last = nullptr, int64_t reduced_row = 0, bool flat = false);
// A reduce fusion (kind=kInput: the fusion pass's, a reduce of the trailing dimensions at its
// root): the reduce's input planned as a loop fusion over the input's dimensions, computed a
// chunk of whole rows at a time into per-thread scratch, each chunk then folded by the reduce's
// own kernel (select_reduce on a chunk's shapes): bit for bit the unfused reduce of the unfused
// loop, and the input never reaches memory.
struct ReduceFusion final : KernelPlan {
  Plan loop;                            // its root the reduce's input
  const Instruction* reduce = nullptr;  // in the fused computation
  bool input_output = false;            // the input is the fusion's second output (computed there)
  KernelFn fold = nullptr;              // the reduce's kernel and plan, on a chunk
  KernelPlanPtr fold_plan;
  const uint8_t* init = nullptr;        // a constant init; null: fusion operand `init_parameter`
  int64_t init_parameter = -1;
  int64_t row = 0;                      // elements a reduce row holds
  int64_t rows = 0;                     // reduce rows in all (the result's elements)
  int64_t chunk_rows = 0;               // rows a chunk holds (a multiple of the loop's whole-row blocks)
  Shape chunk_input, chunk_output;      // a chunk's shapes: the input's and the result's ranks
  Shape tail_input, tail_output;        // the last chunk's
};

// A whole reduce fusion (every dimension of the input reduced, kind=kInput: the fusion pass makes
// one for a floating sum, or an integer or pred fold by an associative and commutative op): the
// input planned flat, computed kSumBlock elements at a time (a "sum block", whole loop blocks);
// each sum block folds to a partial and the partials fold in order. A floating sum is
// evaluator/sum_order.h's: block 0 from init, the others from -0.0, in double (f32 blocks 16 side
// by side, their loop blocks computed in step); an integer fold is exact in any grouping. Bit
// for bit the unfused reduce, and the input never reaches memory.
struct WholeReduceFusion final : KernelPlan {
  Plan loop;                            // flat, its root the reduce's input
  const Instruction* reduce = nullptr;  // in the fused computation
  Opcode combiner = Opcode::kAdd;
  bool sum = false;                     // a floating sum in double (else an integer or pred fold)
  bool input_output = false;            // the input is the fusion's second output (computed there)
  const uint8_t* init = nullptr;        // a constant init; null: fusion operand `init_parameter`
  int64_t init_parameter = -1;
};

// Plans a kLoop fusion over its result `out`.
bool plan_fusion(const Instruction& fusion, std::span<const ArrayView> operands, const ArrayView& out, Plan& plan);

}  // namespace fusion_kernel
}  // namespace insitu
