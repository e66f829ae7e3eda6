// CustomCallTable: one entry per custom-call target, everything insitu knows about it.
//
// `custom-call(...), custom_call_target="NAME"` resolves through the entry named NAME:
//   signature  its outputs and input/output aliases, so tracing can emit a call (frontend
//              call_kernel) without running it;
//   evaluate   how the reference evaluator runs it over Literals (the oracle);
//   native     how the runtime prepares it over its own buffers, once per call site at
//              Executable::create (without it the runtime runs `evaluate` on copies);
//   grid_layout  how a device that runs every grid step at once (a CUDA grid) lays the kernel
//              out for a call site's shapes, with the kernel's CUDA body (cuda/ launches it);
//   origin     where it came from ("builtin", a plugin's path), named when two entries clash.
// Every part but the name is optional: a target the frontend only traces has a signature
// alone; a test kernel has only `evaluate`. The kernel layer fills all four from a KernelSpec
// (kernel/registry.h). The process-wide table (global()) holds builtin kernels and plugins; a
// test or a caller with kernels of its own builds a table and passes it (EvaluatorOptions,
// ExecutableOptions).
//
// This layer stores `native` without calling it: its argument types belong to the runtime
// (ArrayView in runtime/kernels.h, ThreadPool, ExecutionStats), which calls it.
#pragma once

#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "insitu/ir/instruction.h"

namespace insitu {

struct ArrayView;
class ThreadPool;
struct ExecutionStats;

// What tracing needs to emit a call.
struct CustomCallSignature {
  std::vector<Shape> out_shapes;  // empty: each output takes the shape of the input aliased to it
  std::vector<std::pair<int64_t, int64_t>> input_output_aliases;  // (input, output)
  int64_t output_count = 1;       // used when out_shapes is empty
};

// Runs the call over its operand values and fills in `result`. For every output aliased to an
// operand (output_to_operand_aliasing) `result` already holds that operand's value, so an
// in-place kernel updates it directly: the aliased input and output are one buffer, as on a
// device.
using EvaluateCustomCall =
    std::function<Status(const Instruction& call, std::span<const Literal* const> operands, Literal& result)>;

// One call site's native kernel, prepared for its shapes: runs once per call over one ArrayView
// per operand (an array, row-major, in the runtime's buffers) and one per array leaf of the
// result. For every output_to_operand_aliasing pair buffer assignment gives the output the
// operand's memory; other outputs hold nothing the kernel may rely on (it initializes them,
// counting any copy in `stats`).
using PreparedCustomCall = std::function<Status(const Instruction& call, std::span<const ArrayView> operands,
                                                std::span<const ArrayView> outputs, ThreadPool& pool,
                                                ExecutionStats& stats)>;
// Prepares a call site at Executable::create for its operand and result shapes (specialize,
// validate, race-check there, not per call). An error fails create, located at the call.
using NativeCustomCall = std::function<StatusOr<PreparedCustomCall>(
    const Instruction& call, std::span<const Shape* const> operands, std::span<const Shape* const> outputs)>;

// A kernel's grid for one call site, laid out for a device that runs its steps at once: per
// grid step, per operand then output, where its block starts in the array and its extent
// (clipped at ragged edges), and the kernel's CUDA body: `cuda_source` defines the __device__
// function `cuda_function` (kernel.h says how it is called).
struct KernelGridBlock {
  std::vector<int64_t> start, extent;  // elements, per dimension of the array
};
struct KernelGridLayout {
  int64_t steps = 1;
  std::vector<std::vector<int64_t>> dimensions;  // per operand, then per output: the array's
  std::vector<KernelGridBlock> blocks;           // steps x (operands + outputs), step-major
  std::vector<std::pair<int64_t, int64_t>> input_output_aliases;  // the kernel's (input, output)
  std::string cuda_source;
  std::string cuda_function;
};
// Lays out a call site for its operand and result shapes; an error, located at the call, says
// why the kernel cannot run on such a device (no CUDA body, a sequential grid axis, scratch).
using PlanKernelGrid = std::function<StatusOr<KernelGridLayout>(
    const Instruction& call, std::span<const Shape* const> operands, std::span<const Shape* const> outputs)>;

struct CustomCallTarget {
  std::string name;
  std::optional<CustomCallSignature> signature;
  EvaluateCustomCall evaluate;
  NativeCustomCall native;
  PlanKernelGrid grid_layout;
  std::string origin = "builtin";
};

class CustomCallTable {
 public:
  // Adds `target`; a name already present is an error naming both origins.
  Status add(CustomCallTarget target);
  // The entry for `name`, or null. Entries are never removed, so the pointer stays valid for
  // the table's life.
  const CustomCallTarget* find(std::string_view name) const;

  // The process-wide table (builtin kernels and plugins).
  static CustomCallTable& global();

 private:
  mutable std::mutex mutex_;
  std::map<std::string, CustomCallTarget, std::less<>> targets_;
};

// The located error for a custom-call whose target `table_entry` (null: absent) cannot run:
// one message for the evaluator and the runtime's create.
Status unregistered_custom_call(const Instruction& call, const CustomCallTarget* table_entry);

// Runs a custom-call through `table`'s `evaluate`: aliased outputs start as their operand's
// value, the kernel fills in the result. Shared by the reference evaluator and the runtime's
// fallback. A target with no `evaluate` is a located error naming it.
StatusOr<Literal> run_custom_call_kernel(const Instruction& call, std::span<const Literal* const> operands,
                                         const CustomCallTable* table);

}  // namespace insitu
