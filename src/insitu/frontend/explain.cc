// list_copies and explain_verdict (explain.h).
#include "insitu/frontend/explain.h"

#include "insitu/ir/copy_reason.h"
#include "insitu/support/str.h"

namespace insitu {

std::vector<CopyVerdict> list_copies(const Module& optimized) {
  std::vector<CopyVerdict> copies;
  for (const Computation* computation : optimized.computations()) {
    for (const Instruction* instruction : computation->instructions()) {
      if (instruction->opcode() != Opcode::kCopy) continue;
      std::optional<CopyReason> reason = copy_reason(*instruction);
      copies.push_back({instruction->name(), computation->name(), instruction->shape().byte_size(),
                        reason ? std::string(copy_reason_name(*reason)) : "unknown", copy_detail(*instruction)});
    }
  }
  return copies;
}

std::string explain_verdict(const Module& optimized) {
  std::string out;
  std::vector<CopyVerdict> copies = list_copies(optimized);
  if (copies.empty()) out += "copies: none\n";
  for (const CopyVerdict& copy : copies)
    out += str_cat("copy %", copy.name, " (", copy.bytes, " bytes) in ", copy.computation, ": ", copy.reason,
                   copy.detail.empty() ? "" : ": ", copy.detail, "\n");
  for (const InputOutputAlias& alias : optimized.config().input_output_alias)
    out += str_cat("alias: output ", shape_index_to_string(alias.output_index), " <- parameter ",
                   alias.parameter_number, " ", shape_index_to_string(alias.parameter_index),
                   alias.kind == AliasKind::kMustAlias ? " (must-alias)" : " (may-alias)", "\n");
  return out;
}

}  // namespace insitu
