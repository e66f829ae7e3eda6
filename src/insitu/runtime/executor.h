// Internal to the runtime: runs compiled programs over the allocation bases of one call.
#pragma once

#include <chrono>

#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

#include "insitu/evaluator/custom_call_table.h"
#include "insitu/runtime/executable.h"
#include "insitu/runtime/kernels.h"
#include "insitu/runtime/program.h"

namespace insitu::runtime_internal {

// Runs steps in order through the runner each chose at create (program.h): no opcode dispatch
// and no fallback decision happen here.
class Executor {
 public:
  // `bases`: each allocation's memory for this call, the caller's to keep alive (a dynamic
  // view's entry is written by its step).
  Executor(std::span<uint8_t*> bases, ThreadPool& pool, ExecutionStats& stats, const CustomCallTable* custom_calls,
           double timeout_seconds = 0, const DeviceContext* device = nullptr)
      : bases_(bases), pool_(pool), stats_(stats), custom_calls_(custom_calls), device_(device) {
    if (timeout_seconds > 0)
      deadline_ = started_ + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                 std::chrono::duration<double>(timeout_seconds));
    timeout_seconds_ = timeout_seconds;
  }

  Status run(const Program& program);
  // Where a parallel grid loop's workers take their per-worker memory (Executable::take_arena).
  void set_owner(Executable* owner) { owner_ = owner; }
  // Time every step from now on; step_times() gives what was timed, longest first.
  void enable_profile() { profile_ = true; }
  std::vector<ExecutionStats::StepTime> step_times() const;

  // Inline: every step of every call binds its operands through these.
  uint8_t* address(const Leaf& leaf) const {
    INSITU_CHECK(leaf.allocation >= 0 && leaf.allocation < static_cast<int64_t>(bases_.size()))
        << "leaf without memory";
    return bases_[leaf.allocation] + leaf.offset;
  }
  // The value of an instruction's leaves as a Literal of `shape` (scalar leaves expanded).
  Literal read_literal(const Shape& shape, const std::vector<Leaf>& leaves) const;

  // The step runners (StepRunner, program.h).
  Status run_constant(const Step& step);
  Status run_copy(const Step& step);
  Status run_copy_start(const Step& step);
  Status run_native(const Step& step);
  Status run_fallback(const Step& step);
  // all-reduce reduced natively in place through this device's communicator (collectives.h).
  Status run_all_reduce(const Step& step);
  // all-gather whose pieces join as byte strings (Communicator::all_gather).
  Status run_all_gather(const Step& step);
  // reduce-scatter whose pieces are byte ranges (Communicator::reduce_scatter).
  Status run_reduce_scatter(const Step& step);
  // all-to-all of byte ranges or of a tuple's arrays (Communicator::all_to_all).
  Status run_all_to_all(const Step& step);
  // collective-permute of one array (Communicator::permute).
  Status run_collective_permute(const Step& step);
  // collective-broadcast: each array becomes the group's first member's (Communicator::broadcast).
  Status run_collective_broadcast(const Step& step);
  // replica-id and partition-id: this device's number (0 without a device context).
  Status run_device_id(const Step& step);
  Status run_native_custom_call(const Step& step);
  Status run_custom_call(const Step& step);  // through the Literal path
  Status run_while(const Step& step);
  Status run_conditional(const Step& step);
  Status run_call(const Step& step);
  // A dynamic-slice buffer assignment made a view: sets its kDynamicView allocation's base.
  Status run_dynamic_view(const Step& step);

 private:
  ArrayView view(const Leaf& leaf) const { return ArrayView{address(leaf), leaf.shape, leaf.scalar}; }
  // Views of the step's operands (then its outputs, when asked), bound to this call's memory:
  // in `inline_views` for the usual few, else in `heap_views`.
  static constexpr size_t kInlineViews = 8;
  ArrayView* bind_views(const Step& step, bool with_outputs, ArrayView (&inline_views)[kInlineViews],
                        std::vector<ArrayView>& heap_views) const;
  void write_literal(const Literal& literal, const std::vector<Leaf>& leaves);
  // Copies each leaf whose memory differs (a call boundary buffer assignment did not unify).
  void move_leaves(const std::vector<Leaf>& from, const std::vector<Leaf>& to);
  std::vector<Literal> read_operands(const Step& step) const;
  // This device's group for a collective: {0} when the run and the module have one device; a
  // located error when the module needs more devices than the run has, or names none of this.
  StatusOr<std::vector<int64_t>> collective_group(const Instruction& instruction) const;
  void record_kernel_run(const Step& step, std::chrono::steady_clock::time_point start);
  // The deadline error when the call ran past it (`where` says at which step or loop).
  Status check_deadline(const Instruction& where) const;

  std::span<uint8_t*> bases_;
  ThreadPool& pool_;
  ExecutionStats& stats_;
  std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();  // kernel-run times
  const CustomCallTable* custom_calls_;
  const DeviceContext* device_;  // for collectives (evaluator/collectives.h); null: one device
  std::optional<std::chrono::steady_clock::time_point> deadline_;
  double timeout_seconds_ = 0;
  // Adds one run of a Pallas kernel's grid loop to stats_.kernel_grids.
  void record_grid_loop(const Step& step, int64_t steps, int64_t bytes_copied, int64_t bytes_staged,
                        int64_t parallel_axes, std::string_view in_order_because);
  // A grid loop's outer iterations in contiguous chunks on the pool's workers (program.h's
  // ParallelGridPlan); false in `ran` when the pool would run one chunk (then nothing ran).
  Status run_parallel_grid(const Step& step, bool& ran);
  // Runs steps [first, last) of a parallel grid loop in a worker with its own per-worker memory.
  Status run_grid_chunk(const Step& step, int64_t first, int64_t last, ExecutionStats& stats);
  Executable* owner_ = nullptr;
  bool profile_ = false;
  std::unordered_map<const Instruction*, std::pair<int64_t, double>> profile_times_;  // runs, seconds
};

}  // namespace insitu::runtime_internal
