#include "insitu/passes/simplify.h"

#include <algorithm>
#include <optional>
#include <span>

#include "insitu/passes/flatten_calls.h"
#include "insitu/passes/name_table.h"
#include "insitu/passes/simplify_internal.h"

namespace insitu {
namespace {

// get-tuple-element(tuple(..., x, ...)) reads x: its users read x directly.
bool forward_tuple_elements(Computation& computation) {
  bool changed = false;
  for (Instruction* instruction : computation.instructions()) {
    if (instruction->opcode() != Opcode::kGetTupleElement) continue;
    Instruction* tuple = instruction->operand(0);
    if (tuple->opcode() != Opcode::kTuple) continue;
    Instruction* element = tuple->operand(instruction->tuple_index);
    // a different layout on the element would change what users see
    if (!(element->shape() == instruction->shape())) continue;
    if (instruction->users().empty() && computation.root() != instruction) continue;
    instruction->replace_all_uses_with(element);
    changed = true;
  }
  return changed;
}

// An op that returns its operand unchanged (same dimensions, element type and layout): a
// broadcast with dimensions={0,1,...}, a reshape or a transpose with the identity permutation,
// a unit-stride slice of everything, a convert to the same type, a placement annotation
// (MoveToHost and the like, whose result may name another memory space). JAX emits such broadcasts and
// reshapes around every reduction (`broadcast_in_dim` of a [6,1] to [6,1]); each would be a copy.
bool is_identity(const Instruction& instruction) {
  if (instruction.operand_count() != 1 || !instruction.shape().is_array()) return false;
  const Shape& from = instruction.operand(0)->shape();
  const Shape& to = instruction.shape();
  if (instruction.opcode() == Opcode::kCustomCall && is_placement_annotation(instruction.custom_call.target) &&
      from.is_array() && !instruction.custom_call.has_side_effect) {
    // Where the value lives, not what it is: the same value in any memory space.
    Shape placed = from;
    placed.mutable_layout().memory_space = to.layout().memory_space;
    return placed == to;
  }
  if (!from.is_array() || !(from == to)) return false;
  const int64_t rank = to.rank();
  auto is_iota = [&](const std::vector<int64_t>& dimensions) {
    if (static_cast<int64_t>(dimensions.size()) != rank) return false;
    for (int64_t d = 0; d < rank; ++d)
      if (dimensions[d] != d) return false;
    return true;
  };
  switch (instruction.opcode()) {
    case Opcode::kBroadcast:
    case Opcode::kTranspose: return is_iota(instruction.dimensions);
    case Opcode::kReshape:
    case Opcode::kConvert: return true;
    case Opcode::kSlice:
      for (int64_t d = 0; d < rank; ++d) {
        const SliceDimension& slice = instruction.slice[d];
        if (slice.start != 0 || slice.stride != 1 || slice.limit != to.dimension(d)) return false;
      }
      return static_cast<int64_t>(instruction.slice.size()) == rank;
    default: return false;
  }
}

// Users of an identity op read its operand instead.
bool forward_identities(Computation& computation) {
  bool changed = false;
  for (Instruction* instruction : computation.instructions()) {
    if (!is_identity(*instruction) || computation.root() == instruction || instruction->users().empty()) continue;
    if (!instruction->control_predecessors().empty() || !instruction->control_successors().empty()) continue;
    instruction->replace_all_uses_with(instruction->operand(0));
    changed = true;
  }
  return changed;
}

// An untiled row-major layout: a reshape of such an array keeps its bytes in place.
bool row_major(const Shape& shape) {
  const std::vector<int64_t>& order = shape.layout().minor_to_major;
  return shape.layout().tiles.empty() && std::is_sorted(order.rbegin(), order.rend());
}

// A broadcast that only inserts dimensions of size 1 (its operand's dimensions in order, every
// other result dimension 1, row-major both) moves no element: it is a reshape, which the passes
// after see through (slice-update-folding's unit reshapes, views). StableHLO writes a scan's
// stacked row as broadcast_in_dim of [2,16,8] to [1,2,16,8]; XLA's HLO import writes a reshape.
bool unit_broadcasts_to_reshapes(Computation& computation, NameTable& names) {
  bool changed = false;
  for (Instruction* broadcast : computation.instructions()) {
    if (broadcast->opcode() != Opcode::kBroadcast || broadcast->operand_count() != 1 || broadcast->has_control_edges())
      continue;
    const Shape& from = broadcast->operand(0)->shape();
    const Shape& to = broadcast->shape();
    if (!from.is_array() || !to.is_array() || from.element_type() != to.element_type() || from.rank() == to.rank() ||
        static_cast<int64_t>(broadcast->dimensions.size()) != from.rank() || !row_major(from) || !row_major(to) ||
        from.layout().memory_space != to.layout().memory_space)
      continue;
    bool unit = std::is_sorted(broadcast->dimensions.begin(), broadcast->dimensions.end());
    for (int64_t d = 0, next = 0; unit && d < to.rank(); ++d) {
      if (next < from.rank() && broadcast->dimensions[next] == d) {
        unit = from.dimension(next++) == to.dimension(d);
      } else {
        unit = to.dimension(d) == 1;
      }
    }
    if (!unit) continue;
    Instruction* reshape = insert_new_instruction(computation, broadcast, names, Opcode::kReshape, broadcast->name(), to,
                                                  {broadcast->operand(0)});
    reshape->metadata = broadcast->metadata;
    reshape->has_metadata = broadcast->has_metadata;
    broadcast->replace_all_uses_with(reshape);
    if (computation.root() == broadcast) computation.set_root(reshape);
    changed = true;
  }
  return changed;
}

// A reshape that only puts leading unit dimensions on a transpose (torch's `k.transpose(0, 1)`
// read as a batch of one: transpose then reshape to [1, ...]) becomes the transpose of the
// reshaped operand, so that fold_transposes_into_dots meets the transpose at the dot: the decode
// step's 24 per-layer caches [T, H, Dh] were each transposed to [H, T, Dh] (3 MB) every step.
bool sink_unit_reshapes_below_transposes(Computation& computation, NameTable& names) {
  bool changed = false;
  for (Instruction* reshape : computation.instructions()) {
    if (reshape->opcode() != Opcode::kReshape || reshape->operand_count() != 1 || reshape->has_control_edges()) continue;
    Instruction* transpose = reshape->operand(0);
    if (transpose->opcode() != Opcode::kTranspose || transpose->operand_count() != 1 ||
        transpose->has_control_edges() || transpose->users().size() != 1)
      continue;
    const Shape& from = transpose->shape();
    const Shape& to = reshape->shape();
    const Shape& source = transpose->operand(0)->shape();
    if (!from.is_array() || !to.is_array() || !source.is_array() || !row_major(from) || !row_major(to) ||
        !row_major(source) || to.rank() <= from.rank() || from.layout().memory_space != to.layout().memory_space ||
        source.layout().memory_space != from.layout().memory_space)
      continue;
    const int64_t units = to.rank() - from.rank();
    bool leading_units = true;
    for (int64_t d = 0; d < to.rank(); ++d)
      leading_units = leading_units && to.dimension(d) == (d < units ? 1 : from.dimension(d - units));
    if (!leading_units) continue;
    std::vector<int64_t> widened(static_cast<size_t>(units), 1), permutation;
    for (int64_t d : source.dimensions()) widened.push_back(d);
    for (int64_t d = 0; d < units; ++d) permutation.push_back(d);
    for (int64_t d : transpose->dimensions) permutation.push_back(d + units);
    Instruction* inner = insert_new_instruction(computation, reshape, names, Opcode::kReshape, reshape->name(),
                                                Shape::array(source.element_type(), widened), {transpose->operand(0)});
    Instruction* outer =
        insert_new_instruction(computation, reshape, names, Opcode::kTranspose, transpose->name(), to, {inner});
    outer->dimensions = std::move(permutation);
    for (Instruction* made : {inner, outer}) {
      made->metadata = reshape->metadata;
      made->has_metadata = reshape->has_metadata;
    }
    reshape->replace_all_uses_with(outer);
    if (computation.root() == reshape) computation.set_root(outer);
    changed = true;
  }
  return changed;
}

// A dot operand that is a transpose is read untransposed: the dimension numbers name the
// transpose's operand dimensions instead (a dot reads its operands by logical index, so it
// reads the same values), when the result keeps its dimension order (the free dimensions stay
// in increasing order). JAX's gradients transpose a weight or an activation before a dot; the
// CPU runtime would copy it, and the GEMM library reads either orientation in place.
// A reshape of a reshape reads the first one's operand (a reshape keeps the elements' row-major
// order, so two compose into one); a reshape then back to that operand's own shape is an identity
// (forward_identities). StableHLO writes a bias's `b[None, None, :]` as a broadcast to [1,1,N]
// (a reshape, once unit_broadcasts_to_reshapes ran) that a stretching broadcast_in_dim reshapes
// back to [N]: left, each pair stays in the program as a view between the bias and its readers
// (51 reshapes in the transformer training step read from its artifact; none from HLO text).
bool compose_reshapes(Computation& computation) {
  bool changed = false;
  for (Instruction* instruction : computation.instructions()) {
    if (instruction->opcode() != Opcode::kReshape || instruction->operand_count() != 1) continue;
    Instruction* inner = instruction->operand(0);
    if (inner->opcode() != Opcode::kReshape || inner->operand_count() != 1 || inner->has_control_edges()) continue;
    instruction->replace_operand(0, inner->operand(0));
    changed = true;
  }
  return changed;
}

bool fold_transposes_into_dots(Computation& computation) {
  bool changed = false;
  for (Instruction* dot : computation.instructions()) {
    if (dot->opcode() != Opcode::kDot || dot->operand_count() != 2) continue;
    for (int64_t side = 0; side < 2; ++side) {
      Instruction* transpose = dot->operand(side);
      if (transpose->opcode() != Opcode::kTranspose || transpose->operand_count() != 1 ||
          !transpose->control_predecessors().empty() || !transpose->control_successors().empty())
        continue;
      const std::vector<int64_t>& permutation = transpose->dimensions;
      DotDimensionNumbers numbers = dot->dot_dimension_numbers;
      std::vector<int64_t>& batch = side == 0 ? numbers.lhs_batch_dimensions : numbers.rhs_batch_dimensions;
      std::vector<int64_t>& contracting =
          side == 0 ? numbers.lhs_contracting_dimensions : numbers.rhs_contracting_dimensions;
      const int64_t rank = static_cast<int64_t>(permutation.size());
      std::vector<bool> free(static_cast<size_t>(rank), true);
      bool valid = transpose->shape().rank() == rank;
      for (const std::vector<int64_t>* list : {&batch, &contracting})
        for (int64_t d : *list) {
          valid = valid && d >= 0 && d < rank && free[d];
          if (valid) free[d] = false;
        }
      if (!valid) continue;
      int64_t previous = -1;  // the free dimensions, mapped, must stay in increasing order
      bool monotone = true;
      for (int64_t d = 0; d < rank; ++d)
        if (free[d]) {
          monotone = monotone && permutation[d] > previous;
          previous = permutation[d];
        }
      if (!monotone) continue;
      for (int64_t& d : batch) d = permutation[d];
      for (int64_t& d : contracting) d = permutation[d];
      dot->dot_dimension_numbers = std::move(numbers);
      dot->replace_operand(side, transpose->operand(0));
      changed = true;
    }
  }
  return changed;
}

// A copy that only changes its operand's layout, read only by dots, is not part of what the
// program computes: the CPU runtime keeps every array in logical row-major order (layouts
// matter to bitcasts, which bitcast-lowering resolved, and to custom calls' layout constraints,
// which layout-assignment honours later), and a dot reads its operands by logical index. XLA's
// layout assignment writes these around dots (a transpose into {1,0,2}, then a copy into
// {2,1,0}): each was a copy of the whole operand per step. The dots read the operand instead,
// which lets fold_transposes_into_dots fold a transpose under the copy into them as well.
bool forward_layout_copies_into_dots(Computation& computation) {
  bool changed = false;
  for (Instruction* copy : computation.instructions()) {
    if (copy->opcode() != Opcode::kCopy || copy->operand_count() != 1 || copy->users().empty() ||
        computation.root() == copy || !copy->control_predecessors().empty() || !copy->control_successors().empty())
      continue;
    const Shape& from = copy->operand(0)->shape();
    const Shape& to = copy->shape();
    if (!from.is_array() || !to.is_array() || from.element_type() != to.element_type() ||
        from.dimensions() != to.dimensions() || !from.layout().tiles.empty() || !to.layout().tiles.empty() ||
        from.layout().memory_space != to.layout().memory_space || from == to)
      continue;
    bool dots_only = true;
    for (const Instruction* user : copy->users()) dots_only &= user->opcode() == Opcode::kDot;
    if (!dots_only) continue;
    copy->replace_all_uses_with(copy->operand(0));
    changed = true;  // the copy is dead now: remove_dead_code takes it
  }
  return changed;
}

// A transpose of a transpose is one transpose of the first one's operand, with the permutations
// composed (the identity then goes with forward_identities): torch's saved weight transposed
// back for its gradient (mm(g, t(t(w)))), a weight gradient transposed twice (t(t(mm(...)))).
bool compose_transposes(Computation& computation) {
  bool changed = false;
  for (Instruction* outer : computation.instructions()) {
    if (outer->opcode() != Opcode::kTranspose || outer->operand_count() != 1) continue;
    Instruction* inner = outer->operand(0);
    if (inner->opcode() != Opcode::kTranspose || inner->operand_count() != 1 ||
        !inner->control_predecessors().empty() || !inner->control_successors().empty() ||
        inner->dimensions.size() != outer->dimensions.size())
      continue;
    std::vector<int64_t> composed;  // result dimension i is the inner operand's inner[outer[i]]
    for (int64_t d : outer->dimensions) composed.push_back(inner->dimensions[d]);
    outer->dimensions = std::move(composed);
    outer->replace_operand(0, inner->operand(0));
    changed = true;  // the inner transpose may be dead now: remove_dead_code takes it
  }
  return changed;
}

// A transpose that swaps the two free dimensions of a 2-D dot (no batch dimensions, one free
// dimension on each side) is the dot with its operands swapped: dot(b, a) with the contracting
// dimensions trading sides writes the transposed result directly (sum order over the
// contracting dimensions unchanged), so no pass over memory transposes it. JAX's weight
// gradients make it (dW = (x^T dy)^T). Only a dot the transpose alone reads, whose operands have
// one element type and no algorithm= or other attribute the swap would have to mirror.
bool fold_dots_into_transposes(Computation& computation) {
  bool changed = false;
  for (Instruction* transpose : computation.instructions()) {
    if (transpose->opcode() != Opcode::kTranspose || transpose->operand_count() != 1 ||
        transpose->dimensions != std::vector<int64_t>{1, 0})
      continue;
    Instruction* dot = transpose->operand(0);
    if (dot->opcode() != Opcode::kDot || dot->operand_count() != 2 || dot->users().size() != 1 ||
        !dot->extra_attributes.empty() || !dot->control_predecessors().empty() || !dot->control_successors().empty() ||
        !transpose->control_predecessors().empty() || !transpose->control_successors().empty() ||
        computation.root() == dot)
      continue;
    const DotDimensionNumbers& numbers = dot->dot_dimension_numbers;
    const Shape& lhs = dot->operand(0)->shape();
    const Shape& rhs = dot->operand(1)->shape();
    if (!lhs.is_array() || !rhs.is_array() || lhs.element_type() != rhs.element_type() ||
        !numbers.lhs_batch_dimensions.empty() || !numbers.rhs_batch_dimensions.empty() ||
        lhs.rank() - static_cast<int64_t>(numbers.lhs_contracting_dimensions.size()) != 1 ||
        rhs.rank() - static_cast<int64_t>(numbers.rhs_contracting_dimensions.size()) != 1)
      continue;
    DotDimensionNumbers swapped;
    swapped.lhs_contracting_dimensions = numbers.rhs_contracting_dimensions;
    swapped.rhs_contracting_dimensions = numbers.lhs_contracting_dimensions;
    dot->dot_dimension_numbers = std::move(swapped);
    if (dot->operand_precision.size() == 2) std::swap(dot->operand_precision[0], dot->operand_precision[1]);
    Instruction* a = dot->operand(0);
    dot->replace_operand(0, dot->operand(1));
    dot->replace_operand(1, a);
    dot->set_shape(transpose->shape());
    transpose->replace_all_uses_with(dot);
    changed = true;  // the transpose is dead now: remove_dead_code takes it
  }
  return changed;
}

// Whether `computation` only moves or fills values (parameter, tuple, get-tuple-element,
// constant, broadcast, iota) in at most kMaxMovedInstructions instructions, with no control
// edges: computing it where it is not needed costs nothing worth a branch.
constexpr size_t kMaxMovedInstructions = 16;
bool only_moves_values(const Computation& computation) {
  const std::vector<Instruction*> instructions = computation.instructions();
  if (instructions.size() > kMaxMovedInstructions) return false;
  for (const Instruction* instruction : instructions) {
    switch (instruction->opcode()) {
      case Opcode::kParameter: case Opcode::kTuple: case Opcode::kGetTupleElement: case Opcode::kConstant:
      case Opcode::kBroadcast: case Opcode::kIota: break;
      default: return false;
    }
    if (instruction->has_control_edges()) return false;
  }
  return true;
}

// A two-way conditional whose branches only move or fill values is a select between the two
// branch results (each branch's instructions cloned before it, its parameter read as the
// conditional's operand): `pl.when(k == 0): o[...] = 0` discharges to
// conditional(k == 0, block, ()) {return param} {return broadcast(0)}, and a conditional's
// result is a buffer of its own, so copy insertion copied the block in on every step that kept
// it; the select fuses with what reads it. Array results and tuples of arrays; a pred selector
// picks true_computation (the first) when true, an s32 index the first branch only at 0 (XLA
// runs the last branch for an index out of range).
bool conditionals_to_selects(Computation& computation, NameTable& names) {
  bool changed = false;
  for (Instruction* conditional : computation.instructions()) {
    if (conditional->opcode() != Opcode::kConditional || conditional->called_computations().size() != 2 ||
        conditional->operand_count() != 3 || conditional->has_control_edges())
      continue;
    const Shape& shape = conditional->shape();
    bool arrays = shape.is_array();
    if (shape.is_tuple()) {
      arrays = true;
      for (const Shape& element : shape.tuple_shapes()) arrays &= element.is_array();
    }
    const auto& branches = conditional->called_computations();
    if (!arrays || !only_moves_values(*branches[0]) || !only_moves_values(*branches[1])) continue;
    Instruction* selector = conditional->operand(0);
    if (!selector->shape().is_array() || selector->shape().rank() != 0) continue;
    Instruction* first_taken = selector;  // pred: true runs branch 0
    if (selector->shape().element_type() != PrimitiveType::kPred) {
      if (!is_integral(selector->shape().element_type())) continue;
      auto zero = std::make_unique<Instruction>(Opcode::kConstant, names.unique("constant"), selector->shape());
      zero->literal = Literal(selector->shape());
      Instruction* zero_added = computation.insert_instruction_before(std::move(zero), conditional);
      auto compare = std::make_unique<Instruction>(Opcode::kCompare, names.unique("compare"),
                                                   Shape::array(PrimitiveType::kPred, {}));
      compare->comparison_direction = ComparisonDirection::kEq;
      compare->append_operand(selector);
      compare->append_operand(zero_added);
      first_taken = computation.insert_instruction_before(std::move(compare), conditional);
    }
    Instruction* values[2];
    for (int b = 0; b < 2; ++b) {
      std::unordered_map<const Instruction*, Instruction*> mapped;
      for (Instruction* original : branches[b]->instructions()) {
        if (original->opcode() == Opcode::kParameter) {
          mapped[original] = conditional->operand(1 + b);
          continue;
        }
        Instruction* clone = computation.insert_instruction_before(
            clone_without_operands(*original, names.unique(original->name())), conditional);
        for (Instruction* operand : original->operands()) clone->append_operand(mapped.at(operand));
        mapped[original] = clone;
      }
      values[b] = mapped.at(branches[b]->root());
    }
    // one select per array leaf (the branch roots of a tuple result are tuples: their operands),
    // its predicate broadcast to the leaf's shape (a scalar broadcast: no bytes on the CPU)
    auto select = [&](Instruction* on_true, Instruction* on_false, const Shape& leaf) {
      Instruction* predicate = first_taken;
      if (leaf.rank() > 0) {
        auto broadcast = std::make_unique<Instruction>(Opcode::kBroadcast, names.unique("broadcast"),
                                                       Shape::array(PrimitiveType::kPred, leaf.dimensions()));
        broadcast->append_operand(first_taken);
        predicate = computation.insert_instruction_before(std::move(broadcast), conditional);
      }
      auto instruction = std::make_unique<Instruction>(Opcode::kSelect, names.unique("select"), leaf);
      instruction->append_operand(predicate);
      instruction->append_operand(on_true);
      instruction->append_operand(on_false);
      return computation.insert_instruction_before(std::move(instruction), conditional);
    };
    Instruction* result = nullptr;
    if (shape.is_array()) {
      result = select(values[0], values[1], shape);
    } else {
      auto tuple = std::make_unique<Instruction>(Opcode::kTuple, names.unique("tuple"), shape);
      for (size_t i = 0; i < shape.tuple_shapes().size(); ++i) {
        Instruction* leaves[2];
        for (int b = 0; b < 2; ++b) {
          auto element = std::make_unique<Instruction>(Opcode::kGetTupleElement, names.unique("get-tuple-element"),
                                                       shape.tuple_shapes()[i]);
          element->tuple_index = static_cast<int64_t>(i);
          element->append_operand(values[b]);
          leaves[b] = computation.insert_instruction_before(std::move(element), conditional);
        }
        tuple->append_operand(select(leaves[0], leaves[1], shape.tuple_shapes()[i]));
      }
      result = computation.insert_instruction_before(std::move(tuple), conditional);
    }
    conditional->replace_all_uses_with(result);
    if (computation.root() == conditional) computation.set_root(result);
    changed = true;  // the conditional is dead now (no side effects in its branches): remove_dead_code takes it
  }
  return changed;
}

// Byte-sized or wider integers and pred (sub-byte integers are left alone).
bool is_integer_or_pred(PrimitiveType type) {
  return (is_integral(type) && !is_sub_byte_integral(type)) || type == PrimitiveType::kPred;
}

// The value of a scalar integer or pred constant, as the 64-bit pattern of its type's value
// (signed types sign-extended, unsigned ones zero-extended); nullopt for anything else.
std::optional<uint64_t> integer_constant(const Instruction& instruction) {
  const Shape& shape = instruction.shape();
  if (instruction.opcode() != Opcode::kConstant || !shape.is_array() || shape.rank() != 0 ||
      !is_integer_or_pred(shape.element_type()))
    return std::nullopt;
  return static_cast<uint64_t>(instruction.literal.get_integer(0));
}

// What `instruction` computes from constant operands `v` (patterns as integer_constant gives
// them); nullopt for an op this fold leaves alone (division and shifts among them: their
// out-of-range cases are the runtime's to define, not a guess here).
std::optional<uint64_t> fold_integer_op(const Instruction& instruction, std::span<const uint64_t> v) {
  const PrimitiveType operand_type = instruction.operand(0)->shape().element_type();
  const bool is_signed = is_signed_integral(operand_type);
  auto less = [&](uint64_t a, uint64_t b) {
    return is_signed ? static_cast<int64_t>(a) < static_cast<int64_t>(b) : a < b;
  };
  switch (instruction.opcode()) {
    case Opcode::kAdd: return v[0] + v[1];
    case Opcode::kSubtract: return v[0] - v[1];
    case Opcode::kMultiply: return v[0] * v[1];
    case Opcode::kNegate: return uint64_t{0} - v[0];
    case Opcode::kMaximum: return less(v[0], v[1]) ? v[1] : v[0];
    case Opcode::kMinimum: return less(v[1], v[0]) ? v[1] : v[0];
    case Opcode::kClamp: {  // min(max(operand, low), high), as the evaluator (low > high gives high)
      const uint64_t raised = less(v[1], v[0]) ? v[0] : v[1];
      return less(v[2], raised) ? v[2] : raised;
    }
    case Opcode::kAnd: return v[0] & v[1];
    case Opcode::kOr: return v[0] | v[1];
    case Opcode::kXor: return v[0] ^ v[1];
    case Opcode::kNot: return operand_type == PrimitiveType::kPred ? v[0] ^ 1 : ~v[0];
    case Opcode::kConvert:
      return instruction.shape().element_type() == PrimitiveType::kPred ? uint64_t{v[0] != 0} : v[0];
    case Opcode::kCompare:
      switch (instruction.comparison_direction) {
        case ComparisonDirection::kEq: return v[0] == v[1];
        case ComparisonDirection::kNe: return v[0] != v[1];
        case ComparisonDirection::kLt: return less(v[0], v[1]);
        case ComparisonDirection::kLe: return !less(v[1], v[0]);
        case ComparisonDirection::kGt: return less(v[1], v[0]);
        case ComparisonDirection::kGe: return !less(v[0], v[1]);
      }
      return std::nullopt;
    default: return std::nullopt;
  }
}

// Scalar integer arithmetic on constants is a constant, and a select on a constant predicate
// reads the operand it picks. JAX wraps a static index (select(i < 0, i + n, i), for
// lax.dynamic_update_index_in_dim at a Python int); folded, the write-back's start is the
// constant slice-update-folding matches.
bool fold_integer_scalars(Computation& computation, NameTable& names) {
  bool changed = false;
  for (Instruction* instruction : computation.instructions()) {
    if (instruction->has_control_edges() || instruction->operand_count() == 0 || !instruction->shape().is_array())
      continue;
    if (instruction->opcode() == Opcode::kSelect && instruction->operand_count() == 3) {
      std::optional<uint64_t> predicate = integer_constant(*instruction->operand(0));
      Instruction* picked = instruction->operand(predicate && *predicate != 0 ? 1 : 2);
      if (!predicate || !(picked->shape() == instruction->shape())) continue;
      instruction->replace_all_uses_with(picked);
      if (computation.root() == instruction) computation.set_root(picked);
      changed = true;
      continue;
    }
    const Shape& shape = instruction->shape();
    if (shape.rank() != 0 || !is_integer_or_pred(shape.element_type())) continue;
    // pred results only from logic, comparisons and converts (pred arithmetic is not XLA's)
    const Opcode opcode = instruction->opcode();
    if (shape.element_type() == PrimitiveType::kPred && opcode != Opcode::kAnd && opcode != Opcode::kOr &&
        opcode != Opcode::kXor && opcode != Opcode::kNot && opcode != Opcode::kCompare && opcode != Opcode::kConvert)
      continue;
    std::vector<uint64_t> values;
    for (const Instruction* operand : instruction->operands()) {
      std::optional<uint64_t> value = integer_constant(*operand);
      if (!value) break;
      values.push_back(*value);
    }
    if (values.size() != static_cast<size_t>(instruction->operand_count())) continue;
    std::optional<uint64_t> folded = fold_integer_op(*instruction, values);
    if (!folded) continue;
    Instruction* constant = insert_new_instruction(computation, instruction, names, Opcode::kConstant,
                                                   "constant", shape, {});
    constant->literal = Literal(shape);
    dispatch_element_type(shape.element_type(), [&](auto tag) {
      using T = decltype(tag);
      if constexpr (std::is_integral_v<T>) constant->literal.data<T>()[0] = static_cast<T>(*folded);
    });
    instruction->replace_all_uses_with(constant);
    if (computation.root() == instruction) computation.set_root(constant);
    changed = true;
  }
  return changed;
}

bool is_dead(const Instruction& instruction) {
  return instruction.users().empty() && instruction.parent()->root() != &instruction &&
         instruction.opcode() != Opcode::kParameter && !has_side_effect(instruction);
}

// Removes dead instructions, users before operands, keeping control order through them.
bool remove_dead_code(Computation& computation) {
  bool changed = false;
  std::vector<Instruction*> order = computation.instructions();
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    Instruction* instruction = *it;
    if (!is_dead(*instruction)) continue;
    // an ordering a -> dead -> b still orders a before b
    for (Instruction* successor : instruction->control_successors())
      for (Instruction* predecessor : instruction->control_predecessors())
        successor->add_control_predecessor(predecessor);
    computation.remove_instruction(instruction);
    changed = true;
  }
  return changed;
}

}  // namespace

