// describe(): a plan as text, a line per step that runs (device_plan.h).
#include "insitu/cuda/device_plan.h"
#include "insitu/support/str.h"

namespace insitu::cuda {
namespace {

void describe_steps(const std::vector<DeviceStep>& steps, const std::string& indent, std::string& text) {
  for (const DeviceStep& step : steps) {
    const std::string name = str_cat(indent, "%", step.instruction->name(), ": ");
    switch (step.kind) {
      case StepKind::kNone: break;
      case StepKind::kKernel:
        text += str_cat(name, "kernel ", step.kernel, ", ", step.threads, " threads");
        for (int64_t k : step.written_over) text += str_cat(", in place over operand ", k);
        if (!step.stage.empty())
          text += str_cat(", then ", step.stage, " ", step.stages.size(), " times, ", step.stage_threads,
                          " threads each");
        if (!step.finish.empty())
          text += str_cat(", then ", step.finish, ", ", step.finish_threads, " threads (", step.scratch_bytes,
                          step.stage.empty() ? " bytes of partials)" : " bytes of scratch)");
        text += "\n";
        break;
      case StepKind::kCopy:
        text += str_cat(name, step.counted ? "device copy, " : step.from_constant ? "constant written, " : "bytes moved, ",
                        step.bytes, " bytes\n");
        break;
      case StepKind::kGemm: {
        const GemmCall& g = step.gemm;
        const size_t calls = gemm_offsets(g).size();
        text += str_cat(name, "gemm ", primitive_type_name(g.type), " batch ", g.batch, " m ", g.m, " n ", g.n, " k ",
                        g.k, g.transpose_a ? " A^T" : "", g.transpose_b ? " B^T" : "",
                        calls > 1 ? str_cat(", ", calls, " calls") : "");
        for (const DeviceStep::Pack& pack : step.packs)
          text += str_cat(pack.kernel == step.packs.front().kernel ? ", after " : " and ", pack.kernel, " (",
                          pack.threads, " threads, ", pack.bytes, " bytes)");
        if (!step.finish.empty()) text += str_cat(", then ", step.finish, " (", step.finish_threads, " threads)");
        text += "\n";
        break;
      }
      case StepKind::kWhile:
      case StepKind::kConditional: {
        const bool loop = step.kind == StepKind::kWhile;
        text += str_cat(name, loop ? "while, driven by the host (reads the condition's pred back)\n"
                                   : "conditional, driven by the host (reads the branch index back)\n");
        for (size_t k = 0; k < step.nested.size(); ++k) {
          text += str_cat(indent, "  ", loop ? (k == 0 ? "condition" : "body") : str_cat("branch ", k), ":\n");
          describe_steps(step.nested[k], indent + "    ", text);
        }
        break;
      }
    }
  }
}

}  // namespace

std::string describe(const DevicePlan& plan) {
  std::string text;
  describe_steps(plan.steps, "", text);
  return text;
}

}  // namespace insitu::cuda
