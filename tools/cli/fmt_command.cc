#include "cli/fmt_command.h"

#include "insitu/ir/printer.h"
#include "insitu/ir/verifier.h"
#include "cli/module_loader.h"

namespace insitu::cli {

int fmt_command(const FmtOptions& options, CliContext& context) {
  StatusOr<std::unique_ptr<Module>> module = load_module(context, options.module_path, !options.no_verify);
  if (!module.ok()) return report_error(context, module.status(), options.module_path);
  PrintOptions print_options;
  print_options.long_form = !options.short_form;
  std::string text = print_module(**module, print_options);
  context.out << text;
  if (text.empty() || text.back() != '\n') context.out << '\n';
  // fmt prints such a module faithfully, but running it would need values the text lacks.
  for (const Instruction* constant : constants_not_written(**module)) {
    const SourceLocation where = constant->location();
    context.err << options.module_path << ":" << where.line << ":" << where.column << ": warning: constant %"
                << constant->name() << " has no value in the text ("
                << (constant->constant_value == ConstantValue::kElided ? "{...}" : "one scalar for an array")
                << "); run and opt will refuse it"
                << (constant->constant_value == ConstantValue::kElided
                        ? ": re-dump with XLA_FLAGS=--xla_dump_large_constants"
                        : "")
                << "\n";
  }
  return 0;
}

}  // namespace insitu::cli
