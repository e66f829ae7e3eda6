// Test helpers for evaluator ops that call a to_apply computation: a ComputationRunner that
// ignores the computation and applies a C++ lambda to the scalar arguments, plus literal
// helpers. Used by reduce_test, gather_scatter_test and sort_test.
#pragma once

#include <functional>
#include <vector>

#include "insitu/evaluator/ops.h"
#include "insitu/ir/computation.h"

namespace insitu::testing {

class LambdaRunner final : public eval::ComputationRunner {
 public:
  using Body = std::function<StatusOr<Literal>(eval::Operands)>;
  explicit LambdaRunner(Body body) : body_(std::move(body)) {}

  StatusOr<Literal> run(const Computation&, eval::Operands arguments) override {
    ++calls;
    return body_(arguments);
  }

  int calls = 0;

 private:
  Body body_;
};

// A runner for a binary scalar combiner of type T: fn(accumulator, value).
template <typename T, typename Fn>
LambdaRunner binary_runner(Fn fn) {
  return LambdaRunner([fn](eval::Operands arguments) -> StatusOr<Literal> {
    return Literal::scalar<T>(fn(arguments[0]->data<T>()[0], arguments[1]->data<T>()[0]));
  });
}

template <typename T>
T scalar_value(const Literal* literal) {
  return literal->data<T>()[0];
}

template <typename T>
std::vector<T> values(const Literal& literal) {
  auto data = literal.data<T>();
  return std::vector<T>(data.begin(), data.end());
}

}  // namespace insitu::testing
