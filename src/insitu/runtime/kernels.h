// Builtin kernels of the CPU runtime: each runs one instruction over raw slices of memory.
//
// An ArrayView is an array's bytes in logical row-major order (see buffer.h) with its shape.
// An operand view marked `scalar` holds one element that stands for every element of its shape:
// a scalar broadcast that buffer assignment did not materialize (elementwise ops read it as a
// scalar). Kernels never allocate the output: the executor passes the output's slice.
//
// Native kernels cover the hot ops and return false when an (opcode, element type) pair has
// no native path; the executor then runs the fallback (fallback_kernels.cc), which wraps the
// slices as Literals and calls the reference evaluator's per-op function. Every native kernel
// is bit-for-bit the evaluator's result (tests/runtime/kernels_test.cc).
//
// In-place ops (dynamic-update-slice, scatter) expect the output to be the operand's memory
// (buffer assignment links them); they touch only what they update. Elementwise kernels allow
// the output to be exactly one of the operands (same start, same element width). The executor
// stages any other overlap of an operand with the output into a temporary before calling.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>

#include "insitu/ir/instruction.h"
#include "insitu/runtime/thread_pool.h"

namespace insitu {

// What a kernel worked out about one instruction once, at Executable::create (a loop fusion's
// nodes, a comparator program, a dot's index tables), so calls only bind addresses.
struct KernelPlan {
  virtual ~KernelPlan() = default;
  // A scalar program compiled to typed registers (scalar_program.cc) rather than planned as a
  // loop fusion of one element: run_scalar_program takes the fast path for it.
  virtual bool is_register_program() const { return false; }
};
using KernelPlanPtr = std::unique_ptr<KernelPlan>;

struct ArrayView {
  uint8_t* data = nullptr;
  const Shape* shape = nullptr;
  bool scalar = false;  // one element read for every position (unmaterialized scalar broadcast)

