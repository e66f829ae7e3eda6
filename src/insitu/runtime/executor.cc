// The executor: runs compiled programs (program.h) over the allocations of one call.
// Executable::execute (executable.cc) validates arguments and sets up the allocation bases.
#include "insitu/runtime/executor.h"

#include <chrono>

#include <cstring>
#include <memory>

#include "insitu/passes/fusion.h"
#include "insitu/runtime/fallback_kernels.h"
#include "insitu/runtime/kernels.h"
#include "insitu/runtime/native_custom_call.h"
#include "insitu/support/str.h"

namespace insitu::runtime_internal {

namespace {

bool overlaps(const uint8_t* a, int64_t a_size, const uint8_t* b, int64_t b_size) {
  return a_size > 0 && b_size > 0 && a < b + b_size && b < a + a_size;
}

}  // namespace

uint8_t* Executor::address(const Leaf& leaf) const {
  INSITU_CHECK(leaf.allocation >= 0 && leaf.allocation < static_cast<int64_t>(bases_.size()))
      << "leaf without memory";
  return bases_[leaf.allocation] + leaf.offset;
}

ArrayView Executor::view(const Leaf& leaf) const {
  return ArrayView{address(leaf), leaf.shape, leaf.scalar};
}

Literal Executor::read_literal(const Shape& shape, const std::vector<Leaf>& leaves) const {
  Literal literal(shape);
  for (const Leaf& leaf : leaves) {
    if (leaf.allocation < 0) continue;
    Literal* target = literal.mutable_subliteral(leaf.index);
    INSITU_CHECK(target != nullptr) << "leaf " << shape_index_to_string(leaf.index) << " of " << shape.to_string();
    const uint8_t* from = address(leaf);
    if (leaf.scalar) {
      const int64_t width = byte_width(leaf.shape->element_type());
      for (int64_t i = 0; i < target->element_count(); ++i)
        std::memcpy(target->untyped_data() + i * width, from, static_cast<size_t>(width));
    } else if (target->size_bytes() > 0) {
      std::memcpy(target->untyped_data(), from, static_cast<size_t>(target->size_bytes()));
    }
  }
  return literal;
}

void Executor::write_literal(const Literal& literal, const std::vector<Leaf>& leaves) {
  for (const Leaf& leaf : leaves) {
    if (leaf.allocation < 0) continue;
    const Literal* source = literal.subliteral(leaf.index);
    INSITU_CHECK(source != nullptr && source->size_bytes() == leaf.size && !leaf.scalar)
        << "result leaf " << shape_index_to_string(leaf.index) << " does not fit its slice";
    copy_bytes_parallel(pool_, address(leaf), source->untyped_data(), leaf.size);
  }
}

void Executor::move_leaves(const std::vector<Leaf>& from, const std::vector<Leaf>& to) {
  INSITU_CHECK(from.size() == to.size()) << "leaf counts differ across a call boundary";
  for (size_t i = 0; i < from.size(); ++i) {
    if (from[i].allocation < 0 || from[i].same_memory(to[i])) continue;
    if (from[i].scalar) {
      const int64_t width = byte_width(from[i].shape->element_type());
      for (int64_t k = 0; k < to[i].size / width; ++k) std::memcpy(address(to[i]) + k * width, address(from[i]), width);
    } else {
      std::memmove(address(to[i]), address(from[i]), static_cast<size_t>(to[i].size));
    }
    stats_.bytes_copied += to[i].size;  // a boundary copy buffer assignment did not avoid
  }
}

Status Executor::run(const Program& program) {
  for (const Step& step : program.steps) {
    Status status = run_step(step);
    if (!status.ok()) return status.with_location(step.instruction->location());
  }
  return ok_status();
}

Status Executor::run_step(const Step& step) {
  const Instruction& instruction = *step.instruction;
  switch (step.kind) {
    case StepKind::kNothing: return ok_status();
    case StepKind::kConstant: write_literal(instruction.literal, step.outputs); return ok_status();
    case StepKind::kCopy: {
      // A tuple-shaped copy copies every leaf (operand and result leaves are in one order).
      ++stats_.copies_executed;
      INSITU_CHECK(step.operands[0].size() == step.outputs.size()) << "copy leaf counts differ";
      for (size_t i = 0; i < step.outputs.size(); ++i) {
        const Leaf& from = step.operands[0][i];
        const Leaf& to = step.outputs[i];
        if (from.same_memory(to)) continue;
        if (from.scalar) {
          move_leaves({from}, {to});
          continue;
        }
        stats_.bytes_copied += to.size;
        copy_bytes_parallel(pool_, address(to), address(from), to.size);
      }
      return ok_status();
    }
    case StepKind::kCopyStart: {
      // (destination, source, context): the copy happens here; copy-done forwards {0}.
      const Leaf& from = step.operands[0][0];
      for (const Leaf& to : step.outputs) {
        if (to.index.size() == 1 && to.index[0] == 0 && !from.same_memory(to)) {
          ++stats_.copies_executed;
          stats_.bytes_copied += to.size;
          copy_bytes_parallel(pool_, address(to), address(from), to.size);
        }
      }
      return ok_status();
    }
    case StepKind::kKernel: return run_kernel(step);
    case StepKind::kFallback: return run_fallback_step(step);
    case StepKind::kCustomCall: {
      const auto kernel_start = std::chrono::steady_clock::now();
      auto record_run = [&] {
        const auto now = std::chrono::steady_clock::now();
        stats_.kernel_runs.push_back({instruction.custom_call.target,
                                      std::chrono::duration<double>(kernel_start - started_).count(),
                                      std::chrono::duration<double>(now - kernel_start).count()});
      };
      if (const NativeCustomCall* native = NativeCustomCalls::global().find(instruction.custom_call.target)) {
        if (std::optional<Status> status = run_native_custom_call(step, *native)) {
          if (status->ok()) record_run();
          return *status;
        }
      }
      std::vector<Literal> values;
      values.reserve(step.operands.size());
      for (size_t i = 0; i < step.operands.size(); ++i)
        values.push_back(read_literal(instruction.operand(i)->shape(), step.operands[i]));
      std::vector<const Literal*> pointers;
      for (const Literal& value : values) pointers.push_back(&value);
      INSITU_ASSIGN_OR_RETURN(Literal result, run_custom_call(instruction, pointers, custom_calls_));
      write_literal(result, step.outputs);
      record_run();
      return ok_status();
    }
    case StepKind::kWhile: return run_while(step);
    case StepKind::kConditional: {
      const Leaf& selector = step.operands[0][0];
      const int64_t branches = static_cast<int64_t>(step.callees.size());
      int64_t branch;
      const uint8_t* data = address(selector);
      if (selector.shape->element_type() == PrimitiveType::kPred) {
        branch = data[0] != 0 ? 0 : 1;
      } else {
        int32_t index;
        std::memcpy(&index, data, sizeof(index));
        branch = (index < 0 || index >= branches) ? branches - 1 : index;  // XLA: out of range -> last
      }
      const Program& callee = *step.callees[branch];
      move_leaves(step.operands[1 + branch], callee.parameters[0]);
      INSITU_RETURN_IF_ERROR(run(callee));
      move_leaves(callee.root, step.outputs);
      return ok_status();
    }
    case StepKind::kCall: {
      const Program& callee = *step.callees[0];
      for (size_t i = 0; i < step.operands.size(); ++i) move_leaves(step.operands[i], callee.parameters[i]);
      INSITU_RETURN_IF_ERROR(run(callee));
      move_leaves(callee.root, step.outputs);
      return ok_status();
    }
  }
  return internal_error("unknown step kind");
}

Status Executor::run_while(const Step& step) {
  const Program& condition = *step.callees[0];
  const Program& body = *step.callees[1];
  move_leaves(step.operands[0], body.parameters[0]);
  move_leaves(step.operands[0], condition.parameters[0]);
  while (true) {
    INSITU_RETURN_IF_ERROR(run(condition));
    if (address(condition.root[0])[0] == 0) break;
    INSITU_RETURN_IF_ERROR(run(body));
    move_leaves(body.root, body.parameters[0]);
    move_leaves(body.root, condition.parameters[0]);
  }
  move_leaves(body.parameters[0], step.outputs);
  return ok_status();
}

// Runs a natively registered custom-call over the step's slices, without Literal copies.
// nullopt when the operands are not plain materialized arrays (the Literal path runs then).
std::optional<Status> Executor::run_native_custom_call(const Step& step, const NativeCustomCall& native) {
  std::vector<ArrayView> operands;
  for (const std::vector<Leaf>& leaves : step.operands) {
    if (leaves.size() != 1 || !leaves[0].index.empty() || leaves[0].allocation < 0 || leaves[0].scalar)
      return std::nullopt;
    operands.push_back(view(leaves[0]));
  }
  std::vector<ArrayView> outputs;
  for (const Leaf& leaf : step.outputs) {
    if (leaf.allocation < 0 || leaf.scalar) return std::nullopt;
    outputs.push_back(view(leaf));
  }
  return native(*step.instruction, operands, outputs, pool_, stats_);
}

// Steps with several results: topk, sort, and reduce with several results or a combiner the
// plain reduce kernel does not take (their to_apply runs as the step's scalar program). No output may overlap an operand, except a
// sort's output i that is exactly its operand i (sorted in place).
Status Executor::run_program_step(const Step& step) {
  const Instruction& instruction = *step.instruction;
  std::vector<ArrayView> operands, outputs;
  for (const std::vector<Leaf>& leaves : step.operands) {
    if (leaves.size() != 1 || leaves[0].allocation < 0) return run_fallback_step(step);
    operands.push_back(view(leaves[0]));
  }
  for (const Leaf& leaf : step.outputs) {
    if (leaf.allocation < 0 || leaf.scalar) return run_fallback_step(step);
    outputs.push_back(view(leaf));
  }
  const bool sort = instruction.opcode() == Opcode::kSort;
  for (size_t i = 0; i < outputs.size(); ++i) {
    for (size_t k = 0; k < operands.size(); ++k) {
      const ArrayView& out = outputs[i];
      const ArrayView& operand = operands[k];
      if (!overlaps(operand.data, operand.byte_size(), out.data, out.byte_size())) continue;
      const bool own_operand = sort && i == k && operand.data == out.data && operand.byte_size() == out.byte_size();
      if (!own_operand) return run_fallback_step(step);
    }
  }
  bool done = false;
  if (instruction.opcode() == Opcode::kTopk) done = operands.size() == 1 && run_topk_kernel(instruction, operands[0], outputs, pool_);
  else if (instruction.opcode() == Opcode::kSort) done = run_sort_kernel(instruction, *step.plan, operands, outputs, pool_);
  else if (instruction.opcode() == Opcode::kReduceWindow)
    done = run_reduce_window_program(instruction, *step.plan, operands, outputs, pool_);
  else done = run_reduce_program(instruction, *step.plan, operands, outputs, pool_);
  return done ? ok_status() : run_fallback_step(step);
}

Status Executor::run_kernel(const Step& step) {
  const Instruction& instruction = *step.instruction;
  if (instruction.opcode() == Opcode::kTopk ||
      (step.plan != nullptr && (instruction.opcode() == Opcode::kSort || step.outputs.size() != 1)))
    return run_program_step(step);
  if (step.outputs.size() != 1 || step.outputs[0].scalar) return run_fallback_step(step);
  const ArrayView out = view(step.outputs[0]);
  // operand views without an allocation for the usual few operands
  constexpr size_t kInline = 8;
  ArrayView inline_views[kInline];
  std::vector<ArrayView> heap_views;
  if (step.operands.size() > kInline) heap_views.resize(step.operands.size());
  const std::span<ArrayView> operands(step.operands.size() > kInline ? heap_views.data() : inline_views,
                                      step.operands.size());
  for (size_t i = 0; i < step.operands.size(); ++i) {
    const std::vector<Leaf>& leaves = step.operands[i];
    if (leaves.size() != 1 || leaves[0].allocation < 0) return run_fallback_step(step);
    operands[i] = view(leaves[0]);
  }
  // Stage operands that overlap the output, except the exact in-place cases kernels support.
  const Opcode opcode = instruction.opcode();
  std::vector<std::unique_ptr<uint64_t[]>> staged;
  const int64_t out_bytes = step.outputs[0].size;  // slice sizes, known since create
  for (size_t i = 0; i < operands.size(); ++i) {
    ArrayView& operand = operands[i];
    const int64_t operand_bytes = operand.scalar ? byte_width(operand.type()) : step.operands[i][0].size;
    if (!overlaps(operand.data, operand_bytes, out.data, out_bytes)) continue;
    const bool same_start = operand.data == out.data && !operand.scalar;
    if (same_start && writes_elementwise(instruction) && byte_width(operand.type()) == byte_width(out.type())) continue;
    if (same_start && (opcode == Opcode::kDynamicUpdateSlice || opcode == Opcode::kScatter) && i == 0) continue;
    const int64_t bytes = operand.byte_size();
    staged.push_back(std::make_unique<uint64_t[]>(static_cast<size_t>((bytes + 7) / 8)));
    std::memcpy(staged.back().get(), operand.data, static_cast<size_t>(bytes));
    operand.data = reinterpret_cast<uint8_t*>(staged.back().get());
  }
  bool done = false;
  if (opcode == Opcode::kScatter) {
    Status status;
    done = run_scatter_kernel(instruction, operands, out, pool_, status);
    if (!status.ok()) return status;
  } else if (is_elementwise(opcode) || opcode == Opcode::kBitcastConvert) {
    done = run_elementwise_kernel(instruction, operands, out, pool_);
  }
  else if (opcode == Opcode::kDot)
    done = step.plan != nullptr ? run_dot_kernel(*step.plan, operands, out, pool_)
                                : run_dot_kernel(instruction, operands, out, pool_);
  else if (opcode == Opcode::kGather) done = run_gather_kernel(instruction, operands, out, pool_);
  else if (opcode == Opcode::kReduce) {
    done = run_reduce_kernel(instruction, operands, out, pool_);
    if (!done && step.plan != nullptr) return run_program_step(step);
  }
  else if (opcode == Opcode::kReduceWindow) {
    done = run_reduce_window_kernel(instruction, operands, out, pool_);
    if (!done && step.plan != nullptr)
      done = run_reduce_window_program(instruction, *step.plan, operands, std::span<const ArrayView>(&out, 1), pool_);
  }
  else if (opcode == Opcode::kSelectAndScatter) done = run_select_and_scatter_kernel(instruction, operands, out);
  else if (opcode == Opcode::kFusion && step.plan != nullptr && step.plan->is_register_program()) {
    const uint8_t* arguments[16];
    if (operands.size() > 16 || out.scalar) return run_fallback_step(step);
    for (size_t i = 0; i < operands.size(); ++i) arguments[i] = operands[i].data;
    uint8_t* results[1] = {out.data};
    done = run_register_program(*step.plan, std::span<const uint8_t* const>(arguments, operands.size()), results);
  } else if (opcode == Opcode::kFusion && step.plan != nullptr) {
    done = run_loop_fusion(*step.plan, operands, out, pool_);
  }
  else if (opcode == Opcode::kDynamicSlice || opcode == Opcode::kDynamicUpdateSlice)
    done = run_dynamic_slice_kernel(instruction, operands, out, pool_);
  else done = run_data_movement_kernel(instruction, operands, out, pool_);
  if (done) return ok_status();
  return run_fallback_step(step);
}

Status Executor::run_fallback_step(const Step& step) {
  const Instruction& instruction = *step.instruction;
  ++stats_.fallback_ops_executed;
  std::vector<Literal> values;
  values.reserve(step.operands.size());
  for (size_t i = 0; i < step.operands.size(); ++i)
    values.push_back(read_literal(instruction.operand(i)->shape(), step.operands[i]));
  std::vector<const Literal*> pointers;
  for (const Literal& value : values) pointers.push_back(&value);
  EvaluatorOptions options;
  options.custom_calls = custom_calls_;
  INSITU_ASSIGN_OR_RETURN(Literal result, run_fallback(instruction, pointers, options));
  write_literal(result, step.outputs);
  return ok_status();
}

}  // namespace insitu::runtime_internal
