// Native reduce fusions of the CPU runtime (kind=kInput, the fusion pass's): a reduce at the
// root of a fused computation, its input a loop of elementwise ops planned as a loop fusion
// (fusion_plan.h) and computed a piece at a time into per-thread scratch (or into the fusion's
// second output, when the input is returned too), never whole in memory.
// - Rows (ReduceFusion): a reduce of the input's trailing dimensions; chunks of whole rows, each
//   folded by the reduce's own kernel (select_reduce on a chunk's shapes).
// - Whole (WholeReduceFusion): every dimension reduced; sum blocks of kSumBlock elements
//   (evaluator/sum_order.h) split over the pool, each folded to a partial, the partials folded
//   in order: f32 sums 16 blocks side by side (their loop blocks computed in step), so a global
//   norm's sum runs at the vector width on every worker.
// Either is bit for bit the unfused reduce of the unfused loop (and the evaluator's).
#include <algorithm>
#include <memory>
#include <mutex>
#include <type_traits>
#include <vector>

#include "insitu/evaluator/sum_order.h"
#include "insitu/runtime/fusion_plan.h"
#include "insitu/runtime/fusion_runner.h"
#include "insitu/runtime/kernels.h"
#include "insitu/runtime/reduce_internal.h"
#include "insitu/runtime/reduce_rows_f32.h"

