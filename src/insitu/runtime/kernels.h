// Builtin kernels of the CPU runtime: each runs one instruction over raw slices of memory.
//
// An ArrayView is an array's bytes in logical row-major order (see buffer.h) with its shape.
// An operand view marked `scalar` holds one element that stands for every element of its shape:
// a scalar broadcast that buffer assignment did not materialize (elementwise ops read it as a
// scalar). Kernels never allocate the output: the executor passes the output's slice.
//
// Native kernels cover the hot ops. Each is selected once per step at Executable::create (see
// select_kernel below); where a family has no native path for an instruction, the step runs
// the fallback (fallback_kernels.cc), which wraps the slices as Literals and calls the
// reference evaluator's per-op function. Every native kernel is bit-for-bit the evaluator's
// result (tests/runtime/kernels_test.cc), except where a kernel's header says otherwise: large
// f32 dots and convolutions run on a GEMM library within its stated tolerance (library_gemm.h).
//
// In-place ops (dynamic-update-slice, scatter) expect the output to be the operand's memory
// (buffer assignment links them); they touch only what they update. Elementwise kernels allow
// the output to be exactly one of the operands (same start, same element width). The executor
// stages any other overlap of an operand with the output into a temporary before calling.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
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

// ---- Native kernels: selected once per step at Executable::create, run by every call ----
//
// A kernel family (opcode.def's op family column) offers a selector. Executable::create
// calls it once per step with views whose shapes and scalar flags are final and whose
// addresses are null; it takes every decision (element types, attributes, combiners, layout
// tables) and returns the function to run with its plan, or nullopt when the family has no
// native path for this instruction (the step then runs the evaluator fallback). A selector
// reads no memory. A selected kernel never declines: run only runs.

// One call of a selected kernel: the step's views, addresses bound for this call.
struct KernelCall {
  const Instruction& instruction;
  const KernelPlan* plan;               // what the selector planned (null when it planned nothing)
  std::span<const ArrayView> operands;  // one per operand (each a single array leaf)
  std::span<const ArrayView> outputs;   // one per array leaf of the result, in leaf order
  ThreadPool& pool;
  const ArrayView& out() const { return outputs[0]; }
};

// An error is a failure of the program's meaning (a scatter combiner that fails), not a
// decline: there is no fallback after a kernel ran.
using KernelFn = Status (*)(const KernelCall& call);

struct NativeKernel {
  KernelFn run = nullptr;
  KernelPlanPtr plan;
};

using SelectedKernel = std::optional<NativeKernel>;

// The selector of the instruction's op family (kernel_table.cc); nullopt for families
// without native kernels. Operand views may be scalar (unmaterialized broadcasts).
SelectedKernel select_kernel(const Instruction& instruction, std::span<const ArrayView> operands,
                             std::span<const ArrayView> outputs);

// Selects and runs at once (kernel tests): false when no native kernel was selected; a kernel's
// error lands in `status` when given.
bool run_native_kernel(const Instruction& instruction, std::span<const ArrayView> operands,
                       std::span<const ArrayView> outputs, ThreadPool& pool, Status* status = nullptr);
inline bool run_native_kernel(const Instruction& instruction, std::span<const ArrayView> operands,
                              const ArrayView& out, ThreadPool& pool, Status* status = nullptr) {
  return run_native_kernel(instruction, operands, std::span<const ArrayView>(&out, 1), pool, status);
}

