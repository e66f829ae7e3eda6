// Helpers for pass tests: parse HLO text, run a pass, check the printed module against CHECK
// lines (tests/golden/file_check.h), and compare the reference evaluator's results before and
// after the pass on the same deterministic inputs (bit-exact).
#pragma once

#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "test_util.h"
#include "file_check.h"
#include "insitu/evaluator/evaluator.h"
#include "insitu/ir/parser.h"
#include "insitu/ir/printer.h"
#include "insitu/ir/verifier.h"

namespace insitu::testing {

// "CHECK: x\nCHECK-NEXT: y" -> directives (lines without a directive are ignored).
inline std::vector<golden::CheckDirective> parse_checks(std::string_view text) {
  std::vector<golden::CheckDirective> checks;
  std::istringstream lines{std::string(text)};
  std::string line;
  int number = 0;
  while (std::getline(lines, line)) {
    ++number;
    size_t at = line.find("CHECK");
    if (at == std::string::npos) continue;
    if (auto check = golden::parse_check_directive(std::string_view(line).substr(at), number)) checks.push_back(*check);
  }
  return checks;
}

// The printed module (short form, no metadata) matches the CHECK lines.
inline void expect_checks(const Module& module, std::string_view checks) {
  std::string printed = print_module(module, {.long_form = false, .print_metadata = false});
  std::string failure = golden::match_checks(printed, parse_checks(checks));
  EXPECT_EQ(failure, "") << "printed module:\n" << printed;
}

inline int64_t count_opcode(const Module& module, Opcode opcode) {
  int64_t count = 0;
  for (const Computation* computation : module.computations())
    for (const Instruction* instruction : computation->instructions()) count += instruction->opcode() == opcode;
  return count;
}

// Deterministic, varied values for one leaf: small numbers so float ops stay exact enough to
// be reproducible, and every element distinct where the type allows.
inline void fill_literal(Literal& literal, uint32_t& seed) {
  if (literal.shape().is_tuple()) {
    for (Literal& element : literal.elements()) fill_literal(element, seed);
    return;
  }
  if (!literal.shape().is_array()) return;
  auto next = [&] { return seed = seed * 1103515245u + 12345u; };
  PrimitiveType type = literal.shape().element_type();
  int64_t n = literal.element_count();
  if (type == PrimitiveType::kF32) {
    for (float& x : literal.data<float>()) x = static_cast<float>(static_cast<int>(next() >> 16) % 17 - 8) / 4.0f;
  } else if (type == PrimitiveType::kS32) {
    for (int32_t& x : literal.data<int32_t>()) x = static_cast<int32_t>(next() >> 16) % 100 - 50;
  } else if (type == PrimitiveType::kPred) {
    for (int64_t i = 0; i < n; ++i) literal.untyped_data()[i] = (next() >> 16) & 1;
  } else {
    for (int64_t i = 0; i < literal.size_bytes(); ++i) literal.untyped_data()[i] = static_cast<uint8_t>((next() >> 16) % 7);
  }
}

inline std::vector<Literal> make_arguments(const Module& module, uint32_t seed = 1) {
  std::vector<Literal> arguments;
  for (const Shape& shape : module.entry_layout().parameter_shapes) {
    Literal literal(shape);
    fill_literal(literal, seed);
    arguments.push_back(std::move(literal));
  }
  return arguments;
}

inline Literal evaluate_or_fail(const Module& module, const std::vector<Literal>& arguments) {
  auto result = evaluate_module(module, arguments);
  EXPECT_TRUE(result.ok()) << result.status().to_string();
  return result.ok() ? std::move(result).value() : Literal();
}

// Runs `pass` on a copy of `before`, expects the verifier to accept the result, and the
// evaluator to give bit-identical results on two sets of deterministic arguments.
template <typename PassFn>
std::unique_ptr<Module> run_and_compare(const Module& before, PassFn pass, bool expect_changed) {
  std::unique_ptr<Module> after = before.clone();
  auto changed = pass(*after);
  EXPECT_TRUE(changed.ok()) << changed.status().to_string();
  if (!changed.ok()) return after;
  EXPECT_EQ(*changed, expect_changed);
  Status verified = verify_module(*after);
  EXPECT_TRUE(verified.ok()) << verified.to_string() << "\n" << print_module(*after);
  for (uint32_t seed : {1u, 7u}) {
    std::vector<Literal> arguments = make_arguments(before, seed);
    Literal expected = evaluate_or_fail(before, arguments);
    Literal actual = evaluate_or_fail(*after, arguments);
    EXPECT_TRUE(expected == actual) << "results differ after the pass\n" << print_module(*after);
  }
  return after;
}

}  // namespace insitu::testing
