// Custom-call kernels the pass tests' modules call, added to the process-wide
// CustomCallTable (once, whichever test file asks first).
//   test_negate      s32/f32: result = -operand 0
//   tpu_custom_call  s32: result = operand 0 + 1 (the seed's Pallas plus-one kernel)
//   test_add_one_inplace  s32: result (aliased to operand 0 by output_to_operand_aliasing) += 1
#pragma once

#include "insitu/evaluator/custom_call_table.h"

namespace insitu::testing {

inline void register_test_kernels() {
  CustomCallTable& registry = CustomCallTable::global();
  auto add = [&](std::string name, EvaluateCustomCall kernel) {
    if (registry.find(name) == nullptr)
      (void)registry.add({.name = std::move(name), .evaluate = std::move(kernel), .origin = "pass tests"});
  };
  add("test_negate", [](const Instruction&, std::span<const Literal* const> operands, Literal& result) -> Status {
    const Literal& in = *operands[0];
    if (in.shape().element_type() == PrimitiveType::kF32) {
      for (int64_t i = 0; i < in.element_count(); ++i) result.data<float>()[i] = -in.data<float>()[i];
    } else {
      for (int64_t i = 0; i < in.element_count(); ++i) result.data<int32_t>()[i] = -in.data<int32_t>()[i];
    }
    return ok_status();
  });
  add("tpu_custom_call", [](const Instruction&, std::span<const Literal* const> operands, Literal& result) -> Status {
    for (int64_t i = 0; i < result.element_count(); ++i) result.data<int32_t>()[i] = operands[0]->data<int32_t>()[i] + 1;
    return ok_status();
  });
  add("test_add_one_inplace", [](const Instruction&, std::span<const Literal* const>, Literal& result) -> Status {
    for (int32_t& x : result.data<int32_t>()) x += 1;
    return ok_status();
  });
}

}  // namespace insitu::testing
