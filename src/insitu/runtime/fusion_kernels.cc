// Native kLoop fusion kernel of the CPU runtime: a fused computation of elementwise ops,
// broadcasts, integer iotas and scalars (what the fusion pass builds, and many of XLA's loop
// fusions) runs block by block over the result's elements. Each block's intermediates (an
// iota's indices among them) live in a small per-task scratch (in cache); the root writes
// straight into the result. Every op runs the same native elementwise kernel as unfused
// (kernels.h), selected once at planning on 1-D views of a block, so results are bit for bit
// the unfused ones (and the evaluator's). Blocks
// are split over the pool; while a block runs, the next block's operands are prefetched. A
// broadcast constant along the result's rows (a row's max or mean stretched over it, rows of at
// least kMinRowScalar) is read as a scalar per row, the kernels' scalar-operand loop, instead of
// gathered into scratch: a block then holds whole rows (the ops reading a row scalar run once
// per row of it, the others once per block; the attention softmax's rows of 128 spent 15-20%
// more time run a row a block) or a piece of one long row. A rank-0 fusion whose ops fit
// scalar_program.cc's registers runs as a register program instead.
//
// A multi-output fusion (the root a tuple of ops, each of the result's dimensions; the fusion
// pass makes them) writes each output the same way, block by block. An output may be written
// over an operand it reads elementwise (buffer assignment puts Adam's m' into m); an op after
// the output's node reading that operand's block would then read the new values, so such an
// output is computed in scratch and copied out once the whole block has run (decided per call,
// from the addresses).
//
// A reduce fusion (kind=kInput, a reduce of its input's trailing dimensions at the root: the
// fusion pass's) computes its input a chunk of whole rows at a time into per-thread scratch and
// folds each chunk with the reduce's own kernel (fusion_plan.h's ReduceFusion).
//
// Anything else inside a fusion (a reduce elsewhere, a broadcast of a computed value, an op
// without a native kernel for its types) fails the planning: select_fusion selects nothing, and
// the evaluator runs the whole fusion (fallback).
//
// The same planner runs scalar programs (sort comparators, reduce combiners with ops outside
// the register set of scalar_program.cc): one element, every value in scratch, the root's
// leaves (a tuple) copied out.
#include <algorithm>
#include <cstring>
#include <mutex>
#include <type_traits>
#include <vector>

#include "insitu/ir/computation.h"
#include "insitu/runtime/fusion_plan.h"
#include "insitu/runtime/kernels.h"

namespace insitu {
namespace fusion_kernel {
namespace {

// Views of one block [begin, begin + length) of every node; runs the ops through their selected
// kernels. Scratch and views are per thread and reused across calls. A multi-output fusion's
// outputs are `outs` (one per plan.outputs); `direct[k]`: output k is written in place, not
// computed in scratch and copied out after the block.
class BlockRunner {
 public:
  BlockRunner(const Plan& plan, std::span<const ArrayView> operands, uint8_t* out, ThreadPool& pool,
              std::span<uint8_t* const> outs = {}, const bool* direct = nullptr)
      : plan_(plan), operands_(operands), out_(out), outs_(outs), direct_(direct), pool_(pool) {
    thread_local std::vector<uint64_t> scratch;
    const size_t words = static_cast<size_t>((plan.scratch_bytes + 7) / 8 + 10);
    if (scratch.size() < words) scratch.resize(words);
    scratch_ = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(scratch.data()) + 63) / 64 * 64);
    thread_local std::vector<ArrayView> views;
    views.resize(plan.nodes.size());
    views_ = views.data();
  }

  // The root writes position p at buffer[p - first] from now on, not into the result; the next
  // block's root is fetched for writing only with `prefetch` (not a reduce fusion's chunk in
  // scratch).
  void root_to(uint8_t* buffer, int64_t first, bool prefetch) {
    out_ = buffer;
    out_first_ = first;
    prefetch_out_ = prefetch;
  }

  // The element of node n after run(0, 1) (a scalar program's outputs).
  const uint8_t* value(int n) const { return views_[n].data; }

