// dot with general dimension numbers, for the reference evaluator.
//
// The result's dimensions are the batch dimensions, then lhs's non-contracting dimensions,
// then rhs's non-contracting dimensions, each group in operand order. As in XLA's
// HloEvaluator, operands whose element type differs from the result's (e.g.
// preferred_element_type: s8 x s8 -> s32) are first converted to the result type, then each
// result element is one multiply-accumulate chain over the contracting dimensions in row-major
// order of lhs_contracting_dims:
//   f16/bf16   accumulate in f32, round once at the end
//   integers   accumulate in 64 bits, wrap to the result width (two's complement)
//   pred       OR of ANDs
//   f32/f64/complex  accumulate in the type itself
// XLA's f32 rank-2 fast path uses Eigen, whose summation order may differ in the last bits.
// algorithm= (attributes.h, DotAlgorithm) changes the arithmetic: operands rounded to bf16, f16
// or tf32 (tf32 rounds to nearest even, as reduce-precision does; GPUs' cvt.rna rounds ties
// away from zero, so an exact tie may differ by one tf32 step), split into 2 or 3 pieces for
// _x3/_x6/_x9, products in f32, one f32 dot per piece pair summed smallest first; a bf16 or f16
// accumulation rounds after every step.
#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>

#include "insitu/evaluator/apply_util.h"
#include "insitu/evaluator/element_arithmetic.h"
#include "insitu/evaluator/index_util.h"
#include "insitu/evaluator/ops.h"
#include "insitu/support/str.h"

