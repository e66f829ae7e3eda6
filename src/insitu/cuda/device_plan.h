// The CUDA plan of an optimized module: what each instruction of its entry becomes on the GPU,
// decided without a GPU (issue 12). A step is a generated kernel (loop fusion, reduce, in-place
// dynamic-update-slice or scatter: codegen.h), a GEMM (a dot, for cuBLAS), a device-to-device copy, or
// nothing at run time (parameters, constants uploaded once, tuples and their elements, and the
// reshapes, slices and bitcasts that keep the bytes: views); while loops and conditionals are
// planned computation by computation and driven by the host.
//
// Memory is the buffer assignment's (passes/buffer_assignment.h), the one plan the CPU runtime
// runs too, made with what the device can do (BufferAssignmentOptions::for_cuda): every step
// names its pointers as slices of its allocations, so in-place updates, elementwise results
// over dying operands, views and liveness reuse are decided once, for both devices, and the
// device's peak is explain's. Each pointer is checked against what its kernel can take: an
// output over an operand only where the kernel writes it so (in place, or elementwise at the
// element it reads), else a located internal error, never a race. A custom-call runs the CUDA body of the
// kernel registered under its target (kernel/kernel.h: cuda_source), one team of threads per
// grid step. The first instruction with no CUDA form is a located error naming it and its op;
// nothing falls back silently.
//
// The plan's kernels share one source (the prelude once, then each kernel), which
// compile_to_ptx turns into one PTX module for the device.
//
// GEMMs are row-major: C[b] (m x n) = op(A[b]) (m x k) * op(B[b]) (k x n), op a transpose or
// not, batches `stride_*` elements apart. A dot maps to one when each operand's free dimensions
// sit side by side (m or n: their product; absent: 1), its contracting dimensions too, in the
// same order in both (k: their product), and in each operand one of the two blocks has unit
// stride (the other's stride is the matrix's leading dimension). Batch dimensions may sit
// anywhere: those whose strides fold (each one's is the next one's times its extent, in both
// operands and the result) are one GEMM batch, and each group that does not fold is a loop of
// calls (GemmCall::outer): attention's [B, T, H, D] is one call per B, batched over H.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "insitu/cuda/codegen.h"
#include "insitu/evaluator/custom_call_table.h"
#include "insitu/ir/computation.h"
#include "insitu/passes/buffer_assignment.h"
#include "insitu/support/status.h"

