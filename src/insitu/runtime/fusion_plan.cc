// Planning of native kLoop fusions (fusion_plan.h).
#include "insitu/runtime/fusion_plan.h"

#include <algorithm>
#include <bit>
#include <unordered_map>

#include "insitu/evaluator/index_util.h"

namespace insitu::fusion_kernel {
namespace {

// Selects each op's elementwise kernel on views of one block, as BlockRunner::run binds them
// (a kScalar operand read as a scalar); the tail block's shorter views select the same kernel.
// False if an op has no native kernel for its types. Elementwise kernels plan nothing.
bool select_op_kernels(Plan& plan) {
  for (size_t n = 0; n < plan.nodes.size(); ++n) {
    Node& node = plan.nodes[n];
    if (node.kind != NodeKind::kOp || node.pair != nullptr) continue;
    ArrayView operand_views[3];
    for (size_t i = 0; i < node.operands.size(); ++i) {
      const int source = node.operands[i];
      const NodeKind kind = plan.nodes[source].kind;
      operand_views[i] =
          ArrayView{nullptr, &plan.block_shapes[source], kind == NodeKind::kScalar || kind == NodeKind::kRowScalar};
    }
    const ArrayView out{nullptr, &plan.block_shapes[n], false};
    SelectedKernel kernel = select_elementwise(*node.instruction,
                                               std::span<const ArrayView>(operand_views, node.operands.size()),
                                               std::span<const ArrayView>(&out, 1));
    if (!kernel.has_value()) return false;
    INSITU_CHECK(kernel->plan == nullptr) << "a fused op's kernel planned something BlockRunner does not keep";
    node.run = kernel->run;
    node.loops = select_block_loops(*node.instruction, std::span<const ArrayView>(operand_views, node.operands.size()), out);
  }
  return true;
}

// Folds each f32 add, subtract or multiply that one arithmetic op alone reads into that reader
// (kFolded; the reader's operands become the inner op's two and its other operand, its loop a
// pair loop, kernels.h select_pair_loops): one pass over the block instead of two, the same
// roundings (the build keeps a*b+c two roundings: -ffp-contract=off); so too one that an f32
// function (exp, log, tanh, ...) alone reads, and an f64 multiply that an add or subtract alone
// reads. Row scalars may be read (the reader then runs once per row): a layer norm's
// (x - mean) * rstd and (x - mean)^2, a softmax's exp(x - max), Adam's b * m + (1 - b) * g.
// Not in a scalar program (its values are its outputs), not for an inner op that is an output.
void fold_pairs(Plan& plan) {
  std::vector<int> readers(plan.nodes.size(), 0);
  for (const Node& node : plan.nodes)
    for (int source : node.operands) ++readers[static_cast<size_t>(source)];
  for (int output : plan.outputs) ++readers[static_cast<size_t>(output)];
  auto type_of = [](const Node& node) { return node.instruction->shape().element_type(); };
  auto is_float_op = [&](const Node& node, std::initializer_list<Opcode> opcodes) {  // f32 or f64 (the selector picks)
    return node.kind == NodeKind::kOp && node.pair == nullptr && node.operands.size() == 2 &&
           (type_of(node) == PrimitiveType::kF32 || type_of(node) == PrimitiveType::kF64) &&
           std::find(opcodes.begin(), opcodes.end(), node.instruction->opcode()) != opcodes.end();
  };
  auto fold = [&](Node& outer, size_t n, Node& inner, const PairLoops* loops, int other) {
    outer.pair = loops;
    outer.operands = {inner.operands[0], inner.operands[1], other};
    outer.reads_row_scalar = false;
    for (int source : outer.operands) {
      Node& read = plan.nodes[static_cast<size_t>(source)];
      read.last_use = std::max(read.last_use, static_cast<int>(n));
      outer.reads_row_scalar |= read.kind == NodeKind::kRowScalar;
    }
    inner.kind = NodeKind::kFolded;
    inner.last_use = -1;
  };
  for (size_t n = 0; n < plan.nodes.size(); ++n) {
    Node& outer = plan.nodes[n];
    if (outer.kind == NodeKind::kOp && outer.pair == nullptr && outer.operands.size() == 1 &&
        outer.instruction->shape().element_type() == PrimitiveType::kF32) {  // a function of a pair's inner op
      const int inner_node = outer.operands[0];
      Node& inner = plan.nodes[static_cast<size_t>(inner_node)];
      if (!is_float_op(inner, {Opcode::kAdd, Opcode::kSubtract, Opcode::kMultiply}) || type_of(inner) != PrimitiveType::kF32 ||
          readers[static_cast<size_t>(inner_node)] != 1)
        continue;
      if (const PairLoops* loops =
              select_pair_loops(PrimitiveType::kF32, inner.instruction->opcode(), outer.instruction->opcode(), 3))
        fold(outer, n, inner, loops, inner.operands[0]);
      continue;
    }
    if (!is_float_op(outer, {Opcode::kAdd, Opcode::kSubtract, Opcode::kMultiply, Opcode::kDivide})) continue;
    for (int side = 0; side < 2; ++side) {
      const int inner_node = outer.operands[static_cast<size_t>(side)];
      Node& inner = plan.nodes[static_cast<size_t>(inner_node)];
      const bool square = outer.operands[0] == outer.operands[1];
      if (!is_float_op(inner, {Opcode::kAdd, Opcode::kSubtract, Opcode::kMultiply}) || type_of(inner) != type_of(outer) ||
          readers[static_cast<size_t>(inner_node)] != (square ? 2 : 1))
        continue;
      const int form = square ? 2 : side;
      const PairLoops* loops =
          select_pair_loops(type_of(outer), inner.instruction->opcode(), outer.instruction->opcode(), form);
      if (loops == nullptr) continue;
      fold(outer, n, inner, loops, square ? inner.operands[0] : outer.operands[static_cast<size_t>(1 - side)]);
      break;
    }
  }
}

// Gives each kOp, kBroadcast and kIota node a scratch slot, in bytes per element of a block
// (BlockRunner's views start at slot times the block's length rounded up to 64), but a single-
// output fusion's root (written straight into the result): a slot is reused once its value's
// last reader has run, by a later node of the same width (never by that reader itself, so no
// kernel writes over an operand it reads). A scalar program's values and a multi-output
// fusion's outputs (copied out after the block when not written in place) keep their slots.
// Returns the scratch's bytes per element.
int64_t assign_scratch_slots(Plan& plan, bool scalar_program) {
  std::vector<std::pair<int64_t, int64_t>> free_slots;  // (width, slot)
  const int nodes = static_cast<int>(plan.nodes.size());
  const int root = !scalar_program && plan.outputs.empty() ? nodes - 1 : -1;
  auto keeps = [&](int n) {
    return scalar_program || std::find(plan.outputs.begin(), plan.outputs.end(), n) != plan.outputs.end();
  };
  for (int n = 0; n < nodes; ++n) {
    Node& node = plan.nodes[static_cast<size_t>(n)];
    if ((node.kind == NodeKind::kOp || node.kind == NodeKind::kBroadcast || node.kind == NodeKind::kIota) &&
        n != root) {
      auto reuse = std::find_if(free_slots.begin(), free_slots.end(),
                                [&](const auto& slot) { return slot.first == node.width; });
      if (reuse != free_slots.end()) {
        node.scratch = reuse->second;
        free_slots.erase(reuse);
      } else {
        node.scratch = plan.scratch_bytes;
        plan.scratch_bytes += node.width;
      }
    }
    for (int source : node.operands) {
      const Node& from = plan.nodes[static_cast<size_t>(source)];
      if (from.last_use == n && from.scratch >= 0 && !keeps(source) &&
          std::none_of(free_slots.begin(), free_slots.end(), [&](const auto& slot) { return slot.second == from.scratch; }))
        free_slots.emplace_back(from.width, from.scratch);
    }
  }
  return plan.scratch_bytes;
}

}  // namespace

// Plans `body` over a result of `dimensions` (`count` elements). A scalar program (the root a
// tuple, or `scalar_program`) keeps every value in scratch and lists the root's nodes in
// `outputs`; a fusion writes its root op straight into the result, a multi-output fusion each
// op of its root tuple into its output (`outputs`, `read_after`).
bool plan_computation(const Computation& body, std::span<const ArrayView> operands,
                      const std::vector<int64_t>& dimensions, int64_t count, bool scalar_program, Plan& plan,
                      const Instruction* last, int64_t reduced_row, bool flat) {
  std::vector<const Instruction*> order;
  for (const Instruction* instruction : body.instructions()) {
    order.push_back(instruction);
    if (instruction == last) break;
  }
  if (order.empty() || order.back() != (last != nullptr ? last : body.root())) return false;
  // the trailing dimensions a row spans: the last one, or a reduce's reduced ones
  size_t row_dimensions = 1;
  for (int64_t length = dimensions.empty() ? 1 : dimensions.back(); length < reduced_row;)
    length *= dimensions[dimensions.size() - ++row_dimensions];
  const int64_t row_length = flat ? 0 : reduced_row > 0 ? reduced_row : dimensions.empty() ? 0 : dimensions.back();
  // instruction -> node (a map: a chain of 10^5 ops planned in quadratic time took seconds)
  std::unordered_map<const Instruction*, int> index;
  auto node_of = [&](const Instruction* instruction) {
    const auto found = index.find(instruction);
    return found == index.end() ? -1 : found->second;
  };
  for (const Instruction* instruction : order) {
    if (instruction->opcode() == Opcode::kTuple && instruction == body.root()) {
      for (const Instruction* operand : instruction->operands()) {
        const int source = node_of(operand);
        if (source < 0 || plan.nodes[source].kind == NodeKind::kFull) return false;
        if (!scalar_program && plan.nodes[source].kind != NodeKind::kOp) return false;
        plan.outputs.push_back(source);
      }
      break;
    }
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
        node.parameter = number;
        if (operand.scalar || operand.shape->rank() == 0) node.kind = NodeKind::kScalar;
        else node.kind = operand.shape->dimensions() == dimensions ? NodeKind::kBlock : NodeKind::kFull;
        break;
      }
      case Opcode::kConstant:
        if (shape.rank() != 0) return false;
        node.kind = NodeKind::kScalar;
        node.data = static_cast<const uint8_t*>(instruction->literal.untyped_data());
        break;
      case Opcode::kIota: {
        const int64_t d = instruction->iota_dimension;
        if (!is_integral(shape.element_type()) || shape.dimensions() != dimensions || d < 0 ||
            d >= static_cast<int64_t>(dimensions.size()))
          return false;
        node.kind = NodeKind::kIota;
        node.iota_size = dimensions[d];
        node.iota_stride = 1;
        for (size_t e = static_cast<size_t>(d) + 1; e < dimensions.size(); ++e) node.iota_stride *= dimensions[e];
        break;
      }
      case Opcode::kBroadcast: {
        const int source = node_of(instruction->operand(0));
        if (source < 0 || shape.dimensions() != dimensions) return false;
        if (dimensions.size() > kMaxBroadcastRank) return false;  // gather_broadcast's position array
        const Node& from = plan.nodes[source];
        if (from.kind == NodeKind::kScalar) {
          node.kind = NodeKind::kScalar;
          node.data = from.data;
          node.parameter = from.parameter;
          break;
        }
        if (from.kind != NodeKind::kFull && from.kind != NodeKind::kBlock) return false;
        const Shape& source_shape = instruction->operand(0)->shape();
        if (instruction->dimensions.size() != static_cast<size_t>(source_shape.rank())) return false;
        const std::vector<int64_t> strides = row_major_strides(source_shape.dimensions());
        node.kind = NodeKind::kBroadcast;  // kRowScalar when constant along long rows (below)
        node.parameter = from.parameter;
        node.source_strides.assign(dimensions.size(), 0);
        for (size_t i = 0; i < instruction->dimensions.size(); ++i) {
          const int64_t d = instruction->dimensions[i];
          if (d < 0 || d >= static_cast<int64_t>(dimensions.size())) return false;
          if (source_shape.dimension(static_cast<int64_t>(i)) != 1) node.source_strides[d] += strides[i];  // 1: stretched
        }
        const size_t row_start = dimensions.size() - std::min(row_dimensions, dimensions.size());
        if (!scalar_program && !dimensions.empty() && row_length >= kMinRowScalar &&
            std::all_of(node.source_strides.begin() + static_cast<std::ptrdiff_t>(row_start),
                        node.source_strides.end(), [](int64_t stride) { return stride == 0; })) {
          node.kind = NodeKind::kRowScalar;
          // one source element per row, in row order: its offset is the row's number
          int64_t rows_after = 1;
          node.per_row = true;
          for (size_t d = row_start; d-- > 0;) {
            node.per_row &= node.source_strides[d] == rows_after;
            rows_after *= dimensions[d];
          }
        }
        break;
      }
      default: {
        if (!is_elementwise(instruction->opcode()) || shape.dimensions() != dimensions) return false;
        if (instruction->operand_count() > 3) return false;  // BlockRunner's operand views
        node.kind = NodeKind::kOp;
        for (const Instruction* operand : instruction->operands()) {
          const int source = node_of(operand);
          if (source < 0 || plan.nodes[source].kind == NodeKind::kFull) return false;
          node.operands.push_back(source);
          node.reads_row_scalar |= plan.nodes[source].kind == NodeKind::kRowScalar;
        }
        break;
      }
    }
    for (int source : node.operands) plan.nodes[source].last_use = static_cast<int>(plan.nodes.size());
    index.emplace(instruction, static_cast<int>(plan.nodes.size()));
    plan.nodes.push_back(std::move(node));
  }
  plan.dimensions = dimensions;
  plan.count = count;
  const bool row_scalars =
      std::any_of(plan.nodes.begin(), plan.nodes.end(), [](const Node& node) { return node.kind == NodeKind::kRowScalar; });
  plan.row = row_scalars || reduced_row > 0 ? row_length : 0;
  if (!scalar_program) fold_pairs(plan);
  const int64_t bytes_per_element = assign_scratch_slots(plan, scalar_program);
  plan.block = std::clamp(kScratchBudget / std::max<int64_t>(bytes_per_element, 1) / 64 * 64, kMinBlock, kBlock);
  if (flat) plan.block = std::bit_floor(static_cast<uint64_t>(plan.block));
  // what blocks tile: the elements, a row's pieces, or whole rows (rows_per_block of them)
  int64_t run = plan.row > 0 ? plan.row : plan.count;
  if (plan.row > 0 && plan.row < plan.block) {
    plan.rows_per_block = plan.block / plan.row;
    plan.block = plan.rows_per_block * plan.row;
    run = plan.count;
  }
  plan.block_length = std::min(plan.block, run);
  plan.ops = std::count_if(plan.nodes.begin(), plan.nodes.end(), [](const Node& node) { return node.kind == NodeKind::kOp; });
  const int64_t stride = (plan.block_length + 63) / 64 * 64;  // every slot 64-byte aligned
  for (Node& node : plan.nodes)
    if (node.scratch >= 0) node.scratch *= stride;
  plan.scratch_bytes *= stride;
  const int64_t tail = run % plan.block == 0 ? plan.block_length : run % plan.block;
  for (const Node& node : plan.nodes) {
    plan.block_shapes.push_back(Shape::array(node.instruction->shape().element_type(), {plan.block_length}));
    plan.tail_shapes.push_back(Shape::array(node.instruction->shape().element_type(), {tail}));
    plan.row_shapes.push_back(Shape::array(node.instruction->shape().element_type(), {std::max<int64_t>(plan.row, 1)}));
  }
  if (!select_op_kernels(plan)) return false;
  if (scalar_program) {
    if (plan.outputs.empty()) plan.outputs.push_back(static_cast<int>(plan.nodes.size()) - 1);
    return true;
  }
  if (!plan.outputs.empty()) {  // multi-output
    for (int output : plan.outputs) {
      std::vector<int64_t> read;
      for (size_t n = static_cast<size_t>(output) + 1; n < plan.nodes.size(); ++n) {
        const Node& node = plan.nodes[n];
        if (node.kind == NodeKind::kBroadcast) read.push_back(node.parameter);  // gathered here
        for (int source : node.operands)
          if (plan.nodes[source].parameter >= 0) read.push_back(plan.nodes[source].parameter);
      }
      plan.read_after.push_back(std::move(read));
    }
    return true;
  }
  plan.root = static_cast<int>(plan.nodes.size()) - 1;
  return plan.nodes[plan.root].kind == NodeKind::kOp;
}

bool plan_fusion(const Instruction& fusion, std::span<const ArrayView> operands, const ArrayView& out, Plan& plan) {
  if (fusion.called_computations().size() != 1 || !out.shape->is_array() || out.scalar) return false;
  return plan_computation(*fusion.called_computations()[0], operands, out.shape->dimensions(), out.element_count(),
                          /*scalar_program=*/false, plan);
}

}  // namespace insitu::fusion_kernel
