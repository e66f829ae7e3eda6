// The fusion pass's dot groups (fusion.h, "Sliced dots"): an f32 dot with the blocks it reads
// and the window it accumulates into, all read or written where they lie by the runtime's
// sliced dot (runtime/dot_kernels.cc).
#include <algorithm>

#include "insitu/passes/fusion_internal.h"

namespace insitu::fusion_internal {
namespace {

// A dynamic-slice whose block is not one contiguous run of its operand's bytes (a [128, 128]
// block of a [1024, 1024] matrix): buffer assignment cannot make it a view, so unfused it is
// copied out.
bool is_strided_slice(const Instruction& slice) {
  if (slice.opcode() != Opcode::kDynamicSlice || !slice.shape().is_array() || slice.operand_count() < 1) return false;
  const Shape& source = slice.operand(0)->shape();
  if (!source.is_array() || source.rank() != slice.shape().rank()) return false;
  int64_t d = 0;
  while (d < source.rank() && slice.shape().dimension(d) == 1) ++d;  // leading unit dimensions
  for (++d; d < source.rank(); ++d)
    if (slice.shape().dimension(d) != source.dimension(d)) return true;  // a later one partial
  return false;
}

// Read by `reader` alone, no control edges, not the computation's root: may move into its fusion.
bool only_for(const Instruction& value, const Instruction& reader) {
  return value.users().size() == 1 && value.users()[0] == &reader && !value.has_control_edges() &&
         value.parent()->root() != &value;
}

// A broadcast of a scalar f32 constant +0 or -0 (the additive identities select chooses against).
bool is_broadcast_zero(const Instruction& value) {
  if (value.opcode() != Opcode::kBroadcast || value.operand(0)->opcode() != Opcode::kConstant) return false;
  const Instruction& constant = *value.operand(0);
  return constant.shape().is_array() && constant.shape().rank() == 0 &&
         constant.shape().element_type() == PrimitiveType::kF32 && constant.literal.data<float>()[0] == 0.0f;
}

// The accumulation of `dot` into a window of an array, Pallas's `o_ref[...] += jnp.dot(...)`
// (after `o_ref[...] = 0` under pl.when on the first reduction step) as the lowering writes it:
//
//   %w = dynamic-slice(%o, %i, %j)                       the window's old value
//   %p = select(broadcast(%first), broadcast(0), %w)     optional (either order): 0 or the old value
//   %r = dynamic-update-slice(%o, add(%p, %dot), %i, %j) (the add's operands either order)
//
// with the same start instructions for the read and the write (cse makes equal ones one), each
// value read only by the next: the members from the write back to the window's read, the write
// first, or empty. The runtime runs it as a GEMM into the window, with beta 0 or 1 per call.
std::vector<Instruction*> window_accumulation(Instruction& dot) {
  if (dot.users().size() != 1 || dot.shape().rank() != 2 || !dot.dot_dimension_numbers.lhs_batch_dimensions.empty())
    return {};
  Instruction& add = *dot.users()[0];
  if (add.opcode() != Opcode::kAdd || !only_for(dot, add) || add.has_control_edges() || add.users().size() != 1) return {};
  Instruction& write = *add.users()[0];
  if (write.opcode() != Opcode::kDynamicUpdateSlice || write.operand_count() != 4 || write.operand(1) != &add ||
      write.has_control_edges() || !only_for(add, write) || write.operand(0)->shape().rank() != 2 ||
      write.operand(0)->shape().element_type() != PrimitiveType::kF32)
    return {};
  std::vector<Instruction*> members = {&write, &add};
  Instruction* prior = add.operand(add.operand(0) == &dot ? 1 : 0);
  if (prior == &dot || !only_for(*prior, add)) return {};
  if (prior->opcode() == Opcode::kSelect) {
    Instruction& predicate = *prior->operand(0);
    const bool old_on_true = !is_broadcast_zero(*prior->operand(1));
    Instruction& zero = *prior->operand(old_on_true ? 2 : 1);
    Instruction* old = prior->operand(old_on_true ? 1 : 2);
    if (predicate.opcode() != Opcode::kBroadcast || predicate.operand(0)->shape().rank() != 0 ||
        !only_for(predicate, *prior) || !is_broadcast_zero(zero) || !only_for(zero, *prior) || !only_for(*old, *prior))
      return {};
    members.insert(members.end(), {prior, &predicate, &zero});
    prior = old;
  }
  if (prior->opcode() != Opcode::kDynamicSlice || prior->operand_count() != 3 || prior->operand(0) != write.operand(0) ||
      prior->operand(1) != write.operand(2) || prior->operand(2) != write.operand(3) ||
      prior->shape().dimensions() != add.shape().dimensions() || prior->has_control_edges())
    return {};
  members.push_back(prior);
  return members;
}

}  // namespace

std::vector<Group> sliced_dot_groups(Computation& computation, std::unordered_set<const Instruction*>& taken) {
  std::vector<Group> groups;
  for (Instruction* dot : computation.instructions()) {
    // f32 without an algorithm= only: what the runtime's sliced dot runs (other dots run
    // unfused, natively)
    if (dot->opcode() != Opcode::kDot || dot->operand_count() != 2 || dot->has_control_edges() ||
        !dot->shape().is_array() || dot->shape().element_type() != PrimitiveType::kF32 ||
        dot->operand(0)->shape().element_type() != PrimitiveType::kF32 ||
        dot->operand(1)->shape().element_type() != PrimitiveType::kF32 ||
        std::any_of(dot->extra_attributes.begin(), dot->extra_attributes.end(),
                    [](const RawAttribute& attribute) { return attribute.key == "algorithm"; }))
      continue;
    Group group{window_accumulation(*dot), {}};
    const bool window = !group.members.empty();
    group.members.push_back(dot);
    for (Instruction* operand : dot->operands())
      if (is_strided_slice(*operand) && only_for(*operand, *dot) &&
          std::find(group.members.begin(), group.members.end(), operand) == group.members.end())
        group.members.push_back(operand);
    if (!window && group.members.size() < 2) continue;
    for (const Instruction* member : group.members) taken.insert(member);
    groups.push_back(std::move(group));
  }
  return groups;
}

}  // namespace insitu::fusion_internal
