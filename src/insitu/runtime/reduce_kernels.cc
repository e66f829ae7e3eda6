// Native reduce kernels of the CPU runtime, selected once per step (select_reduce) with
// everything worked out from the instruction in their plan (reduce-window:
// reduce_window_kernels.cc; select-and-scatter: select_and_scatter_kernels.cc; the helpers
// reduce and reduce-window share: reduce_internal.h).
//
// The simple-combiner reduce: one input, one init value, and a to_apply that is a single binary
// op of its two parameters (add, multiply, maximum, minimum, and, or), over f32, f64, f16, bf16,
// s32 and s64 (and u32/u64) arrays in row-major layout, reading the input in place.
//
// It is bit-for-bit the reference evaluator (src/insitu/evaluator/reduce.cc): each output
// element starts from the init value and folds the reduced elements in row-major order,
// acc = op(acc, x) (or op(x, acc) when to_apply names its parameters the other way round);
// f16/bf16 round after every op; integers wrap; a floating add sums in double and rounds once,
// as XLA's evaluator does, in blocks of kSumBlock elements (evaluator/sum_order.h): an output
// of more than that sums its blocks side by side and on every worker (sum_in_blocks). Only the
// order in which output elements are visited changes: when the innermost dimension is kept, a
// block of neighbouring outputs is folded together, step by step, so the input is read
// contiguously.
// Any other combiner (argmax's (value, index) pair, several inputs) that plans as a scalar
// program runs as that program (the reduce program kernel), element by element in the same
// order: no double sums there, as in the evaluator's fold through to_apply. Other reduces run
// in the evaluator (fallback).
#include <algorithm>
#include <cstring>
#include <memory>
#include <optional>
#include <vector>

#include "insitu/evaluator/index_util.h"
#include "insitu/evaluator/sum_order.h"
#include "insitu/runtime/element_compute.h"
#include "insitu/runtime/kernels.h"
#include "insitu/runtime/reduce_internal.h"
#include "insitu/runtime/reduce_rows_f32.h"

