// plan_parallel_grid (program.h): whether a Pallas grid loop's steps run on the pool's workers,
// decided once at Executable::create from analysis/parallel_grid.h, buffer assignment's
// per-worker arena and the body's steps; Executable::explain_grid_decisions tells explain.
#include <string>
#include <unordered_map>
#include <variant>

#include "insitu/analysis/parallel_grid.h"
#include "insitu/passes/buffer_assignment.h"
#include "insitu/runtime/executable.h"
#include "insitu/runtime/executor.h"
#include "insitu/runtime/program.h"
#include "insitu/support/str.h"

namespace insitu::runtime_internal {
namespace {

// A step of `program` (or of a program it runs) that the reference evaluator runs and that
// writes memory other than `allocation` (the per-worker one), or null. The evaluator writes the
// whole of its result: a worker's write-back of an array the workers share would put back the
// old values of blocks another worker wrote meanwhile.
const Step* fallback_writing_shared_memory(const Program& program, int64_t allocation) {
  for (const Step& step : program.steps) {
    if (step.run == &Executor::run_fallback)
      for (const Leaf& leaf : step.outputs)
        if (leaf.allocation >= 0 && leaf.allocation != allocation) return &step;
    for (const Program* callee : step.callees)
      if (const Step* found = fallback_writing_shared_memory(*callee, allocation)) return found;
  }
  return nullptr;
}

// A step of `program` (or of a program it runs) that writes the whole of a leaf of `shared` (the
// body parameter's leaves outside the per-worker allocation): a copy, a pad or any op whose
// result replaces the array rather than updating part of it in place. The proof
// (python/insitu/pallas.py) shows the steps' blocks, or for a ref that is its whole array the
// slices its body touches, disjoint; a worker writing the whole array would put back the old
// values of what another worker wrote meanwhile. Sets `element` to its state element.
const Step* step_writing_a_whole_shared_array(const Program& program, const std::vector<Leaf>& shared,
                                              int64_t& element) {
  for (const Step& step : program.steps) {
    for (const Leaf& written : step.outputs) {
      for (const Leaf& array : shared) {
        if (written.allocation != array.allocation || written.offset > array.offset ||
            written.offset + written.size < array.offset + array.size || step.bytes_written < array.size)
          continue;
        element = array.index.empty() ? -1 : array.index[0];
        return &step;
      }
    }
    for (const Program* callee : step.callees)
      if (const Step* found = step_writing_a_whole_shared_array(*callee, shared, element)) return found;
  }
  return nullptr;
}

}  // namespace

void plan_parallel_grid(const Instruction& loop, const BufferAssignment& assignment, Step& step) {
  std::variant<ParallelGrid, std::string> found = parallel_grid(loop);
  if (std::holds_alternative<std::string>(found)) {
    step.in_order_because = std::get<std::string>(std::move(found));
    return;
  }
  const ParallelGrid& grid = std::get<ParallelGrid>(found);
  ParallelGridPlan plan;
  plan.parallel_axes = grid.parallel_axes;
  plan.outer = grid.outer;
  plan.inner = grid.steps / grid.outer;
  plan.allocation = assignment.per_worker_allocation(&loop);
  if (plan.allocation < 0) {
    step.in_order_because = "buffer assignment could not give its counter and scratch memory of their own";
    return;
  }
  plan.allocation_size = assignment.allocations()[plan.allocation].size;
  const Program& body = *step.callees[1];
  if (const Step* fallback = fallback_writing_shared_memory(body, plan.allocation)) {
    step.in_order_because = str_cat("its %", fallback->instruction->name(),
                                    " runs in the reference evaluator, which writes the whole array the workers share");
    return;
  }
  std::vector<Leaf> shared;
  for (const Leaf& leaf : body.parameters[0])
    if (leaf.allocation >= 0 && leaf.allocation != plan.allocation && !leaf.scalar && leaf.size > 0)
      shared.push_back(leaf);
  int64_t element = -1;
  if (const Step* whole = step_writing_a_whole_shared_array(body, shared, element)) {
    step.in_order_because = str_cat("its %", whole->instruction->name(), " writes the whole of state element ", element,
                                    ", an array the workers share, not a part of it in place");
    return;
  }
  for (int64_t element : grid.private_state) {
    for (const Leaf& leaf : body.parameters[0]) {
      if (leaf.index.empty() || leaf.index[0] != element) continue;
      if (leaf.allocation != plan.allocation || leaf.scalar) {
        step.in_order_because = str_cat("its state element ", element, " is not in memory of the loop's own");
        return;
      }
      plan.private_state.push_back(leaf);
      if (element == grid.counter) plan.counter = leaf;
    }
  }
  if (plan.counter.allocation < 0 || plan.counter.index.size() != 1) {
    step.in_order_because = "its step counter has no memory of its own";
    return;
  }
  // run_grid_chunk writes the counter as s32 or s64 (what JAX's loops count in)
  const PrimitiveType counter_type = plan.counter.shape->element_type();
  if (counter_type != PrimitiveType::kS32 && counter_type != PrimitiveType::kS64) {
    step.in_order_because = str_cat("its step counter is ", primitive_type_name(counter_type), ", not s32 or s64");
    return;
  }
  step.parallel_grid = std::move(plan);
}

}  // namespace insitu::runtime_internal

namespace insitu {

void Executable::explain_grid_decisions(Explanation& explanation) const {
  std::unordered_map<std::string, const runtime_internal::Step*> loops;  // by the loop's name
  for (const auto& [computation, program] : programs_)
    for (const runtime_internal::Step& step : program->steps)
      if (step.grid_loop) loops[step.instruction->name()] = &step;
  for (KernelLoopExplanation& kernel : explanation.kernels) {
    auto it = loops.find(kernel.loop->name());
    if (it == loops.end() || kernel.parallel_axes == 0 || it->second->parallel_grid) continue;
    kernel.parallel_axes = 0;
    kernel.in_order_because = it->second->in_order_because;
  }
}

}  // namespace insitu
