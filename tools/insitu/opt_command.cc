#include "insitu/opt_command.h"

#include "insitu/ir/printer.h"
#include "insitu/module_loader.h"
#include "insitu/passes/optimize.h"
#include "insitu/plugins.h"

namespace insitu::cli {

int opt_command(const OptOptions& options, CliContext& context) {
  for (const std::string& plugin : options.plugins)
    if (Status status = load_plugin(plugin); !status.ok()) return report_error(context, status);
  StatusOr<std::unique_ptr<Module>> module = load_module(context, options.module_path);
  if (!module.ok()) return report_error(context, module.status(), options.module_path);
  OptimizeOptions optimize;
  optimize.dump_to = options.dump_to;
  optimize.strict_donation = options.strict_donation;
  optimize.passes = options.passes;
  StatusOr<OptimizedModule> optimized = optimize_module(std::move(module).value(), optimize);
  if (!optimized.ok()) return report_error(context, optimized.status(), options.module_path);
  context.out << print_module(*optimized->module);
  return 0;
}

}  // namespace insitu::cli
