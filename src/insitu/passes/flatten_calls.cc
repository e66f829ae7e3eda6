#include "insitu/passes/flatten_calls.h"

#include <deque>
#include <unordered_map>

#include "insitu/passes/name_table.h"
#include "insitu/support/str.h"

namespace insitu {

std::unique_ptr<Instruction> clone_without_operands(const Instruction& original, std::string name) {
  auto clone = std::make_unique<Instruction>(original.opcode(), std::move(name), original.shape());
  Instruction& i = *clone;
  i.set_location(original.location());
  i.attributes() = original.attributes();
  i.set_called_computations(original.called_computations());
  return clone;
}

Instruction* inline_call(Instruction* call, NameTable& names) {
  Computation* caller = call->parent();
  const Computation* callee = call->called_computations().at(0);
  std::unordered_map<const Instruction*, Instruction*> mapped;
  for (Instruction* original : callee->instructions()) {
    if (original->opcode() == Opcode::kParameter) {
      mapped[original] = call->operand(original->parameter_number);
      continue;
    }
    Instruction* clone = caller->insert_instruction_before(
        clone_without_operands(*original, names.unique(original->name())), call);
    for (Instruction* operand : original->operands()) clone->append_operand(mapped.at(operand));
    for (Instruction* predecessor : original->control_predecessors())
      if (predecessor->opcode() != Opcode::kParameter) clone->add_control_predecessor(mapped.at(predecessor));
    // Whatever had to run before the call runs before every part of its body.
    for (Instruction* predecessor : call->control_predecessors()) clone->add_control_predecessor(predecessor);
    mapped[original] = clone;
  }
  Instruction* result = mapped.at(callee->root());
  for (Instruction* successor : call->control_successors()) successor->add_control_predecessor(result);
  call->replace_all_uses_with(result);
  caller->remove_instruction(call);
  return result;
}

namespace {

// An async chain (async-start, its updates, async-done: XLA's `op-start`/`op-done` pairs)
// runs as a call of its computation where its last operand is bound (the start, or the update
// binding the rest: XLA's late binding): insitu's runtime overlaps nothing, so asynchrony
// changes no value. Returns the call (to be inlined), or null when the chain is not one (it
// never binds all the operands its computation takes, or binds more; a start or update is read
// by anything but the next link): such a chain stays, and runs or is refused as it is.
Instruction* async_chain_as_call(Instruction* done, NameTable& names) {
  std::vector<Instruction*> links;  // start, updates..., in order
  for (Instruction* link = done->operand(0);; link = link->operand(0)) {
    const Instruction* next = links.empty() ? done : links.front();
    if (link->users().size() != 1 || link->users()[0] != next || !link->control_successors().empty()) return nullptr;
    links.insert(links.begin(), link);
    if (link->opcode() == Opcode::kAsyncStart) break;
    if (link->opcode() != Opcode::kAsyncUpdate) return nullptr;
  }
  Instruction* start = links.front();
  if (start->called_computations().size() != 1) return nullptr;
  const Computation& callee = *start->called_computations()[0];
  for (const Instruction* link : links)  // only the thread it runs on, which no value depends on
    for (const RawAttribute& attribute : link->extra_attributes)
      if (attribute.key != "async_execution_thread") return nullptr;
  for (const RawAttribute& attribute : done->extra_attributes)
    if (attribute.key != "async_execution_thread") return nullptr;
  std::vector<Instruction*> operands;
  Instruction* binds_last = start;
  for (Instruction* link : links)
    for (int64_t i = link == start ? 0 : 1; i < link->operand_count(); ++i) {
      operands.push_back(link->operand(i));
      binds_last = link;
    }
  if (static_cast<int64_t>(operands.size()) != callee.parameter_count() || done->shape() != callee.root()->shape())
    return nullptr;
  Computation* computation = start->parent();
  auto call = std::make_unique<Instruction>(Opcode::kCall, names.unique(done->name()), callee.root()->shape());
  call->set_location(start->location());
  call->set_called_computations(start->called_computations());
  for (Instruction* operand : operands) call->append_operand(operand);
  Instruction* made = computation->insert_instruction_before(std::move(call), binds_last);
  for (Instruction* predecessor : start->control_predecessors()) made->add_control_predecessor(predecessor);
  for (Instruction* successor : done->control_successors()) successor->add_control_predecessor(made);
  done->replace_all_uses_with(made);
  computation->remove_instruction(done);
  for (auto link = links.rbegin(); link != links.rend(); ++link) computation->remove_instruction(*link);
  return made;
}

bool inline_all_calls(Module& module, NameTable& names) {
  bool changed = false;
  // Inlined bodies may hold calls themselves: repeat until none is left (HLO has no recursion).
  // A fusion (XLA's kLoop/kInput/kOutput/kCustom) means its computation: inlined the same way,
  // so its ops run as insitu's kernels and insitu's own fusion pass decides what to fuse.
  for (bool again = true; again;) {
    again = false;
    for (const Computation* reached : reachable_computations(module)) {
      Computation* computation = const_cast<Computation*>(reached);
      for (Instruction* instruction : computation->instructions()) {
        if (instruction->opcode() == Opcode::kAsyncDone && async_chain_as_call(instruction, names) != nullptr) {
          again = changed = true;  // the call is inlined in the next round
          continue;
        }
        if (instruction->opcode() != Opcode::kCall && instruction->opcode() != Opcode::kFusion) continue;
        inline_call(instruction, names);
        again = changed = true;
      }
    }
  }
  return changed;
}

// A deep copy of `original` (same instructions, fresh names) added to the module.
Computation* clone_computation(Module& module, const Computation& original, NameTable& instruction_names,
                               NameTable& computation_names) {
  auto clone = std::make_unique<Computation>(computation_names.unique(original.name() + ".clone"));
  clone->set_location(original.location());
  clone->set_execution_thread(original.execution_thread());
  Computation* target = module.add_computation(std::move(clone));
  std::unordered_map<const Instruction*, Instruction*> mapped;
  for (Instruction* instruction : original.instructions()) {
    Instruction* copy =
        target->add_instruction(clone_without_operands(*instruction, instruction_names.unique(instruction->name())));
    for (Instruction* operand : instruction->operands()) copy->append_operand(mapped.at(operand));
    for (Instruction* predecessor : instruction->control_predecessors())
      copy->add_control_predecessor(mapped.at(predecessor));
    mapped[instruction] = copy;
  }
  target->set_root(mapped.at(original.root()));
  return target;
}

bool is_control_flow(Opcode opcode) { return opcode == Opcode::kWhile || opcode == Opcode::kConditional; }

// Gives each while condition/body and conditional branch one call site, cloning the shared ones.
bool give_each_control_flow_computation_one_caller(Module& module, NameTable& names) {
  NameTable computation_names;
  for (Computation* computation : module.computations()) computation_names.add(computation->name());
  bool changed = false;
  std::unordered_set<const Computation*> claimed;
  std::deque<Computation*> worklist = {module.entry()};
  std::unordered_set<const Computation*> visited = {module.entry()};
  while (!worklist.empty()) {
    Computation* computation = worklist.front();
    worklist.pop_front();
    for (Instruction* instruction : computation->instructions()) {
      std::vector<Computation*> called = instruction->called_computations();
      if (is_control_flow(instruction->opcode())) {
        for (Computation*& callee : called) {
          if (!claimed.insert(callee).second) {
            // second caller: this site gets its own copy
            callee = clone_computation(module, *callee, names, computation_names);
            claimed.insert(callee);
            changed = true;
          }
        }
        instruction->set_called_computations(called);
      }
      for (Computation* callee : called)
        if (visited.insert(callee).second) worklist.push_back(callee);
    }
  }
  return changed;
}

}  // namespace

std::unordered_set<const Computation*> reachable_computations(const Module& module) {
  std::unordered_set<const Computation*> reached;
  if (module.entry() == nullptr) return reached;
  std::vector<const Computation*> stack = {module.entry()};
  reached.insert(module.entry());
  while (!stack.empty()) {
    const Computation* computation = stack.back();
    stack.pop_back();
    for (const Instruction* instruction : computation->instructions())
      for (const Computation* callee : instruction->called_computations())
        if (reached.insert(callee).second) stack.push_back(callee);
  }
  return reached;
}

int remove_unreachable_computations(Module& module,
                                    const std::unordered_set<const Computation*>& previously_reachable) {
  std::unordered_set<const Computation*> reached = reachable_computations(module);
  int removed = 0;
  for (Computation* computation : module.computations()) {
    if (computation == module.entry() || reached.count(computation) || !previously_reachable.count(computation))
      continue;
    module.remove_computation(computation);
    ++removed;
  }
  return removed;
}

Status check_calls_flattened(const Module& module, std::string_view pass) {
  if (module.entry() == nullptr) return failed_precondition(str_cat(pass, " needs a module with an entry computation"));
  std::unordered_map<const Computation*, const Instruction*> caller;
  for (const Computation* computation : module.computations()) {
    for (const Instruction* instruction : computation->instructions()) {
      const Opcode opcode = instruction->opcode();
      if (opcode == Opcode::kCall)
        return failed_precondition(str_cat(pass, " needs calls inlined, but %", instruction->name(), " calls ",
                                           instruction->to_apply()->name(), "; run flatten-calls first"),
                                   instruction->location());
      if (opcode != Opcode::kWhile && opcode != Opcode::kConditional) continue;
      for (const Computation* callee : instruction->called_computations()) {
        auto [it, first] = caller.emplace(callee, instruction);
        if (!first && it->second != instruction)
          return failed_precondition(str_cat(pass, " needs one call site per control-flow computation, but ",
                                             callee->name(), " is called by %", it->second->name(), " and %",
                                             instruction->name(), "; run flatten-calls first"),
                                     instruction->location());
      }
    }
  }
  return ok_status();
}

StatusOr<bool> flatten_calls(Module& module) {
  if (module.entry() == nullptr) return failed_precondition("flatten-calls needs a module with an entry computation");
  std::unordered_set<const Computation*> reachable_before = reachable_computations(module);
  NameTable names(module);
  bool changed = inline_all_calls(module, names);
  changed |= give_each_control_flow_computation_one_caller(module, names);
  // Clones are reachable, so only computations that lost their last caller go.
  changed |= remove_unreachable_computations(module, reachable_before) > 0;
  return changed;
}

}  // namespace insitu
