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

}  // namespace insitu
