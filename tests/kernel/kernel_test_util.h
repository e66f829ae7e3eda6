// Test helpers: run an HLO module in the reference evaluator and in the runtime.
#pragma once

#include <gtest/gtest.h>

#include "test_util.h"
#include "insitu/evaluator/evaluator.h"
#include "insitu/ir/parser.h"
#include "insitu/passes/optimize.h"
#include "insitu/runtime/executable.h"

namespace insitu::kernel_testing {

struct RuntimeRun {
  Status status;
  std::vector<Literal> results;  // result leaves
  ExecutionStats stats;
  std::vector<BufferHandle> arguments;
};

// parse_text (test_util.h), stopping the test binary where the text does not parse (its
// callers return a StatusOr and have no test to fail).
inline std::unique_ptr<Module> parse_or_die(std::string_view text) {
  std::unique_ptr<Module> module = parse_text(text);
  INSITU_CHECK(module != nullptr) << "the test's module does not parse";
  return module;
}

inline StatusOr<Literal> evaluate_text(std::string_view text, std::span<const Literal> arguments) {
  std::unique_ptr<Module> module = parse_or_die(text);
  return evaluate_module(*module, arguments);
}

inline RuntimeRun run_text(std::string_view text, std::span<const Literal> arguments, int threads,
                           std::vector<bool> donate = {}) {
  RuntimeRun run;
  StatusOr<OptimizedModule> optimized = optimize_module(parse_or_die(text));
  if (!optimized.ok()) {
    run.status = optimized.status();
    return run;
  }
  StatusOr<std::unique_ptr<Executable>> executable = Executable::create(std::move(*optimized));
  if (!executable.ok()) {
    run.status = executable.status();
    return run;
  }
  for (const Literal& argument : arguments) run.arguments.push_back(BufferHandle::from_literal(argument).value());
  StatusOr<std::vector<BufferHandle>> results =
      (*executable)->execute(run.arguments, {.donate = donate, .threads = threads, .stats = &run.stats});
  if (!results.ok()) {
    run.status = results.status();
    return run;
  }
  for (const BufferHandle& result : *results) run.results.push_back(result.to_literal().value());
  return run;
}

// The leaves of a (possibly tuple) literal.
inline std::vector<Literal> leaves_of(const Literal& literal) {
  if (!literal.shape().is_tuple()) return {literal};
  std::vector<Literal> leaves;
  for (const Literal& element : literal.elements()) leaves.push_back(element);
  return leaves;
}

}  // namespace insitu::kernel_testing
