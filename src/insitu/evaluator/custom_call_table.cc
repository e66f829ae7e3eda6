#include "insitu/evaluator/custom_call_table.h"

#include "insitu/support/str.h"

namespace insitu {

Status CustomCallTable::add(CustomCallTarget target) {
  if (target.name.empty()) return invalid_argument("a custom-call target needs a name");
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = targets_.find(target.name);
  if (it != targets_.end())
    return invalid_argument(str_cat("custom-call target \"", target.name, "\" is registered twice: by ",
                                    it->second.origin, " and by ", target.origin, "; rename one of them"));
  std::string name = target.name;
  targets_.emplace(std::move(name), std::move(target));
  return ok_status();
}

const CustomCallTarget* CustomCallTable::find(std::string_view name) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = targets_.find(name);
  return it == targets_.end() ? nullptr : &it->second;  // std::map nodes are stable
}

CustomCallTable& CustomCallTable::global() {
  static CustomCallTable* table = new CustomCallTable();
  return *table;
}

Status unregistered_custom_call(const Instruction& call, const CustomCallTarget* table_entry) {
  return not_found(str_cat("custom-call %", call.name(), ": no kernel is registered for target \"",
                           call.custom_call.target, "\"", table_entry ? " (it has a signature only)" : "",
                           " (load one with --plugin LIB.so)"),
                   call.location());
}

StatusOr<Literal> run_custom_call_kernel(const Instruction& call, std::span<const Literal* const> operands,
                                         const CustomCallTable* table) {
  const std::string& target_name = call.custom_call.target;
  const CustomCallTarget* target = table ? table->find(target_name) : nullptr;
  if (target == nullptr || !target->evaluate) return unregistered_custom_call(call, target);
  // Aliased outputs start as their operand's value: the kernel updates them in place.
  Literal result(call.shape());
  for (const OutputOperandAlias& alias : call.custom_call.output_to_operand_aliasing) {
    const Literal* source = operands[alias.operand_number]->subliteral(alias.operand_index);
    Literal* destination = result.mutable_subliteral(alias.output_index);
    INSITU_CHECK(source && destination) << "verifier lets bad output_to_operand_aliasing through";
    *destination = *source;
    destination->set_shape_layouts(*call.shape().subshape(alias.output_index));
  }
  INSITU_RETURN_IF_ERROR(target->evaluate(call, operands, result));
  return result;
}

}  // namespace insitu
