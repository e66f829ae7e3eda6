#include "insitu/kernel/plugin.h"

#include <dlfcn.h>

#include <filesystem>
#include <set>

#include "insitu/kernel/registry.h"

namespace insitu {

Status load_plugin(const std::string& path) {
  std::string resolved = path;
  // dlopen searches the library path for names without a slash; users mean the local file.
  if (path.find('/') == std::string::npos && std::filesystem::exists(path)) resolved = "./" + path;
  if (!std::filesystem::exists(resolved) && resolved.find('/') != std::string::npos)
    return not_found("cannot load plugin '" + path + "': no such file");
  // The same plugin named twice: its kernels are registered already. (A library loaded for
  // another reason, libm say, is not a plugin: it is checked below like any other.)
  static std::set<void*> plugins;
  if (void* loaded = dlopen(resolved.c_str(), RTLD_NOW | RTLD_NOLOAD); loaded != nullptr) {
    dlclose(loaded);
    if (plugins.count(loaded)) return ok_status();
  }
  const int64_t registrations_before = static_registration_count();
  void* handle = dlopen(resolved.c_str(), RTLD_NOW | RTLD_GLOBAL);
  if (handle == nullptr) {
    const char* reason = dlerror();
    return invalid_argument("cannot load plugin '" + path + "': " + (reason ? reason : "unknown dlopen error"));
  }
  if (static_registration_count() == registrations_before) {
    dlclose(handle);
    return invalid_argument("cannot load plugin '" + path +
                            "': it registers no kernels, so it is not an insitu plugin (a plugin registers its "
                            "kernels with INSITU_REGISTER_KERNEL)");
  }
  // Kernels the plugin registered with INSITU_REGISTER_KERNEL that failed (e.g. a name another
  // plugin already registered).
  plugins.insert(handle);
  std::vector<Status> errors = take_static_registration_errors();
  if (!errors.empty()) return errors.front().with_context("loading plugin '" + path + "'");
  return ok_status();
}

}  // namespace insitu
