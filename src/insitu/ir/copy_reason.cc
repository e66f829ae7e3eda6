#include "insitu/ir/copy_reason.h"
#include "insitu/support/enum_names.h"

#include <array>
#include <utility>

namespace insitu {
namespace {

constexpr std::array<std::pair<CopyReason, std::string_view>, 9> kNames = {{
    {CopyReason::kReadOnlyLiveOut, "read-only-live-out"},
    {CopyReason::kLiveAfterInPlaceWrite, "live-after-in-place-write"},
    {CopyReason::kLoopCarried, "loop-carried"},
    {CopyReason::kConditionalBranch, "conditional-branch"},
    {CopyReason::kNonDistinctOutput, "non-distinct-output"},
    {CopyReason::kLayoutChange, "layout-change"},
    {CopyReason::kMemorySpaceChange, "memory-space-change"},
    {CopyReason::kOperandOverlap, "operand-overlap"},
    {CopyReason::kUserCopy, "user-copy"},
}};

}  // namespace

std::string_view copy_reason_name(CopyReason reason) { return name_of_enum(kNames, reason, "unknown"); }

std::optional<CopyReason> parse_copy_reason(std::string_view name) { return enum_from_name(kNames, name); }

void set_copy_reason(Instruction& copy, CopyReason reason, std::string detail) {
  copy.set_frontend_attribute(std::string(kCopyReasonAttribute), std::string(copy_reason_name(reason)));
  copy.set_frontend_attribute(std::string(kCopyDetailAttribute), std::move(detail));
}

std::optional<CopyReason> copy_reason(const Instruction& copy) {
  const std::string* name = copy.frontend_attribute(kCopyReasonAttribute);
  return name ? parse_copy_reason(*name) : std::nullopt;
}

std::string copy_detail(const Instruction& copy) {
  const std::string* detail = copy.frontend_attribute(kCopyDetailAttribute);
  return detail ? *detail : std::string();
}

}  // namespace insitu
