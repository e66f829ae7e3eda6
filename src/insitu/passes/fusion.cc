#include "insitu/passes/fusion.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "insitu/passes/cse.h"
#include "insitu/passes/flatten_calls.h"
#include "insitu/passes/fusion_internal.h"
#include "insitu/passes/name_table.h"
#include "insitu/passes/simplify.h"

namespace insitu {
namespace fusion_internal {

bool is_fusible_elementwise(const Instruction& instruction) {
  const Opcode opcode = instruction.opcode();
  if (!instruction.shape().is_array() || has_side_effect(instruction)) return false;
  return is_elementwise_unary(opcode) || is_elementwise_binary(opcode) || opcode == Opcode::kSelect ||
         opcode == Opcode::kConvert || opcode == Opcode::kIsFinite;
}

// May `candidate` be computed inside a fusion whose result has `dimensions`?
bool may_join(const Instruction& candidate, const std::vector<int64_t>& dimensions) {
  if (candidate.has_control_edges() || candidate.parent()->root() == &candidate) return false;
  const Shape& shape = candidate.shape();
  if (!shape.is_array()) return false;
  if (candidate.opcode() == Opcode::kConstant) return shape.rank() == 0;
  if (shape.dimensions() != dimensions) return false;
  if (candidate.opcode() == Opcode::kBroadcast) return candidate.operand(0)->shape().is_array();
  if (candidate.opcode() == Opcode::kIota) return is_integral(shape.element_type());  // computed per block
  return is_fusible_elementwise(candidate);
}

// The longest row a reduce fusion reduces, in bytes: the runtime computes a chunk of whole rows
// into per-thread scratch before folding it (runtime/fusion_kernels.cc).
constexpr int64_t kMaxFusedRowBytes = 256 * 1024;

namespace {

// A whole reduce whose runtime kernel splits it into blocks without changing its value
// (runtime/reduce_fusion_kernels.cc): a floating sum (evaluator/sum_order.h fixes its blocks),
// or an integer fold by an associative and commutative op (add, multiply, maximum, minimum, and,
// or over s32, s64, u32, u64; and, or over pred).
bool splits_exactly(const Instruction& reduce, PrimitiveType type) {
  if (reduce.called_computations().size() != 1) return false;
  const Computation& combiner = *reduce.called_computations()[0];
  const Instruction* root = combiner.root();
  if (combiner.parameter_count() != 2 || root == nullptr || root->operand_count() != 2 ||
      root->operand(0)->opcode() != Opcode::kParameter || root->operand(1)->opcode() != Opcode::kParameter ||
      root->operand(0) == root->operand(1) || combiner.instruction_count() != 3 || root->shape() != Shape::scalar(type))
    return false;
  const Opcode op = root->opcode();
  switch (type) {
    case PrimitiveType::kF32:
    case PrimitiveType::kF64:
    case PrimitiveType::kF16:
    case PrimitiveType::kBF16: return op == Opcode::kAdd;
    case PrimitiveType::kPred: return op == Opcode::kAnd || op == Opcode::kOr;
    case PrimitiveType::kS32:
    case PrimitiveType::kS64:
    case PrimitiveType::kU32:
    case PrimitiveType::kU64:
      return op == Opcode::kAdd || op == Opcode::kMultiply || op == Opcode::kMaximum || op == Opcode::kMinimum ||
             op == Opcode::kAnd || op == Opcode::kOr;
    default: return false;
  }
}

}  // namespace

// A reduce its input's elementwise producers may join (a kInput fusion): one input and a scalar
// init, one array result, the input an elementwise op, and either the reduced dimensions the
// input's trailing ones (rows of at most kMaxFusedRowBytes) with at least one kept, or every
// dimension reduced by a combiner that splits exactly (a global norm's sum, `all(isfinite(g))`).
// The runtime computes the producers a piece at a time and folds each piece with the reduce's
// own order, so the input never reaches memory.
bool is_fusible_reduce(const Instruction& reduce) {
  if (reduce.opcode() != Opcode::kReduce || reduce.operand_count() != 2 || !reduce.shape().is_array() ||
      reduce.has_control_edges() || has_side_effect(reduce))
    return false;
  const Instruction& input = *reduce.operand(0);
  if (!is_fusible_elementwise(input) || input.has_control_edges() || !reduce.operand(1)->shape().is_array() ||
      reduce.operand(1)->shape().rank() != 0)
    return false;
  const int64_t rank = input.shape().rank();
  std::vector<int64_t> reduced = reduce.dimensions;
  std::sort(reduced.begin(), reduced.end());
  const int64_t count = static_cast<int64_t>(reduced.size());
  if (count == 0 || count > rank) return false;
  int64_t row = 1;
  for (int64_t i = 0; i < count; ++i) {
    if (reduced[i] != rank - count + i) return false;
    row *= input.shape().dimension(reduced[i]);
  }
  if (count == rank) return splits_exactly(reduce, input.shape().element_type());
  return row * byte_width(input.shape().element_type()) <= kMaxFusedRowBytes;
}

}  // namespace fusion_internal

namespace {

using namespace fusion_internal;

// True if `user` only writes `value` into a stack: a dynamic-update-slice with `value` as its
// update, or a scatter with `value` as its updates (directly or through a reshape read by it
// alone), after `after` (the fusion's root: the fusion is placed there). A scan's body writes
// each layer's new m and v so, and an unrolled loop's `.at[i].set` too; buffer assignment then
// computes the update straight into the stack's window (place_updates), a fusion output as well
// as a single result, and nothing reads it after the fusion but the update. Whatever reads the
// updated stack comes after the update, so after the fusion.
bool written_into_stack(const Instruction& value, const Instruction& user, const Instruction& after,
                        const std::unordered_map<const Instruction*, size_t>& position) {
  if (position.at(&user) <= position.at(&after)) return false;
  const Instruction* update = &user;
  const Instruction* written = &value;
  if (user.opcode() == Opcode::kReshape || user.opcode() == Opcode::kBitcast) {
    if (user.users().size() != 1) return false;
    written = &user;
    update = user.users()[0];
  }
  const bool scatter = update->opcode() == Opcode::kScatter && update->operand_count() == 3;
  if ((update->opcode() != Opcode::kDynamicUpdateSlice && !scatter) || update->operand_count() < 2 ||
      update->operand(scatter ? 2 : 1) != written || position.at(update) <= position.at(&after))
    return false;
  // the stack comes from outside the fusion: not an op that could be (or become) one of its
  // outputs, which the update would then be written into while the fusion writes it
  const Instruction* stack = update->operand(0);
  if (stack == written || is_fusible_elementwise(*stack) || stack->opcode() == Opcode::kBroadcast) return false;
  for (int64_t i = 0; i < update->operand_count(); ++i)
    if (i != (scatter ? 2 : 1) && update->operand(i) == written) return false;
  return true;
}

// The fusion grown from `root` backwards: root first, then producers whose users are all in it.
// An elementwise op of the fusion's dimensions that the computation returns (its only other
// reader is the computation's root tuple) joins too, as another output of the fusion: it lives
// to the end anyway, so computing it later only shortens its life, and the root reads it after
// the fusion, so no cycle forms. Adam's m and v updates join the parameter update that reads
// them: m, v, g and p are read once, where three fusions read them (and m', v'): seven array
// passes instead of ten. (A value read later by other ops stays a fusion of its own: made an
// output, it would keep its inputs alive until the reader's fusion; a ResNet block's training
// step peaked 12 MB higher that way.)
// A reduce root (is_fusible_reduce) grows over its input's dimensions; its input, when read
// after the reduce as well, is its one other output. An elementwise root may grow together with
// `siblings` (returned_siblings), each another output.
Group grow_group(Instruction* root, const std::unordered_set<const Instruction*>& taken,
                 const std::unordered_map<const Instruction*, size_t>& position,
                 const std::vector<Instruction*>& siblings = {}) {
  Group group{{root}, siblings};
  std::vector<Instruction*>& members = group.members;
  members.insert(members.end(), siblings.begin(), siblings.end());
  std::unordered_set<const Instruction*> in_group(members.begin(), members.end());
  const bool reduce = root->opcode() == Opcode::kReduce;
  const std::vector<int64_t>& dimensions = (reduce ? root->operand(0) : root)->shape().dimensions();
  const Instruction* returned_by = root->parent()->root();
  for (bool grew = true; grew;) {
    grew = false;
    for (size_t m = 0; m < members.size(); ++m) {
      if (members[m]->opcode() == Opcode::kBroadcast || members[m]->opcode() == Opcode::kConstant) continue;
      for (Instruction* operand : members[m]->operands()) {
        if (in_group.count(operand) || taken.count(operand) || !may_join(*operand, dimensions)) continue;
        const auto& users = operand->users();
        const bool only_members =
            std::all_of(users.begin(), users.end(), [&](const Instruction* user) { return in_group.count(user); });
        // a reduce's input read after it too: the fusion's second output (a softmax's exp(x - max),
        // read by its sum and by the division)
        const bool reduced_output =
            !only_members && reduce && m == 0 && operand == root->operand(0) &&
            std::all_of(users.begin(), users.end(), [&](const Instruction* user) {
              return in_group.count(user) || position.at(user) > position.at(root);
            });
        const bool output = !only_members && !reduce && is_fusible_elementwise(*operand) &&
                            returned_by->opcode() == Opcode::kTuple &&
                            std::all_of(users.begin(), users.end(), [&](const Instruction* user) {
                              return in_group.count(user) || user == returned_by ||
                                     written_into_stack(*operand, *user, *root, position);
                            });
        if (!only_members && !output && !reduced_output) continue;
        members.push_back(operand);
        in_group.insert(operand);
        if (output || reduced_output) group.extra_outputs.push_back(operand);
        grew = true;
      }
    }
  }
  return group;
}

// Outputs of a group grown with its siblings at most (the runtime's multi-output loop runs up to
// 64; each output is another stream written per block).
constexpr size_t kMaxJointOutputs = 16;
// A sibling this far before the root at most (program order): the fusion is placed at the root,
// so the sibling's other inputs live until then.
constexpr size_t kMaxSiblingDistance = 32;

// Elementwise values the computation only returns, before the group's root, computed through
// elementwise ops of the root's dimensions from an array of those dimensions the group reads:
// outputs to grow together with the root (sibling outputs), so that what they share is read
// once and, computed, joins and never reaches memory. An optimizer step skipped unless its
// gradients are finite returns select(ok, p', p), select(ok, m', m) and select(ok, v', v), where
// p' reads m' and v': one loop instead of three. At most kMaxSeen values visited per search;
// siblings at most kMaxSiblingDistance before the root.
std::vector<Instruction*> returned_siblings(const Group& group, const std::unordered_set<const Instruction*>& taken,
                                            const std::unordered_map<const Instruction*, size_t>& position) {
  constexpr size_t kMaxSeen = 64;
  const Instruction* root = group.members.front();
  const Instruction* returned_by = root->parent()->root();
  std::vector<Instruction*> found;
  // (scalars stay apart: a loop's counter + 1 is what the grid and loop analyses look for)
  if (returned_by->opcode() != Opcode::kTuple || root->shape().rank() == 0) return found;
  const std::unordered_set<const Instruction*> members(group.members.begin(), group.members.end());
  const std::vector<int64_t>& dimensions = root->shape().dimensions();
  std::vector<Instruction*> pending;
  std::unordered_set<const Instruction*> seen;
  for (const Instruction* member : group.members)
    for (Instruction* operand : member->operands())
      if (!members.count(operand) && operand->shape().is_array() && operand->shape().dimensions() == dimensions &&
          seen.insert(operand).second)
        pending.push_back(operand);
  while (!pending.empty() && seen.size() < kMaxSeen) {
    const Instruction* value = pending.back();
    pending.pop_back();
    for (Instruction* user : value->users()) {
      if (members.count(user) || taken.count(user) || user == returned_by || !is_fusible_elementwise(*user) ||
          user->has_control_edges() || user->shape().dimensions() != dimensions || !seen.insert(user).second)
        continue;
      const auto& readers = user->users();
      const bool returned_only = !readers.empty() && std::all_of(readers.begin(), readers.end(), [&](const Instruction* reader) {
        return reader == returned_by;
      });
      if (returned_only && position.at(user) < position.at(root) &&
          position.at(root) - position.at(user) <= kMaxSiblingDistance)
        found.push_back(user);
      else if (!returned_only) pending.push_back(user);
    }
  }
  return found;
}

// True if a value the group reads from outside depends on one of its members (a sibling output
// read something computed from the group): the fusion would read its own result. Only values
// after the group's first member can depend on one.
bool reads_own_result(const Group& group, const std::unordered_map<const Instruction*, size_t>& position) {
  const std::unordered_set<const Instruction*> members(group.members.begin(), group.members.end());
  size_t first = position.at(group.members.front());
  for (const Instruction* member : group.members) first = std::min(first, position.at(member));
  std::vector<const Instruction*> pending;
  std::unordered_set<const Instruction*> seen;
  for (const Instruction* member : group.members)
    for (const Instruction* operand : member->operands())
      if (!members.count(operand) && position.at(operand) > first && seen.insert(operand).second) pending.push_back(operand);
  while (!pending.empty()) {
    const Instruction* value = pending.back();
    pending.pop_back();
    for (const Instruction* operand : value->operands()) {
      if (members.count(operand)) return true;
      if (position.at(operand) > first && seen.insert(operand).second) pending.push_back(operand);
    }
  }
  return false;
}

}  // namespace

namespace fusion_internal {

void outline(Module& module, Computation& computation, const Group& fused_group, NameTable& names,
             NameTable& computation_names, const std::unordered_map<const Instruction*, size_t>& position,
             std::vector<Instruction*>& copied_constants, std::string_view kind) {
  const std::vector<Instruction*>& group = fused_group.members;
  std::unordered_set<const Instruction*> members(group.begin(), group.end());
  std::vector<Instruction*> ordered(group.begin(), group.end());  // program order
  std::sort(ordered.begin(), ordered.end(),
            [&](const Instruction* a, const Instruction* b) { return position.at(a) < position.at(b); });
  Instruction* root = group.front();
  auto copied_in = [](const Instruction& operand) {  // (as XLA fuses constants): no operand, no buffer
    return operand.opcode() == Opcode::kConstant && operand.shape().is_array() && operand.shape().rank() == 0;
  };

  // The fusion's operands: what the members read from outside, in order of first use.
  std::vector<Instruction*> operands;
  std::unordered_map<const Instruction*, int64_t> parameter_of(2 * group.size());
  for (const Instruction* instruction : ordered)
    for (Instruction* operand : instruction->operands())
      if (!members.count(operand) && !copied_in(*operand) && parameter_of.emplace(operand, operands.size()).second)
        operands.push_back(operand);

  std::vector<Instruction*> outputs = {root};
  outputs.insert(outputs.end(), fused_group.extra_outputs.begin(), fused_group.extra_outputs.end());
  Shape shape = root->shape();
  if (outputs.size() > 1) {
    std::vector<Shape> shapes;
    for (const Instruction* output : outputs) shapes.push_back(output->shape());
    shape = Shape::tuple(shapes);
  }
  auto fused = std::make_unique<Computation>(computation_names.unique("fused_computation"));
  fused->set_location(root->location());
  Computation* body = module.add_computation_before(std::move(fused), &computation);
  auto fusion = std::make_unique<Instruction>(Opcode::kFusion, names.unique("fusion"), shape);
  fusion->set_location(root->location());
  fusion->fusion_kind = !kind.empty()                       ? std::string(kind)
                        : root->opcode() == Opcode::kReduce ? "kInput"
                        : root->opcode() == Opcode::kDot || root->opcode() == Opcode::kDynamicUpdateSlice ? "kCustom"
                                                            : "kLoop";
  fusion->metadata = root->metadata;
  fusion->has_metadata = root->has_metadata;
  fusion->set_called_computations({body});
  for (Instruction* operand : operands) fusion->append_operand(operand);
  // a dynamic-update-slice root writes its array in place (fusion_internal.h's Group)
  if (root->opcode() == Opcode::kDynamicUpdateSlice && outputs.size() == 1 && !members.count(root->operand(0)))
    fusion->fusion_output_to_operand_aliasing.push_back({{}, parameter_of.at(root->operand(0)), {}});
  Instruction* placed = computation.insert_instruction_before(std::move(fusion), root);

  // Readers outside read the fusion (or its elements) from now on.
  if (outputs.size() == 1) {
    root->replace_all_uses_with(placed);
    if (computation.root() == root) computation.set_root(placed);
  } else {
    for (size_t i = 0; i < outputs.size(); ++i) {
      auto element = std::make_unique<Instruction>(Opcode::kGetTupleElement, names.unique("get-tuple-element"),
                                                   outputs[i]->shape());
      element->tuple_index = static_cast<int64_t>(i);
      element->append_operand(placed);
      Instruction* read = computation.insert_instruction_before(std::move(element), root);
      const std::vector<Instruction*> readers = outputs[i]->users();  // members go with the group
      for (Instruction* reader : readers)
        if (!members.count(reader))
          for (int64_t j = 0; j < reader->operand_count(); ++j)
            if (reader->operand(j) == outputs[i]) reader->replace_operand(j, read);
      if (computation.root() == outputs[i]) computation.set_root(read);
    }
  }

  // The members move into the body in program order, each after the parameters and constants
  // it reads first; what they read from outside becomes those.
  std::unordered_map<const Instruction*, Instruction*> inside(2 * group.size());
  for (Instruction* instruction : ordered) {
    for (int64_t i = 0; i < instruction->operand_count(); ++i) {
      Instruction* operand = instruction->operand(i);
      if (members.count(operand)) continue;
      auto [it, first] = inside.try_emplace(operand, nullptr);
      if (first && copied_in(*operand)) {
        it->second = body->add_instruction(clone_without_operands(*operand, names.unique(operand->name())));
        copied_constants.push_back(operand);
      } else if (first) {
        const int64_t number = parameter_of.at(operand);
        auto parameter = std::make_unique<Instruction>(Opcode::kParameter, names.unique(str_cat("param_", number)),
                                                       operand->shape());
        parameter->parameter_number = number;
        it->second = body->add_instruction(std::move(parameter));
      }
      instruction->replace_operand(i, it->second);
    }
    computation.move_instruction_to(instruction, *body);
  }
  if (outputs.size() == 1) {
    body->set_root(root);
  } else {
    auto tuple = std::make_unique<Instruction>(Opcode::kTuple, names.unique("tuple"), shape);
    for (Instruction* output : outputs) tuple->append_operand(output);
    body->set_root(body->add_instruction(std::move(tuple)));
  }
  // siblings grown together may each have had their own copy of a value they share
  // (duplicate_cheap_values, recompute_far_values): in one loop, one is enough
  if (fused_group.joint) merge_equal_values(*body);
}

std::vector<Computation*> control_flow_computations(Module& module) {
  std::vector<Computation*> order;
  std::unordered_set<const Computation*> seen;
  std::vector<Computation*> stack = {module.entry()};
  seen.insert(module.entry());
  while (!stack.empty()) {
    Computation* computation = stack.back();
    stack.pop_back();
    order.push_back(computation);
    for (const Instruction* instruction : computation->instructions()) {
      const Opcode opcode = instruction->opcode();
      if (opcode != Opcode::kWhile && opcode != Opcode::kConditional && opcode != Opcode::kCall) continue;
      for (Computation* callee : instruction->called_computations())
        if (seen.insert(callee).second) stack.push_back(callee);
    }
  }
  return order;
}

void remove_unread_constants(Computation& computation, std::vector<Instruction*>& copied_constants) {
  std::sort(copied_constants.begin(), copied_constants.end());
  copied_constants.erase(std::unique(copied_constants.begin(), copied_constants.end()), copied_constants.end());
  std::vector<Instruction*> unread;
  for (Instruction* constant : copied_constants)
    if (constant->users().empty() && computation.root() != constant && constant->control_successors().empty())
      unread.push_back(constant);
  computation.remove_instructions(unread);
}

}  // namespace fusion_internal

namespace {

// The fusion pass; reduce fusions only with `reduces`.
StatusOr<bool> fuse_computations(Module& module, bool reduces) {
  if (module.entry() == nullptr) return failed_precondition("fusion needs a module with an entry computation");
  NameTable names(module);
  NameTable computation_names;
  for (const Computation* computation : module.computations()) computation_names.add(computation->name());
  bool changed = false;
  for (Computation* computation : control_flow_computations(module)) {
    changed |= recompute_far_values(*computation, names);
    changed |= split_shared_scalar_broadcasts(*computation, names);
    changed |= duplicate_cheap_values(*computation, names, reduces);
    std::unordered_set<const Instruction*> taken(computation->instruction_count());
    std::vector<Group> groups = reduces ? sliced_dot_groups(*computation, taken) : std::vector<Group>{};
    const std::vector<Instruction*> order = computation->instructions();
    std::unordered_map<const Instruction*, size_t> position(order.size());  // program order before any group was outlined
    for (size_t i = 0; i < order.size(); ++i) position[order[i]] = i;
    for (auto it = order.rbegin(); it != order.rend(); ++it) {
      Instruction* instruction = *it;
      if (taken.count(instruction) || instruction->has_control_edges()) continue;
      const bool reduce = reduces && is_fusible_reduce(*instruction);
      if (!reduce && !is_fusible_elementwise(*instruction)) continue;
      Group group = grow_group(instruction, taken, position);
      // grown again with the returned values that share its computed inputs, while it finds more
      // (and never reading its own result)
      std::vector<Instruction*> siblings;
      for (int round = 0; !reduce && round < 4; ++round) {
        std::vector<Instruction*> more = returned_siblings(group, taken, position);
        if (more.empty()) break;
        siblings.insert(siblings.end(), more.begin(), more.end());
        Group joint = grow_group(instruction, taken, position, siblings);
        if (joint.extra_outputs.size() > kMaxJointOutputs || reads_own_result(joint, position)) break;
        group = std::move(joint);
        group.joint = true;
      }
      if (group.members.size() < 2) continue;
      // a reduce fusion computes its input: that op must have joined
      if (reduce && std::find(group.members.begin(), group.members.end(), instruction->operand(0)) == group.members.end())
        continue;
      for (const Instruction* member : group.members) taken.insert(member);
      groups.push_back(std::move(group));
    }
    // in program order, so names count up along the program
    std::sort(groups.begin(), groups.end(), [&](const Group& a, const Group& b) {
      return position.at(a.members.front()) > position.at(b.members.front());
    });
    std::vector<Instruction*> copied_constants;
    for (auto it = groups.rbegin(); it != groups.rend(); ++it)
      outline(module, *computation, *it, names, computation_names, position, copied_constants);
    remove_unread_constants(*computation, copied_constants);
    changed |= !groups.empty();
  }
  return changed;
}

}  // namespace

StatusOr<bool> fuse(Module& module) { return fuse_computations(module, /*reduces=*/true); }

bool inline_unlooped_fusions(Module& module) {
  NameTable names(module);
  const std::unordered_set<const Computation*> reachable = reachable_computations(module);
  bool changed = false;
  // again while one inlined brings more (a row fusion's reduce fusions)
  for (bool inlined = true; inlined;) {
    inlined = false;
    const std::unordered_set<const Computation*> live = reachable_computations(module);
    for (Computation* computation : module.computations())
      for (Instruction* instruction : live.count(computation) ? computation->instructions() : std::vector<Instruction*>{})
        if (instruction->opcode() == Opcode::kFusion && instruction->fusion_kind != "kLoop") {
          inlined = true;
          Instruction* result = inline_call(instruction, names);
          changed = true;
          if (result->opcode() != Opcode::kTuple) continue;
          // a reduce fusion with its input as a second output: each get-tuple-element reads the
          // tuple's element itself
          const std::vector<Instruction*> readers = result->users();
          for (Instruction* reader : readers) {
            if (reader->opcode() != Opcode::kGetTupleElement || reader->has_control_edges()) continue;
            reader->replace_all_uses_with(result->operand(reader->tuple_index));
            if (computation->root() == reader) computation->set_root(result->operand(reader->tuple_index));
            computation->remove_instruction(reader);
          }
          if (result->users().empty() && computation->root() != result) computation->remove_instruction(result);
        }
  }
  if (!changed) return false;
  remove_unreachable_computations(module, reachable);
  // the inlined chains become loop fusions again, their reduces plain reduces
  StatusOr<bool> fused = fuse_computations(module, /*reduces=*/false);
  INSITU_CHECK(fused.ok()) << fused.status().to_string();
  return true;
}

}  // namespace insitu
