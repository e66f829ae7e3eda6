// CUDA C++ kernels generated from insitu's IR (issue 12), and NVRTC to compile them: elementwise
// loop fusions and ops, reduces, dynamic-update-slices in place, data movement, sorts, gathers,
// scatters, dots, convolutions and registered custom kernels.
//
// A fusion whose computation is elementwise over one shape (parameters of the result's shape or
// scalars, scalar constants and their broadcasts, unary and binary arithmetic, compare, select,
// convert) becomes one __global__ function: thread i computes element i of the result in
// registers, reading each parameter once; a parameter of a smaller shape is read through its
// broadcast at the element's coordinates. Anything else is an "unimplemented" Status naming the
// instruction and its op, never a guess. Values are computed in the element type the HLO names
// (f32 math in float, as the CPU runtime does; f16 and bf16 are stored as such and computed in
// float, as the CPU runtime computes them).
//
// Arrays on the device are in logical row-major order whatever their layout says, as in the CPU
// runtime and the evaluator (runtime/buffer.h): a layout is metadata, so a transpose is a
// logical transpose, a reshape moves nothing and a layout-changing copy is a plain copy.
//
// compile_to_ptx runs NVRTC (no GPU needed) for a compute capability (sm_90 for the H200) and
// returns the PTX, or NVRTC's log as the error. This builds only with INSITU_CUDA (CMake finds
// the CUDA toolkit's NVRTC); cuda_available() says so.
#pragma once

#include <optional>
#include <string>

#include <vector>

#include "insitu/cuda/kernel_grid.h"
#include "insitu/ir/instruction.h"
#include "insitu/support/status.h"

