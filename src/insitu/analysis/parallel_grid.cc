#include "insitu/analysis/parallel_grid.h"

#include <algorithm>
#include <optional>

#include "insitu/ir/computation.h"
#include "insitu/ir/grid_loop.h"
#include "insitu/support/str.h"

namespace insitu {
namespace {

// A binary op and its two operands, looking through a kLoop fusion whose root it is: a fused
// parameter stands for the fusion's operand, a fused constant for itself.
struct Binary {
  const Instruction* op = nullptr;
  const Instruction* lhs = nullptr;
  const Instruction* rhs = nullptr;
};

std::optional<Binary> binary(const Instruction* instruction) {
  const Instruction* op = instruction;
  if (instruction->opcode() == Opcode::kFusion) {
    if (instruction->called_computations().empty()) return std::nullopt;
    op = instruction->called_computations()[0]->root();
  }
  if (op == nullptr || op->operand_count() != 2) return std::nullopt;
  auto outer = [&](const Instruction* operand) -> const Instruction* {
    if (op == instruction || operand->opcode() != Opcode::kParameter) return operand;
    const int64_t number = operand->parameter_number;
    return number >= 0 && number < instruction->operand_count() ? instruction->operand(number) : nullptr;
  };
  const Instruction* lhs = outer(op->operand(0));
  const Instruction* rhs = outer(op->operand(1));
  if (lhs == nullptr || rhs == nullptr) return std::nullopt;
  return Binary{op, lhs, rhs};
}

bool is_state_element(const Instruction* instruction, const Computation& computation, int64_t index) {
  return instruction->opcode() == Opcode::kGetTupleElement && instruction->tuple_index == index &&
         instruction->operand(0) == computation.parameter(0);
}

std::optional<int64_t> integer_constant(const Instruction* instruction) {
  while (instruction->opcode() == Opcode::kCopy) instruction = instruction->operand(0);  // a constant's copy
  if (instruction->opcode() != Opcode::kConstant || !instruction->shape().is_array() ||
      instruction->shape().rank() != 0 || !is_integral(instruction->shape().element_type()))
    return std::nullopt;
  return instruction->literal.get_integer(0);
}

// Why an instruction the loop runs keeps its steps from running on threads: a
// collective (every device's steps in one order), a custom call or another side effect.
std::optional<std::string> blocks_parallel_steps(const Instruction& loop) {
  for (const Computation* computation : computations_run_by(loop))
    for (const Instruction* instruction : computation->instructions()) {
      const Opcode opcode = instruction->opcode();
      if (opcode_kind(opcode) == OpcodeKind::kCollective || opcode_has_side_effect(opcode) ||
          opcode == Opcode::kCustomCall)
        return str_cat("its body holds %", instruction->name(), " (", opcode_name(opcode),
                       "), which insitu runs in one order");
    }
  return std::nullopt;
}

}  // namespace

std::unordered_set<const Computation*> computations_run_by(const Instruction& instruction) {
  std::unordered_set<const Computation*> seen;
  std::vector<const Computation*> pending(instruction.called_computations().begin(),
                                          instruction.called_computations().end());
  while (!pending.empty()) {
    const Computation* computation = pending.back();
    pending.pop_back();
    if (!seen.insert(computation).second) continue;
    for (const Instruction* inner : computation->instructions())
      for (const Computation* called : inner->called_computations()) pending.push_back(called);
  }
  return seen;
}

std::variant<ParallelGrid, std::string> parallel_grid(const Instruction& loop) {
  const std::optional<GridLoopInfo> info = grid_loop_info(loop);
  if (!info) return std::string("it is not a Pallas kernel's grid loop");
  if (!info->in_order.empty()) return std::string(info->in_order);
  if (info->parallel.empty()) return std::string("its lowering did not say which grid axes are independent");
  const std::optional<std::vector<int64_t>> sizes = grid_sizes(info->grid);
  int64_t axes = 0;
  for (char c : info->parallel) {
    if (c < '0' || c > '9' || axes > 64) return str_cat("its parallel axes (\"", info->parallel, "\") are not a number");
    axes = axes * 10 + (c - '0');
  }
  if (!sizes || axes < 1 || axes > static_cast<int64_t>(sizes->size()))
    return str_cat("its parallel axes (", info->parallel, ") do not fit its grid ", info->grid);
  ParallelGrid grid;
  grid.parallel_axes = axes;
  grid.outer = 1;
  grid.steps = 1;
  for (size_t d = 0; d < sizes->size(); ++d) {
    grid.steps *= (*sizes)[d];
    if (static_cast<int64_t>(d) < axes) grid.outer *= (*sizes)[d];
  }
  if (grid.outer < 2) return std::string("its independent grid axes have one point");
  if (std::optional<std::string> why = blocks_parallel_steps(loop)) return std::move(*why);

  // The counter: condition `state[c] < steps`, body `state[c] + 1`, initial value 0.
  const Computation& condition = *loop.while_condition();
  const Computation& body = *loop.while_body();
  const Instruction* init = loop.operand(0);
  const Instruction* root = body.root();
  std::optional<Binary> test = binary(condition.root());
  if (!test || test->op->opcode() != Opcode::kCompare || test->op->comparison_direction != ComparisonDirection::kLt ||
      test->lhs->opcode() != Opcode::kGetTupleElement || integer_constant(test->rhs) != grid.steps ||
      !is_state_element(test->lhs, condition, test->lhs->tuple_index))
    return str_cat("its condition is not `step < ", grid.steps, "` (the loop's form changed)");
  grid.counter = test->lhs->tuple_index;
  if (init->opcode() != Opcode::kTuple || root->opcode() != Opcode::kTuple || grid.counter >= init->operand_count() ||
      grid.counter >= root->operand_count() || integer_constant(init->operand(grid.counter)) != 0)
    return std::string("its step counter does not start at 0");
  std::optional<Binary> next = binary(root->operand(grid.counter));
  const bool by_one = next && next->op->opcode() == Opcode::kAdd &&
                      ((is_state_element(next->lhs, body, grid.counter) && integer_constant(next->rhs) == 1) ||
                       (is_state_element(next->rhs, body, grid.counter) && integer_constant(next->lhs) == 1));
  if (!by_one) return std::string("its step counter does not grow by one a step");

  // Private state: what the body changes and nothing reads after the loop.
  std::vector<bool> read_after(root->operand_count(), false);
  for (const Instruction* user : loop.users()) {
    if (user->opcode() != Opcode::kGetTupleElement) return str_cat("%", user->name(), " reads its whole state");
    if (user->tuple_index >= 0 && user->tuple_index < root->operand_count()) read_after[user->tuple_index] = true;
  }
  for (int64_t k = 0; k < root->operand_count(); ++k)
    if (!is_state_element(root->operand(k), body, k) && !read_after[k]) grid.private_state.push_back(k);
  if (std::find(grid.private_state.begin(), grid.private_state.end(), grid.counter) == grid.private_state.end())
    return std::string("its step counter is read after the loop");
  return grid;
}

}  // namespace insitu
