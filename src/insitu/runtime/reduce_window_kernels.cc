// Native reduce-window kernels of the CPU runtime, selected once per step
// (select_reduce_window) with everything worked out from the instruction in their plan; the
// reduce kernels are in reduce_kernels.cc, the helpers both use in reduce_internal.h.
//
// reduce-window with a simple combiner (one binary op of its two parameters: add, multiply,
// maximum, minimum, and, or) folds each window in row-major window order, skipping padding and
// dilation holes, as the evaluator (src/insitu/evaluator/reduce.cc) does (no double sums
// there); other combiners, variadic ones too, run as a scalar program the same way. Other
// reduce-windows run in the evaluator (fallback).
#include <algorithm>
#include <cstring>
#include <optional>
#include <vector>

#include "insitu/evaluator/index_util.h"
#include "insitu/runtime/element_compute.h"
#include "insitu/runtime/kernels.h"
#include "insitu/runtime/reduce_internal.h"

namespace insitu {
namespace kernels {
namespace {

using Dimensions = std::vector<int64_t>;

// Whether `window` fits an input of `input` and an output of `out` (the output dimension each
// window dimension gives): false leaves the reduce-window to the fallback, which reports it.
bool window_fits(const std::vector<WindowDimension>& window, const Shape& input, const Shape& out) {
  const int64_t rank = input.rank();
  if (static_cast<int64_t>(window.size()) != rank || out.rank() != rank) return false;
  for (int64_t d = 0; d < rank; ++d) {
    const WindowDimension& w = window[d];
    if (w.size <= 0 || w.stride <= 0 || w.base_dilation <= 0 || w.window_dilation <= 0 || w.window_reversal)
      return false;
    const int64_t extent = input.dimension(d);
    const int64_t dilated_base = extent == 0 ? 0 : (extent - 1) * w.base_dilation + 1;
    const int64_t padded = dilated_base + w.padding_low + w.padding_high;
    const int64_t dilated_window = (w.size - 1) * w.window_dilation + 1;
    const int64_t expected = padded < dilated_window ? 0 : (padded - dilated_window) / w.stride + 1;
    if (out.dimension(d) != expected) return false;
  }
  return true;
}

int64_t window_positions(const std::vector<WindowDimension>& window) {
  int64_t count = 1;
  for (const WindowDimension& w : window) count *= w.size;
  return count;
}

// reduce-window by a simple combiner: the combiner, the input's strides, positions per window.
struct ReduceWindowPlan final : KernelPlan {
  Combiner combiner;
  Dimensions input_strides;
  int64_t window_count = 1;
  // Without base dilation: each window position's offset from the window's first element, in
  // row-major window order, and the window's extent per dimension; a window inside the input
  // (no padding) reads input[first + offset] for each.
  bool undilated_base = false;
  std::vector<int64_t> offsets;
  Dimensions extents;
};

// Every output folds its window positions in row-major window order, skipping padding and
// base-dilation holes, from the init value (no double sums: the evaluator folds reduce-window
// through to_apply element by element).
template <typename T>
Status reduce_window_kernel(const KernelCall& call) {
  using C = ComputeType<T>;
  const ReduceWindowPlan& plan = static_cast<const ReduceWindowPlan&>(*call.plan);
  const std::vector<WindowDimension>& window = call.instruction.window;
  const Shape& input_shape = *call.operands[0].shape;
  const T* input = reinterpret_cast<const T*>(call.operands[0].data);
  const T init = *reinterpret_cast<const T*>(call.operands[1].data);
  T* out = reinterpret_cast<T*>(call.out().data);
  const Shape& out_shape = *call.out().shape;
  const int64_t rank = input_shape.rank();
  const Dimensions& input_strides = plan.input_strides;
  const Dimensions& out_dims = out_shape.dimensions();
  const int64_t window_count = plan.window_count;
  const Opcode opcode = plan.combiner.opcode;
  const bool first_is_acc = plan.combiner.accumulator_first;
  run_range(call.pool, out_shape.element_count(),
            std::max<int64_t>(1, kParallelElements / std::max<int64_t>(1, window_count)),
            [&](int64_t begin, int64_t end) {
              Dimensions output_index(static_cast<size_t>(rank)), window_index(static_cast<size_t>(rank));
              for (int64_t d = rank - 1, rest = begin; d >= 0; --d) {
                output_index[d] = rest % out_dims[d];
                rest /= out_dims[d];
              }
              for (int64_t o = begin; o < end; ++o) {
                if (o > begin) {  // the next output index, row-major
                  for (int64_t d = rank - 1; d >= 0; --d) {
                    if (++output_index[d] < out_dims[d]) break;
                    output_index[d] = 0;
                  }
                }
                C acc = to_compute(init);
                if (plan.undilated_base) {  // a window inside the input: its positions by offset
                  int64_t first = 0;
                  bool inside = true;
                  for (int64_t d = 0; d < rank; ++d) {
                    const int64_t start = output_index[d] * window[d].stride - window[d].padding_low;
                    inside = inside && start >= 0 && start + plan.extents[d] <= input_shape.dimension(d);
                    first += start * input_strides[d];
                  }
                  if (inside) {
                    for (const int64_t offset : plan.offsets)
                      acc = fold_step<T>(first_is_acc, opcode, acc, to_compute(input[first + offset]));
                    out[o] = to_stored<T>(acc);
                    continue;
                  }
                }
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
                  if (inside) acc = fold_step<T>(first_is_acc, opcode, acc, to_compute(input[linear]));
                  for (int64_t d = rank - 1; d >= 0; --d) {  // next window position, row-major
                    if (++window_index[d] < window[d].size) break;
                    window_index[d] = 0;
                  }
                }
                out[o] = to_stored<T>(acc);
              }
            });
  return ok_status();
}

SelectedKernel select_simple_reduce_window(const Instruction& instruction, std::span<const ArrayView> operands,
                                           std::span<const ArrayView> outputs) {
  if (!simple_reduce_operands_fit(operands, outputs)) return std::nullopt;
  const ArrayView& input = operands[0];
  const ArrayView& out = outputs[0];
  if (!window_fits(instruction.window, *input.shape, *out.shape)) return std::nullopt;
  const std::optional<Combiner> combiner = simple_combiner(instruction);
  if (!combiner) return std::nullopt;
  const bool bitwise = combiner->opcode == Opcode::kAnd || combiner->opcode == Opcode::kOr;
  if (bitwise && is_floating(input.type())) return std::nullopt;
  KernelFn run = nullptr;
  dispatch_native_numeric(input.type(), [&](auto tag) { run = &reduce_window_kernel<decltype(tag)>; });
  if (run == nullptr) return std::nullopt;
  auto plan = std::make_unique<ReduceWindowPlan>();
  plan->combiner = *combiner;
  plan->input_strides = row_major_strides(input.shape->dimensions());
  plan->window_count = window_positions(instruction.window);
  plan->undilated_base = true;
  for (const WindowDimension& w : instruction.window) {
    plan->undilated_base = plan->undilated_base && w.base_dilation == 1;
    plan->extents.push_back((w.size - 1) * w.window_dilation + 1);
  }
  if (plan->undilated_base) {  // the offsets in row-major window order, the evaluator's
    plan->offsets.assign(1, 0);
    for (size_t d = 0; d < instruction.window.size(); ++d) {
      std::vector<int64_t> next;
      for (const int64_t offset : plan->offsets)
        for (int64_t i = 0; i < instruction.window[d].size; ++i)
          next.push_back(offset + i * instruction.window[d].window_dilation * plan->input_strides[d]);
      plan->offsets = std::move(next);
    }
  }
  return NativeKernel{run, std::move(plan)};
}

// reduce-window (variadic too) whose combiner is a scalar program (log-add-exp, XLA's
// argmax-style max-pool gradient): the program, the widths, the input's strides.
struct ReduceWindowProgramPlan final : KernelPlan {
  KernelPlanPtr combiner;
  Dimensions widths, input_widths;  // of each init (and result), of each input
  Dimensions strides;               // of the inputs (one shape)
  int64_t window_count = 1;
};

// Each window folded from init in the evaluator's order (row-major over the window, padding
// and dilation holes skipped), one output element per task.
Status reduce_window_program_kernel(const KernelCall& call) {
  const ReduceWindowProgramPlan& plan = static_cast<const ReduceWindowProgramPlan&>(*call.plan);
  const KernelPlan& combiner = *plan.combiner;
  const Dimensions& widths = plan.widths;
  const Dimensions& input_widths = plan.input_widths;
  const Dimensions& strides = plan.strides;
  const std::span<const ArrayView> operands = call.operands;
  const std::span<const ArrayView> outputs = call.outputs;
  ThreadPool& pool = call.pool;
  const size_t n = widths.size();
  const Shape& shape = *operands[0].shape;
  const Shape& out_shape = *outputs[0].shape;
  const int64_t rank = shape.rank();
  const std::vector<WindowDimension>& window = call.instruction.window;
  run_range(pool, out_shape.element_count(),
            std::max<int64_t>(1, kParallelElements / std::max<int64_t>(1, plan.window_count * 16)),
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
  return ok_status();
}

SelectedKernel select_reduce_window_program(const Instruction& instruction, std::span<const ArrayView> operands,
                                            std::span<const ArrayView> outputs) {
  auto plan = std::make_unique<ReduceWindowProgramPlan>();
  if (!variadic_operands_fit(operands, outputs, plan->widths, plan->input_widths)) return std::nullopt;
  const Shape& shape = *operands[0].shape;
  const Shape& out_shape = *outputs[0].shape;
  for (const ArrayView& output : outputs)
    if (output.shape->dimensions() != out_shape.dimensions()) return std::nullopt;
  if (!window_fits(instruction.window, shape, out_shape)) return std::nullopt;
  plan->combiner = combiner_program(instruction);
  if (plan->combiner == nullptr) return std::nullopt;
  plan->strides = row_major_strides(shape.dimensions());
  plan->window_count = window_positions(instruction.window);
  return NativeKernel{&reduce_window_program_kernel, std::move(plan)};
}

}  // namespace
}  // namespace kernels

// The same order as select_reduce.
SelectedKernel select_reduce_window(const Instruction& instruction, std::span<const ArrayView> operands,
                                    std::span<const ArrayView> outputs) {
  if (instruction.opcode() != Opcode::kReduceWindow) return std::nullopt;
  if (SelectedKernel simple = kernels::select_simple_reduce_window(instruction, operands, outputs)) return simple;
  return kernels::select_reduce_window_program(instruction, operands, outputs);
}

}  // namespace insitu
