// Native kLoop fusion kernel of the CPU runtime: a fused computation of elementwise ops,
// broadcasts and scalars (what the fusion pass builds, and many of XLA's loop fusions) runs
// block by block over the result's elements. Each block's intermediates live in a small
// per-task scratch (in cache); the root writes straight into the result. Every op runs the
// same native elementwise kernel as unfused (kernels.h), on 1-D views of the block, so results
// are bit for bit the unfused ones (and the evaluator's). Blocks are split over the pool.
//
// Anything else inside a fusion (a reduce, a broadcast of a computed value, an op without a
// native kernel for its types: found by a one-element probe before anything is written) makes
// the kernel decline, and the evaluator runs the whole fusion (fallback).
#include <algorithm>
#include <cstring>
#include <vector>

#include "insitu/evaluator/index_util.h"
#include "insitu/ir/computation.h"
#include "insitu/runtime/kernels.h"

namespace insitu {
namespace kernels {
namespace {

constexpr int64_t kBlock = 1024;

enum class NodeKind : uint8_t { kScalar, kBlock, kFull, kBroadcast, kOp };

// One fused instruction and where its block of values comes from.
struct Node {
  const Instruction* instruction = nullptr;
  NodeKind kind = NodeKind::kOp;
  const uint8_t* data = nullptr;        // kScalar: the element; kBlock/kFull: the array
  int64_t width = 0;                    // bytes per element
  std::vector<int64_t> source_strides;  // kBroadcast: source stride per result dimension (0: repeated)
  std::vector<int> operands;            // kOp: node indices
  int64_t scratch = -1;                 // kBroadcast/kOp (not the root): byte offset in the scratch
};

struct Plan {
  std::vector<Node> nodes;
  int root = -1;
  int64_t scratch_bytes = 0;
};

bool plan_fusion(const Instruction& fusion, std::span<const ArrayView> operands, const ArrayView& out, Plan& plan) {
  if (fusion.called_computations().size() != 1 || !out.shape->is_array() || out.scalar) return false;
  const Computation& body = *fusion.called_computations()[0];
  const std::vector<int64_t>& dimensions = out.shape->dimensions();
  std::vector<const Instruction*> order;
  for (const Instruction* instruction : body.instructions()) order.push_back(instruction);
  if (order.empty() || order.back() != body.root()) return false;
  std::vector<std::pair<const Instruction*, int>> index;  // instruction -> node
  auto node_of = [&](const Instruction* instruction) {
    for (const auto& [key, value] : index)
      if (key == instruction) return value;
    return -1;
  };
  for (const Instruction* instruction : order) {
    Node node;
    node.instruction = instruction;
    const Shape& shape = instruction->shape();
    if (!shape.is_array()) return false;
    node.width = byte_width(shape.element_type());
    switch (instruction->opcode()) {
      case Opcode::kParameter: {
        const int64_t number = instruction->parameter_number;
        if (number < 0 || number >= static_cast<int64_t>(operands.size())) return false;
        const ArrayView& operand = operands[number];
        if (!operand.shape->is_array() || operand.type() != shape.element_type()) return false;
        node.data = operand.data;
        if (operand.scalar || operand.shape->rank() == 0) node.kind = NodeKind::kScalar;
        else node.kind = operand.shape->dimensions() == dimensions ? NodeKind::kBlock : NodeKind::kFull;
        break;
      }
      case Opcode::kConstant:
        if (shape.rank() != 0) return false;
        node.kind = NodeKind::kScalar;
        node.data = static_cast<const uint8_t*>(instruction->literal.untyped_data());
        break;
      case Opcode::kBroadcast: {
        const int source = node_of(instruction->operand(0));
        if (source < 0 || shape.dimensions() != dimensions) return false;
        const Node& from = plan.nodes[source];
        if (from.kind == NodeKind::kScalar) {
          node.kind = NodeKind::kScalar;
          node.data = from.data;
          break;
        }
        if (from.kind != NodeKind::kFull && from.kind != NodeKind::kBlock) return false;
        const Shape& source_shape = instruction->operand(0)->shape();
        if (instruction->dimensions.size() != static_cast<size_t>(source_shape.rank())) return false;
        const std::vector<int64_t> strides = row_major_strides(source_shape.dimensions());
        node.kind = NodeKind::kBroadcast;
        node.data = from.data;
        node.source_strides.assign(dimensions.size(), 0);
        for (size_t i = 0; i < instruction->dimensions.size(); ++i) {
          const int64_t d = instruction->dimensions[i];
          if (d < 0 || d >= static_cast<int64_t>(dimensions.size())) return false;
          node.source_strides[d] += strides[i];
        }
        break;
      }
      default: {
        if (!is_elementwise(instruction->opcode()) || shape.dimensions() != dimensions) return false;
        node.kind = NodeKind::kOp;
        for (const Instruction* operand : instruction->operands()) {
          const int source = node_of(operand);
          if (source < 0 || plan.nodes[source].kind == NodeKind::kFull) return false;
          node.operands.push_back(source);
        }
        break;
      }
    }
    if ((node.kind == NodeKind::kOp || node.kind == NodeKind::kBroadcast) && instruction != body.root()) {
      node.scratch = plan.scratch_bytes;
      plan.scratch_bytes += (node.width * kBlock + 15) / 16 * 16;
    }
    index.emplace_back(instruction, static_cast<int>(plan.nodes.size()));
    plan.nodes.push_back(std::move(node));
  }
  plan.root = static_cast<int>(plan.nodes.size()) - 1;
  return plan.nodes[plan.root].kind == NodeKind::kOp;
}

// Views of one block [begin, begin + length) of every node; runs the ops. False when an op has
// no native kernel.
class BlockRunner {
 public:
  BlockRunner(const Plan& plan, uint8_t* out, ThreadPool& pool) : plan_(plan), out_(out), pool_(pool) {
    scratch_.resize(static_cast<size_t>((plan.scratch_bytes + 7) / 8 + 2));
    views_.resize(plan.nodes.size());
  }

