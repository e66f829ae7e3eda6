#include "insitu/passes/fusion.h"

#include <algorithm>
#include <functional>
#include <unordered_map>
#include <unordered_set>

#include "insitu/passes/flatten_calls.h"
#include "insitu/passes/name_table.h"
#include "insitu/passes/simplify.h"

namespace insitu {
namespace {

bool is_fusible_elementwise(const Instruction& instruction) {
  const Opcode opcode = instruction.opcode();
  if (!instruction.shape().is_array() || has_side_effect(instruction)) return false;
  return is_elementwise_unary(opcode) || is_elementwise_binary(opcode) || opcode == Opcode::kSelect ||
         opcode == Opcode::kConvert;
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

// A reduce its input's elementwise producers may join (a kInput fusion): one input and a scalar
// init, one array result, the input an elementwise op, the reduced dimensions the input's
// trailing ones (rows of at most kMaxFusedRowBytes), at least one dimension kept. The runtime
// computes the producers a chunk of rows at a time and folds each chunk with the reduce's own
// kernel, so the input never reaches memory.
bool is_fusible_row_reduce(const Instruction& reduce) {
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
  if (count == 0 || count >= rank) return false;
  int64_t row = 1;
  for (int64_t i = 0; i < count; ++i) {
    if (reduced[i] != rank - count + i) return false;
    row *= input.shape().dimension(reduced[i]);
  }
  return row * byte_width(input.shape().element_type()) <= kMaxFusedRowBytes;
}

// A fusion: its instructions (the root first, then producers as they joined) and the producers
// it also returns (multi-output), in the order they joined.
struct Group {
  std::vector<Instruction*> members;
  std::vector<Instruction*> extra_outputs;
};

// True if `user` only writes `value` into a stack the computation returns: a dynamic-update-
// slice with `value` as its update (directly or through a reshape read by it alone) whose only
// reader is `returned_by`, both after `after` (the fusion's root: the fusion is placed there).
// A scan's body writes each layer's new m and v so; buffer assignment then computes the update
// straight into the stack's window (place_updates), a fusion output as well as a single result,
// and nothing reads it after the fusion but the update-slice.
bool written_into_returned_stack(const Instruction& value, const Instruction& user, const Instruction& returned_by,
                                 const Instruction& after,
                                 const std::unordered_map<const Instruction*, size_t>& position) {
  if (position.at(&user) <= position.at(&after)) return false;
  const Instruction* update = &user;
  const Instruction* written = &value;
  if (user.opcode() == Opcode::kReshape || user.opcode() == Opcode::kBitcast) {
    if (user.users().size() != 1) return false;
    written = &user;
    update = user.users()[0];
  }
  if (update->opcode() != Opcode::kDynamicUpdateSlice || update->operand_count() < 2 || update->operand(1) != written ||
      position.at(update) <= position.at(&after))
    return false;
  // the stack comes from outside the fusion: not an op that could be (or become) one of its
  // outputs, which the update would then be written into while the fusion writes it
  const Instruction* stack = update->operand(0);
  if (stack == written || is_fusible_elementwise(*stack) || stack->opcode() == Opcode::kBroadcast) return false;
  for (int64_t i = 2; i < update->operand_count(); ++i)
    if (update->operand(i) == written) return false;
  const auto& readers = update->users();
  return !readers.empty() &&
         std::all_of(readers.begin(), readers.end(), [&](const Instruction* reader) { return reader == &returned_by; });
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
// A reduce root (is_fusible_row_reduce) grows over its input's dimensions; its input, when read
// after the reduce as well, is its one other output.
Group grow_group(Instruction* root, const std::unordered_set<const Instruction*>& taken,
                 const std::unordered_map<const Instruction*, size_t>& position) {
  Group group{{root}, {}};
  std::vector<Instruction*>& members = group.members;
  std::unordered_set<const Instruction*> in_group = {root};
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
                                     written_into_returned_stack(*operand, *user, *returned_by, *root, position);
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

// Replaces the group (in `computation`) by one fusion instruction calling a new computation.
// A fusion with extra outputs returns the tuple (root, extra outputs...); each one's readers
// read its get-tuple-element.
// Outlines one group into a fusion placed at its root. Its members, now read only by each other,
// go to `dead` (the caller removes every group's at once: one pass over the computation instead
// of one per group), the scalar constants copied into the body to `copied_constants`.
// `position`: program order of the computation's instructions before any group was outlined.
void outline(Module& module, Computation& computation, const Group& fused_group, NameTable& names,
             NameTable& computation_names, const std::unordered_map<const Instruction*, size_t>& position,
             std::vector<Instruction*>& dead, std::vector<Instruction*>& copied_constants) {
  const std::vector<Instruction*>& group = fused_group.members;
  std::unordered_set<const Instruction*> members(group.begin(), group.end());
  std::vector<Instruction*> ordered(group.begin(), group.end());  // program order
  std::sort(ordered.begin(), ordered.end(),
            [&](const Instruction* a, const Instruction* b) { return position.at(a) < position.at(b); });
  Instruction* root = group.front();

  auto fused = std::make_unique<Computation>(computation_names.unique("fused_computation"));
  fused->set_location(root->location());
  Computation* body = module.add_computation_before(std::move(fused), &computation);
  std::unordered_map<const Instruction*, Instruction*> mapped;
  std::vector<Instruction*> operands;  // the fusion's operands, in order of first use
  for (Instruction* instruction : ordered) {
    for (Instruction* operand : instruction->operands()) {
      if (members.count(operand) || mapped.count(operand)) continue;
      if (operand->opcode() == Opcode::kConstant && operand->shape().is_array() && operand->shape().rank() == 0) {
        // a scalar constant is copied in (as XLA fuses constants): no operand, no buffer
        mapped[operand] = body->add_instruction(clone_without_operands(*operand, names.unique(operand->name())));
        copied_constants.push_back(operand);
        continue;
      }
      auto parameter = std::make_unique<Instruction>(Opcode::kParameter, names.unique(str_cat("param_", operands.size())),
                                                     operand->shape());
      parameter->parameter_number = static_cast<int64_t>(operands.size());
      mapped[operand] = body->add_instruction(std::move(parameter));
      operands.push_back(operand);
    }
    Instruction* copy = body->add_instruction(clone_without_operands(*instruction, names.unique(instruction->name())));
    for (Instruction* operand : instruction->operands()) copy->append_operand(mapped.at(operand));
    mapped[instruction] = copy;
  }
  std::vector<Instruction*> outputs = {root};
  outputs.insert(outputs.end(), fused_group.extra_outputs.begin(), fused_group.extra_outputs.end());
  Shape shape = root->shape();
  if (outputs.size() == 1) {
    body->set_root(mapped.at(root));
  } else {
    std::vector<Shape> shapes;
    auto tuple = std::make_unique<Instruction>(Opcode::kTuple, names.unique("tuple"), Shape());
    for (Instruction* output : outputs) {
      shapes.push_back(output->shape());
      tuple->append_operand(mapped.at(output));
    }
    shape = Shape::tuple(shapes);
    tuple->set_shape(shape);
    body->set_root(body->add_instruction(std::move(tuple)));
  }

  auto fusion = std::make_unique<Instruction>(Opcode::kFusion, names.unique("fusion"), shape);
  fusion->set_location(root->location());
  fusion->fusion_kind = root->opcode() == Opcode::kReduce ? "kInput" : "kLoop";
  fusion->metadata = root->metadata;
  fusion->has_metadata = root->has_metadata;
  fusion->set_called_computations({body});
  for (Instruction* operand : operands) fusion->append_operand(operand);
  Instruction* placed = computation.insert_instruction_before(std::move(fusion), root);
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
  dead.insert(dead.end(), ordered.begin(), ordered.end());
}

// Recomputing instead of keeping (see fusion.h): an elementwise value of at least this many
// bytes whose users are this many instructions apart or more.
constexpr int64_t kRecomputeBytes = 1 << 20;
constexpr size_t kRecomputeDistance = 16;

// Whether reading `operand` at program position `at` keeps nothing alive longer than it is
// anyway: a scalar constant, a broadcast of one, or a value something reads at `at` or later.
bool read_anyway(const Instruction* operand, size_t at, const std::unordered_map<const Instruction*, size_t>& position) {
  const Opcode opcode = operand->opcode();
  if (opcode == Opcode::kConstant && operand->shape().rank() == 0) return true;
  if (opcode == Opcode::kBroadcast && operand->operand(0)->opcode() == Opcode::kConstant &&
      operand->operand(0)->shape().rank() == 0)
    return true;
  for (const Instruction* user : operand->users())
    if (position.at(user) >= at) return true;
  return false;
}

// What recomputing `value` at position `at` takes: `value` and the elementwise instructions of
// its shape it reads that nothing else reads by then, operands first (at most kRecomputeCone);
// false when some other input would have to stay alive until `at`.
constexpr size_t kRecomputeCone = 8;
bool recompute_cone(const Instruction* value, size_t at, const std::unordered_map<const Instruction*, size_t>& position,
                    std::vector<const Instruction*>& cone) {
  if (std::find(cone.begin(), cone.end(), value) != cone.end()) return true;
  for (const Instruction* operand : value->operands()) {
    if (read_anyway(operand, at, position)) continue;
    if (!is_fusible_elementwise(*operand) || operand->has_control_edges() || cone.size() >= kRecomputeCone ||
        operand->shape().dimensions() != value->shape().dimensions() || !recompute_cone(operand, at, position, cone))
      return false;
  }
  cone.push_back(value);
  return true;
}

// Gives each far user of a big elementwise value its own copy of the value's computation,
// placed just before it, when recomputing there keeps no other input alive longer
// (recompute_cone): the value then dies at its first user instead of living across the program
// (a GELU's tanh from the forward pass to the backward one), and each copy fuses into its
// user's loop. Repeats until nothing changes.
bool recompute_far_values(Computation& computation, NameTable& names) {
  bool changed = false;
  for (bool again = true; again;) {
    again = false;
    const std::vector<Instruction*> order = computation.instructions();
    std::unordered_map<const Instruction*, size_t> position;
    for (size_t i = 0; i < order.size(); ++i) position[order[i]] = i;
    for (Instruction* value : order) {
      if (!is_fusible_elementwise(*value) || value->has_control_edges() || computation.root() == value ||
          value->shape().byte_size() < kRecomputeBytes || value->users().size() < 2)
        continue;
      std::vector<Instruction*> users(value->users().begin(), value->users().end());
      std::sort(users.begin(), users.end(),  // users() lists each user once
                [&](const Instruction* a, const Instruction* b) { return position.at(a) < position.at(b); });
      const bool fusible_users = std::all_of(users.begin(), users.end(), [&](const Instruction* user) {
        return is_fusible_elementwise(*user) && !user->has_control_edges() &&
               user->shape().dimensions() == value->shape().dimensions();
      });
      if (!fusible_users || users.size() < 2) continue;
      // The first far user (and the near ones after it) read one copy; the value itself then
      // dies before them.
      size_t far = 1;
      while (far < users.size() && position.at(users[far]) - position.at(users[far - 1]) < kRecomputeDistance) ++far;
      if (far == users.size()) continue;
      std::vector<const Instruction*> cone;
      if (!recompute_cone(value, position.at(users[far]), position, cone)) continue;
      std::unordered_map<const Instruction*, Instruction*> copies;
      for (const Instruction* original : cone) {
        Instruction* copy = computation.insert_instruction_before(
            clone_without_operands(*original, names.unique(original->name())), users[far]);
        for (Instruction* operand : original->operands())
          copy->append_operand(copies.count(operand) ? copies.at(operand) : operand);
        copies[original] = copy;
      }
      for (size_t u = far; u < users.size(); ++u)
        for (int64_t i = 0; i < users[u]->operand_count(); ++i)
          if (users[u]->operand(i) == value) users[u]->replace_operand(i, copies.at(value));
      again = changed = true;
      break;  // positions moved: start over
    }
  }
  return changed;
}

// Ops cheap enough to compute once per reader instead of writing their value once (no
// transcendental, no division): whole-array arithmetic a memory pass costs more than.
bool is_cheap(const Instruction& instruction) {
  switch (instruction.opcode()) {
    case Opcode::kAdd: case Opcode::kSubtract: case Opcode::kMultiply: case Opcode::kNegate: case Opcode::kAbs:
    case Opcode::kMaximum: case Opcode::kMinimum: case Opcode::kCompare: case Opcode::kSelect: case Opcode::kConvert:
    case Opcode::kAnd: case Opcode::kOr: case Opcode::kXor: case Opcode::kNot:
      return is_fusible_elementwise(instruction);
    case Opcode::kBroadcast:
      return instruction.shape().is_array() && instruction.operand(0)->shape().is_array() && !has_side_effect(instruction);
    default:
      return false;
  }
}

// Whether `user` would take `value` into its fusion: an elementwise op of its dimensions, or a
// row reduce of it.
bool fuses(const Instruction& user, const Instruction& value, bool reduces) {
  if (user.has_control_edges()) return false;
  if (reduces && is_fusible_row_reduce(user)) return user.operand(0) == &value && user.operand(1) != &value;
  return is_fusible_elementwise(user) && user.shape().dimensions() == value.shape().dimensions();
}

// Readers of one cheap value at most this many (each computes it again) and this close in the
// program (its inputs then live no longer than to the last of them).
constexpr size_t kMaxCheapCopies = 4;

// Would `operand` be computed inside a fusion of `value`'s dimensions (not read from memory)?
bool fuses_into(const Instruction& operand, const Instruction& value) {
  if (operand.opcode() == Opcode::kConstant) return false;  // a scalar is copied in, an array read
  if (!operand.shape().is_array() || operand.shape().dimensions() != value.shape().dimensions()) return false;
  return is_fusible_elementwise(operand) || operand.opcode() == Opcode::kBroadcast ||
         (operand.opcode() == Opcode::kIota && is_integral(operand.shape().element_type()));
}

// What computing `value` again takes: `value` and the cheap values of its dimensions only it
// needs (operands first, at most kRecomputeCone). False when an operand that only the cone reads
// would fuse but is not cheap: copied, the cone would make it a value read from memory.
bool cheap_cone(Instruction* value, std::vector<Instruction*>& cone) {
  std::unordered_set<const Instruction*> members = {value};
  std::vector<Instruction*> found = {value};
  for (bool grew = true; grew;) {
    grew = false;
    for (size_t m = 0; m < found.size(); ++m)
      for (Instruction* operand : found[m]->operands()) {
        if (members.count(operand) || !fuses_into(*operand, *value) || !is_cheap(*operand) ||
            operand->has_control_edges())
          continue;
        const auto& users = operand->users();
        if (!std::all_of(users.begin(), users.end(), [&](const Instruction* user) { return members.count(user); }))
          continue;
        if (found.size() >= kRecomputeCone) return false;
        members.insert(operand);
        found.push_back(operand);
        grew = true;
      }
  }
  for (const Instruction* member : found)
    for (const Instruction* operand : member->operands()) {
      if (members.count(operand) || !fuses_into(*operand, *value)) continue;
      const auto& users = operand->users();
      if (std::all_of(users.begin(), users.end(), [&](const Instruction* user) { return members.count(user); }))
        return false;
    }
  // operands first
  std::unordered_set<const Instruction*> placed;
  std::function<void(Instruction*)> place = [&](Instruction* member) {
    if (!placed.insert(member).second) return;
    for (Instruction* operand : member->operands())
      if (members.count(operand)) place(operand);
    cone.push_back(member);
  };
  place(value);
  return true;
}

// Gives each reader of a cheap value (is_cheap) its own copy when every reader would fuse it
// (fuses) and they are close: each copy then joins its reader's fusion and the value is never
// written. The cheap values it is computed from that only it reads are copied with it
// (cheap_cone); a value it needs that is not cheap and read only by it stops the copy (it
// would be written where it was fused). A log-softmax's logits + bias and logits - max, read by
// the row max, the row sum of exp and the result, and a layer norm's x - mean, read by the
// variance and the normalized output, stay in cache instead of taking a memory pass each way.
// Values read by anything else (a dot, the root tuple) are left alone: computed twice, they
// would be read twice as well. Consumers are visited first, so a value read by the copies of
// its reader is copied in turn.
bool duplicate_cheap_values(Computation& computation, NameTable& names, bool reduces) {
  bool changed = false;
  const std::vector<Instruction*> order = computation.instructions();
  std::unordered_map<const Instruction*, size_t> position;
  for (size_t i = 0; i < order.size(); ++i) position[order[i]] = i;
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    Instruction* value = *it;
    if (!is_cheap(*value) || value->has_control_edges() || computation.root() == value) continue;
    std::vector<Instruction*> users(value->users().begin(), value->users().end());
    if (users.size() < 2 || users.size() > kMaxCheapCopies) continue;
    if (!std::all_of(users.begin(), users.end(), [&](const Instruction* user) { return fuses(*user, *value, reduces); }))
      continue;
    // copies inserted earlier sit before their reader: their place is their reader's
    auto place = [&](const Instruction* user) {
      while (!position.count(user)) user = user->users()[0];
      return position.at(user);
    };
    std::sort(users.begin(), users.end(), [&](const Instruction* a, const Instruction* b) { return place(a) < place(b); });
    if (place(users.back()) - place(users.front()) >= kRecomputeDistance) continue;
    std::vector<Instruction*> cone;
    if (!cheap_cone(value, cone)) continue;
    for (size_t u = 1; u < users.size(); ++u) {
      std::unordered_map<const Instruction*, Instruction*> copies;
      for (Instruction* original : cone) {
        Instruction* copy = computation.insert_instruction_before(
            clone_without_operands(*original, names.unique(original->name())), users[u]);
        for (Instruction* operand : original->operands())
          copy->append_operand(copies.count(operand) ? copies.at(operand) : operand);
        copies[original] = copy;
      }
      for (int64_t i = 0; i < users[u]->operand_count(); ++i)
        if (users[u]->operand(i) == value) users[u]->replace_operand(i, copies.at(value));
    }
    changed = true;
  }
  return changed;
}

// The entry and every computation reached from it through while/conditional/call.
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

}  // namespace


// A broadcast of a scalar read by several elementwise ops gets one copy per reader, so each
// joins its reader's fusion: a full-size array of one repeated value (an optimizer's beta,
// read by the m and v updates) is then never written or read (4 MB each for a 1024 x 1024
// layer). Readers of other kinds keep the original.
bool split_shared_scalar_broadcasts(Computation& computation, NameTable& names) {
  bool changed = false;
  for (Instruction* broadcast : computation.instructions()) {
    if (broadcast->opcode() != Opcode::kBroadcast || broadcast->operand(0)->shape().rank() != 0 ||
        broadcast->has_control_edges() || computation.root() == broadcast || broadcast->users().size() < 2)
      continue;
    const std::vector<Instruction*> users(broadcast->users().begin(), broadcast->users().end());
    auto fuses = [&](const Instruction* user) {
      return is_fusible_elementwise(*user) && user->shape().dimensions() == broadcast->shape().dimensions();
    };
    // The original stays with the other readers, or with the first when every reader fuses.
    const Instruction* keeper = std::all_of(users.begin(), users.end(), fuses) ? users[0] : nullptr;
    for (Instruction* user : users) {
      if (user == keeper || !fuses(user)) continue;
      Instruction* copy = computation.insert_instruction_before(
          clone_without_operands(*broadcast, names.unique(broadcast->name())), user);
      copy->append_operand(broadcast->operand(0));
      for (int64_t i = 0; i < user->operand_count(); ++i)
        if (user->operand(i) == broadcast) user->replace_operand(i, copy);
      changed = true;
    }
  }
  return changed;
}

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
    std::vector<Group> groups;
    std::unordered_set<const Instruction*> taken;
    const std::vector<Instruction*> order = computation->instructions();
    std::unordered_map<const Instruction*, size_t> position;  // program order before any group was outlined
    for (size_t i = 0; i < order.size(); ++i) position[order[i]] = i;
    for (auto it = order.rbegin(); it != order.rend(); ++it) {
      Instruction* instruction = *it;
      if (taken.count(instruction) || instruction->has_control_edges()) continue;
      const bool reduce = reduces && is_fusible_row_reduce(*instruction);
      if (!reduce && !is_fusible_elementwise(*instruction)) continue;
      Group group = grow_group(instruction, taken, position);
      if (group.members.size() < 2) continue;
      // a reduce fusion computes its input: that op must have joined
      if (reduce && std::find(group.members.begin(), group.members.end(), instruction->operand(0)) == group.members.end())
        continue;
      for (const Instruction* member : group.members) taken.insert(member);
      groups.push_back(std::move(group));
    }
    // in program order, so names count up along the program
    std::vector<Instruction*> dead, copied_constants;
    for (auto it = groups.rbegin(); it != groups.rend(); ++it)
      outline(module, *computation, *it, names, computation_names, position, dead, copied_constants);
    // users before their operands: the members in reverse program order
    std::sort(dead.begin(), dead.end(),
              [&](const Instruction* a, const Instruction* b) { return position.at(a) > position.at(b); });
    computation->remove_instructions(dead);
    // constants copied in that nothing outside reads any more
    std::sort(copied_constants.begin(), copied_constants.end());
    copied_constants.erase(std::unique(copied_constants.begin(), copied_constants.end()), copied_constants.end());
    std::vector<Instruction*> unread;
    for (Instruction* constant : copied_constants)
      if (constant->users().empty() && computation->root() != constant && constant->control_successors().empty())
        unread.push_back(constant);
    computation->remove_instructions(unread);
    changed |= !groups.empty();
  }
  return changed;
}

}  // namespace

StatusOr<bool> fuse(Module& module) { return fuse_computations(module, /*reduces=*/true); }

bool unfuse_reductions(Module& module) {
  NameTable names(module);
  const std::unordered_set<const Computation*> reachable = reachable_computations(module);
  bool changed = false;
  for (Computation* computation : module.computations())
    for (Instruction* instruction : computation->instructions())
      if (instruction->opcode() == Opcode::kFusion && instruction->fusion_kind == "kInput") {
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
  if (!changed) return false;
  remove_unreachable_computations(module, reachable);
  // the inlined chains become loop fusions again, their reduces plain reduces
  StatusOr<bool> fused = fuse_computations(module, /*reduces=*/false);
  INSITU_CHECK(fused.ok()) << fused.status().to_string();
  return true;
}

}  // namespace insitu