namespace insitu::cuda {

// A row-major GEMM: C[b] (m x n) = op(A[b]) (m x k) * op(B[b]) (k x n), op a transpose or not,
// batches `stride_*` elements apart (device_plan.h makes one from a dot).
struct GemmCall {
  PrimitiveType type = PrimitiveType::kF32;
  int64_t batch = 1, m = 1, n = 1, k = 1;
  bool transpose_a = false, transpose_b = false;  // A stored k x m, B stored n x k
  int64_t lda = 0, ldb = 0, ldc = 0;              // row-major leading dimensions as stored
  int64_t stride_a = 0, stride_b = 0, stride_c = 0;
  // Batch dimensions that do not fold into `batch` (attention's [B, T, H, D] batched over B and
  // H: B's stride is not H's times H), outermost first: one call per index of these, its
  // operands offset by each index times that dimension's strides (elements).
  struct Outer {
    int64_t count = 1, stride_a = 0, stride_b = 0, stride_c = 0;
  };
  std::vector<Outer> outer;
};
// Per call of `call` (one, or one per index of its outer batch dimensions, outermost slowest):
// the element offsets of its A, B and C.
struct GemmOffsets {
  int64_t a = 0, b = 0, c = 0;
};
std::vector<GemmOffsets> gemm_offsets(const GemmCall& call);

struct GeneratedKernel {
  std::string name;    // the __global__ function's name (extern "C")
  std::string source;  // CUDA C++: the function, self-contained
  // Signature: (const T0* p0, ..., T* out, long long n): one pointer per fusion operand in order,
  // then the result (a multi-output fusion: one per output, in tuple order), then its element
  // count; launch with n threads (any block size).
};

// The kernel of a kLoop fusion (its called computation), named `name`. Arrays are indexed in
// logical row-major order; a parameter of another shape than the result is read through its
// broadcasts, by index.
// written_operands: the operands an output is written over (each of the output's shape, which
// each thread reads only at its own element, before it writes any output): those pointers and
// the outputs' are not __restrict__.
StatusOr<GeneratedKernel> generate_elementwise_kernel(const Instruction& fusion, const std::string& name,
                                                      const std::vector<int64_t>& written_operands = {});

// The kernel of one elementwise op, broadcast, iota, convert, compare or select outside any
// fusion, as a fusion of that op alone (same signature: its operands, then the result).
StatusOr<GeneratedKernel> generate_op_kernel(const Instruction& op, const std::string& name,
                                             const std::vector<int64_t>& written_operands = {});
// A scalar computation (a reduce's or sort's to_apply: every value rank 0) as a __device__
// function `name`(T0 p0, ..., R0* out0, ...) writing its root (each element of a root tuple),
// computed as generate_elementwise_kernel computes an element; errors name `user`.
StatusOr<GeneratedKernel> generate_scalar_function(const Computation& computation, const Instruction& user,
                                                   const std::string& name);
// The ops generate_op_kernel takes (it may still refuse one for its types).
bool is_op_kernel_opcode(Opcode opcode);

// The kernel of a convolution, every form the evaluator takes (dim_labels, strides, padding,
// base and window dilation, window reversal, feature and batch groups; operands of other types
// converted to the result's first): thread i computes output element i, summing over the
// window's positions in row-major order, then the group's input features, in the evaluator's
// accumulator (float for bf16/f16, 64 bits for integers). Signature (const L* a, const R* b, T*
// c, long long n), n output elements. (One thread per output: for the forms that are no GEMM,
// generate_convolution_gemm.) `border_only`: the threads of outputs whose window lies on input
// elements alone return at once (generate_convolution_gemm's border).
StatusOr<GeneratedKernel> generate_convolution_kernel(const Instruction& convolution, const std::string& name,
                                                      bool border_only = false);

// A convolution as one GEMM, where it has that form: f32 or f64 throughout, no feature or batch
// groups, the result's feature dimension last. `patches` (const T* lhs, T* a, long long n),
// n = M * K, writes A: row m holds the input under output position m's window (M: the result's
// positions in its row-major order; K: the window's positions in row-major order, then the
// input features: the evaluator's summation order), zero where the window lies on padding or a
// base-dilation hole. `weights` (const T* rhs, T* b, long long n), n = K * O, writes B: the
// kernel as K x O, reversed along the dimensions the window reverses. Then the result (M x O,
// row-major) = A B. That is the evaluator's sum wherever the window lies on input elements
// alone; where it touches padding, A's zeros would add 0 * weight where the evaluator adds
// nothing (NaN for an infinite weight), so `border` (generate_convolution_kernel's border_only
// form; empty without padding) then computes those outputs again, exactly. nullopt where the
// convolution has another form, base dilation (whose holes every window meets), fewer than half
// its outputs inside, or patches of more than kMaxPatchBytes.
inline constexpr int64_t kMaxPatchBytes = int64_t{1} << 30;
struct ConvolutionGemm {
  GeneratedKernel patches, weights, border;
  GemmCall gemm;
  int64_t patch_bytes = 0, weight_bytes = 0;
};
StatusOr<std::optional<ConvolutionGemm>> generate_convolution_gemm(const Instruction& convolution,
                                                                   const std::string& name);

// The kernel of a reduce: thread i computes output element i, folding its reduced elements in
// the input's layout order (row-major for the default layout) from the init values, as the
// evaluator does, so the result is the evaluator's bit for bit. One input with a combiner of
// one op (add, multiply, maximum, minimum, and, or) of its two parameters folds inline (a
// floating sum in double, rounded once); several inputs (an argmax's value and index) or
// another combiner fold through a device function of the combiner (generate_scalar_function).
// Signature: (const T0* input0, ..., const T0* init0, ..., T0* out0, ..., long long n), n
// outputs (one input: (input0, init0, out0, n)).
// (One thread per output: right for many short rows; long rows take generate_split_reduce.)
StatusOr<GeneratedKernel> generate_reduce_kernel(const Instruction& reduce, const std::string& name);

// A reduce of long rows in two kernels, where one thread per output would leave the device
// idle and read a row element by element: `partial` runs outputs * partials threads, thread t
// folding elements t % partials, + partials, ... of output t / partials (so a warp reads
// consecutive elements of a row) into scratch[t]; `finish` runs one thread per output, folding
// init and its partials in order. For one input whose combiner is one op of its parameters (a
// sum, product, max, min, and, or) over at least 256 elements per output; nullopt otherwise. A
// floating sum stays in double until the finish rounds it once; other folds run in another
// order than the evaluator's, which a reduce's combiner allows (exact for max, min and the
// bitwise ones).
struct SplitReduce {
  GeneratedKernel partial;  // (const T* input0, ACC* scratch, long long n), n = outputs * partials
  GeneratedKernel finish;   // (const T* init0, const ACC* scratch, T* out0, long long n), n = outputs
  int64_t partials = 0;     // per output: 32 to 1024
  int64_t scratch_bytes = 0;
};
StatusOr<std::optional<SplitReduce>> generate_split_reduce(const Instruction& reduce, const std::string& name);

// The kernel of a select-and-scatter (no dilation, as XLA allows): thread i computes operand
// position i's result, init combined (scatter=) with the source value of every window whose pick
// (select= folded over the window in row-major order, padding skipped) is i, in the order of
// the windows, as the evaluator scatters them. Signature (const T* operand, const S* source,
// const S* init, S* out, long long n), n operand elements. (Each window is re-picked by every
// element it holds: correct, not yet fast.)
StatusOr<GeneratedKernel> generate_select_and_scatter_kernel(const Instruction& op, const std::string& name);

// The kernel of a reduce-window with one input and a combiner of one op of its two parameters:
// thread i folds output element i's window in row-major order from the init value, skipping
// padding and base-dilation holes, in the element type, as the evaluator does (bit for bit).
// Signature: (const T* input, const T* init, T* out, long long n), n outputs.
StatusOr<GeneratedKernel> generate_reduce_window_kernel(const Instruction& reduce_window, const std::string& name);

// The kernel of a sort (one or several operands along one dimension, with its comparator as a
// device function): thread r sorts row r with a stable insertion sort, moving every operand's
// element together, which gives the evaluator's (std::stable_sort) order for a comparator that
// is a strict weak order. Quadratic in the row: for rows shorter than kStagedSortLength (the
// corpus's); longer rows take generate_staged_sort. Signature: (const T0* in0, ..., T0* out0,
// ..., long long n), n rows.
StatusOr<GeneratedKernel> generate_sort_kernel(const Instruction& sort, const std::string& name);

// A sort of long rows in stages (rows of kStagedSortLength elements or more), where a thread per
// row would sort its row alone in quadratic time: a bitonic network over each row's positions,
// padded to a power of two, every compare-exchange of a stage a thread of its own. The network
// sorts a permutation (one int per padded position, in a scratch block) by the comparator with
// ties broken by position, a total order, so the result is the evaluator's stable order for a
// comparator that is a strict weak order; padding positions go last. Launches, in order:
// `setup` (int* order, long long n), n = rows * padded, writes each row's 0, 1, 2, ...;
// `stage` once per entry of `stages` (const T0* in0, ..., int* order, long long half, long
// long block, long long n), n = rows * padded / 2; `finish` (const T0* in0, ..., const int*
// order, T0* out0, ..., long long n), n = rows * length, gathers every operand through it.
inline constexpr int64_t kStagedSortLength = 256;
struct StagedSort {
  GeneratedKernel setup, stage, finish;
  std::vector<std::pair<int64_t, int64_t>> stages;  // (half, block) of each launch of `stage`
  int64_t rows = 0, padded = 0, length = 0;
  int64_t scratch_bytes = 0;
};
// nullopt for rows shorter than kStagedSortLength (generate_sort_kernel's) or too long for an
// int position.
StatusOr<std::optional<StagedSort>> generate_staged_sort(const Instruction& sort, const std::string& name);

// The kernel of a topk (the k first of each last-dimension row in a stable order of the
// total-order key, largest or smallest first, as the evaluator picks them): thread r selects
// row r's k values and their indices. Signature: (const T* in, T* values, I* indices, long
// long n), n rows.
StatusOr<GeneratedKernel> generate_topk_kernel(const Instruction& topk, const std::string& name);

// The kernel of a pad (edges, negative ones cropping, and interior padding): thread i writes
// output element i, from the operand or the padding value. Signature: (const T* operand,
// const T* value, T* out, long long n).
StatusOr<GeneratedKernel> generate_pad_kernel(const Instruction& pad, const std::string& name);

// The kernel of a dynamic-update-slice written in place: thread i copies update element i into
// `buffer` (the operand's buffer, which the result shares) at the start indices, each clamped
// into [0, operand - update] as XLA does. Signature: (T* buffer, const T* update, const I0* s0,
// ..., long long n), n update elements.
StatusOr<GeneratedKernel> generate_dynamic_update_slice_kernel(const Instruction& update_slice,
                                                               const std::string& name);

// The kernel of a scatter written in place (the result shares the operand's buffer): thread w
// takes window element w and walks the scatter positions in row-major order, combining its
// update into the element (assignment, or add, multiply, maximum or minimum of the element and
// the update, in either order) and dropping a window that does not fit, as the evaluator does,
// so duplicate indices combine in the evaluator's order. Refused where windows could overlap in
// part (a scattered operand dimension with a window wider than 1) or another combiner. A batching
// dimension starts at the position's coordinate on its indices dimension. Signature: (T* buffer, const I* indices, const T* updates, long long n),
// n = the elements of one window.
StatusOr<GeneratedKernel> generate_scatter_kernel(const Instruction& scatter, const std::string& name);

// The kernel of a gather: thread i copies output element i from the operand, its slice's start
// read from the index vector at the element's batch position (and the position itself on
// batching dimensions), each start clamped so that the slice stays inside the operand, as the
// evaluator does. Signature: (const T* operand, const I* indices, T* out, long long n).
StatusOr<GeneratedKernel> generate_gather_kernel(const Instruction& gather, const std::string& name);

// The kernel of a slice, dynamic-slice (start indices clamped as XLA does), transpose, reverse
// or concatenate: thread i copies output element i from where it comes. Signature: one pointer
// per operand (a dynamic-slice's start indices included), then the result, then n outputs.
StatusOr<GeneratedKernel> generate_data_movement_kernel(const Instruction& op, const std::string& name);

// A GEMM as a plain kernel: thread i computes element i of C (batch-major, row-major), summing
// over k in order. Correct everywhere; slow next to cuBLAS, which the executor will call instead
// once a GPU can check it. Signature: (const T* a, const T* b, T* c, long long n), n = batch*m*n.
GeneratedKernel generate_gemm_kernel(const GemmCall& call, const std::string& name);

// A registered kernel's call site (kernel/kernel.h: cuda_source, laid out by its
// KernelGridPart, cuda/kernel_grid.h): the wrapper `name` runs grid step s on the team of threads
// [s * kTeamLanes, (s + 1) * kTeamLanes) (teams never straddle a CUDA block: 128 divides the
// launch's block size), reads the step's blocks from `table` (kBlockEntry numbers per operand
// and output: offset, rank, shape[6], stride[6]) and calls the body with them. Signature:
// (const long long* table, one pointer per operand, one per output, long long n); launch with
// `threads` threads, the table uploaded once. The body's source goes into the plan once per
// kernel (generate_custom_kernel does not include it).
inline constexpr int64_t kTeamLanes = 128;
inline constexpr int64_t kMaxBlockRank = 6;
inline constexpr int64_t kBlockEntry = 2 + 2 * kMaxBlockRank;
struct CustomKernelLaunch {
  GeneratedKernel kernel;
  std::vector<int64_t> table;
  int64_t threads = 0;
};
StatusOr<CustomKernelLaunch> generate_custom_kernel(const Instruction& call, const KernelGridLayout& grid,
                                                    const std::string& name);

// The kernel of a dot of any dimension numbers, for the dots with no GEMM form (plan_gemm:
// contracting or free dimensions apart, a matrix with no dimension of unit stride, mixed types):
// thread i computes output element i (batch, lhs free, rhs free coordinates), summing over the
// contracting dimensions in the element type. Signature: (const T* a, const T* b, T* c, long
// long n), n outputs.
StatusOr<GeneratedKernel> generate_dot_kernel(const Instruction& dot, const std::string& name);

// Device functions every generated kernel may call (insitu_max/insitu_min: the evaluator's NaN
// and signed-zero rules; the blocks and teams of registered kernels). Put once at the top of a
// source holding one or more kernels.
std::string kernel_prelude();
// Its part for registered kernels (insitu_team, insitu_block, insitu_make_block).
std::string custom_kernel_prelude();

bool cuda_available();
// NVRTC's version, "13.0" say ("" without it): part of the PTX cache's key (ptx_cache.h).
std::string nvrtc_version();
// PTX for `source` (several kernels may share one source) at compute capability `arch`
// (e.g. "compute_90").
StatusOr<std::string> compile_to_ptx(const std::string& source, const std::string& program_name,
                                     const std::string& arch = "compute_90");

}  // namespace insitu::cuda
