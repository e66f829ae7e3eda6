// donor-matching: turns buffer_donor entries into input_output_alias pairings that cost no
// copy, and explains every donor it leaves unused.
//
// XLA's OptimizeInputOutputBufferAlias pairs donors with outputs by byte size alone; when the
// output is computed from the donor by an op that still reads the donor while writing the
// output, copy insertion must then copy the donor (a hidden "donation-induced copy"). Here:
//   1. a donor is paired with the output its value flows into in place (Dataflow must-share
//      links: in-place ops, while state, conditional operands/results), or that is the donor
//      itself unchanged;
//   2. then with an unpaired output of equal byte size and memory space, but only where that
//      costs no copy (the output is computed by an elementwise op reading the donor at the
//      same index, after every other read of it); where this cannot be proven, no pairing.
// Each pairing becomes a may-alias input_output_alias entry and the donor leaves buffer_donor.
// A donor left unused is recorded in the module's frontend attributes,
//   insitu_unused_donor:P:{i}="REASON: detail"
// with a reason code (no-matching-output, output-needs-copy, output-already-aliased) and a
// sentence saying what would make it usable.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "insitu/ir/module.h"

namespace insitu {

inline constexpr std::string_view kUnusedDonorAttributePrefix = "insitu_unused_donor:";

// Why a donated buffer could not be used (like CopyReason for copies).
enum class DonorReason : uint8_t {
  kNoMatchingOutput,      // no output of the donor's size and memory space
  kOutputNeedsCopy,       // the outputs that fit would need a copy to take the buffer
  kOutputAlreadyAliased,  // the outputs that fit are aliased to other parameters already
};
std::string_view donor_reason_name(DonorReason reason);  // "no-matching-output"

struct UnusedDonor {
  int64_t parameter_number = 0;
  ShapeIndex parameter_index;
  DonorReason reason = DonorReason::kNoMatchingOutput;
  std::string detail;   // what conflicts, and what would make the donor usable
};

struct DonorMatchingResult {
  bool changed = false;
  std::vector<InputOutputAlias> added;  // the pairings made, in donor order
  std::vector<UnusedDonor> unused;
};

StatusOr<DonorMatchingResult> match_donors(Module& module);

// The unused-donor reports recorded in a module's frontend attributes (for explain).
std::vector<UnusedDonor> recorded_unused_donors(const Module& module);

}  // namespace insitu
