#include "insitu/runtime/native_custom_call.h"

namespace insitu {

void NativeCustomCalls::register_kernel(std::string target, NativeCustomCall kernel) {
  std::lock_guard<std::mutex> lock(mutex_);
  kernels_[std::move(target)] = std::move(kernel);
}

const NativeCustomCall* NativeCustomCalls::find(std::string_view target) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = kernels_.find(target);
  return it == kernels_.end() ? nullptr : &it->second;  // std::map nodes are stable
}

NativeCustomCalls& NativeCustomCalls::global() {
  static NativeCustomCalls* registry = new NativeCustomCalls();
  return *registry;
}

}  // namespace insitu
