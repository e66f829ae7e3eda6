#include "insitu/evaluator/custom_call_registry.h"

#include "insitu/support/str.h"

namespace insitu {

Status CustomCallRegistry::register_kernel(std::string target, Kernel kernel, std::string origin) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = kernels_.find(target);
  if (it != kernels_.end()) {
    return invalid_argument(str_cat("custom-call target \"", target, "\" is registered twice: by ",
                                    it->second.origin, " and by ", origin));
  }
  kernels_.emplace(std::move(target), Entry{std::move(kernel), std::move(origin)});
  return ok_status();
}

const CustomCallRegistry::Kernel* CustomCallRegistry::find(std::string_view target) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = kernels_.find(target);
  return it == kernels_.end() ? nullptr : &it->second.kernel;
}

std::string CustomCallRegistry::origin(std::string_view target) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = kernels_.find(target);
  return it == kernels_.end() ? std::string() : it->second.origin;
}

CustomCallRegistry& CustomCallRegistry::global() {
  static CustomCallRegistry* registry = new CustomCallRegistry();
  return *registry;
}

StatusOr<Literal> run_custom_call_kernel(const Instruction& call, std::span<const Literal* const> operands,
                                         const CustomCallRegistry* registry) {
  const std::string& target = call.custom_call.target;
  const CustomCallRegistry::Kernel* kernel = registry ? registry->find(target) : nullptr;
  if (kernel == nullptr) {
    return not_found(str_cat("custom-call %", call.name(), ": no kernel is registered for target \"", target,
                             "\" (load one with --plugin LIB.so)"),
                     call.location());
  }
  // Aliased outputs start as their operand's value: the kernel updates them in place.
  Literal result(call.shape());
  for (const OutputOperandAlias& alias : call.custom_call.output_to_operand_aliasing) {
    const Literal* source = operands[alias.operand_number]->subliteral(alias.operand_index);
    Literal* destination = result.mutable_subliteral(alias.output_index);
    INSITU_CHECK(source && destination) << "verifier lets bad output_to_operand_aliasing through";
    *destination = *source;
    destination->set_shape_layouts(*call.shape().subshape(alias.output_index));
  }
  INSITU_RETURN_IF_ERROR((*kernel)(call, operands, result));
  return result;
}

}  // namespace insitu
