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
// A reduce fusion (kind=kInput, a reduce at the root: the fusion pass's) runs in
// reduce_fusion_kernels.cc; the block runner both use is fusion_runner.h's.
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
#include "insitu/runtime/fusion_runner.h"
#include "insitu/runtime/kernels.h"

namespace insitu {
namespace fusion_kernel {
namespace {

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

SelectedKernel select_fusion(const Instruction& fusion, std::span<const ArrayView> operands,
                             std::span<const ArrayView> outputs) {
  // a dot accumulated into a window of the array it updates in place (passes/fusion.h)
  if (fusion.opcode() == Opcode::kFusion && fusion.fusion_kind == "kCustom" && fusion.called_computations().size() == 1 &&
      fusion.called_computations()[0]->root() != nullptr &&
      fusion.called_computations()[0]->root()->opcode() == Opcode::kDynamicUpdateSlice)
    return select_sliced_dot(fusion, operands, outputs);
  if (fusion.opcode() == Opcode::kFusion && fusion.fusion_output_to_operand_aliasing.empty() &&
      fusion.called_computations().size() == 1 && fusion.called_computations()[0]->root() != nullptr) {
    const Instruction* root = fusion.called_computations()[0]->root();
    if (fusion.fusion_kind == "kCustom" && root->opcode() != Opcode::kDot) return select_row_fusion(fusion, operands, outputs);
    if (root->opcode() == Opcode::kReduce && outputs.size() == 1) return fusion_kernel::select_reduce_fusion(fusion, operands, outputs[0]);
    if (root->opcode() == Opcode::kDot) return select_sliced_dot(fusion, operands, outputs);
    // a reduce and its input, computed into the second output (row-major, its own memory)
    if (root->opcode() == Opcode::kTuple && root->operand_count() == 2 && outputs.size() == 2 &&
        root->operand(0)->opcode() == Opcode::kReduce && root->operand(0)->operand_count() == 2 &&
        root->operand(1) == root->operand(0)->operand(0)) {
      const ArrayView& input = outputs[1];
      if (input.scalar || !input.shape->is_array() || input.shape->dimensions() != root->operand(1)->shape().dimensions() ||
          input.type() != root->operand(1)->shape().element_type())
        return std::nullopt;
      return fusion_kernel::select_reduce_fusion(fusion, operands, outputs[0]);
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
