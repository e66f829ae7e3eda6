// Executable: runs an optimized module over real buffers laid out by buffer assignment.
//
//   optimize_module(module) -> OptimizedModule (the module and its BufferAssignment)
//   Executable::create(optimized) -> execute(arguments, {donate flags, threads})
//
// Arguments and results are one BufferHandle per entry parameter leaf / entry result leaf, in
// leaf order. Each call:
//   - validates everything first (argument count, shapes, donated-before handles, must-alias
//     parameters not donated), so a call that fails leaves every input intact;
//   - then consumes donated arguments: a parameter aliased to an output (input_output_alias)
//     that is donated is written in place and its memory comes back as that result (same data
//     pointer); a may-alias parameter that is not donated is protected by a runtime copy
//     (counted in bytes_copied), as XLA does; a must-alias one must be donated;
//   - runs the schedule (instruction order) of the entry computation over the parameter
//     buffers, fresh output buffers, one temp arena and constant buffers; while loops and
//     conditionals run their computations over the same slices.
//
// Thread safety: execute() may be called from many threads at once on one Executable. Each
// call has its own temp arena (taken from a cache of idle ones, so a steady caller allocates
// nothing), its own stats and its own donation reservations; the module, programs and
// constants are read-only after create. Calls asking for the same thread count share one pool:
// while one call's parallel_for is in flight another's runs inline on its own thread (so two
// callers on two cores each get a core). last_stats() returns a copy, of the call that finished
// last.
// Builtin kernels are in kernels.h; other opcodes run through the reference evaluator's
// per-op functions (fallback_kernels.cc); custom-call through a CustomCallTable.
//
// On a CUDA device (ExecutableOptions::device, issue 12) the same calls run the module's device
// plan (cuda/executor.h) instead: the checks and the donation rules above are the same, and
// arguments and results stay host buffers, copied to the device and back on every call,
// counted in ExecutionStats::bytes_to_device / bytes_to_host. Calls on one CUDA executable run
// one at a time (a driver serves one thread).
//
// Data is logical row-major (buffer.h). A bitcast whose layouts make it a physical transpose is
// lowered to a transpose first (passes/bitcast_lowering.h); one that changes the element width
// or reads a tiled layout is rejected at create() with an "unimplemented" error.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <memory>
#include <span>
#include <mutex>
#include <optional>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "insitu/evaluator/custom_call_table.h"
#include "insitu/passes/buffer_assignment.h"
#include "insitu/passes/explain.h"
#include "insitu/passes/optimize.h"
#include "insitu/runtime/buffer.h"
#include "insitu/runtime/thread_pool.h"