  // Runs the block [begin, begin + length). Each op of a block reads one operand at a time, so
  // the hardware prefetcher alone keeps about one stream from memory in flight and the ops stall
  // on it; instead the next block's operands (every kBlock node) are asked for a few lines per
  // op, side by side, while this block's ops compute. Adam over 12x768x768 on two threads: 13.4
  // -> 10 ms (one thread 24 -> 17 ms; fetching the whole next block at once gained nothing).
  // The outputs' next blocks are fetched for writing alongside (a store to a line not in the
  // cache reads it first): the Pallas layer norm, whose last fusion writes the result rows,
  // 7.7-9.5 -> 5.8-6.9 ms on one thread.
  void run(int64_t begin, int64_t length) {
    const int64_t next = std::min(length, plan_.count - begin - length);
    const uint8_t* starts[kMaxPrefetchStreams];
    uint8_t* writes[kMaxOutputs + 1];  // the outputs' next blocks, fetched for writing
    size_t streams = 0, written = 0;
    int64_t bytes = 0;
    if (next > 0) {
      for (const Node& node : plan_.nodes) {
        if (node.kind != NodeKind::kBlock || streams == kMaxPrefetchStreams) continue;
        starts[streams++] = operands_[node.parameter].data + (begin + length) * node.width;
        bytes = std::max(bytes, next * node.width);
      }
      const int64_t width = plan_.root >= 0 ? plan_.nodes[plan_.root].width : 0;
      auto add_write = [&](uint8_t* at) {  // (an output over an operand is fetched already)
        if (std::find(starts, starts + streams, at) == starts + streams) writes[written++] = at;
      };
      if (out_ != nullptr && plan_.root >= 0 && prefetch_out_) add_write(out_ + (begin + length) * width);
      for (size_t k = 0; k < outs_.size(); ++k)
        if (direct_[k]) add_write(outs_[k] + (begin + length) * plan_.nodes[plan_.outputs[k]].width);
      if (written > 0) bytes = std::max(bytes, next * (width > 0 ? width : plan_.nodes[plan_.outputs[0]].width));
    }
    const int64_t ops = std::max<int64_t>(1, plan_.ops);
    const int64_t per_op = (bytes / 64 + ops - 1) / ops * 64;
    int64_t fetched = 0;
    const std::vector<Shape>& shapes = length == plan_.block_length ? plan_.block_shapes : plan_.tail_shapes;
    for (size_t n = 0; n < plan_.nodes.size(); ++n) {
      const Node& node = plan_.nodes[n];
      ArrayView& view = views_[n];
      view.shape = &shapes[n];
      view.scalar = false;
      const uint8_t* source = node.parameter >= 0 ? operands_[node.parameter].data : node.data;
      switch (node.kind) {
        case NodeKind::kScalar:
          view.data = const_cast<uint8_t*>(source);
          view.scalar = true;
          break;
        case NodeKind::kBlock: view.data = const_cast<uint8_t*>(source) + begin * node.width; break;
        case NodeKind::kFull: break;
        case NodeKind::kBroadcast:
          view.data = scratch_ + node.scratch;
          gather_broadcast(node, source, begin, length, plan_.dimensions, view.data);
          break;
        case NodeKind::kIota:
          view.data = scratch_ + node.scratch;
          fill_iota(node, begin, length, view.data);
          break;
        case NodeKind::kRowScalar:
          view.data = row_scalar_at(node, begin);
          view.scalar = true;
          break;
        case NodeKind::kOp: {
          for (const int64_t stop = std::min(bytes, fetched + per_op); fetched < stop; fetched += 64) {
            for (size_t k = 0; k < streams; ++k) __builtin_prefetch(starts[k] + fetched, 0, 2);
            for (size_t k = 0; k < written; ++k) __builtin_prefetch(writes[k] + fetched, 1, 2);
          }
          view.data =
              static_cast<int>(n) == plan_.root ? out_ + (begin - out_first_) * node.width : scratch_ + node.scratch;
          for (size_t k = 0; k < outs_.size(); ++k)
            if (direct_[k] && plan_.outputs[k] == static_cast<int>(n)) view.data = outs_[k] + begin * node.width;
          ArrayView operand_views[3];
          const size_t arity = node.operands.size();
          for (size_t i = 0; i < arity; ++i) operand_views[i] = views_[node.operands[i]];
          if (node.reads_row_scalar && length > plan_.row) {
            run_per_row(node, begin, length, operand_views, view);
            break;
          }
          const KernelCall call{*node.instruction, nullptr, std::span<const ArrayView>(operand_views, arity),
                                std::span<const ArrayView>(&view, 1), pool_};
          static_cast<void>(node.run(call));  // elementwise kernels cannot fail
          break;
        }
      }
    }
    for (size_t k = 0; k < outs_.size(); ++k) {
      if (direct_[k]) continue;
      const int n = plan_.outputs[k];
      const int64_t width = plan_.nodes[n].width;
      std::memcpy(outs_[k] + begin * width, views_[n].data, static_cast<size_t>(length * width));
    }
  }

