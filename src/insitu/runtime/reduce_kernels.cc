// Native reduce kernel of the CPU runtime: one input, one init value, and a to_apply that is a
// single binary op of its two parameters (add, multiply, maximum, minimum, and, or), over
// f32, f64, f16, bf16, s32 and s64 arrays in row-major layout, reading the input in place.
//
// It is bit-for-bit the reference evaluator (src/insitu/evaluator/reduce.cc): each output
// element starts from the init value and folds the reduced elements in row-major order,
// acc = op(acc, x) (or op(x, acc) when to_apply names its parameters the other way round);
// f16/bf16 round after every op; integers wrap; a floating add sums in double and rounds once,
// as XLA's evaluator does. Only the order in which output elements are visited changes: when
// the innermost dimension is kept, a block of neighbouring outputs is folded together, step by
// step, so the input is read contiguously. Other reduces run in the evaluator (fallback).
// Any other combiner (argmax's (value, index) pair, several inputs) runs as a scalar program
// (run_reduce_program), element by element in the same order: no double sums there, as in the
// evaluator's fold through to_apply.
// reduce-window with the same combiners folds each window in row-major window order, skipping
// padding and dilation holes, as the evaluator does (no double sums there).
#include <algorithm>
#include <optional>
#include <vector>

#include "insitu/evaluator/index_util.h"
#include "insitu/ir/computation.h"
#include "insitu/runtime/element_compute.h"
#include "insitu/runtime/kernels.h"