namespace insitu {

struct ExecutionStats {
  int64_t copies_executed = 0;    // copy instructions run (once per loop iteration)
  int64_t bytes_copied = 0;       // their bytes, plus runtime copy protection of undonated inputs
  // Bytes the CPU steps wrote (once per loop iteration): an update in place (dynamic-update-slice,
  // scatter) its update, any other step its outputs; views and forwarding write nothing. What a
  // step really writes, so a full-size rewrite cannot hide behind bytes_copied 0.
  int64_t bytes_written = 0;
  // Of those, what dynamic-slice and slice steps copied out of an array into a buffer of their
  // own (a block that could not be read where it lies: a strided window, a block a loop writes):
  // data moved, not computed, and not a copy instruction, so not in bytes_copied.
  int64_t bytes_staged = 0;
  int64_t peak_memory_bytes = 0;  // from buffer assignment
  double run_seconds = 0;
  int64_t fallback_ops_executed = 0;  // instructions run through the evaluator (not custom-calls)
  int64_t result_bytes_copied = 0;    // execute_borrowed: results copied into the caller's memory
  // On a CUDA device: bytes copied from host to device (arguments) and back (results, and each
  // loop's pred), and kernels launched. (bytes_copied is then the copies on the device and
  // peak_memory_bytes the most device memory the call held.)
  int64_t bytes_to_device = 0;
  int64_t bytes_to_host = 0;
  int64_t kernels_launched = 0;
  // Every custom-call (kernel) run: its target and when it ran, in seconds from the start of
  // the call, for traces (frontend's INSITU_TRACE).
  struct KernelRun {
    std::string target;
    double start_seconds = 0;
    double seconds = 0;
  };
  std::vector<KernelRun> kernel_runs;
  // Every Pallas kernel's grid loop that ran (ir/grid_loop.h), in the order each first ran: its
  // name and grid as the kernel's author wrote them, its runs, the grid steps they ran and the
  // bytes copied while it ran (copies of blocks or state: 0 when the kernel ran in place).
  struct KernelGrid {
    std::string kernel;
    std::string grid;
    std::string aliases;  // input_output_aliases, "input->output,..."
    int64_t runs = 0;
    int64_t steps = 0;
    int64_t bytes_copied = 0;
    int64_t bytes_staged = 0;  // block copies: ExecutionStats::bytes_staged while it ran
    // Its last run: how many leading grid axes ran on the pool's threads (0: in order), and
    // when none, why (analysis/parallel_grid.h; "it ran on one thread").
    int64_t parallel_axes = 0;
    std::string in_order_because;
  };
  std::vector<KernelGrid> kernel_grids;
  // With ExecuteOptions::profile: per instruction that ran as a step, its runs and seconds (a
  // while, call or conditional includes the steps it ran), longest first.
  struct StepTime {
    std::string instruction;  // its name
    std::string opcode;
    int64_t runs = 0;
    double seconds = 0;
  };
  std::vector<StepTime> step_times;
};

namespace runtime_internal {
// The stats of the call that finished last, published with no write that another calling
// thread shares (a lock per call bounced between two cores cost a tenth of a tiny call): each
// calling thread writes a slot of its own, stamped with its finish time; reading returns the
// latest stamp. Threads beyond kSlots share slots (correct, only slower).
class LatestStats {
 public:
  void publish(ExecutionStats stats, std::chrono::steady_clock::time_point finished);
  ExecutionStats read() const;

 private:
  static constexpr size_t kSlots = 16;
  struct alignas(64) Slot {
    mutable std::mutex mutex;
    std::optional<std::chrono::steady_clock::time_point> finished;  // empty: no call yet
    ExecutionStats stats;
  };
  std::array<Slot, kSlots> slots_;
};
}  // namespace runtime_internal

struct DeviceContext;  // evaluator/collectives.h

struct ExecuteOptions {
  // donate[i]: argument i is given to the call (missing entries: false).
  std::vector<bool> donate = {};
  // Worker threads; <= 0 means all hardware cores; 1 runs everything on the calling thread.
  int threads = 0;
  // Filled in when not null.
  ExecutionStats* stats = nullptr;
  // A bound on the call's run time (0: none), checked between steps and at every while
  // back-edge: past it the call ends with a resource-exhausted error naming where it was, and
  // its donations are given back (an in-place loop may have updated a donated buffer by then).
  double timeout_seconds = 0;
  // Time every step into stats->step_times (two clock reads per step).
  bool profile = false;
  // This call's device among the devices running the module (evaluator/collectives.h: its
  // communicator and numbers), for collectives; null runs one device alone.
  const DeviceContext* device = nullptr;
};

namespace cuda {
class Device;
}

// Where an executable runs.
enum class DeviceKind { kCpu, kCuda };
// The kind a user names ("cpu", "cuda": the CLI's --device, Python's device=), or nullopt.
std::optional<DeviceKind> device_kind_named(std::string_view name);

struct ExecutableOptions {
  // Where custom-call targets are found: each call site takes its entry's `native` binding
  // when it has one (prepared here, at create), else its `evaluate` on copies. A target the
  // table lacks fails create, located at the call.
  const CustomCallTable* custom_calls = &CustomCallTable::global();
  // Memory budget: create refuses a module whose peak (buffer assignment's, parameters and
  // constants included) exceeds it, naming the largest buffers. <= 0: machine_memory_bytes().
  int64_t max_memory_bytes = 0;
  // kCpu: this machine's cores. kCuda: a CUDA device, only from optimize_module's result
  // (create(OptimizedModule)); create plans the module for the device and compiles its kernels,
  // and fails, located, at the first op the device cannot run. max_memory_bytes is the CPU's.
  DeviceKind device = DeviceKind::kCpu;
  // kCuda's device: null opens GPU 0 through the driver (create fails, saying why, on a machine
  // without one); else one that outlives the executable (tests pass an emulated device).
  cuda::Device* cuda_device = nullptr;
};

namespace runtime_internal {
struct Program;
class Executor;
}  // namespace runtime_internal

class Executable {
 public:
  // What optimize_module produced (the whole pipeline: its buffer assignment is required); the
  // executable owns the module (module()).
  static StatusOr<std::unique_ptr<Executable>> create(OptimizedModule optimized, ExecutableOptions options = {});
  ~Executable();