 private:
  // An op reading a row scalar over a block of whole rows: once per row, each row scalar read at
  // its row, the other operands and the result a row further each time.
  void run_per_row(const Node& node, int64_t begin, int64_t length, const ArrayView* block_views,
                   const ArrayView& out) const {
    const int64_t row = plan_.row;
    const size_t arity = node.operands.size();
    for (int64_t first = 0; first < length; first += row) {
      ArrayView operand_views[3];
      for (size_t i = 0; i < arity; ++i) {
        const Node& from = plan_.nodes[node.operands[i]];
        ArrayView& operand = operand_views[i];
        operand = block_views[i];
        if (from.kind == NodeKind::kRowScalar) {
          operand.data = row_scalar_at(from, begin + first);
        } else if (!operand.scalar) {
          operand.data += first * from.width;
          operand.shape = &plan_.row_shapes[node.operands[i]];
        }
      }
      ArrayView result{out.data + first * node.width, &plan_.row_shapes[&node - plan_.nodes.data()], false};
      const KernelCall call{*node.instruction, nullptr, std::span<const ArrayView>(operand_views, arity),
                            std::span<const ArrayView>(&result, 1), pool_};
      static_cast<void>(node.run(call));
    }
  }

  // An iota's elements at result positions [begin, begin + length): the index along its
  // dimension, in runs: a run of one value `stride` long, or (stride 1: the last dimension's
  // index) a run counting up to the dimension's end; each run a loop the compiler vectorizes.
  static void fill_iota(const Node& node, int64_t begin, int64_t length, uint8_t* to) {
    const int64_t stride = node.iota_stride, size = node.iota_size;
    auto fill = [&](auto* out) {
      using T = std::remove_pointer_t<decltype(out)>;
      int64_t index = begin / stride % size;
      if (stride == 1) {
        for (int64_t done = 0; done < length; index = 0) {
          const int64_t run = std::min(length - done, size - index);
          for (int64_t j = 0; j < run; ++j) out[done + j] = static_cast<T>(index + j);
          done += run;
        }
        return;
      }
      int64_t within = begin % stride;
      for (int64_t done = 0; done < length;) {
        const int64_t run = std::min(length - done, stride - within);
        std::fill(out + done, out + done + run, static_cast<T>(index));
        done += run;
        within = 0;
        if (++index == size) index = 0;
      }
    };
    switch (node.width) {
      case 1: fill(reinterpret_cast<uint8_t*>(to)); break;
      case 2: fill(reinterpret_cast<uint16_t*>(to)); break;
      case 4: fill(reinterpret_cast<uint32_t*>(to)); break;
      default: fill(reinterpret_cast<uint64_t*>(to)); break;
    }
  }

  // A row scalar's element for the row holding result position `at`.
  uint8_t* row_scalar_at(const Node& node, int64_t at) const {
    const int64_t offset = node.per_row ? at / plan_.row : source_offset(node, at, plan_.dimensions);
    return const_cast<uint8_t*>(operands_[node.parameter].data) + offset * node.width;
  }

  // The source element of a broadcast at result position `at`.
  static int64_t source_offset(const Node& node, int64_t at, const std::vector<int64_t>& dimensions) {
    int64_t source = 0;
    for (size_t d = dimensions.size(); d-- > 0;) {
      source += (at % dimensions[d]) * node.source_strides[d];
      at /= dimensions[d];
    }
    return source;
  }

