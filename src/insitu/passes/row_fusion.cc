#include "insitu/passes/row_fusion.h"

#include <algorithm>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "insitu/passes/fusion_internal.h"
#include "insitu/passes/name_table.h"

namespace insitu {
namespace {

using namespace fusion_internal;

// A seed's reduced input holds at least this many elements: below, a chunk's calls cost more
// than the passes they save.
constexpr int64_t kMinRowElements = 4096;
// Values a row fusion returns at most (read outside it).
constexpr size_t kMaxRowOutputs = 8;
// How far past the group's last member the scan looks for more readers.
constexpr size_t kScanWindow = 64;

using Rows = std::vector<int64_t>;

// The shape's leading dimensions are the rows.
bool has_rows(const Shape& shape, const Rows& rows) {
  if (!shape.is_array() || shape.element_type() != PrimitiveType::kF32 || shape.rank() < static_cast<int64_t>(rows.size()))
    return false;
  return std::equal(rows.begin(), rows.end(), shape.dimensions().begin());
}

// Elements per row of a shape that has the rows.
int64_t row_elements(const Shape& shape, const Rows& rows) {
  int64_t elements = 1;
  for (size_t d = rows.size(); d < static_cast<size_t>(shape.rank()); ++d) elements *= shape.dimension(static_cast<int64_t>(d));
  return elements;
}

// A two-operand reduce of every dimension of its input after the first k, into exactly those.
bool reduces_trailing(const Instruction& reduce, size_t k) {
  if (reduce.opcode() != Opcode::kReduce || reduce.operand_count() != 2 || !reduce.shape().is_array()) return false;
  const Shape& input = reduce.operand(0)->shape();
  if (!input.is_array() || input.rank() <= static_cast<int64_t>(k) || reduce.shape().rank() != static_cast<int64_t>(k))
    return false;
  std::vector<int64_t> reduced = reduce.dimensions;
  std::sort(reduced.begin(), reduced.end());
  if (reduced.size() != static_cast<size_t>(input.rank()) - k) return false;
  for (size_t i = 0; i < reduced.size(); ++i)
    if (reduced[i] != static_cast<int64_t>(k + i)) return false;
  return std::equal(reduce.shape().dimensions().begin(), reduce.shape().dimensions().end(), input.dimensions().begin());
}

// The reduce at a reduce fusion's root (alone, or the tuple of it and its input).
const Instruction* fused_reduce(const Instruction& fusion) {
  if (fusion.opcode() != Opcode::kFusion || fusion.fusion_kind != "kInput" || fusion.called_computations().size() != 1 ||
      !fusion.fusion_output_to_operand_aliasing.empty())
    return nullptr;
  const Instruction* root = fusion.called_computations()[0]->root();
  if (root == nullptr) return nullptr;
  if (root->opcode() == Opcode::kTuple) {
    if (root->operand_count() != 2 || root->operand(0)->opcode() != Opcode::kReduce ||
        root->operand(1) != root->operand(0)->operand(0))
      return nullptr;
    root = root->operand(0);
  }
  return root->opcode() == Opcode::kReduce ? root : nullptr;
}

// Inside a fused body: every read of parameter `number` is at its own rows (the first k
// dimensions in place): an elementwise op of the parameter's dimensions, or a broadcast that
// maps the parameter's first k dimensions to the result's first k.
bool reads_by_rows(const Computation& body, int64_t number, size_t k) {
  for (const Instruction* parameter : body.parameters()) {
    if (parameter == nullptr || parameter->parameter_number != number) continue;
    for (const Instruction* user : parameter->users()) {
      if (user->opcode() == Opcode::kBroadcast) {
        if (user->dimensions.size() < k) return false;
        for (size_t i = 0; i < k; ++i)
          if (user->dimensions[i] != static_cast<int64_t>(i)) return false;
        continue;
      }
      if (user->opcode() == Opcode::kReduce && user->operand(0) == parameter && reduces_trailing(*user, k)) continue;
      if (!is_elementwise(user->opcode()) || !user->shape().is_array() ||
          user->shape().dimensions() != parameter->shape().dimensions())
        return false;
    }
  }
  return true;
}

// Over the rows, reading the group's members only at their own rows: what may join.
// `heavy`: it runs over whole rows (more than one element per row), not only the rows' values.
bool row_local(const Instruction& instruction, const Rows& rows, const std::unordered_set<const Instruction*>& members,
               bool& heavy) {
  const size_t k = rows.size();
  heavy = false;
  if (instruction.has_control_edges()) return false;
  switch (instruction.opcode()) {
    case Opcode::kBitcast:
    case Opcode::kReshape:  // of a member: row-major bytes, as every member writes them
      return has_rows(instruction.shape(), rows) && has_rows(instruction.operand(0)->shape(), rows) &&
             row_elements(instruction.shape(), rows) == row_elements(instruction.operand(0)->shape(), rows);
    case Opcode::kGetTupleElement:
      return members.count(instruction.operand(0)) && has_rows(instruction.shape(), rows);
    case Opcode::kReduce:
      heavy = true;
      return reduces_trailing(instruction, k) && has_rows(instruction.operand(0)->shape(), rows) &&
             has_rows(instruction.shape(), rows) && !members.count(instruction.operand(1));
    case Opcode::kFusion: {
      if (instruction.called_computations().size() != 1 || !instruction.fusion_output_to_operand_aliasing.empty())
        return false;
      const Computation& body = *instruction.called_computations()[0];
      if (instruction.fusion_kind == "kInput") {
        const Instruction* reduce = fused_reduce(instruction);
        if (reduce == nullptr || !reduces_trailing(*reduce, k) || !has_rows(reduce->operand(0)->shape(), rows) ||
            !has_rows(reduce->shape(), rows))
          return false;
        if (instruction.shape().is_tuple() && !has_rows(instruction.shape().tuple_shape(1), rows)) return false;
        heavy = true;
      } else if (instruction.fusion_kind == "kLoop") {
        if (!has_rows(instruction.shape(), rows)) return false;
        heavy = row_elements(instruction.shape(), rows) > 1;
      } else {
        return false;
      }
      for (int64_t i = 0; i < instruction.operand_count(); ++i) {
        const Instruction* operand = instruction.operand(i);
        if (!members.count(operand)) continue;
        if (!has_rows(operand->shape(), rows) || !reads_by_rows(body, i, k)) return false;
      }
      return true;
    }
    default:
      return false;
  }
}

// The rows of a seed: a reduce (or reduce fusion) of an f32 input's trailing dimensions.
std::optional<Rows> seed_rows(const Instruction& instruction) {
  const Instruction* reduce = instruction.opcode() == Opcode::kReduce ? &instruction : fused_reduce(instruction);
  if (reduce == nullptr || reduce->operand_count() != 2 || !reduce->shape().is_array() || instruction.has_control_edges())
    return std::nullopt;
  const Shape& input = reduce->operand(0)->shape();
  const size_t k = static_cast<size_t>(reduce->shape().rank());
  if (k == 0 || !input.is_array() || input.element_type() != PrimitiveType::kF32 || input.element_count() < kMinRowElements ||
      !reduces_trailing(*reduce, k))
    return std::nullopt;
  return reduce->shape().dimensions();
}

// The group grown from the seed `order[start]` forward (`order`: program order, `position` each
// instruction's place in it), or empty.
Group grow_rows(const std::vector<Instruction*>& order, size_t start, const Rows& rows,
                const std::unordered_set<const Instruction*>& taken, const Computation& computation,
                const std::unordered_map<const Instruction*, size_t>& position) {
  std::vector<Instruction*> members = {order[start]};
  std::unordered_set<const Instruction*> in(members.begin(), members.end());
  std::unordered_set<const Instruction*> outside;  // readers of members (or of such readers) that cannot join
  bool seed_heavy = false;
  if (!row_local(*order[start], rows, {}, seed_heavy)) return {};
  int heavy = 1;
  size_t last = start;
  for (size_t i = start + 1; i < order.size() && i <= last + kScanWindow; ++i) {
    Instruction* instruction = order[i];
    bool reads_member = false, reads_outside = false;
    for (const Instruction* operand : instruction->operands()) {
      reads_member |= in.count(operand) > 0;
      reads_outside |= outside.count(operand) > 0;
    }
    if (!reads_member && !reads_outside) continue;
    bool is_heavy = false;
    if (reads_member && !reads_outside && !taken.count(instruction) && row_local(*instruction, rows, in, is_heavy)) {
      members.push_back(instruction);
      in.insert(instruction);
      heavy += is_heavy ? 1 : 0;
      last = i;
    } else {
      outside.insert(instruction);
    }
  }
  // Siblings: a reduce (or reduce fusion) of the same rows that reads no member, read only by
  // members (a layer norm backward's sum(dy * gamma * xhat) beside the group of sum(dy * gamma)
  // and dx), joins too, so that its inputs are not streamed from memory once more. It is
  // computed before the group anyway, so the group has what it reads.
  for (size_t m = 0; m < members.size(); ++m) {  // (members grows as siblings join)
    for (Instruction* operand : members[m]->operands()) {
      if (in.count(operand) || taken.count(operand) || position.count(operand) == 0 || operand == computation.root())
        continue;
      const std::optional<Rows> sibling_rows = seed_rows(*operand);
      if (!sibling_rows || *sibling_rows != rows) continue;
      bool only_members = true, reads_member = false;
      for (const Instruction* user : operand->users()) only_members &= in.count(user) > 0;
      for (const Instruction* read : operand->operands()) reads_member |= in.count(read) > 0;
      bool sibling_heavy = false;
      if (!only_members || reads_member || !row_local(*operand, rows, in, sibling_heavy)) continue;
      members.push_back(operand);
      in.insert(operand);
      heavy += sibling_heavy ? 1 : 0;
    }
  }
  if (heavy < 2) return {};
  // the values read outside, each read only after the last member
  std::vector<Instruction*> outputs;
  for (Instruction* member : members) {
    bool read_outside = member == computation.root();
    for (const Instruction* user : member->users()) {
      if (in.count(user)) continue;
      if (position.count(user) == 0 || position.at(user) <= last) return {};
      read_outside = true;
    }
    if (read_outside) outputs.push_back(member);
  }
  if (outputs.empty() || outputs.size() > kMaxRowOutputs) return {};
  // the root (the fusion's place) is the last member; it must be read outside
  if (outputs.back() != order[last]) return {};
  Group group;
  group.members.push_back(order[last]);
  for (Instruction* member : members)
    if (member != order[last]) group.members.push_back(member);
  for (Instruction* output : outputs)
    if (output != order[last]) group.extra_outputs.push_back(output);
  return group;
}

}  // namespace

StatusOr<bool> fuse_rows(Module& module) {
  if (module.entry() == nullptr) return failed_precondition("row-fusion needs a module with an entry computation");
  NameTable names(module);
  NameTable computation_names;
  for (const Computation* computation : module.computations()) computation_names.add(computation->name());
  bool changed = false;
  for (Computation* computation : control_flow_computations(module)) {
    const std::vector<Instruction*> order = computation->instructions();
    std::unordered_map<const Instruction*, size_t> position(order.size());
    for (size_t i = 0; i < order.size(); ++i) position[order[i]] = i;
    std::unordered_set<const Instruction*> taken;
    std::vector<Group> groups;
    for (size_t i = 0; i < order.size(); ++i) {
      if (taken.count(order[i])) continue;
      const std::optional<Rows> rows = seed_rows(*order[i]);
      if (!rows) continue;
      Group group = grow_rows(order, i, *rows, taken, *computation, position);
      if (group.members.empty()) continue;
      for (const Instruction* member : group.members) taken.insert(member);
      groups.push_back(std::move(group));
    }
    std::vector<Instruction*> copied_constants;
    for (const Group& group : groups)
      outline(module, *computation, group, names, computation_names, position, copied_constants, "kCustom");
    remove_unread_constants(*computation, copied_constants);
    changed |= !groups.empty();
  }
  return changed;
}

}  // namespace insitu