  StatusOr<std::vector<BufferHandle>> execute(std::vector<BufferHandle> arguments, const ExecuteOptions& options = {});

  // The same call over memory the caller owns and keeps alive for the call (an XLA FFI call's
  // buffers, say): arguments[i] holds argument i's bytes, results[j] receives result j (the
  // j-th array leaf of the entry result). No handles, no result allocations: each output is
  // computed straight into results[j] where buffer assignment gave it a buffer of its own;
  // anything else (a parameter or constant returned, a leaf returned twice) is copied there,
  // counted in stats->result_bytes_copied. options.donate[i] lets the call write arguments[i]
  // in place: for an aliased parameter the caller passes the same memory as its result (else
  // the result is copied over); an aliased parameter not donated is read from a private copy,
  // as in execute. Sizes are the caller's to get right (the executable's arguments() and
  // result shapes); a call that fails may have written donated arguments and results.
  Status execute_borrowed(std::span<uint8_t* const> arguments, std::span<uint8_t* const> results,
                          const ExecuteOptions& options = {});

  // One entry per argument: its entry parameter number and leaf index, and its shape.
  struct Argument {
    int64_t parameter_number = 0;
    ShapeIndex index;
    Shape shape;
    std::optional<ShapeIndex> aliased_output;  // input_output_alias: the output it is written as
    bool must_alias = false;
    std::string describe() const;  // "parameter 0 {}"
  };
  const std::vector<Argument>& arguments() const { return arguments_; }
  // `explanation` (explain_module of the module this was created from) with the runtime's own
  // decision for each Pallas grid loop: the analysis may let a loop's steps run on threads that
  // this executable still runs in order (a step that rewrites a whole array the workers share,
  // a step left to the evaluator, no memory of the loop's own); such a kernel then says why.
  void explain_grid_decisions(Explanation& explanation) const;
  const Module& module() const { return *module_; }
  const BufferAssignment& assignment() const { return assignment_; }
  // The statistics of the last call that finished, by value (safe while another call runs).
  ExecutionStats last_stats() const { return last_stats_.read(); }
  DeviceKind device() const { return on_device_ ? DeviceKind::kCuda : DeviceKind::kCpu; }
  // "cpu", or the CUDA device's name ("NVIDIA H200", or the emulated device's).
  std::string device_name() const;
  // Instructions planned to run through the evaluator fallback (none is the goal: the
  // evaluator is the oracle, not a path), in program order.
  const std::vector<const Instruction*>& fallback_instructions() const { return fallback_instructions_; }