  // The broadcast's elements at result positions [begin, begin + length), row-major, one run
  // of the innermost dimension at a time: a repeated element (stride 0), a contiguous copy
  // (stride 1), or a strided gather.
  static void gather_broadcast(const Node& node, const uint8_t* from, int64_t begin, int64_t length,
                               const std::vector<int64_t>& dimensions, uint8_t* to) {
    const size_t rank = dimensions.size();
    int64_t position[kMaxBroadcastRank] = {};
    if (rank == 0) return;
    int64_t rest = begin, source = 0;
    for (size_t d = rank; d-- > 0;) {
      position[d] = rest % dimensions[d];
      rest /= dimensions[d];
      source += position[d] * node.source_strides[d];
    }
    const size_t inner = rank - 1;
    const int64_t inner_stride = node.source_strides[inner], width = node.width;
    for (int64_t done = 0; done < length;) {
      const int64_t run = std::min(length - done, dimensions[inner] - position[inner]);
      uint8_t* out = to + done * width;
      const uint8_t* in = from + source * width;
      if (inner_stride == 1) {
        std::memcpy(out, in, static_cast<size_t>(run * width));
      } else if (inner_stride == 0 && width == 4) {
        uint32_t value;
        std::memcpy(&value, in, 4);
        for (int64_t i = 0; i < run; ++i) std::memcpy(out + i * 4, &value, 4);
      } else {
        for (int64_t i = 0; i < run; ++i)
          std::memcpy(out + i * width, in + i * inner_stride * width, static_cast<size_t>(width));
      }
      done += run;
      // the next run starts at the next position of the outer dimensions
      source += run * inner_stride;
      position[inner] += run;
      for (size_t d = inner + 1; d-- > 0;) {
        if (position[d] < dimensions[d]) break;
        source -= position[d] * node.source_strides[d];
        position[d] = 0;
        if (d == 0) break;
        source += node.source_strides[d - 1];
        ++position[d - 1];
      }
    }
  }

