// Native select-and-scatter (max pooling's gradient before XLA rewrites it): a select that is
// one compare of its two parameters and a scatter that adds, selected once per step. Per window
// the first position the select keeps (in row-major window order, padding never picked)
// receives the source value, added in the evaluator's order (src/insitu/evaluator/reduce.cc).
#include <optional>
#include <vector>

#include "insitu/evaluator/index_util.h"
#include "insitu/runtime/element_compute.h"
#include "insitu/runtime/kernels.h"
#include "insitu/runtime/reduce_combiner.h"

namespace insitu {
namespace kernels {
namespace {

using Dimensions = std::vector<int64_t>;

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

// select-and-scatter by a compare select and an add scatter: the direction, the operand's strides.
struct SelectAndScatterPlan final : KernelPlan {
  ComparisonDirection direction = ComparisonDirection::kGe;
  Dimensions strides;
};

// Windows overlap, so it runs on one thread.
template <typename T>
Status select_and_scatter_kernel(const KernelCall& call) {
  const SelectAndScatterPlan& plan = static_cast<const SelectAndScatterPlan&>(*call.plan);
  const ArrayView& operand = call.operands[0];
  const ArrayView& source = call.operands[1];
  const ArrayView& out = call.out();
  const Shape& shape = *operand.shape;
  const int64_t rank = shape.rank();
  const std::vector<WindowDimension>& window = call.instruction.window;
  const ComparisonDirection direction = plan.direction;
  const Dimensions& strides = plan.strides;
  const T* x = reinterpret_cast<const T*>(operand.data);
  const T* src = reinterpret_cast<const T*>(source.data);
  T* o = reinterpret_cast<T*>(out.data);
  const T initial = *reinterpret_cast<const T*>(call.operands[2].data);
  for (int64_t i = 0; i < out.element_count(); ++i) o[i] = initial;
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
      if (inside && (picked < 0 || !compare_keys(direction, x[picked], x[linear]))) picked = linear;
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
  return ok_status();
}

}  // namespace
}  // namespace kernels

// A select that is one compare of its two parameters (jax's max-pool gradient: GE) and a
// scatter that adds, over f32/f64/s32/s64, unit dilations; nullopt otherwise (the evaluator's
// path).
SelectedKernel select_select_and_scatter(const Instruction& instruction, std::span<const ArrayView> operands,
                                         std::span<const ArrayView> outputs) {
  if (instruction.opcode() != Opcode::kSelectAndScatter || operands.size() != 3 || outputs.size() != 1 ||
      instruction.called_computations().size() != 2)
    return std::nullopt;
  const ArrayView& operand = operands[0];
  const ArrayView& source = operands[1];
  const ArrayView& init = operands[2];
  const ArrayView& out = outputs[0];
  if (operand.scalar || source.scalar || out.scalar || operand.type() != out.type() || source.type() != out.type() ||
      init.type() != out.type() || !operand.shape->is_array() || !source.shape->is_array())
    return std::nullopt;
  const std::optional<ComparisonDirection> direction =
      kernels::simple_select(*instruction.called_computations()[0], out.type());
  if (!direction) return std::nullopt;
  const std::optional<kernels::Combiner> combiner = kernels::simple_combiner(*instruction.called_computations()[1]);
  if (!combiner || combiner->opcode != Opcode::kAdd) return std::nullopt;
  const Shape& shape = *operand.shape;
  const int64_t rank = shape.rank();
  const std::vector<WindowDimension>& window = instruction.window;
  if (static_cast<int64_t>(window.size()) != rank || source.shape->rank() != rank) return std::nullopt;
  for (int64_t d = 0; d < rank; ++d) {
    const WindowDimension& w = window[d];
    if (w.size <= 0 || w.stride <= 0 || w.base_dilation != 1 || w.window_dilation != 1 || w.window_reversal)
      return std::nullopt;
    const int64_t padded = shape.dimension(d) + w.padding_low + w.padding_high;
    if (source.shape->dimension(d) != (padded < w.size ? 0 : (padded - w.size) / w.stride + 1)) return std::nullopt;
  }
  KernelFn run = nullptr;
  switch (out.type()) {
    case PrimitiveType::kF32: run = &kernels::select_and_scatter_kernel<float>; break;
    case PrimitiveType::kF64: run = &kernels::select_and_scatter_kernel<double>; break;
    case PrimitiveType::kS32: run = &kernels::select_and_scatter_kernel<int32_t>; break;
    case PrimitiveType::kS64: run = &kernels::select_and_scatter_kernel<int64_t>; break;
    default: return std::nullopt;
  }
  auto plan = std::make_unique<kernels::SelectAndScatterPlan>();
  plan->direction = *direction;
  plan->strides = row_major_strides(shape.dimensions());
  return NativeKernel{run, std::move(plan)};
}

}  // namespace insitu