namespace insitu::eval {
namespace {

using Dimensions = std::vector<int64_t>;

Status dot_error(const Instruction& instruction, const std::string& message) {
  return invalid_argument(str_cat("dot %", instruction.name(), ": ", message), instruction.location());
}

// Where each result element reads its operands: base offsets per result element and the
// offsets of the contraction steps.
struct DotPlan {
  Dimensions result_dimensions;
  Dimensions lhs_base;  // per result element (row-major)
  Dimensions rhs_base;
  Dimensions lhs_step;  // per contraction step
  Dimensions rhs_step;
};

Status check_dimension_list(const Instruction& instruction, const Dimensions& list, int64_t rank, const char* name,
                            std::vector<bool>& used) {
  for (int64_t d : list) {
    if (d < 0 || d >= rank)
      return dot_error(instruction, str_cat(name, " dimension ", d, " is out of range for rank ", rank));
    if (used[d]) return dot_error(instruction, str_cat(name, " dimension ", d, " is used twice"));
    used[d] = true;
  }
  return ok_status();
}

StatusOr<DotPlan> plan_dot(const Instruction& instruction, const Shape& lhs, const Shape& rhs) {
  const DotDimensionNumbers& numbers = instruction.dot_dimension_numbers;
  if (numbers.lhs_batch_dimensions.size() != numbers.rhs_batch_dimensions.size() ||
      numbers.lhs_contracting_dimensions.size() != numbers.rhs_contracting_dimensions.size()) {
    return dot_error(instruction, "lhs and rhs must list the same number of batch and of contracting dimensions");
  }
  std::vector<bool> lhs_used(lhs.rank(), false);
  std::vector<bool> rhs_used(rhs.rank(), false);
  INSITU_RETURN_IF_ERROR(check_dimension_list(instruction, numbers.lhs_batch_dimensions, lhs.rank(), "lhs batch", lhs_used));
  INSITU_RETURN_IF_ERROR(
      check_dimension_list(instruction, numbers.lhs_contracting_dimensions, lhs.rank(), "lhs contracting", lhs_used));
  INSITU_RETURN_IF_ERROR(check_dimension_list(instruction, numbers.rhs_batch_dimensions, rhs.rank(), "rhs batch", rhs_used));
  INSITU_RETURN_IF_ERROR(
      check_dimension_list(instruction, numbers.rhs_contracting_dimensions, rhs.rank(), "rhs contracting", rhs_used));
  const Dimensions lhs_strides = row_major_strides(lhs.dimensions());
  const Dimensions rhs_strides = row_major_strides(rhs.dimensions());

  // Result dimensions and, for each, the stride it moves in lhs and in rhs.
  DotPlan plan;
  Dimensions lhs_result_strides, rhs_result_strides;
  for (size_t i = 0; i < numbers.lhs_batch_dimensions.size(); ++i) {
    const int64_t l = numbers.lhs_batch_dimensions[i], r = numbers.rhs_batch_dimensions[i];
    if (lhs.dimension(l) != rhs.dimension(r))
      return dot_error(instruction, str_cat("batch dimensions lhs ", l, " (size ", lhs.dimension(l), ") and rhs ", r,
                                            " (size ", rhs.dimension(r), ") differ in size"));
    plan.result_dimensions.push_back(lhs.dimension(l));
    lhs_result_strides.push_back(lhs_strides[l]);
    rhs_result_strides.push_back(rhs_strides[r]);
  }
  for (int64_t d = 0; d < lhs.rank(); ++d) {
    if (lhs_used[d]) continue;
    plan.result_dimensions.push_back(lhs.dimension(d));
    lhs_result_strides.push_back(lhs_strides[d]);
    rhs_result_strides.push_back(0);
  }
  for (int64_t d = 0; d < rhs.rank(); ++d) {
    if (rhs_used[d]) continue;
    plan.result_dimensions.push_back(rhs.dimension(d));
    lhs_result_strides.push_back(0);
    rhs_result_strides.push_back(rhs_strides[d]);
  }
  Dimensions contracting_sizes;
  for (size_t i = 0; i < numbers.lhs_contracting_dimensions.size(); ++i) {
    const int64_t l = numbers.lhs_contracting_dimensions[i], r = numbers.rhs_contracting_dimensions[i];
    if (lhs.dimension(l) != rhs.dimension(r))
      return dot_error(instruction, str_cat("contracting dimensions lhs ", l, " (size ", lhs.dimension(l), ") and rhs ",
                                            r, " (size ", rhs.dimension(r), ") differ in size"));
    contracting_sizes.push_back(lhs.dimension(l));
  }

  for_each_index(plan.result_dimensions, [&](std::span<const int64_t> index) {
    int64_t lhs_offset = 0, rhs_offset = 0;
    for (size_t i = 0; i < index.size(); ++i) {
      lhs_offset += index[i] * lhs_result_strides[i];
      rhs_offset += index[i] * rhs_result_strides[i];
    }
    plan.lhs_base.push_back(lhs_offset);
    plan.rhs_base.push_back(rhs_offset);
  });
  for_each_index(contracting_sizes, [&](std::span<const int64_t> index) {
    int64_t lhs_offset = 0, rhs_offset = 0;
    for (size_t i = 0; i < index.size(); ++i) {
      lhs_offset += index[i] * lhs_strides[numbers.lhs_contracting_dimensions[i]];
      rhs_offset += index[i] * rhs_strides[numbers.rhs_contracting_dimensions[i]];
    }
    plan.lhs_step.push_back(lhs_offset);
    plan.rhs_step.push_back(rhs_offset);
  });
  return plan;
}

template <typename T>
void multiply_accumulate(const DotPlan& plan, const Literal& lhs, const Literal& rhs, Literal& result) {
  using Accumulator = AccumulatorOf<T>;
  const T* lhs_data = reinterpret_cast<const T*>(lhs.untyped_data());
  const T* rhs_data = reinterpret_cast<const T*>(rhs.untyped_data());
  T* out = reinterpret_cast<T*>(result.untyped_data());
  for (size_t e = 0; e < plan.lhs_base.size(); ++e) {
    const T* lhs_row = lhs_data + plan.lhs_base[e];
    const T* rhs_row = rhs_data + plan.rhs_base[e];
    Accumulator sum = Accumulator(0);
    for (size_t k = 0; k < plan.lhs_step.size(); ++k) {
      const Accumulator a = accumulate_widen<Accumulator>(lhs_row[plan.lhs_step[k]]);
      const Accumulator b = accumulate_widen<Accumulator>(rhs_row[plan.rhs_step[k]]);
      if constexpr (std::is_same_v<T, bool>) {
        sum = sum || (a && b);
      } else {
        sum += a * b;
      }
    }
    out[e] = accumulate_narrow<T>(sum);
  }
}

// f32 rounded to the algorithm's input type (its value, still as f32).
float round_to_input(float x, DotInput input) {
  switch (input) {
    case DotInput::kBF16: return BFloat16::from_float(x).to_float();
    case DotInput::kF16: return Half::from_float(x).to_float();
    case DotInput::kTF32: {
      if (!std::isfinite(x)) return x;
      uint32_t bits = std::bit_cast<uint32_t>(x);
      bits += 0xfffu + ((bits >> 13) & 1u);  // nearest, ties to even, at 10 mantissa bits
      return std::bit_cast<float>(bits & ~0x1fffu);
    }
    case DotInput::kOperands: break;
  }
  return x;
}

// The dot of f32 operands under `algorithm` (changes_precision()), as f32 values in `sum`.
void dot_with_algorithm(const DotPlan& plan, const Literal& lhs, const Literal& rhs, const DotAlgorithm& algorithm,
                        std::vector<float>& sum) {
  // pieces[p][i]: piece p of element i (x = pieces[0] + pieces[1] + ..., each input-rounded).
  auto split = [&](const Literal& operand) {
    auto values = operand.data<float>();
    std::vector<std::vector<float>> pieces(static_cast<size_t>(algorithm.pieces), std::vector<float>(values.size()));
    for (size_t i = 0; i < values.size(); ++i) {
      float rest = values[i];
      for (int p = 0; p < algorithm.pieces; ++p) {
        pieces[p][i] = round_to_input(rest, algorithm.input);
        rest -= pieces[p][i];
      }
    }
    return pieces;
  };
  const std::vector<std::vector<float>> a = split(lhs), b = split(rhs);
  // The piece pairs, smallest first: x3 = lo*hi + hi*lo + hi*hi; x6 adds mid*mid, hi*lo, lo*hi.
  std::vector<std::pair<int, int>> pairs;
  for (int level = 2 * (algorithm.pieces - 1); level >= 0; --level)
    for (int i = algorithm.pieces - 1; i >= 0; --i) {
      const int j = level - i;
      if (j < 0 || j >= algorithm.pieces) continue;
      pairs.emplace_back(i, j);
    }
  while (static_cast<int>(pairs.size()) > algorithm.products) pairs.erase(pairs.begin());  // drop the smallest
  const bool round_steps = algorithm.accumulation == PrimitiveType::kBF16 || algorithm.accumulation == PrimitiveType::kF16;
  auto round_accumulation = [&](float value) {
    if (algorithm.accumulation == PrimitiveType::kBF16) return BFloat16::from_float(value).to_float();
    if (algorithm.accumulation == PrimitiveType::kF16) return Half::from_float(value).to_float();
    return value;
  };
  sum.assign(plan.lhs_base.size(), 0.0f);
  for (auto [i, j] : pairs) {
    for (size_t e = 0; e < plan.lhs_base.size(); ++e) {
      float partial = 0;
      for (size_t k = 0; k < plan.lhs_step.size(); ++k) {
        partial += a[i][plan.lhs_base[e] + plan.lhs_step[k]] * b[j][plan.rhs_base[e] + plan.rhs_step[k]];
        if (round_steps) partial = round_accumulation(partial);
      }
      sum[e] += partial;
    }
  }
}

}  // namespace

Literal convert_literal(const Literal& source, PrimitiveType type) {
  Literal result(Shape::array(type, source.shape().dimensions()));
  dispatch_element_type(source.shape().element_type(), [&](auto from_tag) {
    using From = decltype(from_tag);
    dispatch_element_type(type, [&](auto to_tag) {
      using To = decltype(to_tag);
      const From* in = reinterpret_cast<const From*>(source.untyped_data());
      To* out = reinterpret_cast<To*>(result.untyped_data());
      for (int64_t i = 0; i < source.element_count(); ++i) out[i] = convert_value<To>(in[i]);
    });
  });
  return result;
}

void convert_operands(Operands operands, PrimitiveType type, OperandsAs& into) {
  for (int i = 0; i < 2; ++i) {
    into.inputs[i] = operands[i];
    if (operands[i]->shape().element_type() != type) {
      into.converted[i] = convert_literal(*operands[i], type);
      into.inputs[i] = &into.converted[i];
    }
  }
}

StatusOr<Literal> evaluate_dot(const Instruction& instruction, Operands operands) {
  if (operands.size() != 2 || !operands[0]->shape().is_array() || !operands[1]->shape().is_array())
    return dot_error(instruction, "expects two array operands (lhs, rhs)");
  const Shape& shape = instruction.shape();
  if (!shape.is_array()) return dot_error(instruction, "the result must be an array");
  const PrimitiveType type = shape.element_type();
  for (const Literal* operand : operands) {
    if (is_complex(operand->shape().element_type()) && !is_complex(type))
      return dot_error(instruction, str_cat("cannot compute a ", primitive_type_name(type), " result from ",
                                            operand->shape().to_string(false), " operands"));
  }
  INSITU_ASSIGN_OR_RETURN(DotPlan plan, plan_dot(instruction, operands[0]->shape(), operands[1]->shape()));
  if (shape.dimensions() != plan.result_dimensions) {
    return dot_error(instruction, str_cat("the dimension numbers give [", str_join(plan.result_dimensions, ","),
                                          "] (batch, lhs non-contracting, rhs non-contracting) but the "
                                          "instruction's shape is ",
                                          shape.to_string(false)));
  }
  if (const RawAttribute* written = find_own_attribute(instruction, "algorithm")) {
    const std::optional<DotAlgorithm> algorithm = parse_dot_algorithm(written->value);
    if (!algorithm) return dot_error(instruction, str_cat("unknown algorithm=", written->value));
    if (algorithm->changes_precision()) {
      for (const Literal* operand : operands)
        if (!is_floating(operand->shape().element_type()) || operand->shape().element_type() == PrimitiveType::kF64)
          return dot_error(instruction, str_cat("algorithm=", written->value, " needs f32, f16, bf16 or f8 operands, got ",
                                                operand->shape().to_string(false)));
      if (!is_floating(type) || type == PrimitiveType::kF64)
        return dot_error(instruction, str_cat("algorithm=", written->value, " needs an f32, f16 or bf16 result, got ",
                                              shape.to_string(false)));
      OperandsAs as;
      convert_operands(operands, PrimitiveType::kF32, as);  // exact: every operand type fits in f32
      std::vector<float> sum;
      dot_with_algorithm(plan, *as.inputs[0], *as.inputs[1], *algorithm, sum);
      Literal result(shape);
      dispatch_element_type(type, [&](auto tag) {
        using T = decltype(tag);
        if constexpr (kIsSmallFloat<T> || std::is_same_v<T, float>)
          for (size_t e = 0; e < sum.size(); ++e) result.data<T>()[e] = convert_value<T>(sum[e]);
      });
      return result;
    }
  }
  OperandsAs as;
  convert_operands(operands, type, as);
  Literal result(shape);
  dispatch_element_type(type, [&](auto tag) { multiply_accumulate<decltype(tag)>(plan, *as.inputs[0], *as.inputs[1], result); });
  return result;
}

}  // namespace insitu::eval
