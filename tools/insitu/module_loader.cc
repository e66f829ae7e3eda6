#include "insitu/module_loader.h"

#include "insitu/ir/parser.h"
#include "insitu/ir/verifier.h"

namespace insitu::cli {

StatusOr<std::unique_ptr<Module>> load_module(CliContext& context, const std::string& path, bool verify) {
  INSITU_ASSIGN_OR_RETURN(std::string text, context.read_module_text(path));
  INSITU_ASSIGN_OR_RETURN(std::unique_ptr<Module> module, parse_module(text));
  if (verify) INSITU_RETURN_IF_ERROR(verify_module(*module));
  return module;
}

}  // namespace insitu::cli