namespace insitu {
namespace fusion_kernel {
namespace {

using kernels::kSummedRows;

// One chunk of whole rows, computed block by block into the worker's scratch (or the fusion's
// second output; the next blocks fetched ahead with `prefetch`), then folded by the reduce's kernel into its rows of the result (the pool is
// busy, so that kernel runs inline).
Status run_chunk(const ReduceFusion& plan, const KernelCall& call, int64_t c, bool prefetch) {
  const Plan& loop = plan.loop;
  const int64_t pieces = pieces_per_row(loop);
  const int64_t blocks = block_count(loop);
  // blocks per chunk: chunk_rows rows of pieces, or whole-row blocks (chunk_rows is a multiple)
  const int64_t chunk_blocks = pieces > 0 ? plan.chunk_rows * pieces : plan.chunk_rows * plan.row / loop.block;
  const int64_t chunks = (plan.rows + plan.chunk_rows - 1) / plan.chunk_rows;
  const int64_t width = loop.nodes[loop.root].width;
  const int64_t out_width = byte_width(call.out().type());
  const uint8_t* init = plan.init != nullptr ? plan.init : call.operands[plan.init_parameter].data;
  const Shape& init_shape = plan.reduce->operand(1)->shape();
  thread_local std::vector<uint64_t> chunk_scratch;
  uint8_t* chunk = nullptr;
  const int64_t first_row = c * plan.chunk_rows;
  if (plan.input_output) {  // the input computed into its output (and folded from there, in cache)
    chunk = call.outputs[1].data + first_row * plan.row * width;
  } else {
    const size_t words = static_cast<size_t>((plan.chunk_rows * plan.row * width + 7) / 8 + 8);
    if (chunk_scratch.size() < words) chunk_scratch.resize(words);
    chunk = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(chunk_scratch.data()) + 63) / 64 * 64);
  }
  {
    // a runner per chunk: a fold through a scalar program runs a BlockRunner of its own, which
    // may move this thread's scratch and views
    BlockRunner runner(loop, call.operands, nullptr, call.pool);
    if (!prefetch) runner.no_prefetch();
    runner.root_to(chunk, first_row * plan.row, plan.input_output);
    for (int64_t block = c * chunk_blocks, last = std::min(blocks, (c + 1) * chunk_blocks); block < last; ++block)
      run_block(runner, loop, pieces, block);
  }
  const bool tail = c == chunks - 1 && plan.rows % plan.chunk_rows != 0;
  const ArrayView operands[2] = {ArrayView{chunk, tail ? &plan.tail_input : &plan.chunk_input, false},
                                 ArrayView{const_cast<uint8_t*>(init), &init_shape, false}};
  const ArrayView result{call.out().data + first_row * out_width, tail ? &plan.tail_output : &plan.chunk_output, false};
  const KernelCall fold{*plan.reduce, plan.fold_plan.get(), operands, std::span<const ArrayView>(&result, 1), call.pool};
  return plan.fold(fold);
}

// Chunks split over the pool.
Status reduce_fusion_kernel(const KernelCall& call) {
  const ReduceFusion& plan = static_cast<const ReduceFusion&>(*call.plan);
  if (plan.rows == 0) return ok_status();
  const int64_t chunks = (plan.rows + plan.chunk_rows - 1) / plan.chunk_rows;
  const int64_t per_chunk = std::max<int64_t>(1, kParallelElements / (plan.chunk_rows * plan.row));
  Status status = ok_status();
  std::mutex failed;
  run_range(call.pool, chunks, per_chunk, [&](int64_t begin, int64_t end) {
    for (int64_t c = begin; c < end; ++c) {
      Status folded = run_chunk(plan, call, c, /*prefetch=*/true);
      if (!folded.ok()) {
        std::lock_guard<std::mutex> lock(failed);
        if (status.ok()) status = std::move(folded);
        return;
      }
    }
  });
  return status;
}

// Sum blocks split over the pool, each worker a contiguous range of them: f32 sums kSummedRows
// blocks at a time (the group's loop blocks computed in step into scratch rows, then summed side
// by side; a short group repeats a full row and drops those sums), others one block at a time;
// then the partials fold in order (WholeReduceFusion).
template <typename T>
Status whole_reduce_fusion_kernel(const KernelCall& call) {
  const WholeReduceFusion& plan = static_cast<const WholeReduceFusion&>(*call.plan);
  const Plan& loop = plan.loop;
  constexpr bool kSum = !std::is_integral_v<T>;  // a floating sum in double, else an exact fold
  using Partial = std::conditional_t<kSum, double, ComputeType<T>>;
  constexpr int64_t kGroup = std::is_same_v<T, float> ? kSummedRows : 1;
  const int64_t n = loop.count, block = loop.block;
  const T init = *reinterpret_cast<const T*>(plan.init != nullptr ? plan.init : call.operands[plan.init_parameter].data);
  const Opcode op = plan.combiner;
  const int64_t blocks = (n + kSumBlock - 1) / kSumBlock;
  std::unique_ptr<Partial[]> partial(new Partial[static_cast<size_t>(std::max<int64_t>(blocks, 1))]);
  uint8_t* input_out = plan.input_output ? call.outputs[1].data : nullptr;
  run_range(call.pool, blocks, 2, [&](int64_t begin, int64_t end) {
    thread_local std::vector<uint64_t> scratch_words;
    const size_t words = static_cast<size_t>(kGroup * block * static_cast<int64_t>(sizeof(T)) / 8 + 16);
    if (scratch_words.size() < words) scratch_words.resize(words);
    uint8_t* scratch = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(scratch_words.data()) + 63) / 64 * 64);
    BlockRunner runner(loop, call.operands, nullptr, call.pool);
    for (int64_t first = begin; first < end; first += kGroup) {
      const int64_t group = std::min(kGroup, end - first);
      Partial acc[kGroup] = {};
      bool started[kGroup] = {};  // block 0 starts from init; a later integer fold from its first piece
      for (int64_t k = 0; k < group; ++k) {
        started[k] = first + k == 0;  // (read by the integer fold only)
        if constexpr (kSum) acc[k] = first + k == 0 ? static_cast<double>(to_compute(init)) : -0.0;
        else acc[k] = to_compute(init);
      }
      for (int64_t offset = 0; offset < kSumBlock; offset += block) {
        const T* rows[kGroup] = {};
        int64_t lengths[kGroup] = {};
        const T* full_row = nullptr;
        for (int64_t k = 0; k < group; ++k) {
          const int64_t at = (first + k) * kSumBlock + offset;
          lengths[k] = at < n ? std::min(block, n - at) : 0;
          if (lengths[k] == 0) continue;
          uint8_t* row = input_out != nullptr ? input_out + at * static_cast<int64_t>(sizeof(T))
                                              : scratch + k * block * static_cast<int64_t>(sizeof(T));
          runner.root_to(row, at, plan.input_output);
          runner.run(at, lengths[k]);
          rows[k] = reinterpret_cast<const T*>(row);
          if (lengths[k] == block) full_row = rows[k];
        }
        if (lengths[0] == 0) break;  // past the end (a later block ends no earlier)
        if constexpr (std::is_same_v<T, float>) {
          if (full_row != nullptr) {
            const float* side[kSummedRows];
            double sums[kSummedRows];
            for (int64_t k = 0; k < kSummedRows; ++k) {
              const bool full = k < group && lengths[k] == block;
              side[k] = full ? rows[k] : full_row;
              sums[k] = full ? acc[k] : 0.0;
            }
            kernels::sum_rows_f32(side, block, sums);
            for (int64_t k = 0; k < group; ++k)
              if (lengths[k] == block) acc[k] = sums[k];
          }
        }
        for (int64_t k = 0; k < group; ++k) {
          if (lengths[k] == 0 || (std::is_same_v<T, float> && lengths[k] == block)) continue;
          if constexpr (kSum) {
            for (int64_t i = 0; i < lengths[k]; ++i) acc[k] += static_cast<double>(to_compute(rows[k][i]));
          } else {
            const Partial piece = kernels::fold_run<T>(op, rows[k], lengths[k]);
            acc[k] = started[k] ? kernels::combine(op, acc[k], piece) : piece;
            started[k] = true;
          }
        }
      }
      for (int64_t k = 0; k < group; ++k) partial[first + k] = acc[k];
    }
  });
  T* out = reinterpret_cast<T*>(call.out().data);
  if (blocks == 0) {
    *out = init;
    return ok_status();
  }
  Partial total = partial[0];
  for (int64_t b = 1; b < blocks; ++b) total = kSum ? total + partial[b] : kernels::combine(op, total, partial[b]);
  if constexpr (kSum) *out = kernels::store_double<T>(total);
  else *out = to_stored<T>(total);
  return ok_status();
}

