// Internal to the reduce and reduce-window kernels (reduce_kernels.cc,
// reduce_window_kernels.cc): what both need of their instruction's to_apply (the simple
// combiner, or the combiner as a scalar program), one fold step of a simple combiner as the
// evaluator takes it, and the operand checks of their program kernels.
#pragma once

#include <optional>
#include <span>
#include <type_traits>
#include <vector>

#include "insitu/ir/computation.h"
#include "insitu/runtime/element_compute.h"
#include "insitu/runtime/kernels.h"
#include "insitu/runtime/reduce_combiner.h"

namespace insitu::kernels {

// The simple combiner of a reduce or reduce-window (its one to_apply), if it has one.
inline std::optional<Combiner> simple_combiner(const Instruction& reduce) {
  if (reduce.called_computations().size() != 1) return std::nullopt;
  return kernels::simple_combiner(*reduce.called_computations()[0]);
}

// One array input and a scalar init of its element type into one array of that type, none of
// them an unmaterialized broadcast: what the simple-combiner kernels take.
inline bool simple_reduce_operands_fit(std::span<const ArrayView> operands, std::span<const ArrayView> outputs) {
  if (operands.size() != 2 || outputs.size() != 1) return false;
  const ArrayView& input = operands[0];
  const ArrayView& init = operands[1];
  const ArrayView& out = outputs[0];
  if (input.scalar || out.scalar || !input.shape->is_array() || !out.shape->is_array() || !init.shape->is_array())
    return false;
  return init.shape->rank() == 0 && input.type() == init.type() && out.type() == input.type();
}

// The combiner as a scalar program (what Executable::create planned for these steps before
// kernels were selected): nullptr without exactly one to_apply or when it does not plan.
inline KernelPlanPtr combiner_program(const Instruction& reduce) {
  if (reduce.called_computations().size() != 1) return nullptr;
  return plan_scalar_program(*reduce.called_computations()[0]);
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

// One step of a fold: combiner(acc, x), or combiner(x, acc) when the combiner's first parameter
// is the element; bf16/f16 rounded after every step (as the evaluator's reduction computation).
template <typename T>
inline ComputeType<T> fold_step(bool accumulator_first, Opcode opcode, ComputeType<T> acc, ComputeType<T> x) {
  const ComputeType<T> value = accumulator_first ? combine(opcode, acc, x) : combine(opcode, x, acc);
  if constexpr (kIsSmallFloat<T>) return to_compute(to_stored<T>(value));
  else return value;
}

// What the program kernels of reduce and reduce-window need of their N inputs, N scalar inits
// and N results (at most 8, each element at most 8 bytes: the accumulators' size); false
// otherwise. Fills each init's (and result's) and each input's element width.
inline bool variadic_operands_fit(std::span<const ArrayView> operands, std::span<const ArrayView> outputs,
                                  std::vector<int64_t>& widths, std::vector<int64_t>& input_widths) {
  if (operands.size() % 2 != 0 || operands.empty()) return false;
  const size_t n = operands.size() / 2;
  if (outputs.size() != n || n > 8) return false;
  for (size_t i = 0; i < n; ++i) {
    const ArrayView& input = operands[i];
    const ArrayView& init = operands[n + i];
    if (input.scalar || init.scalar || outputs[i].scalar || !input.shape->is_array() || !init.shape->is_array() ||
        !outputs[i].shape->is_array() || init.shape->rank() != 0 || outputs[i].type() != init.type() ||
        input.shape->dimensions() != operands[0].shape->dimensions() || byte_width(init.type()) > 8)
      return false;
    widths.push_back(byte_width(init.type()));
    input_widths.push_back(byte_width(input.type()));
  }
  return true;
}

}  // namespace insitu::kernels
