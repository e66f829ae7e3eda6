// Helpers for the elementwise evaluator tests: build one instruction, run it on Literals.
#pragma once

#include <functional>
#include <vector>

#include <gtest/gtest.h>

#include "insitu/evaluator/ops.h"

namespace insitu::testing_elementwise {

inline StatusOr<Literal> evaluate(const Instruction& instruction, const std::vector<Literal>& operands) {
  std::vector<const Literal*> pointers;
  for (const Literal& operand : operands) pointers.push_back(&operand);
  return eval::evaluate_elementwise(instruction, pointers);
}

// Runs `opcode` with result shape `shape`; `configure` sets attributes (direction, bits, ...).
inline Literal run(Opcode opcode, const Shape& shape, const std::vector<Literal>& operands,
                   const std::function<void(Instruction&)>& configure = {}) {
  Instruction instruction(opcode, "op", shape);
  if (configure) configure(instruction);
  StatusOr<Literal> result = evaluate(instruction, operands);
  EXPECT_TRUE(result.ok()) << result.status().to_string();
  return result.ok() ? std::move(result).value() : Literal();
}

// The error of running `opcode`, located at line 3, column 7.
inline Status run_error(Opcode opcode, const Shape& shape, const std::vector<Literal>& operands,
                        const std::function<void(Instruction&)>& configure = {}) {
  Instruction instruction(opcode, "op", shape);
  instruction.set_location({3, 7});
  if (configure) configure(instruction);
  StatusOr<Literal> result = evaluate(instruction, operands);
  EXPECT_FALSE(result.ok()) << "expected an error, got " << (result.ok() ? result->to_string() : "");
  return result.ok() ? Status() : result.status();
}

// Expects running `opcode` to fail (the error itself is not inspected).
inline void expect_error(Opcode opcode, const Shape& shape, const std::vector<Literal>& operands,
                         const std::function<void(Instruction&)>& configure = {}) {
  Status status = run_error(opcode, shape, operands, configure);
  EXPECT_FALSE(status.message().empty());
}

template <typename T>
std::vector<T> values(const Literal& literal) {
  if (!literal.valid()) return {};
  auto data = literal.data<T>();
  return {data.begin(), data.end()};
}

// Bits of f16/bf16 results, for exact comparison.
template <typename T>
std::vector<uint16_t> bits16(const Literal& literal) {
  std::vector<uint16_t> out;
  for (T value : values<T>(literal)) out.push_back(value.bits);
  return out;
}

inline Shape array(PrimitiveType type, std::vector<int64_t> dimensions) { return Shape::array(type, std::move(dimensions)); }

}  // namespace insitu::testing_elementwise
