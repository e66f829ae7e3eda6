// Internal to the fusion kernels (fusion_kernels.cc: loop fusions and scalar programs;
// reduce_fusion_kernels.cc: reduce fusions): the block runner that computes one block of a
// planned fusion (fusion_plan.h) through its ops' selected elementwise kernels, the blocks a
// plan is cut into, and the reduce fusion's selector.
#pragma once

#include <algorithm>
#include <cstring>
#include <span>
#include <type_traits>
#include <vector>

#include "insitu/runtime/cpu_level.h"
#include "insitu/runtime/fusion_plan.h"
#include "insitu/runtime/kernels.h"

namespace insitu {
namespace fusion_kernel {

// Views of one block [begin, begin + length) of every node; runs the ops through their selected
// kernels. Scratch and views are per thread and reused across calls: one runner at a time per
// thread (checked). A multi-output fusion's
// outputs are `outs` (one per plan.outputs); `direct[k]`: output k is written in place, not
// computed in scratch and copied out after the block.
class BlockRunner {
 public:
  BlockRunner(const Plan& plan, std::span<const ArrayView> operands, uint8_t* out, ThreadPool& pool,
              std::span<uint8_t* const> outs = {}, const bool* direct = nullptr)
      : plan_(plan), operands_(operands), out_(out), outs_(outs), direct_(direct), pool_(pool),
        level_(static_cast<size_t>(cpu_level())) {
    // Scratch and views below are this thread's: a second runner alive in the thread would
    // move them under the first (a fold's scalar program runs its own once the chunk's is gone).
    INSITU_CHECK(live_in_thread() == nullptr) << "two BlockRunners alive in one thread share its scratch";
    live_in_thread() = this;
    thread_local std::vector<uint64_t> scratch;
    const size_t words = static_cast<size_t>((plan.scratch_bytes + 7) / 8 + 10);
    if (scratch.size() < words) scratch.resize(words);
    scratch_ = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(scratch.data()) + 63) / 64 * 64);
    thread_local std::vector<ArrayView> views;
    views.resize(plan.nodes.size());
    views_ = views.data();
    // Per node, the output it is computed straight into (a multi-output fusion's output written
    // in place; the last such output where one node is several), else null.
    thread_local std::vector<uint8_t*> direct_out;
    direct_out.assign(plan.nodes.size(), nullptr);
    for (size_t k = 0; k < outs_.size(); ++k)
      if (direct_[k]) direct_out[static_cast<size_t>(plan.outputs[k])] = outs_[k];
    direct_out_ = direct_out.data();
  }

  ~BlockRunner() { live_in_thread() = nullptr; }
  BlockRunner(const BlockRunner&) = delete;
  BlockRunner& operator=(const BlockRunner&) = delete;

  // The root writes position p at buffer[p - first] from now on, not into the result; the next
  // block's root is fetched for writing only with `prefetch` (not a reduce fusion's chunk in
  // scratch).
  void root_to(uint8_t* buffer, int64_t first, bool prefetch) {
    out_ = buffer;
    out_first_ = first;
    prefetch_out_ = prefetch;
  }

