// explain: what the optimizer decided about a module's memory, in one place for every surface
// (`insitu explain` as text and JSON, its Graphviz drawn by the CLI from them; run's --stats;
// the frontend's jit; Python).
//
//   Explanation e = explain_module(optimized);   // after optimize_module
//   std::string text = explanation_text(e);      // or explanation_json(e): DESIGN.md's schema
//
// For each copy left in the module: its bytes (one execution), its reason code and the detail
// sentence copy insertion recorded (ir/copy_reason.h). A copy without a recorded reason was
// written in the input program: it is `user-copy`, whatever surface shows it. Then each
// input/output alias and each donated buffer that could not be used, with its reason; each
// update computed into the window its in-place write fills.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "insitu/ir/copy_reason.h"
#include "insitu/passes/optimize.h"

namespace insitu {

struct CopyExplanation {
  const Instruction* copy = nullptr;
  int64_t bytes = 0;  // one execution
  CopyReason reason = CopyReason::kUserCopy;
  std::string detail;
};

// A Pallas kernel's grid loop (ir/grid_loop.h) and the copies that keep it from running in
// place: copies of arrays inside its loop (blocks, state) and of its initial state.
struct KernelLoopExplanation {
  const Instruction* loop = nullptr;
  std::string kernel, grid, aliases;
  std::vector<const Instruction*> copies;  // empty: the kernel updates its arrays in place
  // Leading grid axes whose points may run on threads (analysis/parallel_grid.h), or 0 and why not.
  int64_t parallel_axes = 0;
  std::string in_order_because;
};
// An update computed straight into the window of the stack an in-place dynamic-update-slice or
// scatter writes it to (buffer assignment's placed values): that write then moves nothing.
struct PlacedUpdateExplanation {
  const Instruction* producer = nullptr;
  const Instruction* update = nullptr;  // the dynamic-update-slice or scatter
  int64_t bytes = 0;                    // not written a second time, per execution
};

struct Explanation {
  std::string module_name;
  std::vector<CopyExplanation> copies;  // every computation, in program order
  std::vector<InputOutputAlias> aliases;
  std::vector<UnusedDonor> unused_donors;
  std::vector<KernelLoopExplanation> kernels;  // every Pallas kernel's grid loop, in program order
  std::optional<int64_t> peak_memory_bytes;  // when buffers were assigned
  std::vector<PlacedUpdateExplanation> placed_updates;  // when buffers were assigned, in value order

  int64_t copied_bytes() const;
};

// From optimize_module's result: its module, its buffers and donor matching's own result.
Explanation explain_module(const OptimizedModule& optimized);
// From a module alone (re-parsed text, a frontend's executable module): unused donors as the
// module records them, no peak memory.
Explanation explain_module(const Module& optimized);

// "module NAME: N copies (B bytes), peak memory P bytes", then a line per copy (its detail
// indented below), alias, unused donor and Pallas kernel ("in place" or its copies).
std::string explanation_text(const Explanation& explanation);
// {"copies", "peak_memory_bytes" (null without buffers), "aliases", "unused_donors"}, indented,
// and "pallas_kernels": [{"name", "grid", "aliases", "loop", "in_place", "copies", "parallel_axes",
// "in_order_because"}] when the module
// has any.
std::string explanation_json(const Explanation& explanation);

}  // namespace insitu
