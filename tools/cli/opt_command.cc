#include "cli/opt_command.h"

#include "insitu/cuda/codegen.h"
#include "insitu/cuda/device_plan.h"
#include "insitu/ir/printer.h"
#include "cli/module_loader.h"
#include "insitu/passes/optimize.h"
#include "insitu/kernel/plugin.h"

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
  if (options.time_passes) context.err << pass_timing_table(optimized->pass_timings);
  if (options.device == "cuda") {
    if (Status status = retarget_for_cuda(*optimized); !status.ok())  // as Executable::create_on_cuda does
      return report_error(context, status, options.module_path);
    StatusOr<cuda::DevicePlan> plan = cuda::plan_for_cuda(*optimized->module, *optimized->buffers);
    if (!plan.ok()) return report_error(context, plan.status(), options.module_path);
    context.out << "CUDA plan of " << optimized->module->name() << ": " << plan->kernels << " kernels, " << plan->gemms
                << " GEMMs, " << plan->copies << " device copies, peak memory " << plan->planned_peak_bytes
                << " bytes\n"
                << cuda::describe(*plan);
    if (!cuda::cuda_available()) {
      context.out << "(not compiled: this insitu was built without NVRTC)\n";
      return 0;
    }
    StatusOr<std::string> ptx = cuda::compile_to_ptx(plan->source, optimized->module->name() + ".cu");
    if (!ptx.ok()) return report_error(context, ptx.status(), options.module_path);
    context.out << "PTX for sm_90: " << ptx->size() << " bytes\n";
    return 0;
  }
  context.out << print_module(*optimized->module);
  return 0;
}

}  // namespace insitu::cli
