#include "insitu/passes/cse.h"

#include <cstring>
#include <unordered_map>
#include <vector>

#include "insitu/analysis/in_place.h"
#include "insitu/ir/printer.h"
#include "insitu/passes/simplify.h"
#include "insitu/support/str.h"

namespace insitu {
namespace {

// Arrays up to this size are merged (indices, counters, small masks, the constants JAX writes
// once per use; a weight is never hashed or compared here). A larger computed value
// stays one per reader: fusion then computes each copy inside its reader's loop, where one
// shared value would be materialized between them (insitu's fusion does not duplicate a
// producer of several readers): merging the transformer training step's equal elementwise
// values cost 41 MB more written a step.
constexpr int64_t kMaxMergedBytes = 64;

bool is_pure(const Instruction& instruction, bool any_size) {
  if (instruction.has_control_edges() || has_side_effect(instruction)) return false;
  if (!instruction.shape().is_array() || (!any_size && instruction.shape().byte_size() > kMaxMergedBytes)) return false;
  const Opcode opcode = instruction.opcode();
  if (opcode == Opcode::kConstant) return instruction.constant_value == ConstantValue::kWritten;  // bytes known
  if (opcode == Opcode::kIota) return true;
  switch (opcode_kind(opcode)) {
    case OpcodeKind::kUnary: case OpcodeKind::kBinary: case OpcodeKind::kElementwise:
    case OpcodeKind::kDataMovement: case OpcodeKind::kComputation:
      return true;
    default:
      return false;
  }
}

// What makes two instructions the same computation: for a constant its shape and a hash of its
// bytes (compared in full on a match), else its printed form without its name (opcode, shape,
// operand names, attributes, called computations).
std::string key_of(const Instruction& instruction) {
  if (instruction.opcode() == Opcode::kConstant) {
    const Literal& literal = instruction.literal;
    return str_cat("constant ", instruction.shape().to_string(), " ", static_cast<int>(instruction.constant_value), " ",
                   content_hash(std::string_view(reinterpret_cast<const char*>(literal.untyped_data()),
                                                 static_cast<size_t>(literal.size_bytes()))));
  }
  PrintOptions options;
  options.long_form = false;
  options.print_metadata = false;
  std::string text = print_instruction(instruction, options);
  const size_t equals = text.find(" = ");
  return equals == std::string::npos ? text : text.substr(equals + 3);
}

// Whether some user may write the instruction's value in place or carry it as state (a loop's
// initial state, an operand it updates): two such values need buffers of their own, and merged
// they would cost a copy (a loop counter's initial 0 shared with another's).
bool written_by_a_user(const Instruction& instruction) {
  for (const Instruction* user : instruction.users()) {
    const Opcode opcode = user->opcode();
    if (opcode == Opcode::kTuple || opcode == Opcode::kWhile || opcode == Opcode::kConditional || opcode == Opcode::kCall)
      return true;
    for (const InPlacePair& pair : in_place_pairs(*user))
      if (user->operand(pair.operand_number) == &instruction) return true;
  }
  return false;
}

bool same_constant(const Instruction& a, const Instruction& b) {
  const int64_t bytes = a.literal.size_bytes();
  return bytes == b.literal.size_bytes() && std::memcmp(a.literal.untyped_data(), b.literal.untyped_data(), static_cast<size_t>(bytes)) == 0;
}

// The computation's instructions, each after its operands.
std::vector<Instruction*> operands_first(const Computation& computation) {
  std::vector<Instruction*> order;
  std::unordered_map<const Instruction*, int> state;  // 1: on the stack, 2: placed
  for (Instruction* start : computation.instructions()) {
    if (state[start] == 2) continue;
    std::vector<std::pair<Instruction*, size_t>> stack = {{start, 0}};
    state[start] = 1;
    while (!stack.empty()) {
      auto& [instruction, next] = stack.back();
      if (next < static_cast<size_t>(instruction->operand_count())) {
        Instruction* operand = instruction->operand(static_cast<int64_t>(next++));
        if (state[operand] == 0 && operand->parent() == &computation) {
          state[operand] = 1;
          stack.emplace_back(operand, 0);
        }
        continue;
      }
      state[instruction] = 2;
      order.push_back(instruction);
      stack.pop_back();
    }
  }
  return order;
}

// A cheap hash of what key_of prints (opcode, operands, dimensions): key_of, which prints, runs
// only for instructions that share one (a 100,000-instruction chain prints none).
size_t cheap_hash(const Instruction& instruction) {
  size_t hash = static_cast<size_t>(instruction.opcode());
  for (const Instruction* operand : instruction.operands()) hash = hash * 1000003u ^ std::hash<const void*>()(operand);
  for (int64_t d : instruction.shape().dimensions()) hash = hash * 31u + static_cast<size_t>(d);
  return hash;
}

bool eliminate_in(Computation& computation, bool any_size) {
  bool changed = false;
  std::unordered_map<size_t, std::vector<Instruction*>> seen;  // by cheap_hash, in program order
  std::unordered_map<const Instruction*, std::string> keys;
  auto key = [&](const Instruction* instruction) -> const std::string& {
    auto [it, inserted] = keys.try_emplace(instruction);
    if (inserted) it->second = key_of(*instruction);
    return it->second;
  };
  std::vector<Instruction*> dead;
  for (Instruction* instruction : operands_first(computation)) {
    if (!is_pure(*instruction, any_size) || written_by_a_user(*instruction)) continue;
    std::vector<Instruction*>& alike = seen[cheap_hash(*instruction)];
    Instruction* first = nullptr;
    for (Instruction* candidate : alike)
      if (key(candidate) == key(instruction) &&
          (instruction->opcode() != Opcode::kConstant || same_constant(*candidate, *instruction)))
        first = candidate;
    if (first == nullptr) {
      alike.push_back(instruction);
      continue;
    }
    instruction->replace_all_uses_with(first);
    dead.push_back(instruction);
    changed = true;
  }
  std::erase_if(dead, [&](Instruction* instruction) { return !instruction->users().empty() || instruction == computation.root(); });
  computation.remove_instructions(dead);
  return changed;
}

}  // namespace

StatusOr<bool> eliminate_common_subexpressions(Module& module) {
  bool changed = false;
  for (Computation* computation : module.computations()) changed |= eliminate_in(*computation, /*any_size=*/false);
  return changed;
}

bool merge_equal_values(Computation& fused) { return eliminate_in(fused, /*any_size=*/true); }

}  // namespace insitu
