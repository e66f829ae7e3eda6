// Native scatter, in place: the output is the operand's memory (buffer assignment links them)
// and only the update windows are touched. Updates combine in the reference evaluator's order
// (scatter position outermost, then the window, both row-major), sequentially: duplicate
// indices then combine exactly as the evaluator does. select_scatter classifies the combiner
// and works out the dimension tables once: assignment and add/multiply/maximum/minimum
// combiners over native types run natively; any other combiner runs per element through the
// evaluator (a combiner that fails there is the step's error). Variadic scatter, non-default
// update layouts and malformed dimension numbers take the fallback (which reports errors).
#include <algorithm>
#include <cmath>

#include "insitu/evaluator/evaluator.h"
#include "insitu/evaluator/index_util.h"
#include "insitu/runtime/element_compute.h"
#include "insitu/runtime/index_read.h"
#include "insitu/runtime/row_walk.h"
#include "insitu/support/str.h"

namespace insitu {
namespace kernels {
namespace {

enum class Combiner { kAssign, kAdd, kMultiply, kMaximum, kMinimum, kGeneric };

// What to_apply computes from (current = parameter 0, update = parameter 1); `swapped` when the
// root reads them in the other order.
Combiner classify(const Computation& computation, bool& swapped) {
  swapped = false;
  const Instruction* root = computation.root();
  if (computation.parameter_count() != 2 || root == nullptr) return Combiner::kGeneric;
  if (root->opcode() == Opcode::kParameter && root->parameter_number == 1) return Combiner::kAssign;
  if (root->operand_count() != 2) return Combiner::kGeneric;
  const Instruction* a = root->operand(0);
  const Instruction* b = root->operand(1);
  if (a->opcode() != Opcode::kParameter || b->opcode() != Opcode::kParameter) return Combiner::kGeneric;
  if (a->parameter_number == 1 && b->parameter_number == 0) swapped = true;
  else if (!(a->parameter_number == 0 && b->parameter_number == 1)) return Combiner::kGeneric;
  switch (root->opcode()) {
    case Opcode::kAdd: return Combiner::kAdd;
    case Opcode::kMultiply: return Combiner::kMultiply;
    case Opcode::kMaximum: return Combiner::kMaximum;
    case Opcode::kMinimum: return Combiner::kMinimum;
    default: return Combiner::kGeneric;
  }
}

template <typename C>
C combine(Combiner combiner, C x, C y) {
  switch (combiner) {
    case Combiner::kAdd:
      if constexpr (std::is_integral_v<C>) return static_cast<C>(as_unsigned(x) + as_unsigned(y));
      else return x + y;
    case Combiner::kMultiply:
      if constexpr (std::is_integral_v<C>) return static_cast<C>(as_unsigned(x) * as_unsigned(y));
      else return x * y;
    case Combiner::kMaximum: return maximum_value(x, y);
    case Combiner::kMinimum: return minimum_value(x, y);
    default: return y;
  }
}

// Calls fn(index) over `dimensions` restricted to `active` ones (others stay 0), row-major.
template <typename Fn>
bool walk(const std::vector<int64_t>& dimensions, const std::vector<bool>& active, Fn&& fn) {
  for (size_t d = 0; d < dimensions.size(); ++d)
    if (active[d] && dimensions[d] == 0) return true;
  std::vector<int64_t> index(dimensions.size(), 0);
  while (true) {
    if (!fn(index)) return false;
    int64_t d = static_cast<int64_t>(dimensions.size()) - 1;
    for (; d >= 0; --d) {
      if (!active[d]) continue;
      if (++index[d] < dimensions[d]) break;
      index[d] = 0;
    }
    if (d < 0) return true;
  }
}

// The classified combiner and the scatter's dimensions, sorted out from its dimension numbers.
struct ScatterPlan final : KernelPlan {
  Combiner combiner = Combiner::kGeneric;
  bool swapped = false;                             // the combiner reads (update, current)
  std::vector<int64_t> batch_dimensions;            // of the indices
  std::vector<int64_t> window_operand_dimensions;   // the operand dimensions a window spans
  std::vector<int64_t> window_extent;               // per operand dimension (1 outside windows)
  std::vector<int64_t> update_scatter_dimensions;   // the update dimensions that are not windows
  std::vector<bool> is_window, is_scatter;          // per update dimension
  std::vector<int64_t> operand_strides, update_strides, index_strides;
  int64_t vector_size = 1;                          // elements of one index vector
};

// Starts the output from the operand when not in place, then calls apply(operand_linear,
// update_linear, run) for every update element in the evaluator's order, until apply is false.
// With `runs`, when the updates' last dimension is a window over the operand's last dimension
// (both unit-stride), one call covers that whole row: `run` consecutive elements in both, the
// same elements in the same order (a row's elements are distinct, so the result is the same
// bit for bit); otherwise run is 1.
template <typename Apply>
void scatter_updates(const KernelCall& call, const ScatterPlan& plan, bool runs, Apply&& apply) {
  const ArrayView& operand = call.operands[0];
  const ArrayView& indices = call.operands[1];
  const ArrayView& out = call.out();
  const ScatterDimensionNumbers& numbers = call.instruction.scatter_dimension_numbers;
  const Shape& operand_shape = *operand.shape;
  const Shape& updates_shape = *call.operands[2].shape;
  const int64_t operand_rank = operand_shape.rank();
  const int64_t update_rank = updates_shape.rank();
  const int64_t indices_rank = indices.shape->rank();
  const int64_t vector_dim = numbers.index_vector_dim;
  // Not in place (distinct slices): start from the operand's value.
  if (out.data != operand.data) copy_bytes_parallel(call.pool, out.data, operand.data, out.byte_size());
  // Single elements (no update window dimension, no batching), the index vectors the indices'
  // last dimension: update element u's vector is the u-th, read and bounds-checked alone, in
  // the same order as below. (A Pallas masked store past an array's end lowers to this,
  // pallas_discharge.py: 65,536 lanes took 2.1 ms through the general walk.)
  if (numbers.update_window_dims.empty() && numbers.input_batching_dims.empty() && vector_dim == indices_rank - 1) {
    const int64_t count = updates_shape.element_count();
    for (int64_t u = 0; u < count; ++u) {
      int64_t linear = 0;
      bool inside = true;
      for (int64_t k = 0; k < plan.vector_size; ++k) {
        const int64_t d = numbers.scatter_dims_to_operand_dims[k];
        const int64_t at = read_index(indices, u * plan.vector_size + k);
        inside &= at >= 0 && at < operand_shape.dimension(d);
        linear += at * plan.operand_strides[d];
      }
      if (inside && !apply(linear, u, 1)) return;
    }
    return;
  }
  std::vector<int64_t> position(indices_rank, 0);
  std::vector<int64_t> start(operand_rank, 0);
  int64_t run = 1;
  std::vector<bool> window_walk = plan.is_window;
  if (runs && update_rank > 0 && operand_rank > 0 && plan.is_window.back() &&
      !plan.window_operand_dimensions.empty() && plan.window_operand_dimensions.back() == operand_rank - 1 &&
      plan.update_strides.back() == 1 && plan.operand_strides.back() == 1) {
    run = updates_shape.dimensions().back();
    window_walk.back() = false;
  }
  walk(updates_shape.dimensions(), plan.is_scatter, [&](const std::vector<int64_t>& scatter_index) {
    for (size_t j = 0; j < plan.batch_dimensions.size(); ++j)
      position[plan.batch_dimensions[j]] = scatter_index[plan.update_scatter_dimensions[j]];
    std::fill(start.begin(), start.end(), 0);
    for (int64_t k = 0; k < plan.vector_size; ++k) {
      if (vector_dim < indices_rank) position[vector_dim] = k;
      int64_t linear = 0;
      for (int64_t d = 0; d < indices_rank; ++d) linear += position[d] * plan.index_strides[d];
      start[numbers.scatter_dims_to_operand_dims[k]] = read_index(indices, linear);
    }
    for (size_t i = 0; i < numbers.input_batching_dims.size(); ++i)
      start[numbers.input_batching_dims[i]] = position[numbers.scatter_indices_batching_dims[i]];
    for (int64_t d = 0; d < operand_rank; ++d)  // a window that does not fit is dropped whole
      if (start[d] < 0 || start[d] > operand_shape.dimension(d) - plan.window_extent[d]) return true;
    int64_t base = 0;
    for (int64_t d = 0; d < operand_rank; ++d) base += start[d] * plan.operand_strides[d];
    return walk(updates_shape.dimensions(), window_walk, [&](const std::vector<int64_t>& window_index) {
      int64_t update_linear = 0;
      for (int64_t d = 0; d < update_rank; ++d)
        update_linear += (scatter_index[d] + window_index[d]) * plan.update_strides[d];
      int64_t operand_linear = base;
      for (size_t k = 0; k < plan.window_operand_dimensions.size(); ++k)
        operand_linear +=
            window_index[numbers.update_window_dims[k]] * plan.operand_strides[plan.window_operand_dimensions[k]];
      return apply(operand_linear, update_linear, run);
    });
  });
}

// Assignment: each update overwrites its element.
Status scatter_assign_kernel(const KernelCall& call) {
  const int64_t width = byte_width(call.out().type());
  uint8_t* out = call.out().data;
  const uint8_t* updates = call.operands[2].data;
  scatter_updates(call, static_cast<const ScatterPlan&>(*call.plan), /*runs=*/true,
                  [&](int64_t operand_linear, int64_t update_linear, int64_t run) {
                    std::memcpy(out + operand_linear * width, updates + update_linear * width,
                                static_cast<size_t>(width * run));
                    return true;
                  });
  return ok_status();
}

// add/multiply/maximum/minimum over a native type, in its compute type.
template <typename T>
Status scatter_combine_kernel(const KernelCall& call) {
  const ScatterPlan& plan = static_cast<const ScatterPlan&>(*call.plan);
  const Combiner combiner = plan.combiner;
  const bool swapped = plan.swapped;
  T* out = reinterpret_cast<T*>(call.out().data);
  const T* updates = reinterpret_cast<const T*>(call.operands[2].data);
  scatter_updates(call, plan, /*runs=*/true, [&](int64_t operand_linear, int64_t update_linear, int64_t run) {
    for (int64_t k = 0; k < run; ++k) {
      T* t = out + operand_linear + k;
      const T u = updates[update_linear + k];
      *t = swapped ? to_stored<T>(combine(combiner, to_compute(u), to_compute(*t)))
                   : to_stored<T>(combine(combiner, to_compute(*t), to_compute(u)));
    }
    return true;
  });
  return ok_status();
}

// Any other combiner: to_apply through the evaluator, element by element. Its failure (or a
// result that is not one scalar of the operand's type) stops the scatter and is the error.
Status scatter_computation_kernel(const KernelCall& call) {
  const Instruction& instruction = call.instruction;
  const ArrayView& out = call.out();
  const int64_t width = byte_width(out.type());
  const uint8_t* updates = call.operands[2].data;
  const Shape scalar_shape = Shape::scalar(out.type());
  Literal current(scalar_shape), update(scalar_shape);
  Status status;
  scatter_updates(call, static_cast<const ScatterPlan&>(*call.plan), /*runs=*/false,
                  [&](int64_t operand_linear, int64_t update_linear, int64_t) {
    uint8_t* target = out.data + operand_linear * width;
    std::memcpy(current.untyped_data(), target, static_cast<size_t>(width));
    std::memcpy(update.untyped_data(), updates + update_linear * width, static_cast<size_t>(width));
    const Literal* arguments[] = {&current, &update};
    StatusOr<Literal> combined = evaluate_computation(*instruction.to_apply(), arguments);
    if (!combined.ok() || !combined->shape().is_array() || combined->shape().element_type() != out.type() ||
        combined->shape().rank() != 0) {
      status = combined.ok() ? invalid_argument(str_cat("scatter %", instruction.name(),
                                                        ": to_apply must return one scalar of the operand's type"),
                                                instruction.location())
                             : combined.status();
      return false;
    }
    std::memcpy(target, combined->untyped_data(), static_cast<size_t>(width));
    return true;
  });
  return status;
}

}  // namespace
}  // namespace kernels

SelectedKernel select_scatter(const Instruction& instruction, std::span<const ArrayView> operands,
                              std::span<const ArrayView> outputs) {
  using namespace kernels;
  if (instruction.opcode() != Opcode::kScatter || operands.size() != 3 || outputs.size() != 1 || outputs[0].scalar)
    return std::nullopt;
  const ArrayView& out = outputs[0];
  if (!out.shape->is_array() || instruction.called_computations().empty()) return std::nullopt;
  const ArrayView& operand = operands[0];
  const ArrayView& indices = operands[1];
  const ArrayView& updates = operands[2];
  if (operand.scalar || indices.scalar || updates.scalar || !is_integral(indices.type()) ||
      operand.type() != out.type() || updates.type() != out.type() || operand.byte_size() != out.byte_size())
    return std::nullopt;
  const Shape& operand_shape = *operand.shape;
  const Shape& updates_shape = *updates.shape;
  if (!updates_shape.layout().minor_to_major.empty() &&
      !updates_shape.layout().is_default_for_rank(updates_shape.rank()))
    return std::nullopt;  // the evaluator walks updates in their layout order
  const ScatterDimensionNumbers& numbers = instruction.scatter_dimension_numbers;
  const int64_t operand_rank = operand_shape.rank();
  const int64_t update_rank = updates_shape.rank();
  const int64_t indices_rank = indices.shape->rank();
  const int64_t vector_dim = numbers.index_vector_dim;
  if (vector_dim < 0 || vector_dim > indices_rank) return std::nullopt;
  auto plan = std::make_unique<ScatterPlan>();
  for (int64_t d = 0; d < indices_rank; ++d)
    if (d != vector_dim) plan->batch_dimensions.push_back(d);
  plan->vector_size = vector_dim == indices_rank ? 1 : indices.shape->dimension(vector_dim);
  if (static_cast<int64_t>(numbers.scatter_dims_to_operand_dims.size()) != plan->vector_size) return std::nullopt;
  for (int64_t d = 0; d < operand_rank; ++d)
    if (!contains(numbers.inserted_window_dims, d) && !contains(numbers.input_batching_dims, d))
      plan->window_operand_dimensions.push_back(d);
  if (plan->window_operand_dimensions.size() != numbers.update_window_dims.size()) return std::nullopt;
  if (numbers.input_batching_dims.size() != numbers.scatter_indices_batching_dims.size()) return std::nullopt;
  plan->window_extent.assign(operand_rank, 1);
  for (size_t k = 0; k < plan->window_operand_dimensions.size(); ++k) {
    const int64_t d = numbers.update_window_dims[k];
    if (d < 0 || d >= update_rank) return std::nullopt;
    plan->window_extent[plan->window_operand_dimensions[k]] = updates_shape.dimension(d);
  }
  plan->is_window.assign(update_rank, false);
  plan->is_scatter.assign(update_rank, true);
  for (int64_t d : numbers.update_window_dims) plan->is_window[d] = true, plan->is_scatter[d] = false;
  for (int64_t d = 0; d < update_rank; ++d)
    if (plan->is_scatter[d]) plan->update_scatter_dimensions.push_back(d);
  if (plan->update_scatter_dimensions.size() != plan->batch_dimensions.size()) return std::nullopt;
  for (int64_t d : numbers.scatter_dims_to_operand_dims)
    if (d < 0 || d >= operand_rank) return std::nullopt;

  plan->combiner = classify(*instruction.to_apply(), plan->swapped);
  KernelFn run = nullptr;
  if (plan->combiner == Combiner::kAssign) {
    run = &scatter_assign_kernel;
  } else if (plan->combiner == Combiner::kGeneric) {
    run = &scatter_computation_kernel;
  } else {
    dispatch_native_numeric(out.type(), [&](auto tag) { run = &scatter_combine_kernel<decltype(tag)>; });
    if (run == nullptr) return std::nullopt;  // a native combiner of a type without native arithmetic
  }
  plan->operand_strides = strides_of(operand_shape.dimensions());
  plan->update_strides = strides_of(updates_shape.dimensions());
  plan->index_strides = strides_of(indices.shape->dimensions());
  return NativeKernel{run, std::move(plan)};
}

}  // namespace insitu
