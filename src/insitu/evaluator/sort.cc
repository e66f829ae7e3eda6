// sort of the reference evaluator, with the semantics of XLA's HloEvaluator.
//
// N operands of one shape are sorted together along dimensions[0]: every 1-D slice along that
// dimension is permuted by the order that to_apply(a_0, b_0, a_1, b_1, ...) -> pred ("a goes
// before b") defines, and the same permutation is applied to every operand. The result is an
// array, or a tuple of N arrays when N > 1. The sort is always stable (std::stable_sort), also
// when is_stable is false, so the result is deterministic. A comparator that is not a strict
// weak order (e.g. LT with NaNs) gives whatever order the merge sort produces, as in XLA.
#include <algorithm>
#include <numeric>

#include "insitu/evaluator/apply_util.h"
#include "insitu/evaluator/index_util.h"
#include "insitu/evaluator/ops.h"

namespace insitu::eval {
namespace {

}  // namespace

StatusOr<bool> run_comparator(ComputationRunner& runner, const Computation& comparator, Operands arguments,
                              const Instruction& instruction) {
  INSITU_ASSIGN_OR_RETURN(Literal answer, runner.run(comparator, arguments));
  INSITU_ASSIGN_OR_RETURN(std::vector<const Literal*> scalars,
                          unpack_scalars(answer, {PrimitiveType::kPred}, instruction));
  return scalars[0]->data<bool>()[0];
}

StatusOr<Literal> evaluate_sort(const Instruction& instruction, Operands operands, ComputationRunner& runner) {
  INSITU_ASSIGN_OR_RETURN(const Computation* computation, find_to_apply(instruction));
  if (operands.empty()) return bad_instruction(instruction, "needs at least one operand");
  const Shape& key_shape = operands[0]->shape();
  for (size_t i = 0; i < operands.size(); ++i) {
    if (!operands[i]->shape().is_array() || operands[i]->shape().dimensions() != key_shape.dimensions()) {
      return bad_instruction(instruction, str_cat("operand ", i, " is ", operands[i]->shape().to_string(false),
                                                  "; every operand must be an array of the dimensions of operand 0"));
    }
  }
  const int64_t rank = key_shape.rank();
  if (instruction.dimensions.size() != 1 || instruction.dimensions[0] < 0 || instruction.dimensions[0] >= rank) {
    return bad_instruction(instruction, str_cat("dimensions={", str_join(instruction.dimensions, ","),
                                                "} must name one dimension of the rank-", rank, " operands"));
  }
  const int64_t sort_dimension = instruction.dimensions[0];
  const size_t count = operands.size();

  Literal result(instruction.shape());
  INSITU_ASSIGN_OR_RETURN(std::vector<Literal*> leaves, variadic_result_leaves(instruction, result, operands, count));

  const std::vector<int64_t> strides = row_major_strides(key_shape.dimensions());
  const int64_t length = key_shape.dimension(sort_dimension);
  const int64_t step = strides[sort_dimension];
  std::vector<bool> outer(static_cast<size_t>(rank), true);
  outer[sort_dimension] = false;
  std::vector<int64_t> order(static_cast<size_t>(rank));
  for (int64_t i = 0; i < rank; ++i) order[i] = rank - 1 - i;
  std::vector<int64_t> permutation(static_cast<size_t>(length));
  std::vector<Literal> arguments_storage;
  std::vector<const Literal*> arguments;

  Status status = for_each_index_in_order(
      key_shape.dimensions(), outer, order, [&](std::span<const int64_t> slice_index) -> Status {
        int64_t base = 0;
        for (int64_t d = 0; d < rank; ++d) base += slice_index[d] * strides[d];
        Status compare_status;
        // After an error every comparison answers false, which keeps the sort well defined.
        auto less = [&](int64_t a, int64_t b) {
          if (!compare_status.ok()) return false;
          arguments_storage.clear();
          for (size_t i = 0; i < count; ++i) {
            arguments_storage.push_back(scalar_at(*operands[i], base + a * step));
            arguments_storage.push_back(scalar_at(*operands[i], base + b * step));
          }
          arguments.clear();
          for (const Literal& argument : arguments_storage) arguments.push_back(&argument);
          StatusOr<bool> answer = run_comparator(runner, *computation, arguments, instruction);
          if (!answer.ok()) compare_status = answer.status();
          return answer.ok() && *answer;
        };
        std::iota(permutation.begin(), permutation.end(), int64_t{0});
        std::stable_sort(permutation.begin(), permutation.end(), less);
        if (!compare_status.ok()) return compare_status;
        for (size_t i = 0; i < count; ++i) {
          const int64_t width = byte_width(operands[i]->shape().element_type());
          for (int64_t j = 0; j < length; ++j) {
            std::memcpy(leaves[i]->untyped_data() + (base + j * step) * width,
                        operands[i]->untyped_data() + (base + permutation[j] * step) * width,
                        static_cast<size_t>(width));
          }
        }
        return ok_status();
      });
  if (!status.ok()) return status;
  return result;
}

}  // namespace insitu::eval