// A fusion's constant or parameter init value: its bytes, or the fusion operand it is.
bool bind_init(const Instruction& init, std::span<const ArrayView> operands, const uint8_t*& data, int64_t& parameter) {
  if (init.opcode() == Opcode::kConstant) {
    data = static_cast<const uint8_t*>(init.literal.untyped_data());
    return true;
  }
  if (init.opcode() == Opcode::kParameter && init.parameter_number >= 0 &&
      init.parameter_number < static_cast<int64_t>(operands.size()) && !operands[init.parameter_number].scalar) {
    parameter = init.parameter_number;
    return true;
  }
  return false;
}

// The whole reduce fusion of `reduce` (every dimension reduced), or nothing: a floating sum
// (f32, f64, f16, bf16), an integer fold by add, multiply, maximum, minimum, and, or (s32, s64,
// u32, u64), a pred fold by and, or.
SelectedKernel select_whole_reduce_fusion(const Computation& body, const Instruction& reduce, bool input_output,
                                          std::span<const ArrayView> operands, const ArrayView& out) {
  const Instruction* input = reduce.operand(0);
  const PrimitiveType type = input->shape().element_type();
  const std::optional<kernels::Combiner> combiner = kernels::simple_combiner(reduce);
  if (!combiner || out.type() != type || reduce.operand(1)->shape().element_type() != type) return std::nullopt;
  const Opcode op = combiner->opcode;
  auto plan = std::make_unique<WholeReduceFusion>();
  plan->reduce = &reduce;
  plan->combiner = op;
  plan->input_output = input_output;
  plan->sum = is_floating(type);
  if (plan->sum && op != Opcode::kAdd) return std::nullopt;
  if (type == PrimitiveType::kPred && op != Opcode::kAnd && op != Opcode::kOr) return std::nullopt;
  if (!bind_init(*reduce.operand(1), operands, plan->init, plan->init_parameter)) return std::nullopt;
  if (!plan_computation(body, operands, input->shape().dimensions(), input->shape().element_count(),
                        /*scalar_program=*/false, plan->loop, input, /*reduced_row=*/0, /*flat=*/true))
    return std::nullopt;
  const LoopFusion& loop = plan->loop;
  if (loop.root < 0 || loop.nodes[loop.root].instruction != input || loop.row != 0 || kSumBlock % loop.block != 0)
    return std::nullopt;
  KernelFn run = nullptr;
  switch (type) {
    case PrimitiveType::kF32: run = &whole_reduce_fusion_kernel<float>; break;
    case PrimitiveType::kF64: run = &whole_reduce_fusion_kernel<double>; break;
    case PrimitiveType::kF16: run = &whole_reduce_fusion_kernel<Half>; break;
    case PrimitiveType::kBF16: run = &whole_reduce_fusion_kernel<BFloat16>; break;
    case PrimitiveType::kS32: run = &whole_reduce_fusion_kernel<int32_t>; break;
    case PrimitiveType::kS64: run = &whole_reduce_fusion_kernel<int64_t>; break;
    case PrimitiveType::kU32: run = &whole_reduce_fusion_kernel<uint32_t>; break;
    case PrimitiveType::kU64: run = &whole_reduce_fusion_kernel<uint64_t>; break;
    case PrimitiveType::kPred: run = &whole_reduce_fusion_kernel<bool>; break;
    default: return std::nullopt;
  }
  return NativeKernel{run, std::move(plan)};
}

// Chunks of at least kChunkElements elements (and kSummedRows rows where rows allow), at most
// kMaxChunkBytes of the input in scratch.
constexpr int64_t kChunkRows = 16;
constexpr int64_t kMaxChunkBytes = 512 * 1024;

}  // namespace

int64_t reduce_fusion_chunk_rows(const KernelPlan& plan) {
  const auto* rows = dynamic_cast<const ReduceFusion*>(&plan);
  return rows != nullptr ? rows->chunk_rows : 0;
}