bool has_side_effect(const Instruction& instruction) {
  if (opcode_has_side_effect(instruction.opcode())) return true;
  if (instruction.opcode() == Opcode::kCustomCall && instruction.custom_call.has_side_effect) return true;
  // a loop or branch that talks to the outside world must still run
  if (instruction.opcode() == Opcode::kWhile || instruction.opcode() == Opcode::kConditional ||
      instruction.opcode() == Opcode::kCall) {
    for (const Computation* callee : instruction.called_computations())
      for (const Instruction* inner : callee->instructions())
        if (has_side_effect(*inner)) return true;
  }
  return false;
}

StatusOr<bool> simplify(Module& module) {
  if (module.entry() == nullptr) return failed_precondition("simplify needs a module with an entry computation");
  std::unordered_set<const Computation*> reachable_before = reachable_computations(module);
  bool changed = false;
  NameTable names(module);
  for (Computation* computation : module.computations()) {
    changed |= conditionals_to_selects(*computation, names);
    changed |= forward_tuple_elements(*computation);
    changed |= fold_integer_scalars(*computation, names);
    changed |= simplify_internal::fold_slices_of_updates(*computation);
    changed |= simplify_internal::elementwise_windows(*computation, names);
    changed |= simplify_internal::fold_layout_copies_into_transposes(*computation, names);
    changed |= forward_layout_copies_into_dots(*computation);
    changed |= compose_transposes(*computation);
    changed |= unit_broadcasts_to_reshapes(*computation, names);
    changed |= compose_reshapes(*computation);
    changed |= forward_identities(*computation);
    changed |= sink_unit_reshapes_below_transposes(*computation, names);
    changed |= fold_transposes_into_dots(*computation);
    changed |= fold_dots_into_transposes(*computation);
    changed |= remove_dead_code(*computation);
  }
  changed |= remove_unreachable_computations(module, reachable_before) > 0;
  return changed;
}

}  // namespace insitu
