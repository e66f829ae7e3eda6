#include "insitu/passes/loop_peeling.h"

#include <algorithm>
#include <optional>

#include "insitu/ir/grid_loop.h"
#include "insitu/passes/name_table.h"
#include "insitu/support/str.h"

namespace insitu {
namespace {

bool is_signed_integer_scalar(const Shape& shape) {
  return shape.is_array() && shape.rank() == 0 &&
         (shape.element_type() == PrimitiveType::kS32 || shape.element_type() == PrimitiveType::kS64);
}

// `lhs direction rhs` for integers.
bool compare(ComparisonDirection direction, int64_t lhs, int64_t rhs) {
  switch (direction) {
    case ComparisonDirection::kEq: return lhs == rhs;
    case ComparisonDirection::kNe: return lhs != rhs;
    case ComparisonDirection::kGe: return lhs >= rhs;
    case ComparisonDirection::kGt: return lhs > rhs;
    case ComparisonDirection::kLe: return lhs <= rhs;
    case ComparisonDirection::kLt: return lhs < rhs;
  }
  return false;
}

ComparisonDirection swapped(ComparisonDirection direction) {
  switch (direction) {
    case ComparisonDirection::kGe: return ComparisonDirection::kLe;
    case ComparisonDirection::kGt: return ComparisonDirection::kLt;
    case ComparisonDirection::kLe: return ComparisonDirection::kGe;
    case ComparisonDirection::kLt: return ComparisonDirection::kGt;
    default: return direction;
  }
}

// Whether the condition holds for `init` by the counter pattern (the header's "surely runs once").
bool surely_runs_once(const Instruction& loop, const Instruction& init) {
  const Computation& condition = *loop.while_condition();
  const Instruction* root = condition.root();
  if (root == nullptr || root->opcode() != Opcode::kCompare || root->operand_count() != 2) return false;
  if (root->comparison_type == ComparisonType::kUnsigned || root->comparison_type == ComparisonType::kFloat ||
      root->comparison_type == ComparisonType::kTotalOrder)
    return false;
  const Instruction* counter = root->operand(0);
  const Instruction* bound = root->operand(1);
  ComparisonDirection direction = root->comparison_direction;
  if (counter->opcode() == Opcode::kConstant) {
    std::swap(counter, bound);
    direction = swapped(direction);
  }
  if (counter->opcode() != Opcode::kGetTupleElement || counter->operand(0)->opcode() != Opcode::kParameter ||
      bound->opcode() != Opcode::kConstant || !is_signed_integer_scalar(bound->shape()) ||
      !is_signed_integer_scalar(counter->shape()))
    return false;
  const int64_t index = counter->tuple_index;
  if (index < 0 || index >= init.operand_count()) return false;
  const Instruction* start = init.operand(index);
  if (start->opcode() != Opcode::kConstant || !is_signed_integer_scalar(start->shape())) return false;
  return compare(direction, start->literal.get_integer(0), bound->literal.get_integer(0));
}

// Whether some state element starts as a parameter the caller keeps and the body replaces it by
// a value it computes.
bool copies_a_kept_parameter(const Module& module, const Instruction& loop, const Instruction& init) {
  const Instruction* body_root = loop.while_body()->root();
  if (body_root == nullptr || body_root->opcode() != Opcode::kTuple) return false;
  const ModuleConfig& config = module.config();
  for (int64_t i = 0; i < init.operand_count() && i < body_root->operand_count(); ++i) {
    const Instruction* start = init.operand(i);
    if (start->opcode() != Opcode::kParameter || !start->shape().is_array()) continue;
    const bool donated =
        config.find_parameter_alias(start->parameter_number, {}) != nullptr ||
        std::any_of(config.buffer_donors.begin(), config.buffer_donors.end(), [&](const BufferDonor& donor) {
          return donor.parameter_number == start->parameter_number && donor.parameter_index.empty();
        });
    if (donated) continue;
    // Replaced by a value the body computes (a state element moved here would still be the
    // caller's after the first iteration: peeling would save nothing).
    const Instruction* next = body_root->operand(i);
    const bool moved = next->opcode() == Opcode::kGetTupleElement && next->operand(0)->opcode() == Opcode::kParameter;
    if (!moved) return true;
  }
  return false;
}

}  // namespace

StatusOr<bool> peel_loops(Module& module) {
  Computation& entry = *module.entry();
  NameTable names(module);
  bool changed = false;
  for (Instruction* loop : entry.instructions()) {
    if (loop->opcode() != Opcode::kWhile || loop->operand_count() != 1) continue;
    if (grid_loop_info(*loop)) continue;  // a Pallas kernel's grid: see loop_peeling.h
    Instruction* init = loop->operand(0);
    if (init->opcode() != Opcode::kTuple) continue;
    if (loop->while_body()->instruction_count() > kMaxPeeledBody) continue;
    if (!surely_runs_once(*loop, *init) || !copies_a_kept_parameter(module, *loop, *init)) continue;
    auto first = std::make_unique<Instruction>(Opcode::kCall, names.unique(str_cat(loop->name(), ".first")),
                                               loop->shape());
    first->set_location(loop->location());
    first->set_called_computations({loop->while_body()});
    first->append_operand(init);
    Instruction* made = entry.insert_instruction_before(std::move(first), loop);
    for (Instruction* predecessor : loop->control_predecessors()) made->add_control_predecessor(predecessor);
    loop->replace_operand(0, made);
    changed = true;
  }
  return changed;
}

}  // namespace insitu