namespace insitu {
namespace kernels {
namespace {

using Dimensions = std::vector<int64_t>;

// to_apply = op(p0, p1) or op(p1, p0) of two distinct scalar parameters.
struct Combiner {
  Opcode opcode = Opcode::kAdd;
  bool accumulator_first = true;  // op(acc, x) rather than op(x, acc)
};

std::optional<Combiner> simple_combiner(const Instruction& reduce) {
  if (reduce.called_computations().size() != 1) return std::nullopt;
  const Computation& computation = *reduce.called_computations()[0];
  const Instruction* root = computation.root();
  if (root == nullptr || computation.parameter_count() != 2 || root->operand_count() != 2) return std::nullopt;
  switch (root->opcode()) {
    case Opcode::kAdd:
    case Opcode::kMultiply:
    case Opcode::kMaximum:
    case Opcode::kMinimum:
    case Opcode::kAnd:
    case Opcode::kOr: break;
    default: return std::nullopt;
  }
  const Instruction* a = root->operand(0);
  const Instruction* b = root->operand(1);
  if (a == b || a->opcode() != Opcode::kParameter || b->opcode() != Opcode::kParameter) return std::nullopt;
  if (!(a->shape() == root->shape()) || !(b->shape() == root->shape())) return std::nullopt;
  return Combiner{root->opcode(), a->parameter_number == 0};
}

template <typename C>
C combine(Opcode opcode, C lhs, C rhs) {
  switch (opcode) {
    case Opcode::kAdd:
      if constexpr (std::is_integral_v<C>) return static_cast<C>(as_unsigned(lhs) + as_unsigned(rhs));
      else return lhs + rhs;
    case Opcode::kMultiply:
      if constexpr (std::is_integral_v<C>) return static_cast<C>(as_unsigned(lhs) * as_unsigned(rhs));
      else return lhs * rhs;
    case Opcode::kMaximum: return maximum_value(lhs, rhs);
    case Opcode::kMinimum: return minimum_value(lhs, rhs);
    case Opcode::kAnd:
      if constexpr (std::is_integral_v<C>) return static_cast<C>(lhs & rhs);
      break;
    case Opcode::kOr:
      if constexpr (std::is_integral_v<C>) return static_cast<C>(lhs | rhs);
      break;
    default: break;
  }
  INSITU_UNREACHABLE("reduce combiner " << opcode_name(opcode));
  return lhs;
}

bool is_row_major_layout(const Shape& shape) {
  const auto& order = shape.layout().minor_to_major;
  return order.empty() || std::is_sorted(order.rbegin(), order.rend());
}

// Where the reduced elements of one output lie, relative to the output's first one: `runs`
// offsets (the reduced dimensions outside the innermost block, in row-major order), each the
// start of `run` contiguous elements (the trailing reduced dimensions).
struct ReducePlan {
  Dimensions runs;
  int64_t run = 1;
  Dimensions kept_sizes, kept_strides;  // the output's dimensions and their input strides
  int64_t inner = 1;                    // contiguous outputs when the last dimension is kept
};

bool plan_reduce(const Instruction& reduce, const Shape& input, ReducePlan& plan) {
  const int64_t rank = input.rank();
  std::vector<bool> reduced(static_cast<size_t>(rank), false);
  for (int64_t d : reduce.dimensions) {
    if (d < 0 || d >= rank || reduced[d]) return false;
    reduced[d] = true;
  }
  const Dimensions strides = row_major_strides(input.dimensions());
  int64_t suffix = rank;  // the trailing reduced dimensions form one contiguous run
  while (suffix > 0 && reduced[suffix - 1]) --suffix;
  for (int64_t d = suffix; d < rank; ++d) plan.run *= input.dimension(d);
  Dimensions run_sizes, run_strides;
  for (int64_t d = 0; d < suffix; ++d) {
    if (reduced[d]) {
      run_sizes.push_back(input.dimension(d));
      run_strides.push_back(strides[d]);
    } else {
      plan.kept_sizes.push_back(input.dimension(d));
      plan.kept_strides.push_back(strides[d]);
    }
  }
  if (suffix == rank && rank > 0) plan.inner = input.dimension(rank - 1);
  int64_t runs = 1;
  for (int64_t size : run_sizes) runs *= size;
  if (runs > (int64_t{1} << 22)) return false;  // a table that big: leave it to the fallback
  plan.runs = row_major_offsets(run_sizes, run_strides);
  return true;
}

constexpr int64_t kInnerBlock = 256;

template <typename T>
void reduce_typed(const ReducePlan& plan, Combiner combiner, const T* input, T init, T* out, int64_t outputs,
                  ThreadPool& pool, bool sum_in_double) {
  using C = ComputeType<T>;
  // The input offset of output `o` (row-major over the kept dimensions).
  auto base_of = [&](int64_t o) {
    int64_t base = 0;
    for (int64_t d = static_cast<int64_t>(plan.kept_sizes.size()) - 1; d >= 0; --d) {
      base += (o % plan.kept_sizes[d]) * plan.kept_strides[d];
      o /= plan.kept_sizes[d];
    }
    return base;
  };
  const Opcode opcode = combiner.opcode;
  const bool first = combiner.accumulator_first;
  auto step = [&](C acc, C x) -> C {
    const C value = first ? combine(opcode, acc, x) : combine(opcode, x, acc);
    if constexpr (kIsHalfLike<T>) return to_compute(to_stored<T>(value));  // rounds after every op
    else return value;
  };
  auto store_double = [](double sum) -> T {
    if constexpr (kIsHalfLike<T>) return T::from_float(static_cast<float>(sum));
    else return static_cast<T>(sum);
  };
  const int64_t per_output = static_cast<int64_t>(plan.runs.size()) * plan.run;
  if (plan.inner > 1) {
    // The last dimension is kept: fold a block of neighbouring outputs step by step.
    const int64_t rows = outputs / plan.inner;
    const int64_t blocks = (plan.inner + kInnerBlock - 1) / kInnerBlock;
    run_range(pool, rows * blocks, std::max<int64_t>(1, kParallelElements / std::max<int64_t>(1, per_output * kInnerBlock)),
              [&](int64_t begin, int64_t end) {
                double sums[kInnerBlock];
                C accs[kInnerBlock];
                for (int64_t task = begin; task < end; ++task) {
                  const int64_t row = task / blocks, block = task % blocks;
                  const int64_t first_out = row * plan.inner + block * kInnerBlock;
                  const int64_t width = std::min(kInnerBlock, plan.inner - block * kInnerBlock);
                  const T* from = input + base_of(first_out);
                  if (sum_in_double) {
                    for (int64_t j = 0; j < width; ++j) sums[j] = static_cast<double>(to_compute(init));
                    for (int64_t r : plan.runs)
                      for (int64_t j = 0; j < width; ++j) sums[j] += static_cast<double>(to_compute(from[r + j]));
                    for (int64_t j = 0; j < width; ++j) out[first_out + j] = store_double(sums[j]);
                  } else {
                    for (int64_t j = 0; j < width; ++j) accs[j] = to_compute(init);
                    for (int64_t r : plan.runs)
                      for (int64_t j = 0; j < width; ++j) accs[j] = step(accs[j], to_compute(from[r + j]));
                    for (int64_t j = 0; j < width; ++j) out[first_out + j] = to_stored<T>(accs[j]);
                  }
                }
              });
    return;
  }
  run_range(pool, outputs, std::max<int64_t>(1, kParallelElements / std::max<int64_t>(1, per_output)),
            [&](int64_t begin, int64_t end) {
              for (int64_t o = begin; o < end; ++o) {
                const T* from = input + base_of(o);
                if (sum_in_double) {
                  double sum = static_cast<double>(to_compute(init));
                  for (int64_t r : plan.runs)
                    for (int64_t i = 0; i < plan.run; ++i) sum += static_cast<double>(to_compute(from[r + i]));
                  out[o] = store_double(sum);
                } else {
                  C acc = to_compute(init);
                  for (int64_t r : plan.runs)
                    for (int64_t i = 0; i < plan.run; ++i) acc = step(acc, to_compute(from[r + i]));
                  out[o] = to_stored<T>(acc);
                }
              }
            });
}

// reduce-window: every output folds its window positions in row-major window order, skipping
// padding and base-dilation holes, from the init value (no double sums: the evaluator folds
// reduce-window through to_apply element by element).
template <typename T>
void reduce_window_typed(const Instruction& instruction, Combiner combiner, const Shape& input_shape, const T* input,
                         T init, T* out, const Shape& out_shape, ThreadPool& pool) {
  using C = ComputeType<T>;
  const std::vector<WindowDimension>& window = instruction.window;
  const int64_t rank = input_shape.rank();
  const Dimensions input_strides = row_major_strides(input_shape.dimensions());
  const Dimensions& out_dims = out_shape.dimensions();
  int64_t window_count = 1;
  for (const WindowDimension& w : window) window_count *= w.size;
  const Opcode opcode = combiner.opcode;
  const bool first = combiner.accumulator_first;
  run_range(pool, out_shape.element_count(),
            std::max<int64_t>(1, kParallelElements / std::max<int64_t>(1, window_count)),
            [&](int64_t begin, int64_t end) {
              Dimensions output_index(static_cast<size_t>(rank)), window_index(static_cast<size_t>(rank));
              for (int64_t o = begin; o < end; ++o) {
                for (int64_t d = rank - 1, rest = o; d >= 0; --d) {
                  output_index[d] = rest % out_dims[d];
                  rest /= out_dims[d];
                }
                C acc = to_compute(init);
                std::fill(window_index.begin(), window_index.end(), 0);
                for (int64_t k = 0; k < window_count; ++k) {
                  int64_t linear = 0;
                  bool inside = true;
                  for (int64_t d = 0; d < rank && inside; ++d) {
                    const WindowDimension& w = window[d];
                    int64_t position = output_index[d] * w.stride + window_index[d] * w.window_dilation - w.padding_low;
                    if (position % w.base_dilation != 0) {
                      inside = false;
                      break;
                    }
                    position /= w.base_dilation;
                    if (position < 0 || position >= input_shape.dimension(d)) inside = false;
                    linear += position * input_strides[d];
                  }
                  if (inside) {
                    const C x = to_compute(input[linear]);
                    const C value = first ? combine(opcode, acc, x) : combine(opcode, x, acc);
                    if constexpr (kIsHalfLike<T>) acc = to_compute(to_stored<T>(value));
                    else acc = value;
                  }
                  for (int64_t d = rank - 1; d >= 0; --d) {  // next window position, row-major
                    if (++window_index[d] < window[d].size) break;
                    window_index[d] = 0;
                  }
                }
                out[o] = to_stored<T>(acc);
              }
            });
}

}  // namespace
}  // namespace kernels

bool run_reduce_kernel(const Instruction& instruction, std::span<const ArrayView> operands, const ArrayView& out,
                       ThreadPool& pool) {
  if (instruction.opcode() != Opcode::kReduce || operands.size() != 2) return false;
  const ArrayView& input = operands[0];
  const ArrayView& init = operands[1];
  if (input.scalar || out.scalar || !input.shape->is_array() || !out.shape->is_array() || !init.shape->is_array())
    return false;
  if (init.shape->rank() != 0 || input.type() != init.type() || out.type() != input.type()) return false;
  if (!kernels::is_row_major_layout(*input.shape)) return false;
  const std::optional<kernels::Combiner> combiner = kernels::simple_combiner(instruction);
  if (!combiner) return false;
  const bool bitwise = combiner->opcode == Opcode::kAnd || combiner->opcode == Opcode::kOr;
  if (bitwise && is_floating(input.type())) return false;
  kernels::ReducePlan plan;
  if (!kernels::plan_reduce(instruction, *input.shape, plan)) return false;
  if (out.element_count() * static_cast<int64_t>(plan.runs.size()) * plan.run != input.element_count()) return false;
  const bool sum_in_double = combiner->opcode == Opcode::kAdd && is_floating(input.type());
  return kernels::dispatch_native_numeric(input.type(), [&](auto tag) {
    using T = decltype(tag);
    kernels::reduce_typed<T>(plan, *combiner, reinterpret_cast<const T*>(input.data),
                             *reinterpret_cast<const T*>(init.data), reinterpret_cast<T*>(out.data),
                             out.element_count(), pool, sum_in_double);
  });
}

bool run_reduce_window_kernel(const Instruction& instruction, std::span<const ArrayView> operands,
                              const ArrayView& out, ThreadPool& pool) {
  if (instruction.opcode() != Opcode::kReduceWindow || operands.size() != 2) return false;
  const ArrayView& input = operands[0];
  const ArrayView& init = operands[1];
  if (input.scalar || out.scalar || !input.shape->is_array() || !out.shape->is_array() || !init.shape->is_array())
    return false;
  if (init.shape->rank() != 0 || input.type() != init.type() || out.type() != input.type()) return false;
  const int64_t rank = input.shape->rank();
  if (static_cast<int64_t>(instruction.window.size()) != rank || out.shape->rank() != rank) return false;
  for (int64_t d = 0; d < rank; ++d) {
    const WindowDimension& w = instruction.window[d];
    if (w.size <= 0 || w.stride <= 0 || w.base_dilation <= 0 || w.window_dilation <= 0 || w.window_reversal)
      return false;
    const int64_t extent = input.shape->dimension(d);
    const int64_t dilated_base = extent == 0 ? 0 : (extent - 1) * w.base_dilation + 1;
    const int64_t padded = dilated_base + w.padding_low + w.padding_high;
    const int64_t dilated_window = (w.size - 1) * w.window_dilation + 1;
    const int64_t expected = padded < dilated_window ? 0 : (padded - dilated_window) / w.stride + 1;
    if (out.shape->dimension(d) != expected) return false;  // the fallback reports the mismatch
  }
  const std::optional<kernels::Combiner> combiner = kernels::simple_combiner(instruction);
  if (!combiner) return false;
  const bool bitwise = combiner->opcode == Opcode::kAnd || combiner->opcode == Opcode::kOr;
  if (bitwise && is_floating(input.type())) return false;
  return kernels::dispatch_native_numeric(input.type(), [&](auto tag) {
    using T = decltype(tag);
    kernels::reduce_window_typed<T>(instruction, *combiner, *input.shape, reinterpret_cast<const T*>(input.data),
                                    *reinterpret_cast<const T*>(init.data), reinterpret_cast<T*>(out.data), *out.shape,
                                    pool);
  });
}

bool run_reduce_window_program(const Instruction& instruction, const KernelPlan& combiner,
                               std::span<const ArrayView> operands, std::span<const ArrayView> outputs,
                               ThreadPool& pool) {
  if (instruction.opcode() != Opcode::kReduceWindow || operands.size() % 2 != 0 || operands.empty()) return false;
  const size_t n = operands.size() / 2;
  if (outputs.size() != n || n > 8) return false;
  const Shape& shape = *operands[0].shape;
  const Shape& out_shape = *outputs[0].shape;
  std::vector<int64_t> widths, input_widths;
  for (size_t i = 0; i < n; ++i) {
    const ArrayView& input = operands[i];
    const ArrayView& init = operands[n + i];
    if (input.scalar || init.scalar || outputs[i].scalar || !input.shape->is_array() || !init.shape->is_array() ||
        !outputs[i].shape->is_array() || init.shape->rank() != 0 || outputs[i].type() != init.type() ||
        input.shape->dimensions() != shape.dimensions() || outputs[i].shape->dimensions() != out_shape.dimensions())
      return false;
    widths.push_back(byte_width(init.type()));
    input_widths.push_back(byte_width(input.type()));
    if (widths.back() > 8) return false;
  }
  const int64_t rank = shape.rank();
  const std::vector<WindowDimension>& window = instruction.window;
  if (static_cast<int64_t>(window.size()) != rank || out_shape.rank() != rank) return false;
  for (int64_t d = 0; d < rank; ++d) {
    const WindowDimension& w = window[d];
    if (w.size <= 0 || w.stride <= 0 || w.base_dilation <= 0 || w.window_dilation <= 0 || w.window_reversal)
      return false;
    const int64_t dilated_base = shape.dimension(d) == 0 ? 0 : (shape.dimension(d) - 1) * w.base_dilation + 1;
    const int64_t padded = dilated_base + w.padding_low + w.padding_high;
    const int64_t dilated_window = (w.size - 1) * w.window_dilation + 1;
    if (out_shape.dimension(d) != (padded < dilated_window ? 0 : (padded - dilated_window) / w.stride + 1))
      return false;
  }
  const std::vector<int64_t> strides = row_major_strides(shape.dimensions());
  int64_t window_count = 1;
  for (const WindowDimension& w : window) window_count *= w.size;
  run_range(pool, out_shape.element_count(),
            std::max<int64_t>(1, kParallelElements / std::max<int64_t>(1, window_count * 16)),
            [&](int64_t begin, int64_t end) {
              // accumulators and the combiner's results, 8 bytes per operand each
              uint64_t accumulators[8], next[8];
              const uint8_t* arguments[16];
              uint8_t* results[8];
              for (size_t i = 0; i < n; ++i) {
                arguments[i] = reinterpret_cast<const uint8_t*>(&accumulators[i]);
                results[i] = reinterpret_cast<uint8_t*>(&next[i]);
              }
              std::vector<int64_t> output_index(rank), window_index(rank);
              for (int64_t o = begin; o < end; ++o) {
                for (int64_t d = rank - 1, rest = o; d >= 0; --d) {
                  output_index[d] = rest % out_shape.dimension(d);
                  rest /= out_shape.dimension(d);
                }
                for (size_t i = 0; i < n; ++i)
                  std::memcpy(&accumulators[i], operands[n + i].data, static_cast<size_t>(widths[i]));
                std::fill(window_index.begin(), window_index.end(), 0);
                for (bool more = true; more;) {
                  int64_t linear = 0;
                  bool real = true;
                  for (int64_t d = 0; d < rank && real; ++d) {
                    const WindowDimension& w = window[d];
                    int64_t position = output_index[d] * w.stride + window_index[d] * w.window_dilation - w.padding_low;
                    real = position % w.base_dilation == 0;
                    position /= w.base_dilation;
                    real = real && position >= 0 && position < shape.dimension(d);
                    linear += position * strides[d];
                  }
                  if (real) {
                    for (size_t i = 0; i < n; ++i) arguments[n + i] = operands[i].data + linear * input_widths[i];
                    run_scalar_program(combiner, std::span<const uint8_t* const>(arguments, 2 * n),
                                       std::span<uint8_t* const>(results, n), pool);
                    for (size_t i = 0; i < n; ++i)
                      std::memcpy(&accumulators[i], &next[i], static_cast<size_t>(widths[i]));
                  }
                  more = false;  // the next window index, row-major
                  for (int64_t d = rank - 1; d >= 0; --d) {
                    if (++window_index[d] < window[d].size) {
                      more = true;
                      break;
                    }
                    window_index[d] = 0;
                  }
                }
                for (size_t i = 0; i < n; ++i)
                  std::memcpy(outputs[i].data + o * widths[i], &accumulators[i], static_cast<size_t>(widths[i]));
              }
            });
  return true;
}

bool run_reduce_program(const Instruction& instruction, const KernelPlan& combiner,
                        std::span<const ArrayView> operands, std::span<const ArrayView> outputs, ThreadPool& pool) {
  if (instruction.opcode() != Opcode::kReduce || operands.size() % 2 != 0 || operands.empty()) return false;
  const size_t n = operands.size() / 2;
  if (outputs.size() != n || n > 8) return false;
  const Shape& input_shape = *operands[0].shape;
  std::vector<int64_t> widths, input_widths;
  for (size_t i = 0; i < n; ++i) {
    const ArrayView& input = operands[i];
    const ArrayView& init = operands[n + i];
    if (input.scalar || init.scalar || outputs[i].scalar || !input.shape->is_array() || !init.shape->is_array() ||
        !outputs[i].shape->is_array())
      return false;
    if (input.shape->dimensions() != input_shape.dimensions() || init.shape->rank() != 0 ||
        outputs[i].type() != init.type() || !kernels::is_row_major_layout(*input.shape))
      return false;
    widths.push_back(byte_width(init.type()));
    input_widths.push_back(byte_width(input.type()));
  }
  kernels::ReducePlan plan;
  if (!kernels::plan_reduce(instruction, input_shape, plan)) return false;
  const int64_t count = outputs[0].element_count();
  for (size_t i = 1; i < n; ++i)
    if (outputs[i].element_count() != count) return false;
  if (count * static_cast<int64_t>(plan.runs.size()) * plan.run != input_shape.element_count()) return false;
  const int64_t per_output = static_cast<int64_t>(plan.runs.size()) * plan.run;
  const int64_t kept = static_cast<int64_t>(plan.kept_sizes.size());
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
                  base += (rest % plan.kept_sizes[d]) * plan.kept_strides[d];
                  rest /= plan.kept_sizes[d];
                }
                for (size_t i = 0; i < n; ++i)
                  std::memcpy(&accumulators[i], operands[n + i].data, static_cast<size_t>(widths[i]));
                for (int64_t r : plan.runs) {
                  for (int64_t k = 0; k < plan.run; ++k) {
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
  return true;
}

namespace {

// select's compare direction when select is `compare(p0, p1)` (or with the parameters swapped,
// the mirrored direction); nullopt for anything else.
std::optional<ComparisonDirection> simple_select(const Computation& select, PrimitiveType type) {
  const Instruction* root = select.root();
  if (root == nullptr || root->opcode() != Opcode::kCompare || select.parameter_count() != 2) return std::nullopt;
  const Instruction* a = root->operand(0);
  const Instruction* b = root->operand(1);
  if (a->opcode() != Opcode::kParameter || b->opcode() != Opcode::kParameter || a == b) return std::nullopt;
  const ComparisonType ct = root->comparison_type;
  if (ct != ComparisonType::kDefault && !(is_floating(type) ? ct == ComparisonType::kFloat : ct == ComparisonType::kSigned))
    return std::nullopt;
  ComparisonDirection direction = root->comparison_direction;
  if (a->parameter_number == 1) {  // compare(p1, p0): the same test with the operands mirrored
    switch (direction) {
      case ComparisonDirection::kGe: direction = ComparisonDirection::kLe; break;
      case ComparisonDirection::kGt: direction = ComparisonDirection::kLt; break;
      case ComparisonDirection::kLe: direction = ComparisonDirection::kGe; break;
      case ComparisonDirection::kLt: direction = ComparisonDirection::kGt; break;
      default: break;
    }
  }
  return direction;
}

}  // namespace

bool run_select_and_scatter_kernel(const Instruction& instruction, std::span<const ArrayView> operands,
                                   const ArrayView& out) {
  if (instruction.opcode() != Opcode::kSelectAndScatter || operands.size() != 3 ||
      instruction.called_computations().size() != 2)
    return false;
  const ArrayView& operand = operands[0];
  const ArrayView& source = operands[1];
  const ArrayView& init = operands[2];
  if (operand.scalar || source.scalar || out.scalar || operand.type() != out.type() || source.type() != out.type() ||
      init.type() != out.type() || !operand.shape->is_array() || !source.shape->is_array())
    return false;
  const std::optional<ComparisonDirection> direction = simple_select(*instruction.called_computations()[0], out.type());
  if (!direction) return false;
  // scatter= as a combiner: simple_combiner reads the first called computation, so ask it of a
  // view of the instruction with only scatter= called.
  Instruction scatter_only(Opcode::kReduce, instruction.name(), instruction.shape());
  scatter_only.set_called_computations({instruction.called_computations()[1]});
  const std::optional<kernels::Combiner> combiner = kernels::simple_combiner(scatter_only);
  if (!combiner || combiner->opcode != Opcode::kAdd) return false;
  const Shape& shape = *operand.shape;
  const int64_t rank = shape.rank();
  const std::vector<WindowDimension>& window = instruction.window;
  if (static_cast<int64_t>(window.size()) != rank || source.shape->rank() != rank) return false;
  for (int64_t d = 0; d < rank; ++d) {
    const WindowDimension& w = window[d];
    if (w.size <= 0 || w.stride <= 0 || w.base_dilation != 1 || w.window_dilation != 1 || w.window_reversal) return false;
    const int64_t padded = shape.dimension(d) + w.padding_low + w.padding_high;
    if (source.shape->dimension(d) != (padded < w.size ? 0 : (padded - w.size) / w.stride + 1)) return false;
  }
  if (out.type() != PrimitiveType::kF32 && out.type() != PrimitiveType::kF64 && out.type() != PrimitiveType::kS32 &&
      out.type() != PrimitiveType::kS64)
    return false;
  return kernels::dispatch_native_numeric(out.type(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_arithmetic_v<T>) {  // f32/f64/s32/s64 (checked above)
    const T* x = reinterpret_cast<const T*>(operand.data);
    const T* src = reinterpret_cast<const T*>(source.data);
    T* o = reinterpret_cast<T*>(out.data);
    const T initial = *reinterpret_cast<const T*>(init.data);
    for (int64_t i = 0; i < out.element_count(); ++i) o[i] = initial;
    const std::vector<int64_t> strides = row_major_strides(shape.dimensions());
    std::vector<int64_t> source_index(rank, 0), window_index(rank, 0);
    for (int64_t s = 0; s < source.element_count(); ++s) {
      int64_t picked = -1;
      std::fill(window_index.begin(), window_index.end(), 0);
      for (bool more = true; more;) {
        int64_t linear = 0;
        bool inside = true;
        for (int64_t d = 0; d < rank && inside; ++d) {
          const int64_t position = source_index[d] * window[d].stride + window_index[d] - window[d].padding_low;
          inside = position >= 0 && position < shape.dimension(d);
          linear += position * strides[d];
        }
        if (inside && (picked < 0 || !compare_keys(*direction, x[picked], x[linear]))) picked = linear;
        more = false;  // next window index, row-major
        for (int64_t d = rank - 1; d >= 0; --d) {
          if (++window_index[d] < window[d].size) {
            more = true;
            break;
          }
          window_index[d] = 0;
        }
      }
      if (picked >= 0) {
        if constexpr (std::is_integral_v<T>) o[picked] = static_cast<T>(as_unsigned(o[picked]) + as_unsigned(src[s]));
        else o[picked] = o[picked] + src[s];
      }
      for (int64_t d = rank - 1; d >= 0; --d) {  // next source index, row-major
        if (++source_index[d] < source.shape->dimension(d)) break;
        source_index[d] = 0;
      }
    }
    }
  });
}

}  // namespace insitu
