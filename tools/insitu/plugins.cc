#include "insitu/plugins.h"

#include <dlfcn.h>

#include <filesystem>

#include "insitu/kernel/registry.h"

namespace insitu::cli {

Status load_plugin(const std::string& path) {
  std::string resolved = path;
  // dlopen searches the library path for names without a slash; users mean the local file.
  if (path.find('/') == std::string::npos && std::filesystem::exists(path)) resolved = "./" + path;
  if (!std::filesystem::exists(resolved) && resolved.find('/') != std::string::npos)
    return not_found("cannot load plugin '" + path + "': no such file");
  void* handle = dlopen(resolved.c_str(), RTLD_NOW | RTLD_GLOBAL);
  if (handle == nullptr) {
    const char* reason = dlerror();
    return invalid_argument("cannot load plugin '" + path + "': " + (reason ? reason : "unknown dlopen error"));
  }
  // Kernels the plugin registered with INSITU_REGISTER_KERNEL that failed (e.g. a name another
  // plugin already registered).
  std::vector<Status> errors = take_static_registration_errors();
  if (!errors.empty()) return errors.front().with_context("loading plugin '" + path + "'");
  return ok_status();
}

}  // namespace insitu::cli