namespace insitu::cuda {

// How a dot runs as a GEMM, or an error naming what does not map.
StatusOr<GemmCall> plan_gemm(const Instruction& dot);

// The same GEMM as cuBLAS (column-major) computes it: C^T = op(B)^T op(A)^T, so the call's first
// matrix is B's buffer and its second A's (cublas<S|D>gemmStridedBatched's arguments in order).
struct CublasGemm {
  bool transpose_first = false, transpose_second = false;  // CUBLAS_OP_T for the first / second
  int64_t m = 1, n = 1, k = 1;                             // of the column-major problem
  int64_t ld_first = 1, ld_second = 1, ld_out = 1;
  int64_t stride_first = 0, stride_second = 0, stride_out = 0, batch = 1;
};
CublasGemm cublas_gemm(const GemmCall& call);

// The same call as a cuBLAS GEMV where the column-major problem has one column (n = 1: the
// row-major m = 1 of a decode step's attention over its cache, batched), so that it runs as the
// memory-bound product it is: y = op(matrix) x (cublas<S|D>gemvStridedBatched's arguments),
// matrix = B's buffer (rows x cols as stored, leading dimension ld), x = A's, y = C's. nullopt
// for other shapes.
struct CublasGemv {
  bool transpose = false;
  int64_t rows = 1, cols = 1, ld = 1, incx = 1;
  int64_t stride_matrix = 0, stride_x = 0, stride_y = 0, batch = 1;
};
std::optional<CublasGemv> cublas_gemv(const GemmCall& call);

// kWhile and kConditional are driven by the host: it reads the condition's pred (or the
// branch index) back after the condition's steps, a transfer of a few bytes per iteration.
enum class StepKind { kNone, kKernel, kGemm, kCopy, kWhile, kConditional };

// Where a step's pointer lies: a byte offset into an allocation of the plan's buffer assignment
// (DevicePlan::allocations); the executor adds the allocation's base of the run.
struct DeviceSlice {
  int64_t allocation = -1;
  int64_t offset = 0;
  bool operator==(const DeviceSlice&) const = default;
};

struct DeviceStep {
  const Instruction* instruction = nullptr;
  StepKind kind = StepKind::kNone;
  // Every pointer the step takes, in the order it takes them, where the buffer assignment put
  // each value: kKernel and kGemm: the operands', then the outputs' (none for a
  // dynamic-update-slice or scatter: its result is operand 0's memory); a custom-call's follow
  // its grid table. kCopy: {from, to} (`from_constant`: the literal uploaded at create instead).
  // kWhile: {the condition's pred}; kConditional: {the branch index or pred}.
  std::vector<DeviceSlice> pointers;
  const Instruction* from_constant = nullptr;  // kCopy of a constant the assignment put in a buffer
  int64_t bytes = 0;                           // kCopy
  // kCopy: a copy instruction's, counted in bytes_copied_on_device as the CPU counts copies (a
  // reshape's bytes moved, or a constant written, are the op's own work, not a copy).
  bool counted = false;
  std::string kernel;   // kKernel: the __global__ function
  int64_t threads = 0;  // kKernel: one per output element (per update element, in place)
  // kKernel of a split reduce (generate_split_reduce): `kernel` writes partials into a scratch
  // block of `scratch_bytes`, then `finish` (over `finish_threads`) folds them into the output.
  // kGemm of a convolution: `finish` (over `finish_threads`: (lhs, rhs, out)) computes the
  // outputs whose window touches padding again, after the GEMM.
  std::string finish;
  int64_t finish_threads = 0;
  int64_t scratch_bytes = 0;
  // kKernel of a staged sort (generate_staged_sort): `kernel` (over `threads`) sets up a scratch
  // block of `scratch_bytes`, `stage` runs once per entry of `stages` (its two numbers after the
  // pointers) over `stage_threads`, then `finish` (over `finish_threads`) writes the outputs.
  std::string stage;
  int64_t stage_threads = 0;
  std::vector<std::pair<int64_t, int64_t>> stages;
  // The operands whose memory an output of this elementwise kernel is written over (the buffer
  // assignment put it there: an operand that dies here, read only at each element's own
  // position, or a donated parameter): their pointers are not __restrict__.
  std::vector<int64_t> written_over;
  GemmCall gemm;        // kGemm
  // kGemm of a convolution (generate_convolution_gemm): the GEMM's A and B are scratch blocks
  // that these kernels write first from operands 0 and 1 (signature (operand, scratch, n)).
  struct Pack {
    std::string kernel;
    int64_t threads = 0, bytes = 0;
  };
  std::vector<Pack> packs;
  // kKernel of a custom-call: its grid's table (generate_custom_kernel), uploaded once. Where the
  // kernel updates an operand in place that the call does not alias to that output, the output
  // starts as a device copy of the operand (counted, as on the CPU): `copy_in`, {from, to, bytes}
  // each, before the launch (the kernel then reads and writes the output's memory).
  std::vector<int64_t> grid_table;
  struct CopyIn {
    DeviceSlice from, to;
    int64_t bytes = 0;
  };
  std::vector<CopyIn> copy_in;
  // kWhile: {condition, body}; kConditional: one per branch. Each in its computation's order.
  std::vector<std::vector<DeviceStep>> nested;
};

// An allocation of the buffer assignment as the device holds it: a parameter's memory is the
// caller's argument leaf `argument_leaf` (depth-first over the parameters), a constant's is
// uploaded once at create, an output's and the temp arena's come from the executable's pool
// for each run (an output's then belong to the caller).
struct DeviceAllocation {
  AllocationKind kind = AllocationKind::kTemp;
  int64_t size = 0;
  int64_t argument_leaf = -1;  // kParameter
};

struct DevicePlan {
  std::vector<DeviceStep> steps;  // in the entry's program order
  std::string source;             // kernel_prelude() and every kernel, of every computation
  std::vector<std::string> custom_bodies;  // registered kernels' CUDA functions in `source`
  int64_t kernels = 0;  // generated kernels (k0, k1, ...)
  int64_t gemms = 0;    // GEMM steps (their kernels g0, g1, ...)
  int64_t copies = 0;   // copy instructions run as device copies, loop bodies and branches included
  // Memory, as the buffer assignment planned it (the CPU runtime's plan, made with what the
  // device can do: BufferAssignmentOptions::for_cuda).
  std::vector<DeviceAllocation> allocations;  // by the assignment's allocation index
  // Every constant in a constant allocation, with where its bytes go (uploaded at create).
  std::vector<std::pair<const Instruction*, DeviceSlice>> constants;
  std::vector<DeviceSlice> results;  // per entry result leaf (depth-first)
  int64_t planned_peak_bytes = 0;    // the assignment's peak (explain's), parameters included
};

// Plans `module`'s entry (optimized, with inline_unlooped_fusions applied: what the device
// runs) on `buffers`, an assignment of that module made with BufferAssignmentOptions::for_cuda.
// Custom-calls resolve through `custom_calls` (null: CustomCallTable::global()).
StatusOr<DevicePlan> plan_for_cuda(const Module& module, const BufferAssignment& buffers,
                                   const CustomCallTable* custom_calls = nullptr);
// The same on an assignment made here.
StatusOr<DevicePlan> plan_for_cuda(const Module& module, const CustomCallTable* custom_calls = nullptr);

// One line per step that runs (`%name: kernel k3, 4096 threads`, `%d: gemm 512x1024x784 ...`).
std::string describe(const DevicePlan& plan);

}  // namespace insitu::cuda