  const Plan& plan_;
  std::span<const ArrayView> operands_;
  uint8_t* out_;
  int64_t out_first_ = 0;
  bool prefetch_out_ = true;
  std::span<uint8_t* const> outs_;
  const bool* direct_;
  ThreadPool& pool_;
  uint8_t* scratch_ = nullptr;
  ArrayView* views_ = nullptr;
};

// The blocks a plan runs: plan.block apart (whole rows, when rows are shorter), or each long
// row's pieces.
int64_t pieces_per_row(const Plan& plan) { return plan.row > plan.block ? (plan.row + plan.block - 1) / plan.block : 0; }

int64_t block_count(const Plan& plan) {
  const int64_t pieces = pieces_per_row(plan);
  return pieces > 0 ? plan.count / plan.row * pieces : (plan.count + plan.block - 1) / plan.block;
}

void run_block(BlockRunner& runner, const Plan& plan, int64_t pieces, int64_t block) {
  if (pieces > 0) {
    const int64_t piece = block % pieces * plan.block;
    runner.run(block / pieces * plan.row + piece, std::min(plan.block, plan.row - piece));
  } else {
    const int64_t first = block * plan.block;
    runner.run(first, std::min(plan.block, plan.count - first));
  }
}

// Blocks split over the pool; a block's ops run inline on its worker (a block is shorter than
// kParallelElements).
Status loop_fusion_kernel(const KernelCall& call) {
  const Plan& plan = static_cast<const Plan&>(*call.plan);
  const int64_t count = plan.count;
  if (count == 0) return ok_status();
  const int64_t pieces = pieces_per_row(plan);
  const int64_t blocks = block_count(plan);
  // A multi-output fusion's outputs, and which are written in place: not one whose memory an
  // op after its node reads by block (it was put over that operand), nor a second output of the
  // same node.
  uint8_t* outs[kMaxOutputs];
  bool direct[kMaxOutputs];
  const size_t output_count = plan.outputs.size();
  for (size_t k = 0; k < output_count; ++k) {
    outs[k] = call.outputs[k].data;
    const int64_t bytes = count * plan.nodes[plan.outputs[k]].width;
    direct[k] = std::none_of(plan.read_after[k].begin(), plan.read_after[k].end(), [&](int64_t parameter) {
      const ArrayView& operand = call.operands[parameter];
      const int64_t read_bytes = operand.scalar ? byte_width(operand.type()) : operand.shape->byte_size();
      return operand.data < outs[k] + bytes && outs[k] < operand.data + read_bytes;
    });
    for (size_t j = 0; j < k; ++j) direct[k] &= plan.outputs[j] != plan.outputs[k];
  }
  run_range(call.pool, blocks, std::max<int64_t>(1, kParallelElements / plan.block_length),
            [&](int64_t begin, int64_t end) {
              BlockRunner runner(plan, call.operands, plan.root >= 0 ? call.out().data : nullptr, call.pool,
                                 std::span<uint8_t* const>(outs, output_count), direct);
              for (int64_t block = begin; block < end; ++block) run_block(runner, plan, pieces, block);
            });
  return ok_status();
}

// Chunks of whole rows split over the pool: each computed block by block into the worker's
// scratch, then folded by the reduce's kernel into its rows of the result (the pool is busy, so
// that kernel runs inline).
Status reduce_fusion_kernel(const KernelCall& call) {
  const ReduceFusion& plan = static_cast<const ReduceFusion&>(*call.plan);
  const Plan& loop = plan.loop;
  if (plan.rows == 0) return ok_status();
  const int64_t pieces = pieces_per_row(loop);
  const int64_t blocks = block_count(loop);
  // blocks per chunk: chunk_rows rows of pieces, or whole-row blocks (chunk_rows is a multiple)
  const int64_t chunk_blocks = pieces > 0 ? plan.chunk_rows * pieces : plan.chunk_rows * plan.row / loop.block;
  const int64_t chunks = (plan.rows + plan.chunk_rows - 1) / plan.chunk_rows;
  const int64_t width = loop.nodes[loop.root].width;
  const int64_t out_width = byte_width(call.out().type());
  const uint8_t* init = plan.init != nullptr ? plan.init : call.operands[plan.init_parameter].data;
  const Shape& init_shape = plan.reduce->operand(1)->shape();
  const int64_t per_chunk = std::max<int64_t>(1, kParallelElements / (plan.chunk_rows * plan.row));
  Status status = ok_status();
  std::mutex failed;
  run_range(call.pool, chunks, per_chunk, [&](int64_t begin, int64_t end) {
    thread_local std::vector<uint64_t> chunk_scratch;
    uint8_t* chunk = nullptr;
    if (!plan.input_output) {
      const size_t words = static_cast<size_t>((plan.chunk_rows * plan.row * width + 7) / 8 + 8);
      if (chunk_scratch.size() < words) chunk_scratch.resize(words);
      chunk = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(chunk_scratch.data()) + 63) / 64 * 64);
    }
    for (int64_t c = begin; c < end; ++c) {
      // a runner per chunk: a fold through a scalar program runs a BlockRunner of its own,
      // which may move this thread's scratch and views
      BlockRunner runner(loop, call.operands, nullptr, call.pool);
      const int64_t first_row = c * plan.chunk_rows;
      // the input computed into its output (and folded from there, in cache), or into scratch
      if (plan.input_output) chunk = call.outputs[1].data + first_row * plan.row * width;
      runner.root_to(chunk, first_row * plan.row, plan.input_output);
      for (int64_t block = c * chunk_blocks, last = std::min(blocks, (c + 1) * chunk_blocks); block < last; ++block)
        run_block(runner, loop, pieces, block);
      const bool tail = c == chunks - 1 && plan.rows % plan.chunk_rows != 0;
      const ArrayView operands[2] = {ArrayView{chunk, tail ? &plan.tail_input : &plan.chunk_input, false},
                                     ArrayView{const_cast<uint8_t*>(init), &init_shape, false}};
      const ArrayView result{call.out().data + first_row * out_width, tail ? &plan.tail_output : &plan.chunk_output,
                             false};
      const KernelCall fold{*plan.reduce, plan.fold_plan.get(), operands, std::span<const ArrayView>(&result, 1),
                            call.pool};
      Status folded = plan.fold(fold);
      if (!folded.ok()) {
        std::lock_guard<std::mutex> lock(failed);
        if (status.ok()) status = std::move(folded);
        return;
      }
    }
  });
  return status;
}