  bool run(int64_t begin, int64_t length, const std::vector<int64_t>& dimensions) {
    if (length != length_) {
      shapes_.clear();
      for (const Node& node : plan_.nodes) shapes_.push_back(Shape::array(node.instruction->shape().element_type(), {length}));
      length_ = length;
    }
    uint8_t* scratch = reinterpret_cast<uint8_t*>(scratch_.data());
    for (size_t n = 0; n < plan_.nodes.size(); ++n) {
      const Node& node = plan_.nodes[n];
      ArrayView& view = views_[n];
      view.shape = &shapes_[n];
      view.scalar = false;
      switch (node.kind) {
        case NodeKind::kScalar:
          view.data = const_cast<uint8_t*>(node.data);
          view.scalar = true;
          break;
        case NodeKind::kBlock: view.data = const_cast<uint8_t*>(node.data) + begin * node.width; break;
        case NodeKind::kFull: break;
        case NodeKind::kBroadcast:
          view.data = scratch + node.scratch;
          gather_broadcast(node, begin, length, dimensions, view.data);
          break;
        case NodeKind::kOp: {
          view.data = static_cast<int>(n) == plan_.root ? out_ + begin * node.width : scratch + node.scratch;
          operand_views_.clear();
          for (int source : node.operands) operand_views_.push_back(views_[source]);
          if (!run_elementwise_kernel(*node.instruction, operand_views_, view, pool_)) return false;
          break;
        }
      }
    }
    return true;
  }

 private:
  // The broadcast's elements at result positions [begin, begin + length), row-major.
  static void gather_broadcast(const Node& node, int64_t begin, int64_t length, const std::vector<int64_t>& dimensions,
                               uint8_t* to) {
    const size_t rank = dimensions.size();
    std::vector<int64_t> position(rank, 0);
    int64_t rest = begin, source = 0;
    for (size_t d = rank; d-- > 0;) {
      position[d] = rest % dimensions[d];
      rest /= dimensions[d];
      source += position[d] * node.source_strides[d];
    }
    for (int64_t i = 0; i < length; ++i) {
      std::memcpy(to + i * node.width, node.data + source * node.width, static_cast<size_t>(node.width));
      for (size_t d = rank; d-- > 0;) {  // next position, row-major
        source += node.source_strides[d];
        if (++position[d] < dimensions[d]) break;
        source -= position[d] * node.source_strides[d];
        position[d] = 0;
      }
    }
  }

  const Plan& plan_;
  uint8_t* out_;
  ThreadPool& pool_;
  std::vector<uint64_t> scratch_;
  std::vector<ArrayView> views_;
  std::vector<ArrayView> operand_views_;
  std::vector<Shape> shapes_;
  int64_t length_ = -1;
};

// Runs every op once on zeros of one element, into scratch: false if any has no native kernel.
bool probe(const Plan& plan, ThreadPool& pool) {
  Plan trial = plan;
  std::vector<uint64_t> zeros(static_cast<size_t>(trial.nodes.size() * 2 + 2), 0);
  for (Node& node : trial.nodes)
    if (node.kind == NodeKind::kBlock || node.kind == NodeKind::kFull || node.kind == NodeKind::kBroadcast) {
      node.kind = NodeKind::kScalar;
      node.data = reinterpret_cast<const uint8_t*>(zeros.data());
    }
  std::vector<uint64_t> out(2, 0);
  BlockRunner runner(trial, reinterpret_cast<uint8_t*>(out.data()), pool);
  const std::vector<int64_t> one = {1};
  return runner.run(0, 1, one);
}

}  // namespace
}  // namespace kernels

bool run_loop_fusion(const Instruction& fusion, std::span<const ArrayView> operands, const ArrayView& out,
                     ThreadPool& pool) {
  if (fusion.opcode() != Opcode::kFusion) return false;
  kernels::Plan plan;
  if (!kernels::plan_fusion(fusion, operands, out, plan) || !kernels::probe(plan, pool)) return false;
  const int64_t count = out.element_count();
  if (count == 0) return true;
  const std::vector<int64_t>& dimensions = out.shape->dimensions();
  const int64_t blocks = (count + kernels::kBlock - 1) / kernels::kBlock;
  run_range(pool, blocks, std::max<int64_t>(1, kParallelElements / kernels::kBlock), [&](int64_t begin, int64_t end) {
    kernels::BlockRunner runner(plan, out.data, pool);
    for (int64_t block = begin; block < end; ++block) {
      const int64_t first = block * kernels::kBlock;
      INSITU_CHECK(runner.run(first, std::min(kernels::kBlock, count - first), dimensions))
          << "fusion %" << fusion.name() << ": an op passed the probe but declined a block";
    }
  });
  return true;
}

}  // namespace insitu
