// topk and XLA:CPU's "TopK" custom call in the reference evaluator.
//
// `topk(x), k=K, largest=true|false` (lax.top_k before XLA's optimizations) returns the K
// largest (or smallest) elements of every row along the last dimension and their s32 positions,
// as XLA's TopkDecomposer defines it: a stable sort of the row by a total order, then the first
// K. For floats the total order is -NaN < -inf < ... < -0 < 0 < ... < inf < NaN, so a NaN is
// the largest element and -0 sorts below 0; ties keep the lower index first. `largest` is
// optional (default true), `k` required.
//
// The "TopK" custom call (what XLA:CPU leaves after optimization) calls its comparator
// computation: (a, b) or (a, b, index_a, index_b) -> "a goes first"; K is the result's last
// dimension; the result is (values, indices) or the values alone.
#include <algorithm>
#include <bit>
#include <charconv>
#include <numeric>
#include <optional>

#include "insitu/evaluator/apply_util.h"
#include "insitu/evaluator/element_arithmetic.h"
#include "insitu/evaluator/index_util.h"
#include "insitu/evaluator/ops.h"

namespace insitu::eval {
namespace {

// A key whose signed order is the total order of the element (floats by their bits).
int64_t total_order_key(const Literal& row_source, int64_t linear) {
  const PrimitiveType type = row_source.shape().element_type();
  if (!is_floating(type)) return row_source.get_integer(linear);
  int64_t bits = 0;
  int64_t magnitude = 0;
  dispatch_element_type(type, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, float>) {
      bits = static_cast<int32_t>(std::bit_cast<uint32_t>(row_source.data<float>()[linear]));
      magnitude = 0x7fffffff;
    } else if constexpr (std::is_same_v<T, double>) {
      bits = static_cast<int64_t>(std::bit_cast<uint64_t>(row_source.data<double>()[linear]));
      magnitude = 0x7fffffffffffffff;
    } else if constexpr (kIsNarrowFloat<T>) {
      bits = insitu::total_order_key(row_source.data<T>()[linear]);  // already ordered
      magnitude = 0;
    } else if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) {
      bits = static_cast<int16_t>(row_source.data<T>()[linear].bits);
      magnitude = 0x7fff;
    }
  });
  return bits < 0 ? bits ^ magnitude : bits;
}

// Fills (values, indices) from every row's first K positions of `rank_row`'s order.
template <typename RankRow>
StatusOr<Literal> take_rows(const Instruction& instruction, const Literal& input, int64_t k, RankRow&& rank_row) {
  const Shape& shape = input.shape();
  const int64_t rank = shape.rank();
  const int64_t length = shape.dimension(rank - 1);
  const int64_t rows = length == 0 ? 0 : shape.element_count() / length;
  Literal result(instruction.shape());
  Literal* values = result.shape().is_tuple() ? &result.elements()[0] : &result;
  Literal* indices = result.shape().is_tuple() ? &result.elements()[1] : nullptr;
  std::vector<int64_t> order(static_cast<size_t>(length));
  for (int64_t row = 0; row < rows; ++row) {
    std::iota(order.begin(), order.end(), int64_t{0});
    INSITU_RETURN_IF_ERROR(rank_row(row * length, order));
    for (int64_t j = 0; j < k; ++j) {
      store_scalar(*values, row * k + j, scalar_at(input, row * length + order[j]));
      if (indices != nullptr) indices->data<int32_t>()[row * k + j] = static_cast<int32_t>(order[j]);
    }
  }
  return result;
}

// The result must be (T[..., K], s32[..., K]) or T[..., K] for an input T[..., N], K <= N.
Status check_result(const Instruction& instruction, const Shape& input, int64_t k) {
  std::vector<int64_t> dimensions = input.dimensions();
  dimensions.back() = k;
  const Shape values = Shape::array(input.element_type(), dimensions);
  const Shape indices = Shape::array(PrimitiveType::kS32, dimensions);
  const Shape& shape = instruction.shape();
  const bool ok = shape.is_tuple() ? shape.tuple_size() == 2 && shape.tuple_shape(0).compatible(values) &&
                                         shape.tuple_shape(1).compatible(indices)
                                   : shape.compatible(values);
  if (ok) return ok_status();
  return bad_instruction(instruction, str_cat("result ", shape.to_string(false), " does not fit ", input.to_string(false),
                                              " and k=", k, ": expected (", values.to_string(false), ", ",
                                              indices.to_string(false), ")"));
}

}  // namespace