Status run_reduce_fusion_rows(const KernelCall& call, int64_t first_row, int64_t end_row) {
  const ReduceFusion& plan = static_cast<const ReduceFusion&>(*call.plan);
  for (int64_t c = first_row / plan.chunk_rows; c * plan.chunk_rows < end_row; ++c)
    INSITU_RETURN_IF_ERROR(run_chunk(plan, call, c, /*prefetch=*/false));
  return ok_status();
}

// A reduce of its input's trailing dimensions (ReduceFusion) or of all of them
// (WholeReduceFusion).
SelectedKernel select_reduce_fusion(const Instruction& fusion, std::span<const ArrayView> operands,
                                    const ArrayView& out) {
  const Computation& body = *fusion.called_computations()[0];
  const Instruction* reduce = body.root();
  const bool input_output = reduce->opcode() == Opcode::kTuple;  // (reduce, its input): checked by select_fusion
  if (input_output) reduce = reduce->operand(0);
  if (reduce->operand_count() != 2 || !reduce->shape().is_array() || out.scalar || !out.shape->is_array()) return std::nullopt;
  const Instruction* input = reduce->operand(0);
  const Instruction* init = reduce->operand(1);
  const Shape& input_shape = input->shape();
  const int64_t rank = input_shape.rank();
  std::vector<int64_t> reduced = reduce->dimensions;
  std::sort(reduced.begin(), reduced.end());
  const int64_t count = static_cast<int64_t>(reduced.size());
  if (count == 0 || !init->shape().is_array() || init->shape().rank() != 0) return std::nullopt;
  if (count == rank) return select_whole_reduce_fusion(body, *reduce, input_output, operands, out);
  auto plan = std::make_unique<ReduceFusion>();
  plan->reduce = reduce;
  plan->input_output = input_output;
  plan->row = 1;
  for (int64_t i = 0; i < count; ++i) {
    if (reduced[i] != rank - count + i) return std::nullopt;
    plan->row *= input_shape.dimension(reduced[i]);
  }
  if (!bind_init(*init, operands, plan->init, plan->init_parameter)) return std::nullopt;
  plan->rows = out.element_count();
  if (plan->row == 0 || plan->rows * plan->row != input_shape.element_count()) return std::nullopt;
  if (!plan_computation(body, operands, input_shape.dimensions(), input_shape.element_count(),
                                       /*scalar_program=*/false, plan->loop, input, plan->row))
    return std::nullopt;
  const LoopFusion& loop = plan->loop;
  if (loop.root < 0 || loop.nodes[loop.root].instruction != input) return std::nullopt;
  // chunk rows: enough elements (and rows side by side for the row sums), a whole number of
  // the loop's blocks when they hold whole rows, scratch within bounds
  const int64_t width = loop.nodes[loop.root].width;
  int64_t rows = std::max(kChunkRows, (kChunkElements + plan->row - 1) / plan->row);
  while (rows > 1 && rows * plan->row * width > kMaxChunkBytes) rows /= 2;
  if (loop.row <= loop.block) rows = (rows + loop.rows_per_block - 1) / loop.rows_per_block * loop.rows_per_block;
  plan->chunk_rows = std::min(rows, (plan->rows + loop.rows_per_block - 1) / loop.rows_per_block * loop.rows_per_block);
  // a chunk's shapes keep the input's rank: leading dimensions 1, the last kept one the rows
  auto chunk_shapes = [&](int64_t chunk_rows, Shape& chunk_input, Shape& chunk_output) {
    std::vector<int64_t> dimensions(static_cast<size_t>(rank - count), 1);
    dimensions.back() = chunk_rows;
    chunk_output = Shape::array(out.type(), dimensions);
    for (int64_t i = 0; i < count; ++i) dimensions.push_back(input_shape.dimension(reduced[i]));
    chunk_input = Shape::array(input_shape.element_type(), dimensions);
  };
  chunk_shapes(plan->chunk_rows, plan->chunk_input, plan->chunk_output);
  const int64_t tail_rows = plan->rows % plan->chunk_rows;
  chunk_shapes(tail_rows == 0 ? plan->chunk_rows : tail_rows, plan->tail_input, plan->tail_output);
  const ArrayView fold_operands[2] = {ArrayView{nullptr, &plan->chunk_input, false},
                                      ArrayView{nullptr, &init->shape(), false}};
  const ArrayView fold_output{nullptr, &plan->chunk_output, false};
  SelectedKernel fold = select_reduce(*reduce, fold_operands, std::span<const ArrayView>(&fold_output, 1));
  if (!fold.has_value()) return std::nullopt;
  plan->fold = fold->run;
  plan->fold_plan = std::move(fold->plan);
  return NativeKernel{&reduce_fusion_kernel, std::move(plan)};
}


}  // namespace fusion_kernel
}  // namespace insitu
