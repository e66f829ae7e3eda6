// Tests for the golden tests' FileCheck-like matcher: each directive passes where FileCheck
// would and fails where it would.
#include "file_check.h"

#include <gtest/gtest.h>

namespace insitu::golden {
namespace {

std::string check(std::string_view output, std::vector<CheckDirective> checks) {
  return match_checks(output, checks, "t.hlo");
}

CheckDirective c(CheckKind kind, std::string pattern, int line = 1) { return {kind, std::move(pattern), line}; }

constexpr std::string_view kOutput =
    "HloModule m\n"
    "\n"
    "ENTRY main {\n"
    "  p0 = f32[4]{0} parameter(0)\n"
    "  ROOT add.1 = f32[4]{0} add(p0, p0)\n"
    "}\n";

TEST(FileCheckTest, CheckFindsTextInOrder) {
  EXPECT_EQ(check(kOutput, {c(CheckKind::kCheck, "HloModule m"), c(CheckKind::kCheck, "ROOT add.1")}), "");
  std::string failure = check(kOutput, {c(CheckKind::kCheck, "ROOT"), c(CheckKind::kCheck, "parameter(0)", 7)});
  EXPECT_NE(failure.find("t.hlo:7: error: CHECK: expected string not found in input"), std::string::npos) << failure;
}

TEST(FileCheckTest, WhitespaceRunsMatchAnySpacing) {
  EXPECT_EQ(check(kOutput, {c(CheckKind::kCheck, "  p0 =   f32[4]{0}    parameter(0)  ")}), "");
  EXPECT_NE(check(kOutput, {c(CheckKind::kCheck, "p0=f32")}), "");
}

TEST(FileCheckTest, CheckNextWantsTheFollowingLine) {
  EXPECT_EQ(check(kOutput, {c(CheckKind::kCheck, "ENTRY main {"), c(CheckKind::kNext, "p0 = f32[4]")}), "");
  std::string failure = check(kOutput, {c(CheckKind::kCheck, "HloModule"), c(CheckKind::kNext, "ENTRY", 3)});
  EXPECT_NE(failure.find("t.hlo:3: error: CHECK-NEXT: is not on the line after the previous match"), std::string::npos)
      << failure;
}

TEST(FileCheckTest, CheckSameStaysOnTheLine) {
  EXPECT_EQ(check(kOutput, {c(CheckKind::kCheck, "ROOT"), c(CheckKind::kSame, "add(p0, p0)")}), "");
  EXPECT_NE(check(kOutput, {c(CheckKind::kCheck, "p0 ="), c(CheckKind::kSame, "add(")}), "");
  // Same line, but before the previous match: not found.
  EXPECT_NE(check(kOutput, {c(CheckKind::kCheck, "add(p0"), c(CheckKind::kSame, "ROOT")}), "");
}

TEST(FileCheckTest, CheckNotLooksBetweenMatches) {
  EXPECT_EQ(check(kOutput, {c(CheckKind::kCheck, "ENTRY"), c(CheckKind::kNot, "copy"), c(CheckKind::kCheck, "ROOT")}), "");
  std::string failure =
      check(kOutput, {c(CheckKind::kCheck, "ENTRY"), c(CheckKind::kNot, "parameter", 4), c(CheckKind::kCheck, "ROOT")});
  EXPECT_NE(failure.find("CHECK-NOT: excluded string found in input"), std::string::npos) << failure;
  // A trailing CHECK-NOT covers the rest of the output; a leading one the part before the match.
  EXPECT_NE(check(kOutput, {c(CheckKind::kCheck, "p0 ="), c(CheckKind::kNot, "add")}), "");
  EXPECT_EQ(check(kOutput, {c(CheckKind::kNot, "ROOT"), c(CheckKind::kCheck, "HloModule")}), "");
}

TEST(FileCheckTest, RegexesAndVariables) {
  EXPECT_EQ(check(kOutput, {c(CheckKind::kCheck, "ROOT {{[a-z]+}}.{{[0-9]+}} = f32[4]")}), "");
  EXPECT_EQ(check(kOutput, {c(CheckKind::kCheck, "[[P:p[0-9]]] = f32"), c(CheckKind::kCheck, "add([[P]], [[P]])")}), "");
  EXPECT_NE(check(kOutput, {c(CheckKind::kCheck, "[[P:p[0-9]]] = f32"), c(CheckKind::kCheck, "add([[P]], q)")}), "");
  // A variable used in the pattern that defines it is a backreference.
  EXPECT_EQ(check(kOutput, {c(CheckKind::kCheck, "add([[X:[a-z0-9]+]], [[X]])")}), "");
  // Special characters in literal text are not regex syntax.
  EXPECT_NE(check("a+b\n", {c(CheckKind::kCheck, "aab")}), "");
  EXPECT_EQ(check("a+b (x)\n", {c(CheckKind::kCheck, "a+b (x)")}), "");
  std::string undefined = check(kOutput, {c(CheckKind::kCheck, "[[NOPE]]")});
  EXPECT_NE(undefined.find("undefined variable [[NOPE]]"), std::string::npos) << undefined;
}

TEST(FileCheckTest, LineExpressions) {
  EXPECT_EQ(check("t.hlo:12:5: error: bad\n", {c(CheckKind::kCheck, "t.hlo:[[@LINE+1]]:5: error: bad", 11)}), "");
  EXPECT_EQ(check("t.hlo:12:5: error: bad\n", {c(CheckKind::kCheck, "t.hlo:[[@LINE-2]]:5:", 14)}), "");
  EXPECT_NE(check("t.hlo:12:5: error: bad\n", {c(CheckKind::kCheck, "t.hlo:[[@LINE]]:5:", 11)}), "");
}

TEST(FileCheckTest, LabelsConfineTheOtherChecks) {
  constexpr std::string_view output = "func a\n  x\nfunc b\n  y\n";
  EXPECT_EQ(check(output, {c(CheckKind::kLabel, "func a"), c(CheckKind::kCheck, "x"), c(CheckKind::kLabel, "func b"),
                           c(CheckKind::kCheck, "y")}),
            "");
  // "y" exists only in b's block, so looking for it under label a fails.
  EXPECT_NE(check(output, {c(CheckKind::kLabel, "func a"), c(CheckKind::kCheck, "y"), c(CheckKind::kLabel, "func b")}),
            "");
}

TEST(FileCheckTest, BadPatternsAreReported) {
  std::string failure = check(kOutput, {c(CheckKind::kCheck, "{{[unclosed}}", 9)});
  EXPECT_NE(failure.find("t.hlo:9: error: CHECK: bad pattern: invalid regular expression"), std::string::npos) << failure;
  EXPECT_NE(check(kOutput, {c(CheckKind::kCheck, "{{abc")}).find("unterminated {{"), std::string::npos);
}

}  // namespace
}  // namespace insitu::golden