  // No operand or output of a later block is fetched ahead: a row fusion's members read rows the
  // member before them just touched (in cache), and its first reads a chunk the hardware
  // prefetcher streams alone.
  void no_prefetch() { prefetch_ = false; }

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
    run(begin, length, length == plan_.block_length ? plan_.block_shapes : plan_.tail_shapes);
  }

  // The same over a block of any length up to block_length (whole rows, or a piece of one long
  // row, when the plan reads row scalars), `shapes` its nodes' 1-D shapes of that length: a row
  // fusion runs its members a chunk of rows at a time (row_fusion_kernels.cc).
  void run(int64_t begin, int64_t length, const std::vector<Shape>& shapes) {
    const int64_t next = prefetch_ ? std::min(length, plan_.count - begin - length) : 0;
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
          if (const int64_t run = contiguous_run(node, begin, length, plan_.dimensions); run >= 0) {
            view.data = const_cast<uint8_t*>(source) + run * node.width;  // read where it lies
            break;
          }
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
        case NodeKind::kFolded: break;  // computed inside its reader
        case NodeKind::kOp: {
          // this op's share of the next block's lines, stream by stream (a tight loop each)
          const int64_t stop = std::min(bytes, fetched + per_op);
          for (size_t k = 0; k < streams; ++k)
            for (int64_t at = fetched; at < stop; at += 64) __builtin_prefetch(starts[k] + at, 0, 2);
          for (size_t k = 0; k < written; ++k)
            for (int64_t at = fetched; at < stop; at += 64) __builtin_prefetch(writes[k] + at, 1, 2);
          fetched = stop;  // never behind: stop >= fetched, as fetched <= bytes
          view.data =
              static_cast<int>(n) == plan_.root ? out_ + (begin - out_first_) * node.width : scratch_ + node.scratch;
          if (direct_out_[n] != nullptr) view.data = direct_out_[n] + begin * node.width;
          const size_t arity = node.operands.size();
          const bool per_row = node.reads_row_scalar && length > plan_.row;
          if (per_row && (node.pair != nullptr || node.loops != nullptr)) {  // its loop once per row
            run_loop_per_row(node, begin, length, view.data);
            break;
          }
          if (node.pair != nullptr) {  // an op folded in (fusion_plan.cc fold_pairs)
            const ArrayView &x = views_[node.operands[0]], &y = views_[node.operands[1]], &z = views_[node.operands[2]];
            (*node.pair)[level_](x.data, y.data, z.data, view.data, x.scalar, y.scalar, z.scalar, length);
            break;
          }
          if (node.loops != nullptr) {  // the loop alone (kernels.h BlockLoop)
            const ArrayView& x = views_[node.operands[0]];
            const ArrayView& y = views_[node.operands[arity > 1 ? 1 : 0]];
            (*node.loops)[level_](x.data, y.data, view.data, x.scalar, y.scalar, length);
            break;
          }
          ArrayView operand_views[3];
          for (size_t i = 0; i < arity; ++i) operand_views[i] = views_[node.operands[i]];
          if (per_row) {
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
  // run_per_row for an op with block loops: the loop called once per row on raw pointers, the
  // operands' views read field by field once per block. (Copying whole views per row stalled:
  // a 16-byte load of a view written as two 8-byte fields just before waits for both stores,
  // about a tenth of a Pallas layer norm's time in BlockRunner.)
  // (An op with an op folded in, node.pair: the same with its three operands.)
  void run_loop_per_row(const Node& node, int64_t begin, int64_t length, uint8_t* out) const {
    const int64_t row = plan_.row;
    const size_t arity = node.pair != nullptr ? 3 : 2;
    int index[3];
    const uint8_t* block[3];
    bool scalar[3];
    for (size_t i = 0; i < arity; ++i) {
      index[i] = node.operands[std::min(i, node.operands.size() - 1)];
      block[i] = views_[index[i]].data;
      scalar[i] = views_[index[i]].scalar;
    }
    auto at_row = [&](size_t i, int64_t first) -> const uint8_t* {
      const Node& from = plan_.nodes[index[i]];
      if (from.kind == NodeKind::kRowScalar) return row_scalar_at(from, begin + first);
      return scalar[i] ? block[i] : block[i] + first * from.width;
    };
    if (node.pair != nullptr) {
      const PairLoop loop = (*node.pair)[level_];
      for (int64_t first = 0; first < length; first += row)
        loop(at_row(0, first), at_row(1, first), at_row(2, first), out + first * node.width, scalar[0], scalar[1],
             scalar[2], row);
      return;
    }
    const BlockLoop loop = (*node.loops)[level_];
    for (int64_t first = 0; first < length; first += row)
      loop(at_row(0, first), at_row(1, first), out + first * node.width, scalar[0], scalar[1], row);
  }

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

  // out[j] = first + j for j < n, counted in T (unsigned: wraps as a cast would), at the CPU's
  // vector width: 64-bit indices narrowed per element at the baseline were 13% of a one-hot
  // row fusion (`iota == broadcast(target)` over [512, 8192]).
  template <typename T>
  struct CountUp {
    [[gnu::always_inline]] static inline void run(T* out, T first, int64_t n) {
      for (int64_t j = 0; j < n; ++j, ++first) out[j] = first;
    }
  };

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
          run_at_cpu_level<CountUp<T>>(out + done, static_cast<T>(index), run);
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

  // Where the broadcast's elements at result positions [begin, begin + length) lie in its source
  // when they are one contiguous run of it (the block within one row of the innermost dimension,
  // which the source walks with stride 1: a bias along the rows of a block of one row or a
  // piece of one), else -1 (gather_broadcast copies them). A bias add read each block's bias
  // into scratch with a memcpy: 7% of a logsumexp's time over rows of 8,192.
  static int64_t contiguous_run(const Node& node, int64_t begin, int64_t length, const std::vector<int64_t>& dimensions) {
    if (dimensions.empty() || node.source_strides.back() != 1 || begin % dimensions.back() + length > dimensions.back())
      return -1;
    return source_offset(node, begin, dimensions);
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
  bool prefetch_ = true;
  std::span<uint8_t* const> outs_;
  const bool* direct_;
  ThreadPool& pool_;
  size_t level_;  // cpu_level() for this run: the index into a node's block loops

  static const BlockRunner*& live_in_thread() {
    thread_local const BlockRunner* live = nullptr;
    return live;
  }
  uint8_t* const* direct_out_ = nullptr;  // per node (the constructor's direct_out)
  uint8_t* scratch_ = nullptr;
  ArrayView* views_ = nullptr;
};

// The blocks a plan runs: plan.block apart (whole rows, when rows are shorter), or each long
// row's pieces.
inline int64_t pieces_per_row(const Plan& plan) { return plan.row > plan.block ? (plan.row + plan.block - 1) / plan.block : 0; }

inline int64_t block_count(const Plan& plan) {
  const int64_t pieces = pieces_per_row(plan);
  return pieces > 0 ? plan.count / plan.row * pieces : (plan.count + plan.block - 1) / plan.block;
}

inline void run_block(BlockRunner& runner, const Plan& plan, int64_t pieces, int64_t block) {
  if (pieces > 0) {
    const int64_t piece = block % pieces * plan.block;
    runner.run(block / pieces * plan.row + piece, std::min(plan.block, plan.row - piece));
  } else {
    const int64_t first = block * plan.block;
    runner.run(first, std::min(plan.block, plan.count - first));
  }
}

// A reduce fusion's rows a chunk holds (a row fusion runs its members a whole number of them at
// a time), or 0 when `plan` is not a ReduceFusion.
int64_t reduce_fusion_chunk_rows(const KernelPlan& plan);

// Runs the reduce fusion `call` (its plan a ReduceFusion) over rows [first_row, end_row) only,
// both on its chunks' boundaries (end_row may be the last row), on the calling thread and
// without fetching ahead (no_prefetch): a row fusion's chunk.
Status run_reduce_fusion_rows(const KernelCall& call, int64_t first_row, int64_t end_row);

// The reduce fusion of `fusion` (its computation's root a reduce, or a tuple of a reduce and its
// input computed into `out`'s second output): reduce_fusion_kernels.cc; nothing when it does not
// plan (the evaluator runs the fusion).
SelectedKernel select_reduce_fusion(const Instruction& fusion, std::span<const ArrayView> operands, const ArrayView& out);

}  // namespace fusion_kernel
}  // namespace insitu
