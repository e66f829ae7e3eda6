// The fusion pass's copies (fusion.h: "Recomputing instead of keeping", the split scalar
// broadcasts, the cheap values): values given to their readers as copies of their own before
// fusion.cc groups, so that each copy fuses into its reader's loop.
#include <algorithm>
#include <functional>
#include <unordered_map>
#include <unordered_set>

#include "insitu/passes/flatten_calls.h"
#include "insitu/passes/fusion_internal.h"
#include "insitu/passes/simplify.h"

namespace insitu::fusion_internal {

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
// reduce of it.
bool fuses(const Instruction& user, const Instruction& value, bool reduces) {
  if (user.has_control_edges()) return false;
  if (reduces && is_fusible_reduce(user)) return user.operand(0) == &value && user.operand(1) != &value;
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

}  // namespace insitu::fusion_internal