 private:
  friend class runtime_internal::Executor;
  Executable(const Module& module, BufferAssignment assignment, ExecutableOptions options);
  Status build();
  void describe_arguments();  // arguments_, from the entry's parameters and input_output_alias
  struct Reservations;
  // Step 1 of execute: the arguments' buffers, each donated handle reserved for this call (in
  // `reservations`, given back if the call fails) before any buffer is read, then every check
  // (count, nulls, shapes, must-alias, one buffer passed twice with one donated). A call that
  // fails these has written nothing.
  StatusOr<std::vector<std::shared_ptr<Buffer>>> take_arguments(std::vector<BufferHandle>& arguments,
                                                                const ExecuteOptions& options,
                                                                Reservations& reservations) const;
  Status check_borrowed(size_t arguments, size_t results, const ExecuteOptions& options) const;
  // The end of every call that succeeds: its run time, then its stats to the caller and to
  // last_stats().
  void finish_call(ExecutionStats& stats, const ExecuteOptions& options, std::chrono::steady_clock::time_point start);
  // kCuda (executable_cuda.cc): create's part, and the two calls'.
  static StatusOr<std::unique_ptr<Executable>> create_on_cuda(OptimizedModule optimized, ExecutableOptions options);
  StatusOr<std::vector<BufferHandle>> execute_on_cuda(std::vector<std::shared_ptr<Buffer>>& arguments,
                                                      const ExecuteOptions& options, Reservations& reservations);
  Status execute_borrowed_on_cuda(std::span<uint8_t* const> arguments, std::span<uint8_t* const> results,
                                  const ExecuteOptions& options);
  // A call's donated handles, reserved for it: consumed (commit) when it succeeds, given back
  // when it fails (every check that can fail runs before anything is written).
  struct Reservations {
    std::vector<BufferHandle*> handles;
    bool committed = false;
    void commit() {
      for (BufferHandle* handle : handles) handle->commit();
      committed = true;
    }
    ~Reservations() {
      if (!committed)
        for (BufferHandle* handle : handles) handle->release();
    }
  };
  StatusOr<ThreadPool*> pool_for(int threads);
  // A temp arena of at least `bytes` for one call (the smallest idle one that fits, or new),
  // and its return (thread-safe: a parallel grid loop's workers take theirs too).
  StatusOr<std::shared_ptr<Buffer>> take_arena(int64_t bytes);
  void return_arena(std::shared_ptr<Buffer> arena);
  // One call's temp arena, given back to the idle cache however the call ends.
  struct ArenaLease {
    Executable& owner;
    std::vector<std::shared_ptr<Buffer>> arenas;
    ~ArenaLease() {
      for (std::shared_ptr<Buffer>& arena : arenas) owner.return_arena(std::move(arena));
    }
  };
  // The base of a temp, constant or dynamic-view allocation, which execute and
  // execute_borrowed set alike (a dynamic view's is set later, by its step).
  Status set_shared_base(const Allocation& allocation, std::span<uint8_t*> bases, ArenaLease& arena);

  std::shared_ptr<const Module> owned_module_;
  const Module* module_;
  BufferAssignment assignment_;
  ExecutableOptions options_;
  std::vector<Argument> arguments_;
  std::unordered_map<const Computation*, std::unique_ptr<runtime_internal::Program>> programs_;
  std::vector<std::shared_ptr<Buffer>> constant_buffers_;  // by allocation index (null if not a constant)

  std::mutex pools_mutex_;  // guards pools_ and idle_arenas_ (held for look-ups only, never for a call)
  std::vector<std::unique_ptr<ThreadPool>> pools_;  // one per thread count asked for; kept for the executable's life
  std::atomic<ThreadPool*> last_pool_{nullptr};      // the one pool_for returned last (one of pools_)
  std::vector<std::shared_ptr<Buffer>> idle_arenas_;
  runtime_internal::LatestStats last_stats_;
  std::vector<const Instruction*> fallback_instructions_;
  // execute_borrowed's plan, made at build so a call only follows it: per allocation, the
  // argument (a parameter allocation) or the result (an output allocation that is exactly
  // that result leaf) whose memory it is, else -1.
  std::vector<int> allocation_argument_, allocation_result_;
  const runtime_internal::Program* entry_program_ = nullptr;
  // kCuda: the device executable and what goes with it (null on the CPU).
  struct OnDevice;
  std::unique_ptr<OnDevice> on_device_;
  size_t result_count_ = 0;  // array leaves of the entry result
};

}  // namespace insitu
