// copy-insertion driver: find the first rule violation, insert its copy, recompute, repeat.
#include "insitu/passes/copy_insertion.h"

#include "insitu/passes/copy_insertion_internal.h"
#include "insitu/passes/flatten_calls.h"
#include "insitu/support/str.h"

namespace insitu {

StatusOr<bool> insert_copies(Module& module) {
  INSITU_RETURN_IF_ERROR(check_calls_flattened(module, "copy-insertion"));
  int64_t instruction_count = 0;
  for (const Computation* computation : module.computations()) instruction_count += computation->instruction_count();
  // Every copy fixes one conflict for good; the bound only guards against a rule bug.
  const int64_t limit = 64 + 8 * instruction_count;
  for (int64_t step = 0;; ++step) {
    Dataflow dataflow = Dataflow::compute(module);
    copy_insertion::BufferFacts facts(module, dataflow);
    std::optional<copy_insertion::CopyFix> fix = copy_insertion::find_violation(facts);
    if (!fix) return step > 0;
    if (step >= limit)
      return internal_error(str_cat("copy insertion did not converge after ", step, " copies; last conflict: ",
                                    fix->detail));
    copy_insertion::apply_fix(module, dataflow, *fix);
  }
}

}  // namespace insitu
