#include "insitu/plugins.h"

#include <dlfcn.h>

#include <filesystem>

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
  return ok_status();
}

}  // namespace insitu::cli