// The family selectors (one per kernel file; kernel_table.cc maps runtime families to them).
//
// elementwise_kernels.cc: unary/binary arithmetic, is-finite; compare_select_kernels.cc's
// compare, select, clamp and bitcast-convert of one width; convert_kernels.cc's convert.
SelectedKernel select_elementwise(const Instruction&, std::span<const ArrayView>, std::span<const ArrayView>);
// A fused elementwise op's loop over one block of BlockRunner (fusion_runner.h), the arithmetic
// of select_elementwise's kernel without its call (a KernelCall, the shape's element count, the
// split over the pool, the CPU level looked up): out[i] = f(x[i], y[i]) over n elements, x[0]
// (y[0]) for a scalar operand, y unused by a unary op; on the calling thread. One function per
// CpuLevel (cpu_level.h), indexed by it. Through the kernel, a multiply over a block of 256
// f32 ran about 220 instructions of call beside its loop's 130 (callgrind, AVX2).
using BlockLoop = void (*)(const uint8_t* x, const uint8_t* y, uint8_t* out, bool x_scalar, bool y_scalar, int64_t n);
using BlockLoops = std::array<BlockLoop, 3>;
// An add, subtract or multiply folded into the op that alone reads it (fusion_plan.cc
// fold_pairs): t = inner(x[i], y[i]), then out[i] = outer(t, z[i]) (form 0), outer(z[i], t)
// (form 1), outer(t, t) (form 2, z unread) or, for a unary outer op, outer(t) (form 3, z unread),
// each op rounded as alone (the build keeps a*b+c two roundings: -ffp-contract=off): the
// evaluator's bits in one pass over the block instead of two (a layer norm's (x - mean) * rstd
// and (x - mean)^2, a softmax's exp(x - max), Adam's products added). One function per CpuLevel.
using PairLoop = void (*)(const uint8_t* x, const uint8_t* y, const uint8_t* z, uint8_t* out, bool x_scalar,
                          bool y_scalar, bool z_scalar, int64_t n);
