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

// The fold of n >= 1 integer (or pred) elements with the combiner fixed at compile time, so the
// loop has no switch in it (and vectorizes).
template <typename T, Opcode kOp>
ComputeType<T> fold_run(const T* from, int64_t n) {
  if constexpr (std::is_same_v<T, bool>) {
    // preds through their bytes (any nonzero byte true): and/min and or/max as byte ands and
    // ors, which vectorize
    const uint8_t* bytes = reinterpret_cast<const uint8_t*>(from);
    uint8_t acc = bytes[0] != 0;
    if constexpr (kOp == Opcode::kAnd || kOp == Opcode::kMinimum) {
      for (int64_t i = 1; i < n; ++i) acc &= static_cast<uint8_t>(bytes[i] != 0);
      return acc != 0;
    } else if constexpr (kOp == Opcode::kOr || kOp == Opcode::kMaximum) {
      for (int64_t i = 1; i < n; ++i) acc |= static_cast<uint8_t>(bytes[i] != 0);
      return acc != 0;
    }
  }
  ComputeType<T> acc = to_compute(from[0]);
  for (int64_t i = 1; i < n; ++i) acc = combine(kOp, acc, to_compute(from[i]));
  return acc;
}

template <typename T>
ComputeType<T> fold_run(Opcode opcode, const T* from, int64_t n) {
  switch (opcode) {
    case Opcode::kAdd: return fold_run<T, Opcode::kAdd>(from, n);
    case Opcode::kMultiply: return fold_run<T, Opcode::kMultiply>(from, n);
    case Opcode::kMaximum: return fold_run<T, Opcode::kMaximum>(from, n);
    case Opcode::kMinimum: return fold_run<T, Opcode::kMinimum>(from, n);
    case Opcode::kAnd: return fold_run<T, Opcode::kAnd>(from, n);
    case Opcode::kOr: return fold_run<T, Opcode::kOr>(from, n);
    default: INSITU_UNREACHABLE("whole-run reduce of " << opcode_name(opcode)); return {};
  }
}

// Converts a double sum to T as the evaluator stores it (evaluator/reduce.cc): one rounding, a
// 16-bit float's through float.
template <typename T>
T store_double(double sum) {
  if constexpr (kIsSmallFloat<T>) return T::from_float(static_cast<float>(sum));
  else return static_cast<T>(sum);
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
