// cholesky and triangular-solve in the reference evaluator (linalg.h has the semantics and the
// algorithms, which the runtime's kernels share).
#include "insitu/evaluator/linalg.h"

#include "insitu/evaluator/apply_util.h"
#include "insitu/evaluator/ops.h"

namespace insitu::eval {
namespace {

std::vector<int64_t> batch_dimensions(const Shape& shape) {
  return {shape.dimensions().begin(), shape.dimensions().end() - 2};
}

Status check_matrices(const Instruction& instruction, const Shape& shape, std::string_view what) {
  if (!shape.is_array() || shape.rank() < 2)
    return bad_instruction(instruction, str_cat(what, " must be an array of rank >= 2 (matrices in its last two "
                                                      "dimensions), not ", shape.to_string(false)));
  const PrimitiveType type = shape.element_type();
  if (type != PrimitiveType::kF32 && type != PrimitiveType::kF64)
    return unimplemented(str_cat(opcode_name(instruction.opcode()), " %", instruction.name(),
                                 ": insitu computes it in f32 and f64 only, not ", primitive_type_name(type)),
                         instruction.location());
  return ok_status();
}

template <typename Kernel>
StatusOr<Literal> run_batch(const Instruction& instruction, const Literal& input, const MatrixBatch& shape,
                            Kernel&& kernel) {
  Literal result(instruction.shape());
  const int64_t matrix = shape.rows * shape.columns;
  dispatch_element_type(input.shape().element_type(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>)
      for (int64_t i = 0; i < shape.batch; ++i) kernel(i, result.data<T>().data() + i * matrix);
  });
  return result;
}

}  // namespace

StatusOr<CholeskyOptions> cholesky_options(const Instruction& instruction) {
  CholeskyOptions options;
  INSITU_ASSIGN_OR_RETURN(options.lower, own_bool_attribute(instruction, "lower", false));
  return options;
}

StatusOr<TriangularSolveOptions> triangular_solve_options(const Instruction& instruction) {
  TriangularSolveOptions options;
  INSITU_ASSIGN_OR_RETURN(options.left_side, own_bool_attribute(instruction, "left_side", false));
  INSITU_ASSIGN_OR_RETURN(options.lower, own_bool_attribute(instruction, "lower", false));
  INSITU_ASSIGN_OR_RETURN(options.unit_diagonal, own_bool_attribute(instruction, "unit_diagonal", false));
  const RawAttribute* transpose = find_own_attribute(instruction, "transpose_a");
  const std::string value = transpose == nullptr ? "" : transpose->value;
  if (value == "NO_TRANSPOSE") options.transpose_a = TransposeA::kNoTranspose;
  else if (value == "TRANSPOSE") options.transpose_a = TransposeA::kTranspose;
  else if (value == "ADJOINT") options.transpose_a = TransposeA::kAdjoint;
  else
    return bad_instruction(instruction, str_cat("transpose_a=", transpose == nullptr ? "(missing)" : value,
                                                ": expected transpose_a=NO_TRANSPOSE, TRANSPOSE or ADJOINT"));
  return options;
}

StatusOr<MatrixBatch> linalg_batch(const Instruction& instruction, std::span<const Shape* const> operands) {
  const bool solve = instruction.opcode() == Opcode::kTriangularSolve;
  const size_t expected = solve ? 2 : 1;
  if (operands.size() != expected)
    return bad_instruction(instruction, str_cat("takes ", expected, " operand(s), not ", operands.size()));
  const Shape& a = *operands[0];
  INSITU_RETURN_IF_ERROR(check_matrices(instruction, a, "operand a"));
  const int64_t order = a.dimensions().back();
  if (a.dimension(a.rank() - 2) != order)
    return bad_instruction(instruction, str_cat("operand a ", a.to_string(false), " must hold square matrices"));
  const Shape& b = *operands.back();
  MatrixBatch batch{1, order, order, order};
  if (solve) {
    INSITU_RETURN_IF_ERROR(check_matrices(instruction, b, "operand b"));
    INSITU_ASSIGN_OR_RETURN(TriangularSolveOptions options, triangular_solve_options(instruction));
    batch.rows = b.dimension(b.rank() - 2);
    batch.columns = b.dimensions().back();
    if (b.element_type() != a.element_type() || batch_dimensions(a) != batch_dimensions(b) ||
        order != (options.left_side ? batch.rows : batch.columns))
      return bad_instruction(instruction,
                             str_cat("operands ", a.to_string(false), " and ", b.to_string(false),
                                     " do not fit: a's matrices must be square, of b's element type and batch "
                                     "dimensions, and match b's ",
                                     options.left_side ? "rows (left_side=true)" : "columns (left_side=false)"));
  }
  for (int64_t dimension : batch_dimensions(b)) batch.batch *= dimension;
  if (!instruction.shape().compatible(b))
    return bad_instruction(instruction, str_cat("result ", instruction.shape().to_string(false), " must be ",
                                                b.to_string(false)));
  return batch;
}

StatusOr<Literal> evaluate_linalg(const Instruction& instruction, Operands operands) {
  std::vector<const Shape*> shapes;
  for (const Literal* operand : operands) shapes.push_back(&operand->shape());
  INSITU_ASSIGN_OR_RETURN(MatrixBatch shape, linalg_batch(instruction, shapes));
  const Literal& a = *operands[0];
  const int64_t a_matrix = shape.order * shape.order;
  if (instruction.opcode() == Opcode::kCholesky) {
    INSITU_ASSIGN_OR_RETURN(CholeskyOptions options, cholesky_options(instruction));
    return run_batch(instruction, a, shape, [&](int64_t i, auto* out) {
      using T = std::remove_pointer_t<decltype(out)>;
      cholesky_matrix(a.data<T>().data() + i * a_matrix, out, shape.order, options);
    });
  }
  INSITU_ASSIGN_OR_RETURN(TriangularSolveOptions options, triangular_solve_options(instruction));
  const Literal& b = *operands[1];
  const int64_t b_matrix = shape.rows * shape.columns;
  return run_batch(instruction, b, shape, [&](int64_t i, auto* out) {
    using T = std::remove_pointer_t<decltype(out)>;
    triangular_solve_matrix(a.data<T>().data() + i * a_matrix, b.data<T>().data() + i * b_matrix, out, shape, options);
  });
}

}  // namespace insitu::eval