namespace insitu {
namespace kernels {
namespace {

using Dimensions = std::vector<int64_t>;

bool is_row_major_layout(const Shape& shape) {
  const auto& order = shape.layout().minor_to_major;
  return order.empty() || std::is_sorted(order.rbegin(), order.rend());
}

// Where the reduced elements of one output lie, relative to the output's first one: `runs`
// offsets (the reduced dimensions outside the innermost block, in row-major order), each the
// start of `run` contiguous elements (the trailing reduced dimensions).
struct ReduceWalk {
  Dimensions runs;
  int64_t run = 1;
  Dimensions kept_sizes, kept_strides;  // the output's dimensions and their input strides
  int64_t inner = 1;                    // contiguous outputs when the last dimension is kept
};

bool plan_walk(const Instruction& reduce, const Shape& input, ReduceWalk& walk) {
  const int64_t rank = input.rank();
  std::vector<bool> reduced(static_cast<size_t>(rank), false);
  for (int64_t d : reduce.dimensions) {
    if (d < 0 || d >= rank || reduced[d]) return false;
    reduced[d] = true;
  }
  const Dimensions strides = row_major_strides(input.dimensions());
  int64_t suffix = rank;  // the trailing reduced dimensions form one contiguous run
  while (suffix > 0 && reduced[suffix - 1]) --suffix;
  for (int64_t d = suffix; d < rank; ++d) walk.run *= input.dimension(d);
  Dimensions run_sizes, run_strides;
  for (int64_t d = 0; d < suffix; ++d) {
    if (reduced[d]) {
      run_sizes.push_back(input.dimension(d));
      run_strides.push_back(strides[d]);
    } else {
      walk.kept_sizes.push_back(input.dimension(d));
      walk.kept_strides.push_back(strides[d]);
    }
  }
  if (suffix == rank && rank > 0) walk.inner = input.dimension(rank - 1);
  int64_t runs = 1;
  for (int64_t size : run_sizes) runs *= size;
  if (runs > (int64_t{1} << 22)) return false;  // a table that big: leave it to the fallback
  walk.runs = row_major_offsets(run_sizes, run_strides);
  return true;
}

// The simple-combiner reduce: the walk, the combiner, and whether a floating add sums in double.
struct ReducePlan final : KernelPlan {
  ReduceWalk walk;
  Combiner combiner;
  bool sum_in_double = false;
};

constexpr int64_t kInnerBlock = 256;
constexpr int64_t kLanes = 8;  // outputs summed side by side when the reduced elements are contiguous

// A whole reduction of one contiguous run of integers or preds (`all(isfinite(x))`, a count):
// their combiners (wrapping add and multiply, and, or, max, min) are associative and
// commutative, so chunks fold in parallel and their results fold after: the same value as one
// fold in order, bit for bit. Before, one thread folded through a switch per element (79 ms for
// 7M preds).
template <typename T>
bool reduce_whole_run(const KernelCall& call, Opcode opcode, const T* from, int64_t n, T init, T* out) {
  if constexpr (!std::is_integral_v<T>) {
    return false;
  } else {
    const bool order_free = opcode == Opcode::kAdd || opcode == Opcode::kMultiply || opcode == Opcode::kMaximum ||
                            opcode == Opcode::kMinimum || opcode == Opcode::kAnd || opcode == Opcode::kOr;
    if (n < 2 * kParallelElements || !order_free) return false;
    const int64_t chunks = std::min<int64_t>(n / kParallelElements, 64);
    // one element per chunk, each its own bytes (a std::vector<bool> packs the chunks of a pred
    // reduction into one word, which two threads then wrote at once: ThreadSanitizer found it)
    std::unique_ptr<ComputeType<T>[]> partial(new ComputeType<T>[static_cast<size_t>(chunks)]);
    run_range(call.pool, chunks, 1, [&](int64_t begin, int64_t end) {
      for (int64_t c = begin; c < end; ++c) {
        const int64_t first = n * c / chunks, last = n * (c + 1) / chunks;
        partial[c] = fold_run<T>(opcode, from + first, last - first);
      }
    });
    ComputeType<T> acc = to_compute(init);
    for (int64_t c = 0; c < chunks; ++c) acc = combine(opcode, acc, partial[c]);
    *out = to_stored<T>(acc);
    return true;
  }
}

// start + the elements [first, last) of one output's walk (`from`: its first element), in double,
// in order.
template <typename T>
double sum_walk(const T* from, const ReduceWalk& walk, int64_t first, int64_t last, double start) {
  double sum = start;
  for (int64_t e = first; e < last;) {
    const int64_t run = e / walk.run, at = e % walk.run;
    const int64_t length = std::min(walk.run - at, last - e);
    const T* elements = from + walk.runs[static_cast<size_t>(run)] + at;
    for (int64_t i = 0; i < length; ++i) sum += static_cast<double>(to_compute(elements[i]));
    e += length;
  }
  return sum;
}

// A floating sum of more than kSumBlock elements per output (inner dimension reduced): each
// block's sum is a task, block 0's from init and the others' from -0.0; f32 blocks of full
// length within one run go kSummedRows side by side (a short group repeats its first row and
// drops those sums); then each output adds its blocks' sums in order and rounds once
// (evaluator/sum_order.h).
template <typename T, typename BaseOf>
void sum_in_blocks(const KernelCall& call, const ReduceWalk& walk, const T* input, T init, T* out, int64_t outputs,
                   int64_t per_output, const BaseOf& base_of) {
  const int64_t blocks = (per_output + kSumBlock - 1) / kSumBlock;
  const int64_t tasks = outputs * blocks;
  std::unique_ptr<double[]> partial(new double[static_cast<size_t>(tasks)]);
  const double first_start = static_cast<double>(to_compute(init));
  run_range(call.pool, tasks, 2, [&](int64_t begin, int64_t end) {
    int64_t t = begin;
    if constexpr (std::is_same_v<T, float>) {
      const bool contiguous = walk.runs.size() == 1;
      while (contiguous && t < end) {
        const float* rows[kSummedRows];
        double sums[kSummedRows];
        int64_t group[kSummedRows];
        int64_t count = 0;
        for (; t < end && count < kSummedRows; ++t) {
          const int64_t block = t % blocks;
          if ((block + 1) * kSumBlock > per_output) {  // the short last block: on its own
            const int64_t o = t / blocks;
            partial[t] = sum_walk(input + base_of(o), walk, block * kSumBlock, per_output, block == 0 ? first_start : -0.0);
            continue;
          }
          rows[count] = input + base_of(t / blocks) + walk.runs[0] + block * kSumBlock;
          sums[count] = block == 0 ? first_start : -0.0;
          group[count++] = t;
        }
        if (count == 0) break;
        for (int64_t k = count; k < kSummedRows; ++k) {
          rows[k] = rows[0];
          sums[k] = 0.0;
        }
        sum_rows_f32(rows, kSumBlock, sums);
        for (int64_t k = 0; k < count; ++k) partial[group[k]] = sums[k];
      }
    }
    for (; t < end; ++t) {
      const int64_t o = t / blocks, block = t % blocks;
      partial[t] = sum_walk(input + base_of(o), walk, block * kSumBlock, std::min(per_output, (block + 1) * kSumBlock),
                            block == 0 ? first_start : -0.0);
    }
  });
  for (int64_t o = 0; o < outputs; ++o) {
    double sum = partial[o * blocks];
    for (int64_t block = 1; block < blocks; ++block) sum += partial[o * blocks + block];
    out[o] = store_double<T>(sum);
  }
}

template <typename T>
Status reduce_kernel(const KernelCall& call) {
  using C = ComputeType<T>;
  const ReducePlan& plan = static_cast<const ReducePlan&>(*call.plan);
  const ReduceWalk& walk = plan.walk;
  const T* input = reinterpret_cast<const T*>(call.operands[0].data);
  const T init = *reinterpret_cast<const T*>(call.operands[1].data);
  T* out = reinterpret_cast<T*>(call.out().data);
  const int64_t outputs = call.out().element_count();
  const bool sum_in_double = plan.sum_in_double;
  // The input offset of output `o` (row-major over the kept dimensions).
  auto base_of = [&](int64_t o) {
    int64_t base = 0;
    for (int64_t d = static_cast<int64_t>(walk.kept_sizes.size()) - 1; d >= 0; --d) {
      base += (o % walk.kept_sizes[d]) * walk.kept_strides[d];
      o /= walk.kept_sizes[d];
    }
    return base;
  };
  const Opcode opcode = plan.combiner.opcode;
  const bool first = plan.combiner.accumulator_first;
  auto step = [&](C acc, C x) -> C { return fold_step<T>(first, opcode, acc, x); };
  const int64_t per_output = static_cast<int64_t>(walk.runs.size()) * walk.run;
  if (walk.inner > 1) {
    // The last dimension is kept: fold a block of neighbouring outputs step by step.
    const int64_t rows = outputs / walk.inner;
    const int64_t blocks = (walk.inner + kInnerBlock - 1) / kInnerBlock;
    run_range(call.pool, rows * blocks,
              std::max<int64_t>(1, kParallelElements / std::max<int64_t>(1, per_output * kInnerBlock)),
              [&](int64_t begin, int64_t end) {
                double sums[kInnerBlock], later[kInnerBlock];
                C accs[kInnerBlock];
                for (int64_t task = begin; task < end; ++task) {
                  const int64_t row = task / blocks, block = task % blocks;
                  const int64_t first_out = row * walk.inner + block * kInnerBlock;
                  const int64_t width = std::min(kInnerBlock, walk.inner - block * kInnerBlock);
                  const T* from = input + base_of(first_out);
                  if (sum_in_double) {
                    // block 0 into sums from init, each later block into `later` from -0.0,
                    // then added (evaluator/sum_order.h)
                    const int64_t count = static_cast<int64_t>(walk.runs.size());
                    for (int64_t j = 0; j < width; ++j) sums[j] = static_cast<double>(to_compute(init));
                    for (int64_t e = 0; e < count; e += kSumBlock) {
                      double* into = e == 0 ? sums : later;
                      if (e > 0) std::fill(later, later + width, -0.0);
                      for (int64_t i = e, last = std::min(count, e + kSumBlock); i < last; ++i) {
                        const T* at = from + walk.runs[static_cast<size_t>(i)];
                        for (int64_t j = 0; j < width; ++j) into[j] += static_cast<double>(to_compute(at[j]));
                      }
                      if (e > 0)
                        for (int64_t j = 0; j < width; ++j) sums[j] += later[j];
                    }
                    for (int64_t j = 0; j < width; ++j) out[first_out + j] = store_double<T>(sums[j]);
                  } else {
                    for (int64_t j = 0; j < width; ++j) accs[j] = to_compute(init);
                    for (int64_t r : walk.runs)
                      for (int64_t j = 0; j < width; ++j) accs[j] = step(accs[j], to_compute(from[r + j]));
                    for (int64_t j = 0; j < width; ++j) out[first_out + j] = to_stored<T>(accs[j]);
                  }
                }
              });
    return ok_status();
  }
  if (sum_in_double && per_output > kSumBlock) {
    sum_in_blocks<T>(call, walk, input, init, out, outputs, per_output, base_of);
    return ok_status();
  }
  if (outputs == 1 && walk.runs.size() == 1 && walk.run > 0 && !sum_in_double &&
      reduce_whole_run<T>(call, opcode, input + base_of(0) + walk.runs[0], walk.run, init, out))
    return ok_status();
  run_range(call.pool, outputs, std::max<int64_t>(1, kParallelElements / std::max<int64_t>(1, per_output)),
            [&](int64_t begin, int64_t end) {
              int64_t o = begin;
              if constexpr (std::is_same_v<T, float>) {
                // kSummedRows f32 rows side by side at the CPU's vector width (reduce_rows_f32.h)
                for (; sum_in_double && o + kSummedRows <= end; o += kSummedRows) {
                  const float* rows[kSummedRows];
                  const float* at[kSummedRows];
                  double sums[kSummedRows];
                  for (int64_t k = 0; k < kSummedRows; ++k) {
                    rows[k] = input + base_of(o + k);
                    sums[k] = static_cast<double>(init);
                  }
                  for (int64_t r : walk.runs) {
                    for (int64_t k = 0; k < kSummedRows; ++k) at[k] = rows[k] + r;
                    sum_rows_f32(at, walk.run, sums);
                  }
                  for (int64_t k = 0; k < kSummedRows; ++k) out[o + k] = store_double<T>(sums[k]);
                }
              }
              if (sum_in_double) {
                // kLanes outputs at a time, each its own chain of double adds in its own order
                // (the same sums bit for bit): one chain waits an add's latency per element.
                for (; o + kLanes <= end; o += kLanes) {
                  const T* rows[kLanes];
                  double sums[kLanes];
                  for (int64_t k = 0; k < kLanes; ++k) {
                    rows[k] = input + base_of(o + k);
                    sums[k] = static_cast<double>(to_compute(init));
                  }
                  for (int64_t r : walk.runs)
                    for (int64_t i = 0; i < walk.run; ++i)
                      for (int64_t k = 0; k < kLanes; ++k) sums[k] += static_cast<double>(to_compute(rows[k][r + i]));
                  for (int64_t k = 0; k < kLanes; ++k) out[o + k] = store_double<T>(sums[k]);
                }
              }
              for (; o < end; ++o) {
                const T* from = input + base_of(o);
                if (sum_in_double) {
                  double sum = static_cast<double>(to_compute(init));
                  for (int64_t r : walk.runs)
                    for (int64_t i = 0; i < walk.run; ++i) sum += static_cast<double>(to_compute(from[r + i]));
                  out[o] = store_double<T>(sum);
                } else {
                  if constexpr (std::is_same_v<T, float>) {
                    if ((opcode == Opcode::kMaximum || opcode == Opcode::kMinimum) && walk.runs.size() == 1 &&
                        walk.run > 0) {
                      const std::optional<float> value =
                          max_or_min_run_f32(opcode == Opcode::kMaximum, init, from + walk.runs[0], walk.run);
                      if (value) {
                        out[o] = *value;
                        continue;
                      }
                    }
                  }
                  C acc = to_compute(init);
                  for (int64_t r : walk.runs)
                    for (int64_t i = 0; i < walk.run; ++i) acc = step(acc, to_compute(from[r + i]));
                  out[o] = to_stored<T>(acc);
                }
              }
            });
  return ok_status();
}

// The simple-combiner reduce, when every condition holds.
SelectedKernel select_simple_reduce(const Instruction& instruction, std::span<const ArrayView> operands,
                                    std::span<const ArrayView> outputs) {
  if (!simple_reduce_operands_fit(operands, outputs)) return std::nullopt;
  const ArrayView& input = operands[0];
  const ArrayView& out = outputs[0];
  if (!is_row_major_layout(*input.shape)) return std::nullopt;
  const std::optional<Combiner> combiner = simple_combiner(instruction);
  if (!combiner) return std::nullopt;
  const bool bitwise = combiner->opcode == Opcode::kAnd || combiner->opcode == Opcode::kOr;
  if (bitwise && is_floating(input.type())) return std::nullopt;
  auto plan = std::make_unique<ReducePlan>();
  plan->combiner = *combiner;
  if (!plan_walk(instruction, *input.shape, plan->walk)) return std::nullopt;
  if (out.element_count() * static_cast<int64_t>(plan->walk.runs.size()) * plan->walk.run != input.element_count())
    return std::nullopt;
  plan->sum_in_double = combiner->opcode == Opcode::kAdd && is_floating(input.type());
  KernelFn run = nullptr;
  dispatch_native_numeric(input.type(), [&](auto tag) { run = &reduce_kernel<decltype(tag)>; });
  // pred under and/or (jnp.all, jnp.any: `all(isfinite(g))` before an optimizer step)
  if (input.type() == PrimitiveType::kPred && bitwise) run = &reduce_kernel<bool>;
  if (run == nullptr) return std::nullopt;
  return NativeKernel{run, std::move(plan)};
}

// Any reduce (N inputs, N inits, N results) whose combiner is a scalar program: the walk, the
// program and the operands' element widths.
struct ReduceProgramPlan final : KernelPlan {
  ReduceWalk walk;
  KernelPlanPtr combiner;
  Dimensions widths, input_widths;  // of each init (and result), of each input
};

Status reduce_program_kernel(const KernelCall& call) {
  const ReduceProgramPlan& plan = static_cast<const ReduceProgramPlan&>(*call.plan);
  const ReduceWalk& walk = plan.walk;
  const KernelPlan& combiner = *plan.combiner;
  const Dimensions& widths = plan.widths;
  const Dimensions& input_widths = plan.input_widths;
  const std::span<const ArrayView> operands = call.operands;
  const std::span<const ArrayView> outputs = call.outputs;
  ThreadPool& pool = call.pool;
  const size_t n = widths.size();
  const int64_t count = outputs[0].element_count();
  const int64_t per_output = static_cast<int64_t>(walk.runs.size()) * walk.run;
  const int64_t kept = static_cast<int64_t>(walk.kept_sizes.size());
  run_range(pool, count, std::max<int64_t>(1, kParallelElements / std::max<int64_t>(1, per_output * 16)),
            [&](int64_t begin, int64_t end) {
              // accumulators and the combiner's results, 8 bytes per operand each
              uint64_t accumulators[8], next[8];
              const uint8_t* arguments[16];
              uint8_t* results[8];
              for (size_t i = 0; i < n; ++i) {
                arguments[i] = reinterpret_cast<const uint8_t*>(&accumulators[i]);
                results[i] = reinterpret_cast<uint8_t*>(&next[i]);
              }
              for (int64_t o = begin; o < end; ++o) {
                int64_t base = 0;
                for (int64_t d = kept - 1, rest = o; d >= 0; --d) {
                  base += (rest % walk.kept_sizes[d]) * walk.kept_strides[d];
                  rest /= walk.kept_sizes[d];
                }
                for (size_t i = 0; i < n; ++i)
                  std::memcpy(&accumulators[i], operands[n + i].data, static_cast<size_t>(widths[i]));
                for (int64_t r : walk.runs) {
                  for (int64_t k = 0; k < walk.run; ++k) {
                    for (size_t i = 0; i < n; ++i)
                      arguments[n + i] = operands[i].data + (base + r + k) * input_widths[i];
                    run_scalar_program(combiner, std::span<const uint8_t* const>(arguments, 2 * n),
                                       std::span<uint8_t* const>(results, n), pool);
                    for (size_t i = 0; i < n; ++i)
                      std::memcpy(&accumulators[i], &next[i], static_cast<size_t>(widths[i]));
                  }
                }
                for (size_t i = 0; i < n; ++i)
                  std::memcpy(outputs[i].data + o * widths[i], &accumulators[i], static_cast<size_t>(widths[i]));
              }
            });
  return ok_status();
}

SelectedKernel select_reduce_program(const Instruction& instruction, std::span<const ArrayView> operands,
                                     std::span<const ArrayView> outputs) {
  auto plan = std::make_unique<ReduceProgramPlan>();
  if (!variadic_operands_fit(operands, outputs, plan->widths, plan->input_widths)) return std::nullopt;
  const size_t n = outputs.size();
  const Shape& input_shape = *operands[0].shape;
  for (size_t i = 0; i < n; ++i)
    if (!is_row_major_layout(*operands[i].shape)) return std::nullopt;
  if (!plan_walk(instruction, input_shape, plan->walk)) return std::nullopt;
  const int64_t count = outputs[0].element_count();
  for (size_t i = 1; i < n; ++i)
    if (outputs[i].element_count() != count) return std::nullopt;
  if (count * static_cast<int64_t>(plan->walk.runs.size()) * plan->walk.run != input_shape.element_count())
    return std::nullopt;
  plan->combiner = combiner_program(instruction);
  if (plan->combiner == nullptr) return std::nullopt;
  return NativeKernel{&reduce_program_kernel, std::move(plan)};
}

}  // namespace
}  // namespace kernels

// The simple-combiner kernel first; else the combiner as a scalar program.
SelectedKernel select_reduce(const Instruction& instruction, std::span<const ArrayView> operands,
                             std::span<const ArrayView> outputs) {
  if (instruction.opcode() != Opcode::kReduce) return std::nullopt;
  if (SelectedKernel simple = kernels::select_simple_reduce(instruction, operands, outputs)) return simple;
  return kernels::select_reduce_program(instruction, operands, outputs);
}

}  // namespace insitu
