// The op family (opcode.def's fourth column) is the dispatch key: what the evaluator runs is
// read from it, and a family says who runs it. Checked over every opcode, so that a row moved
// to another family, or an evaluator function added without its family, shows here.
#include <gtest/gtest.h>

#include <vector>

#include "insitu/evaluator/collectives.h"
#include "insitu/evaluator/ops.h"
#include "insitu/ir/opcode.h"

namespace insitu {
namespace {

const std::vector<Opcode>& every_opcode() {
  static const std::vector<Opcode> all = {
#define INSITU_OPCODE(name, text, kind, family, effect, types, count, attributes) Opcode::name,
#include "insitu/ir/opcode.def"
#undef INSITU_OPCODE
  };
  return all;
}

TEST(OpFamily, TheEvaluatorRunsWhatItsFamilySays) {
  int runs = 0, none = 0;
  for (Opcode opcode : every_opcode()) {
    SCOPED_TRACE(opcode_name(opcode));
    const OpFamily family = op_family(opcode);
    const bool function = eval::has_op_function(opcode);
    EXPECT_EQ(is_collective_opcode(opcode), family == OpFamily::kCollective);
    switch (family) {
      case OpFamily::kNone:  // parsed, nothing runs it: neither a function nor a collective
        EXPECT_FALSE(function);
        ++none;
        break;
      case OpFamily::kMap:
      case OpFamily::kScan:
      case OpFamily::kBatchNorm:
      case OpFamily::kDimensionSize:
      case OpFamily::kElementwise:
      case OpFamily::kDataMovement:
      case OpFamily::kDynamicSlice:
      case OpFamily::kReduce:
      case OpFamily::kDot:
      case OpFamily::kSort:
      case OpFamily::kFusion:
      case OpFamily::kCall:
        EXPECT_TRUE(function);  // a family of the evaluator's table
        ++runs;
        break;
      case OpFamily::kCollective:  // evaluate_collective's, with the device context
      case OpFamily::kAsync:       // the evaluator's structural steps, the wrapped call
        EXPECT_FALSE(function);
        break;
      default: break;
    }
  }
  EXPECT_GT(runs, 60);
  // The opcodes insitu parses and nothing runs yet (ragged-dot, rng, infeed, send, domain, ...);
  // a new one lands here until a family takes it.
  EXPECT_LE(none, 16);
}

// The operand types (opcode.def's sixth column) are an elementwise op's: every other opcode's
// shape inference checks its own types. The verifier reads the column (tests/ir/
// shape_inference_test.cc: an exponential of s32 refused with its words).
TEST(OpFamily, OperandTypesAreTheElementwiseOpsRows) {
  int typed = 0;
  for (Opcode opcode : every_opcode()) {
    SCOPED_TRACE(opcode_name(opcode));
    if (operand_types(opcode) == OperandTypes::kAnyArray) continue;
    EXPECT_TRUE(is_elementwise(opcode));
    ++typed;
  }
  EXPECT_GE(typed, 40);
  EXPECT_EQ(operand_types(Opcode::kCbrt), OperandTypes::kFloatOrComplex);
  EXPECT_EQ(operand_types(Opcode::kShiftLeft), OperandTypes::kInteger);
  EXPECT_EQ(operand_types(Opcode::kAdd), OperandTypes::kAnyArray);
}

}  // namespace
}  // namespace insitu
