// Shared by the schedule/copy-insertion/copy-elimination tests: parse, run the passes, count
// copies and their reasons, and compare the reference evaluator before and after.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include "insitu/evaluator/evaluator.h"
#include "insitu/ir/copy_reason.h"
#include "insitu/ir/parser.h"
#include "insitu/ir/printer.h"
#include "insitu/ir/verifier.h"
#include "insitu/passes/copy_elimination.h"
#include "insitu/passes/copy_insertion.h"
#include "insitu/passes/schedule.h"
#include "pass_test_util.h"

namespace insitu::copy_test {


// Copies in the module, reason code (or "none") per copy, in program order.
inline std::vector<std::string> copy_reasons(const Module& module) {
  std::vector<std::string> out;
  for (const Computation* computation : module.computations())
    for (const Instruction* instruction : computation->instructions())
      if (instruction->opcode() == Opcode::kCopy) {
        std::optional<CopyReason> reason = copy_reason(*instruction);
        out.push_back(reason ? std::string(copy_reason_name(*reason)) : "none");
      }
  return out;
}

// Deterministic arguments: small integers (also as floats) that vary by element and parameter.
inline Literal make_argument(const Shape& shape, int64_t seed) {
  if (shape.is_tuple()) {
    std::vector<Literal> elements;
    for (int64_t i = 0; i < shape.tuple_size(); ++i) elements.push_back(make_argument(shape.tuple_shape(i), seed * 7 + i));
    return Literal::tuple(std::move(elements));
  }
  Literal literal(shape);
  if (shape.element_type() == PrimitiveType::kF32) {
    auto data = literal.data<float>();
    for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<float>((seed * 5 + i * 3) % 11) - 4.0f;
  } else if (shape.element_type() == PrimitiveType::kS32) {
    auto data = literal.data<int32_t>();
    for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<int32_t>((seed + i) % 4);
  }
  return literal;
}

inline std::vector<Literal> make_arguments(const Module& module) {
  std::vector<Literal> out;
  for (const Instruction* parameter : module.entry()->parameters())
    out.push_back(make_argument(parameter->shape(), parameter->parameter_number + 1));
  return out;
}

inline CustomCallTable& test_kernels() {
  static CustomCallTable* registry = [] {
    auto* r = new CustomCallTable();
    // result (aliased to operand 0) += operand 1
    (void)r->add({.name = "add_in_place", .evaluate = [](const Instruction&, std::span<const Literal* const> operands,
                                                         Literal& result) {
      auto out = result.data<float>();
      auto in = operands[1]->data<float>();
      for (size_t i = 0; i < out.size(); ++i) out[i] += in[i];
      return Status();
    }});
    // result = operand 0 + 1 (a kernel that declares no aliasing)
    (void)r->add({.name = "plus_one", .evaluate = [](const Instruction&, std::span<const Literal* const> operands,
                                                     Literal& result) {
      auto out = result.data<float>();
      auto in = operands[0]->data<float>();
      for (size_t i = 0; i < out.size(); ++i) out[i] = in[i] + 1.0f;
      return Status();
    }});
    return r;
  }();
  return *registry;
}

inline Literal evaluate(const Module& module) {
  EvaluatorOptions options;
  options.custom_calls = &test_kernels();
  options.max_while_iterations = 1000;
  std::vector<Literal> arguments = make_arguments(module);
  StatusOr<Literal> result = evaluate_module(module, arguments, options);
  EXPECT_TRUE(result.ok()) << result.status().to_string();
  return result.ok() ? std::move(*result) : Literal();
}

struct Options {
  bool schedule = true;
  bool eliminate = true;
};

// Runs schedule, copy insertion and copy elimination; checks the verifier and that the
// evaluator gives bit-identical results before and after. Returns the optimized module.
inline std::unique_ptr<Module> optimize(std::string_view text, Options options = {}) {
  std::unique_ptr<Module> module = parse_verified(text);
  if (!module) return nullptr;
  Literal before = evaluate(*module);
  if (options.schedule) {
    EXPECT_TRUE(schedule_module(*module).ok());
  }
  StatusOr<bool> inserted = insert_copies(*module);
  EXPECT_TRUE(inserted.ok()) << inserted.status().to_string();
  if (options.eliminate) {
    StatusOr<bool> eliminated = eliminate_copies(*module);
    EXPECT_TRUE(eliminated.ok()) << eliminated.status().to_string();
  }
  Status verified = verify_module(*module);
  EXPECT_TRUE(verified.ok()) << verified.to_string() << "\n" << print_module(*module);
  EXPECT_EQ(evaluate(*module), before) << print_module(*module);
  if (std::getenv("INSITU_DUMP_COPY_TESTS") != nullptr) std::cout << print_module(*module) << "\n";
  // Idempotent: the rules hold, so a second insertion adds nothing.
  StatusOr<bool> again = insert_copies(*module);
  EXPECT_TRUE(again.ok() && !*again) << "a second copy insertion changed:\n" << print_module(*module);
  return module;
}

}  // namespace insitu::copy_test