constexpr size_t kMaxRegisterArguments = 16;

// A rank-0 fusion as a register program: one element per operand, one result.
Status register_fusion_kernel(const KernelCall& call) {
  const uint8_t* arguments[kMaxRegisterArguments];
  for (size_t i = 0; i < call.operands.size(); ++i) arguments[i] = call.operands[i].data;
  uint8_t* results[1] = {call.out().data};
  const bool ran =
      run_register_program(*call.plan, std::span<const uint8_t* const>(arguments, call.operands.size()), results);
  INSITU_CHECK(ran) << "select_fusion planned a register program";
  return ok_status();
}

}  // namespace
}  // namespace fusion_kernel

KernelPlanPtr plan_scalar_program(const Computation& computation) {
  if (computation.parameter_count() > 16) return nullptr;  // run_scalar_program's argument limit
  if (KernelPlanPtr registers = plan_register_program(computation)) return registers;
  std::vector<ArrayView> operands;
  for (const Instruction* parameter : computation.parameters()) {
    if (parameter == nullptr || !parameter->shape().is_array() || parameter->shape().rank() != 0) return nullptr;
    operands.push_back(ArrayView{nullptr, &parameter->shape(), false});
  }
  for (const Instruction* instruction : computation.instructions())
    if (instruction->shape().is_array() ? instruction->shape().rank() != 0 : instruction != computation.root())
      return nullptr;
  auto plan = std::make_unique<LoopFusion>();
  if (!fusion_kernel::plan_computation(computation, operands, {}, 1, /*scalar_program=*/true, *plan)) return nullptr;
  return plan;
}

void run_scalar_program(const KernelPlan& plan, std::span<const uint8_t* const> arguments,
                        std::span<uint8_t* const> results, ThreadPool& pool) {
  if (run_register_program(plan, arguments, results)) return;
  const LoopFusion& program = static_cast<const LoopFusion&>(plan);
  constexpr size_t kMaxArguments = 16;
  ArrayView operands[kMaxArguments];
  const size_t count = std::min(arguments.size(), kMaxArguments);
  for (size_t i = 0; i < count; ++i) operands[i].data = const_cast<uint8_t*>(arguments[i]);
  fusion_kernel::BlockRunner runner(program, std::span<const ArrayView>(operands, count), nullptr, pool);
  runner.run(0, 1);
  for (size_t i = 0; i < program.outputs.size() && i < results.size(); ++i) {
    const fusion_kernel::Node& node = program.nodes[program.outputs[i]];
    std::memcpy(results[i], runner.value(program.outputs[i]), static_cast<size_t>(node.width));
  }
}

