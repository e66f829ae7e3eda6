// A small in-process FileCheck: matches CHECK directives against a command's output, the way
// LLVM's FileCheck does for MLIR and XLA golden tests (only the subset insitu's goldens use).
//
//   CHECK: text        the text occurs after the previous match
//   CHECK-NEXT: text   ... on the line right after the previous match
//   CHECK-SAME: text   ... on the same line as the previous match, after it
//   CHECK-NOT: text    the text does not occur between the previous match and the next one
//   CHECK-LABEL: text  splits the output into blocks; other directives stay inside their block
//
// In a pattern, {{regex}} is a regular expression (ECMAScript), [[NAME:regex]] captures a
// variable, [[NAME]] matches its captured text, [[@LINE]] / [[@LINE+N]] / [[@LINE-N]] is the
// directive's own line number (plus or minus N). Runs of spaces match any horizontal whitespace,
// and leading/trailing spaces are ignored.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace insitu::golden {

enum class CheckKind { kCheck, kNext, kSame, kNot, kLabel };

struct CheckDirective {
  CheckKind kind = CheckKind::kCheck;
  std::string pattern;
  int line = 0;  // where the directive is written (for messages and [[@LINE]])
};

std::string_view check_kind_name(CheckKind kind);  // "CHECK-NEXT"

// `text` starting with one of the directives above and its colon ("CHECK-NEXT: foo") -> the
// directive (pattern "foo" with its leading space, as written); anything else (CHECK-ERROR:,
// other text) -> nullopt. `line` is recorded for messages.
std::optional<CheckDirective> parse_check_directive(std::string_view text, int line);

// Matches `checks` against `output`. Returns "" when everything matches, otherwise a message
// saying which directive failed, at which line of `check_file`, and where in the output it looked.
std::string match_checks(std::string_view output, const std::vector<CheckDirective>& checks,
                         std::string_view check_file = "<checks>");

}  // namespace insitu::golden