  int64_t element_count() const { return shape->element_count(); }
  int64_t byte_size() const { return scalar ? byte_width(shape->element_type()) : shape->byte_size(); }
  PrimitiveType type() const { return shape->element_type(); }
};

// Arrays at least this many elements long are split over the pool's workers.
inline constexpr int64_t kParallelElements = 1 << 15;
// Copies at least this many bytes are split over the pool's workers.
inline constexpr int64_t kParallelBytes = 1 << 20;

// Runs fn(begin, end) over [0, n): in parallel when n >= threshold, inline otherwise. The inline
// path calls fn directly (no std::function, no allocation): tiny kernels, as a fused block or a
// comparator's ops are, cost only their arithmetic.
template <typename Fn>
void run_range(ThreadPool& pool, int64_t n, int64_t threshold, Fn&& fn) {
  if (n <= 0) return;
  if (n < threshold || pool.thread_count() == 1) {
    fn(int64_t{0}, n);
    return;
  }
  pool.parallel_for(n, std::function<void(int64_t, int64_t)>(std::forward<Fn>(fn)));
}

// memcpy, split over the pool for large sizes.
void copy_bytes_parallel(ThreadPool& pool, uint8_t* to, const uint8_t* from, int64_t bytes);

// elementwise_kernels.cc: unary/binary arithmetic, compare, select; elementwise_convert.cc:
// convert. False when there is no native path (the fallback runs).
bool run_elementwise_kernel(const Instruction& instruction, std::span<const ArrayView> operands, const ArrayView& out,
                            ThreadPool& pool);
bool run_convert_kernel(const Instruction& instruction, const ArrayView& operand, const ArrayView& out,
                        ThreadPool& pool);

// data_movement_kernels.cc: copy/reshape (bytes), slice, broadcast, iota, concatenate, transpose.
bool run_data_movement_kernel(const Instruction& instruction, std::span<const ArrayView> operands,
                              const ArrayView& out, ThreadPool& pool);

// dynamic_slice_kernels.cc: dynamic-slice; dynamic-update-slice in place (the output is the
// operand's memory, or the operand is first copied into it).
bool run_dynamic_slice_kernel(const Instruction& instruction, std::span<const ArrayView> operands,
                              const ArrayView& out, ThreadPool& pool);

// dot_kernels.cc: dot of f32 operands into an f32 result, any dimension numbers, reading the
// operands in place in the evaluator's accumulation order. False for other types (fallback).
bool run_dot_kernel(const Instruction& instruction, std::span<const ArrayView> operands, const ArrayView& out,
                    ThreadPool& pool);
// The same planned once on the shapes (nullptr: no native path), then run per call.
KernelPlanPtr plan_dot(const Instruction& instruction, const Shape& lhs, const Shape& rhs, const Shape& out);
bool run_dot_kernel(const KernelPlan& plan, std::span<const ArrayView> operands, const ArrayView& out,
                    ThreadPool& pool);

// reduce_kernels.cc: reduce of one row-major input by a single add/multiply/maximum/minimum/
// and/or of the two parameters, in the evaluator's order. False otherwise (fallback).
bool run_reduce_kernel(const Instruction& instruction, std::span<const ArrayView> operands, const ArrayView& out,
                       ThreadPool& pool);
// Any reduce (N inputs, N inits, N results) by its combiner planned as a scalar program, in the
// evaluator's fold order. Outputs must not overlap inputs.
bool run_reduce_program(const Instruction& instruction, const KernelPlan& combiner,
                        std::span<const ArrayView> operands, std::span<const ArrayView> outputs, ThreadPool& pool);
// reduce-window of one input with the same combiners, any window, padding, strides and
// dilations (not window reversal).
bool run_reduce_window_kernel(const Instruction& instruction, std::span<const ArrayView> operands,
                              const ArrayView& out, ThreadPool& pool);
// reduce-window (variadic too) whose combiner is any scalar program (log-add-exp, XLA's
// argmax-style max-pool gradient): each window folded from init in the evaluator's order
// (row-major over the window, padding and dilation holes skipped), one output element per task.
bool run_reduce_window_program(const Instruction& instruction, const KernelPlan& combiner,
                               std::span<const ArrayView> operands, std::span<const ArrayView> outputs,
                               ThreadPool& pool);

// select-and-scatter whose select is one compare of its two parameters (jax's max-pool
// gradient: GE) and whose scatter is a simple combiner (add), over f32/f64/s32/s64; false
// otherwise (the evaluator's path). Windows overlap, so it runs on one thread.
bool run_select_and_scatter_kernel(const Instruction& instruction, std::span<const ArrayView> operands,
                                   const ArrayView& out);

// fusion_kernels.cc: a kLoop fusion of elementwise ops, broadcasts and scalars, block by block
// through the native elementwise kernels. Planned once (operand addresses may be null then;
// only shapes and scalar flags count), run many times; nullptr when anything inside has no
// native path (the fallback runs the fusion).
KernelPlanPtr plan_loop_fusion(const Instruction& fusion, std::span<const ArrayView> operands, const ArrayView& out);
bool run_loop_fusion(const KernelPlan& plan, std::span<const ArrayView> operands, const ArrayView& out,
                     ThreadPool& pool);
// A scalar computation (a sort comparator, a reduce's combiner: scalar parameters, constants and
// elementwise ops, the root an op or a tuple) as a program over the same native kernels, so it
// computes what the evaluator does; nullptr when something in it has no native path.
// run_scalar_program reads one element per parameter and writes one per root leaf.
KernelPlanPtr plan_scalar_program(const Computation& computation);
// scalar_program.cc: the same computations when every op is a compare, select, logical or
// basic arithmetic op over f32/f64/s32/s64/pred, compiled to typed registers (nullptr
// otherwise); run_register_program is false for any other plan.
KernelPlanPtr plan_register_program(const Computation& computation);
bool run_register_program(const KernelPlan& plan, std::span<const uint8_t* const> arguments,
                          std::span<uint8_t* const> results);
void run_scalar_program(const KernelPlan& program, std::span<const uint8_t* const> arguments,
                        std::span<uint8_t* const> results, ThreadPool& pool);

// sort_kernels.cc: sort of N operands along one dimension by a comparator planned as a scalar
// program, the evaluator's std::stable_sort step for step. Output i may be operand i's memory;
// no other overlap.
bool run_sort_kernel(const Instruction& sort, const KernelPlan& comparator, std::span<const ArrayView> operands,
                     std::span<const ArrayView> outputs, ThreadPool& pool);

// gather_kernels.cc: any gather the verifier accepts, reading the operand in place (a row per
// memcpy when rows of the operand are gathered). False for anything it does not recognise.
bool run_gather_kernel(const Instruction& instruction, std::span<const ArrayView> operands, const ArrayView& out,
                       ThreadPool& pool);

// topk over the last dimension (values, s32 indices): the evaluator's stable sort by the total
// order, the first k. False for anything else (fallback).
bool run_topk_kernel(const Instruction& topk, const ArrayView& operand, std::span<const ArrayView> outputs,
                     ThreadPool& pool);

// scatter_kernels.cc: single-operand scatter in place, in the evaluator's order. A combiner
// that fails sets `status` (the kernel still returns true: it handled the op).
bool run_scatter_kernel(const Instruction& instruction, std::span<const ArrayView> operands, const ArrayView& out,
                        ThreadPool& pool, Status& status);

}  // namespace insitu
