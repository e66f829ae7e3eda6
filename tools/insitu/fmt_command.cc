#include "insitu/fmt_command.h"

#include "insitu/ir/printer.h"
#include "insitu/module_loader.h"

namespace insitu::cli {

int fmt_command(const FmtOptions& options, CliContext& context) {
  StatusOr<std::unique_ptr<Module>> module = load_module(context, options.module_path);
  if (!module.ok()) return report_error(context, module.status(), options.module_path);
  PrintOptions print_options;
  print_options.long_form = !options.short_form;
  std::string text = print_module(**module, print_options);
  context.out << text;
  if (text.empty() || text.back() != '\n') context.out << '\n';
  return 0;
}

}  // namespace insitu::cli