using PairLoops = std::array<PairLoop, 3>;
// The pair loops of `type`, or null: f32 with inner add, subtract or multiply and outer add,
// subtract, multiply or divide, or (form 3) exp, expm1, log, tanh, logistic or erf; f64 with
// inner multiply and outer add or subtract (forms 0 and 1).
const PairLoops* select_pair_loops(PrimitiveType type, Opcode inner, Opcode outer, int form);
// The block loops of an op select_elementwise runs natively on these views, where it has them
// (binary arithmetic and bitwise ops, unary arithmetic and the float functions); else null.
const BlockLoops* select_block_loops(const Instruction&, std::span<const ArrayView> operands, const ArrayView& out);
// data_movement_kernels.cc: reshape (bytes), slice, broadcast, iota, concatenate,
// transpose, reverse, pad.
SelectedKernel select_data_movement(const Instruction&, std::span<const ArrayView>, std::span<const ArrayView>);
// dynamic_slice_kernels.cc: dynamic-slice; dynamic-update-slice in place (the output is the
// operand's memory, or the operand is first copied into it). Start indices are read per call.
SelectedKernel select_dynamic_slice(const Instruction&, std::span<const ArrayView>, std::span<const ArrayView>);
// For a dynamic-slice that buffer assignment made a view (kDynamicView): the byte offset of its
// result inside operand 0 for this call's start indices (clamped as XLA does). Pre:
// select_dynamic_slice selects a kernel for the instruction. For a dynamic-update-slice whose
// update buffer assignment placed in a window of its own (sets_own_window): the window's offset,
// `operands` being the stack and the starts (the update left out).
int64_t dynamic_view_offset(const Instruction& instruction, std::span<const ArrayView> operands);
// dot_kernels.cc: any dimension numbers; f32 (and bf16/f16 converted to f32), integer dots;
// operands read in place, on the GEMM library when large enough and readable in place, else in
// the evaluator's accumulation order.
SelectedKernel select_dot(const Instruction&, std::span<const ArrayView>, std::span<const ArrayView>);
// reduce_kernels.cc (reduce) and reduce_window_kernels.cc (reduce-window): a simple combiner
// natively, any scalar-program combiner planned once, variadic too;
// select_and_scatter_kernels.cc: select-and-scatter with a compare select and an add scatter.
SelectedKernel select_reduce(const Instruction&, std::span<const ArrayView>, std::span<const ArrayView>);
SelectedKernel select_reduce_window(const Instruction&, std::span<const ArrayView>, std::span<const ArrayView>);
SelectedKernel select_select_and_scatter(const Instruction&, std::span<const ArrayView>, std::span<const ArrayView>);
// fusion_kernels.cc: a kLoop fusion of elementwise ops, broadcasts and scalars, block by block
// through the selected elementwise kernels (typed registers for a scalar chain).
SelectedKernel select_fusion(const Instruction&, std::span<const ArrayView>, std::span<const ArrayView>);
// A fusion of a dot and its strided dynamic-slice operands (kind=kCustom: passes/fusion.h): the
// dot read where the blocks lie, and where its root accumulates the dot into a window of the
// array it updates in place, the product written there (dot_kernels.cc). select_fusion
// dispatches it.
SelectedKernel select_sliced_dot(const Instruction&, std::span<const ArrayView>, std::span<const ArrayView>);
// row_fusion_kernels.cc: a row fusion (kind=kCustom, not a dot: passes/row_fusion.h), a chunk of
// rows at a time through its members' kernels.
SelectedKernel select_row_fusion(const Instruction&, std::span<const ArrayView>, std::span<const ArrayView>);
// The chunks of rows one task of a row fusion takes (the pool splits the chunks into tasks of
// at least that many: what a chunk reads and writes per row against kParallelElements), or 0
// when `plan` is not a row fusion's.
int64_t row_fusion_chunks_per_task(const KernelPlan& plan);
// sort_kernels.cc: sort by a comparator planned as a scalar program (output i may be operand
// i's memory); topk over the last dimension.
SelectedKernel select_sort(const Instruction&, std::span<const ArrayView>, std::span<const ArrayView>);
SelectedKernel select_topk(const Instruction&, std::span<const ArrayView>, std::span<const ArrayView>);
// gather_kernels.cc: any gather the verifier accepts, reading the operand in place.
SelectedKernel select_gather(const Instruction&, std::span<const ArrayView>, std::span<const ArrayView>);
// scatter_kernels.cc: single-operand scatter in place, in the evaluator's order.
SelectedKernel select_scatter(const Instruction&, std::span<const ArrayView>, std::span<const ArrayView>);
// lapack_kernels.cc: the custom-call targets insitu itself implements natively (the LAPACK
// targets of evaluator/lapack.h); an output may be exactly its aliased operand's memory.
SelectedKernel select_builtin_custom_call(const Instruction&, std::span<const ArrayView>, std::span<const ArrayView>);
// convolution_kernels.cc: convolution (any dimension numbers, groups, dilations) with operands
// of the result's type: large f32 ones as patches times the kernel on the GEMM library, the rest in
// the evaluator's summation order.
SelectedKernel select_convolution(const Instruction&, std::span<const ArrayView>, std::span<const ArrayView>);
// fft_kernels.cc: fft (FFT, IFFT, RFFT, IRFFT over 1-3 dimensions), the evaluator's transforms.
SelectedKernel select_fft(const Instruction&, std::span<const ArrayView>, std::span<const ArrayView>);
// rng_kernels.cc: rng-bit-generator (threefry, philox), the evaluator's generators.
SelectedKernel select_rng_bit_generator(const Instruction&, std::span<const ArrayView>, std::span<const ArrayView>);
// linalg_kernels.cc: cholesky and triangular-solve (f32, f64), the evaluator's algorithms.
SelectedKernel select_linalg(const Instruction&, std::span<const ArrayView>, std::span<const ArrayView>);

// ---- Scalar programs: a computation over scalars run as one element (sort comparators,
// reduce and scatter combiners) ----
//
// A scalar computation (scalar parameters, constants and elementwise ops, the root an op or a
// tuple) as a program over the same native kernels, so it computes what the evaluator does;
// nullptr when something in it has no native path. run_scalar_program reads one element per
// parameter and writes one per root leaf.
KernelPlanPtr plan_scalar_program(const Computation& computation);
// scalar_program.cc: the same computations when every op is a compare, select, logical or
// basic arithmetic op over f32/f64/s32/s64/pred, compiled to typed registers (nullptr
// otherwise); run_register_program is false for any other plan.
KernelPlanPtr plan_register_program(const Computation& computation);
bool run_register_program(const KernelPlan& plan, std::span<const uint8_t* const> arguments,
                          std::span<uint8_t* const> results);
void run_scalar_program(const KernelPlan& program, std::span<const uint8_t* const> arguments,
                        std::span<uint8_t* const> results, ThreadPool& pool);

}  // namespace insitu