StatusOr<TopkAttributes> topk_attributes(const Instruction& instruction, int64_t length) {
  TopkAttributes attributes;
  INSITU_ASSIGN_OR_RETURN(attributes.largest, own_bool_attribute(instruction, "largest", true));
  // is_stable: either value allows the stable order insitu always computes; checked all the same
  INSITU_RETURN_IF_ERROR(own_bool_attribute(instruction, "is_stable", true).status());
  const RawAttribute* k_attribute = find_own_attribute(instruction, "k");
  const std::string text = k_attribute == nullptr ? "" : k_attribute->value;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), attributes.k);
  if (k_attribute == nullptr || error != std::errc() || end != text.data() + text.size() || attributes.k < 0 ||
      attributes.k > length)
    return bad_instruction(instruction, str_cat("needs k=K with 0 <= K <= ", length, " (the last dimension)",
                                                k_attribute == nullptr ? "" : str_cat(", not k=", text)));
  return attributes;
}

StatusOr<Literal> evaluate_topk(const Instruction& instruction, Operands operands) {
  if (operands.size() != 1 || !operands[0]->shape().is_array() || operands[0]->shape().rank() == 0)
    return bad_instruction(instruction, "takes one array operand of rank >= 1");
  const Literal& input = *operands[0];
  const int64_t length = input.shape().dimensions().back();
  INSITU_ASSIGN_OR_RETURN(TopkAttributes attributes, topk_attributes(instruction, length));
  const int64_t k = attributes.k;
  const bool largest = attributes.largest;
  if (input.shape().element_type() == PrimitiveType::kPred || is_complex(input.shape().element_type()))
    return bad_instruction(instruction, "sorts real numbers only");
  INSITU_RETURN_IF_ERROR(check_result(instruction, input.shape(), k));
  return take_rows(instruction, input, k, [&](int64_t base, std::vector<int64_t>& order) {
    std::vector<int64_t> keys(order.size());
    for (size_t i = 0; i < keys.size(); ++i) keys[i] = total_order_key(input, base + static_cast<int64_t>(i));
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
      return largest ? keys[a] > keys[b] : keys[a] < keys[b];
    });
    return ok_status();
  });
}

StatusOr<Literal> evaluate_topk_custom_call(const Instruction& instruction, Operands operands,
                                            ComputationRunner& runner) {
  if (operands.size() != 1 || !operands[0]->shape().is_array() || operands[0]->shape().rank() == 0)
    return bad_instruction(instruction, "(TopK) takes one array operand of rank >= 1");
  if (instruction.called_computations().size() != 1)
    return bad_instruction(instruction, "(TopK) needs its comparator in called_computations={...}");
  const Computation& comparator = *instruction.called_computations()[0];
  const int64_t parameters = comparator.parameter_count();
  if (parameters != 2 && parameters != 4)
    return bad_instruction(instruction, str_cat("(TopK) comparator ", comparator.name(), " takes ", parameters,
                                                " parameters; expected (a, b) or (a, b, index_a, index_b)"));
  const Literal& input = *operands[0];
  const Shape& values_shape = instruction.shape().is_tuple() && instruction.shape().tuple_size() > 0
                                  ? instruction.shape().tuple_shape(0)
                                  : instruction.shape();
  if (!values_shape.is_array() || values_shape.rank() != input.shape().rank())
    return bad_instruction(instruction, "(TopK) result must be (values, indices) or values of the operand's rank");
  const int64_t k = values_shape.dimensions().back();
  if (k > input.shape().dimensions().back())
    return bad_instruction(instruction, str_cat("(TopK) k=", k, " exceeds the last dimension of ",
                                                input.shape().to_string(false)));
  INSITU_RETURN_IF_ERROR(check_result(instruction, input.shape(), k));
  return take_rows(instruction, input, k, [&](int64_t base, std::vector<int64_t>& order) -> Status {
    Status status;
    std::vector<Literal> storage;
    std::vector<const Literal*> arguments;
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
      if (!status.ok()) return false;
      storage.clear();
      storage.push_back(scalar_at(input, base + a));
      storage.push_back(scalar_at(input, base + b));
      if (parameters == 4) {
        storage.push_back(Literal::scalar<int32_t>(static_cast<int32_t>(a)));
        storage.push_back(Literal::scalar<int32_t>(static_cast<int32_t>(b)));
      }
      arguments.clear();
      for (const Literal& argument : storage) arguments.push_back(&argument);
      StatusOr<bool> answer = run_comparator(runner, comparator, arguments, instruction);
      if (!answer.ok()) status = answer.status();
      return answer.ok() && *answer;
    });
    return status;
  });
}

}  // namespace insitu::eval
