// Copy provenance: why a `copy` instruction exists, kept in its frontend_attributes so it
// survives printing and re-parsing:
//
//   %copy.1 = f32[8]{0} copy(%p), frontend_attributes={insitu_copy_detail="...",insitu_copy_reason="loop-carried"}
//
// Every copy a pass inserts carries a reason code and a detail sentence (what conflicts with
// what, and what would avoid the copy). A copy present in the input is `user-copy`, or a
// layout/memory-space change when it is one.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "insitu/ir/instruction.h"

namespace insitu {

enum class CopyReason : uint8_t {
  kReadOnlyLiveOut,        // a parameter or constant returned unchanged: outputs are fresh buffers
  kLiveAfterInPlaceWrite,  // an in-place op overwrites a value that is still read afterwards
  kLoopCarried,            // a while loop's state cannot update its buffer in place
  kConditionalBranch,      // a conditional's branches disagree on which buffer holds a result
  kNonDistinctOutput,      // one buffer would appear twice in the entry result
  kLayoutChange,           // the consumer needs another layout
  kMemorySpaceChange,      // the consumer needs another memory space
  kOperandOverlap,         // one buffer passed as two operands of an in-place op
  kUserCopy,               // present in the input program
};

inline constexpr std::string_view kCopyReasonAttribute = "insitu_copy_reason";
inline constexpr std::string_view kCopyDetailAttribute = "insitu_copy_detail";

std::string_view copy_reason_name(CopyReason reason);  // "live-after-in-place-write"
std::optional<CopyReason> parse_copy_reason(std::string_view name);

// Records why `copy` exists (sets both frontend attributes).
void set_copy_reason(Instruction& copy, CopyReason reason, std::string detail);
// The recorded reason and detail, if any.
std::optional<CopyReason> copy_reason(const Instruction& copy);
std::string copy_detail(const Instruction& copy);

}  // namespace insitu
