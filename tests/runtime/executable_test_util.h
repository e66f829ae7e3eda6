// Helpers for end-to-end runtime tests: parse, optimize (the real pipeline + buffer
// assignment), build an Executable, and compare with the reference evaluator.
#pragma once

#include <fstream>
#include <random>
#include <sstream>

#include <gtest/gtest.h>

#include "insitu/evaluator/element_arithmetic.h"
#include "insitu/evaluator/evaluator.h"
#include "insitu/ir/parser.h"
#include "insitu/passes/optimize.h"
#include "insitu/runtime/executable.h"

namespace insitu::testing_runtime {

struct Compiled {
  std::shared_ptr<Module> original;   // as parsed: what the evaluator runs
  const Module* optimized = nullptr;  // the executable's module
  std::unique_ptr<Executable> executable;
  Status create_status;  // Executable::create's
};

// Parses, optimizes and creates; a failure to create is a test failure unless `expect_created`
// is false (then create_status says why).
inline Compiled compile(std::string_view text, ExecutableOptions options = {}, bool expect_created = true) {
  Compiled compiled;
  StatusOr<std::unique_ptr<Module>> parsed = parse_module(text);
  EXPECT_TRUE(parsed.ok()) << parsed.status().to_string();
  if (!parsed.ok()) return compiled;
  compiled.original = std::move(parsed).value();
  StatusOr<OptimizedModule> optimized = optimize_module(compiled.original->clone());
  EXPECT_TRUE(optimized.ok()) << optimized.status().to_string();
  if (!optimized.ok()) return compiled;
  StatusOr<std::unique_ptr<Executable>> executable = Executable::create(std::move(*optimized), options);
  if (expect_created) {
    EXPECT_TRUE(executable.ok()) << executable.status().to_string();
  }
  compiled.create_status = executable.status();
  if (executable.ok()) {
    compiled.executable = std::move(executable).value();
    compiled.optimized = &compiled.executable->module();
  }
  return compiled;
}

// Deterministic arguments: small integers (loop bounds and indices stay small), floats in [-2, 2].
inline std::vector<Literal> make_arguments(const Module& module, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<Literal> arguments;
  for (const Instruction* parameter : module.entry()->parameters()) {
    Literal argument(parameter->shape());
    auto fill = [&](Literal& leaf) {
      if (!leaf.shape().is_array()) return;
      dispatch_element_type(leaf.shape().element_type(), [&](auto tag) {
        using T = decltype(tag);
        for (auto& value : leaf.template data<T>()) {
          if constexpr (std::is_same_v<T, bool>) value = (rng() & 1) != 0;
          else if constexpr (std::is_integral_v<T> || kIsSubByteInt<T>) value = convert_value<T>(rng() % 4);
          else if constexpr (kIsSmallFloat<T>)
            value = T::from_float(static_cast<float>(static_cast<int>(rng() % 4001) - 2000) / 1000.0f);
          else value = T(static_cast<double>(static_cast<int>(rng() % 4001) - 2000) / 1000.0);
        }
      });
    };
    if (argument.shape().is_tuple()) {
      for (Literal& element : argument.elements()) fill(element);
    } else {
      fill(argument);
    }
    arguments.push_back(std::move(argument));
  }
  return arguments;
}

inline void flatten(const Literal& literal, std::vector<Literal>& leaves) {
  if (literal.shape().is_tuple()) {
    for (const Literal& element : literal.elements()) flatten(element, leaves);
  } else if (literal.shape().is_array()) {
    leaves.push_back(literal);
  }
}

inline std::vector<BufferHandle> to_handles(const std::vector<Literal>& arguments) {
  std::vector<Literal> leaves;
  for (const Literal& argument : arguments) flatten(argument, leaves);
  std::vector<BufferHandle> handles;
  for (const Literal& leaf : leaves) handles.push_back(*BufferHandle::from_literal(leaf));
  return handles;
}

inline std::string read_text(const std::string& path) {
  std::ifstream file(path);
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

// Every result of the compiled module, on 1-3 threads, bit for bit the evaluator's on the same
// arguments (made from `seed`), with no op run by the fallback.
inline void expect_matches_evaluator_natively(const Compiled& compiled, uint32_t seed) {
  for (int threads : {1, 2, 3}) {
    const std::vector<Literal> arguments = make_arguments(*compiled.original, seed);
    StatusOr<Literal> expected = evaluate_module(*compiled.original, arguments);
    ASSERT_TRUE(expected.ok()) << expected.status().to_string();
    ExecutionStats stats;
    StatusOr<std::vector<BufferHandle>> results =
        compiled.executable->execute(to_handles(arguments), {.threads = threads, .stats = &stats});
    ASSERT_TRUE(results.ok()) << results.status().to_string();
    ASSERT_EQ(static_cast<int64_t>(results->size()), expected->shape().tuple_size());
    for (size_t i = 0; i < results->size(); ++i)
      EXPECT_TRUE(*(*results)[i].to_literal() == expected->element(static_cast<int64_t>(i)))
          << "result " << i << " threads=" << threads;
    EXPECT_EQ(stats.fallback_ops_executed, 0);
  }
}

}  // namespace insitu::testing_runtime
