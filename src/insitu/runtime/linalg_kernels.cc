// cholesky and triangular-solve natively: the evaluator's algorithms (evaluator/linalg.h) on the
// step's slices, one matrix of the batch per task. The output never overlaps an operand here
// (the executor stages any overlap), which the algorithms require.
#include "insitu/evaluator/linalg.h"
#include "insitu/runtime/kernels.h"

namespace insitu {
namespace {

struct LinalgPlan final : KernelPlan {
  eval::MatrixBatch shape;
  eval::CholeskyOptions cholesky;
  eval::TriangularSolveOptions solve;
};

template <typename T>
Status cholesky_kernel(const KernelCall& call) {
  const LinalgPlan& plan = static_cast<const LinalgPlan&>(*call.plan);
  const int64_t n = plan.shape.order;
  const T* a = reinterpret_cast<const T*>(call.operands[0].data);
  T* out = reinterpret_cast<T*>(call.out().data);
  run_range(call.pool, plan.shape.batch, std::max<int64_t>(1, kParallelElements / std::max<int64_t>(1, n * n * n)),
            [&](int64_t begin, int64_t end) {
              for (int64_t i = begin; i < end; ++i) eval::cholesky_matrix(a + i * n * n, out + i * n * n, n, plan.cholesky);
            });
  return ok_status();
}

template <typename T>
Status triangular_solve_kernel(const KernelCall& call) {
  const LinalgPlan& plan = static_cast<const LinalgPlan&>(*call.plan);
  const eval::MatrixBatch& shape = plan.shape;
  const int64_t a_matrix = shape.order * shape.order, b_matrix = shape.rows * shape.columns;
  const T* a = reinterpret_cast<const T*>(call.operands[0].data);
  const T* b = reinterpret_cast<const T*>(call.operands[1].data);
  T* out = reinterpret_cast<T*>(call.out().data);
  const int64_t work = std::max<int64_t>(1, b_matrix * shape.order);
  run_range(call.pool, shape.batch, std::max<int64_t>(1, kParallelElements / work), [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i)
      eval::triangular_solve_matrix(a + i * a_matrix, b + i * b_matrix, out + i * b_matrix, shape, plan.solve);
  });
  return ok_status();
}

}  // namespace

SelectedKernel select_linalg(const Instruction& instruction, std::span<const ArrayView> operands,
                             std::span<const ArrayView> outputs) {
  if (outputs.size() != 1 || outputs[0].scalar) return std::nullopt;
  std::vector<const Shape*> shapes;
  for (const ArrayView& operand : operands) {
    if (operand.scalar) return std::nullopt;
    shapes.push_back(operand.shape);
  }
  // A bad shape or attribute: the fallback reports the evaluator's located error.
  StatusOr<eval::MatrixBatch> shape = eval::linalg_batch(instruction, shapes);
  if (!shape.ok()) return std::nullopt;
  auto plan = std::make_unique<LinalgPlan>();
  plan->shape = *shape;
  const bool f64 = outputs[0].type() == PrimitiveType::kF64;
  KernelFn run = nullptr;
  if (instruction.opcode() == Opcode::kCholesky) {
    StatusOr<eval::CholeskyOptions> options = eval::cholesky_options(instruction);
    if (!options.ok()) return std::nullopt;
    plan->cholesky = *options;
    run = f64 ? &cholesky_kernel<double> : &cholesky_kernel<float>;
  } else if (instruction.opcode() == Opcode::kTriangularSolve) {
    StatusOr<eval::TriangularSolveOptions> options = eval::triangular_solve_options(instruction);
    if (!options.ok()) return std::nullopt;
    plan->solve = *options;
    run = f64 ? &triangular_solve_kernel<double> : &triangular_solve_kernel<float>;
  } else {
    return std::nullopt;
  }
  return NativeKernel{run, std::move(plan)};
}

}  // namespace insitu
