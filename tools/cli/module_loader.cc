#include "cli/module_loader.h"

#include "insitu/ir/parser.h"
#include "insitu/ir/verifier.h"
#include "insitu/stablehlo/import.h"

namespace insitu::cli {

StatusOr<std::unique_ptr<Module>> load_module(CliContext& context, const std::string& path, bool verify) {
  INSITU_ASSIGN_OR_RETURN(std::string text, context.read_module_text(path));
  // StableHLO (a VHLO artifact in MLIR bytecode, or a jax.export artifact around one) or HLO text
  const std::span<const uint8_t> bytes(reinterpret_cast<const uint8_t*>(text.data()), text.size());
  std::unique_ptr<Module> module;
  if (stablehlo::is_stablehlo(bytes)) {
    INSITU_ASSIGN_OR_RETURN(module, stablehlo::read_vhlo(bytes));
  } else {
    INSITU_ASSIGN_OR_RETURN(module, parse_module(text));
  }
  if (verify) INSITU_RETURN_IF_ERROR(verify_module(*module));
  return module;
}

}  // namespace insitu::cli