namespace {

// Chunks of at least this many elements (and kSummedRows rows where rows allow), at most
// kMaxChunkBytes of the input in scratch.
constexpr int64_t kChunkElements = 16 * 1024;
constexpr int64_t kChunkRows = 16;
constexpr int64_t kMaxChunkBytes = 512 * 1024;

// The reduce fusion (fusion_plan.h's ReduceFusion) of `fusion`, whose computation's root is a
// reduce of one input over its trailing dimensions, or nothing (the evaluator runs it).
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
  if (count == 0 || count >= rank || !init->shape().is_array() || init->shape().rank() != 0) return std::nullopt;
  auto plan = std::make_unique<fusion_kernel::ReduceFusion>();
  plan->reduce = reduce;
  plan->input_output = input_output;
  plan->row = 1;
  for (int64_t i = 0; i < count; ++i) {
    if (reduced[i] != rank - count + i) return std::nullopt;
    plan->row *= input_shape.dimension(reduced[i]);
  }
  if (init->opcode() == Opcode::kConstant) {
    plan->init = static_cast<const uint8_t*>(init->literal.untyped_data());
  } else if (init->opcode() == Opcode::kParameter && init->parameter_number >= 0 &&
             init->parameter_number < static_cast<int64_t>(operands.size()) && !operands[init->parameter_number].scalar) {
    plan->init_parameter = init->parameter_number;
  } else {
    return std::nullopt;
  }
  plan->rows = out.element_count();
  if (plan->row == 0 || plan->rows * plan->row != input_shape.element_count()) return std::nullopt;
  if (!fusion_kernel::plan_computation(body, operands, input_shape.dimensions(), input_shape.element_count(),
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
  return NativeKernel{&fusion_kernel::reduce_fusion_kernel, std::move(plan)};
}

}  // namespace

SelectedKernel select_fusion(const Instruction& fusion, std::span<const ArrayView> operands,
                             std::span<const ArrayView> outputs) {
  if (fusion.opcode() == Opcode::kFusion && fusion.fusion_output_to_operand_aliasing.empty() &&
      fusion.called_computations().size() == 1 && fusion.called_computations()[0]->root() != nullptr) {
    const Instruction* root = fusion.called_computations()[0]->root();
    if (root->opcode() == Opcode::kReduce && outputs.size() == 1) return select_reduce_fusion(fusion, operands, outputs[0]);
    if (root->opcode() == Opcode::kDot) return select_sliced_dot(fusion, operands, outputs);
    // a reduce and its input, computed into the second output (row-major, its own memory)
    if (root->opcode() == Opcode::kTuple && root->operand_count() == 2 && outputs.size() == 2 &&
        root->operand(0)->opcode() == Opcode::kReduce && root->operand(0)->operand_count() == 2 &&
        root->operand(1) == root->operand(0)->operand(0)) {
      const ArrayView& input = outputs[1];
      if (input.scalar || !input.shape->is_array() || input.shape->dimensions() != root->operand(1)->shape().dimensions() ||
          input.type() != root->operand(1)->shape().element_type())
        return std::nullopt;
      return select_reduce_fusion(fusion, operands, outputs[0]);
    }
  }
  // Array results, nothing updated in place (in-place fusions go to the evaluator directly,
  // without staging their aliased operand). Several: a tuple of arrays of one shape's dimensions.
  if (fusion.opcode() != Opcode::kFusion || !fusion.fusion_output_to_operand_aliasing.empty() ||
      fusion.called_computations().size() != 1 || outputs.empty())
    return std::nullopt;
  if (fusion.shape().is_tuple()) {
    if (outputs.size() != static_cast<size_t>(fusion.shape().tuple_size()) || outputs.size() > fusion_kernel::kMaxOutputs) return std::nullopt;
    for (const ArrayView& output : outputs)
      if (output.scalar || output.shape->dimensions() != outputs[0].shape->dimensions()) return std::nullopt;
    auto plan = std::make_unique<LoopFusion>();
    if (!fusion_kernel::plan_computation(*fusion.called_computations()[0], operands, outputs[0].shape->dimensions(),
                                         outputs[0].element_count(), /*scalar_program=*/false, *plan) ||
        plan->outputs.size() != outputs.size())
      return std::nullopt;
    return NativeKernel{&fusion_kernel::loop_fusion_kernel, std::move(plan)};
  }
  if (!fusion.shape().is_array() || outputs.size() != 1 || outputs[0].scalar) return std::nullopt;
  // a scalar chain (a loop counter's update, an index clamp): typed registers
  if (fusion.shape().rank() == 0) {
    if (KernelPlanPtr registers = plan_register_program(*fusion.called_computations()[0])) {
      // more arguments than register_fusion_kernel passes: the evaluator runs it
      if (operands.size() > fusion_kernel::kMaxRegisterArguments) return std::nullopt;
      return NativeKernel{&fusion_kernel::register_fusion_kernel, std::move(registers)};
    }
  }
  // planned on the operands' shapes and scalar flags; addresses are bound per run
  auto plan = std::make_unique<LoopFusion>();
  if (!fusion_kernel::plan_fusion(fusion, operands, outputs[0], *plan)) return std::nullopt;
  return NativeKernel{&fusion_kernel::loop_fusion_kernel, std::move(plan)};
}

}  // namespace insitu
