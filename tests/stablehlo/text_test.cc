// StableHLO text (text.h): the text JAX printed for tests/data/stablehlo's programs reads into
// the same module as their VHLO artifacts at both versions; hand-written text in the printed
// and generic forms; errors with the text's line and column; corrupted text never crashes.
#include "insitu/stablehlo/text.h"

#include <gtest/gtest.h>

#include "test_data.h"
#include "insitu/evaluator/evaluator.h"
#include "insitu/ir/printer.h"
#include "insitu/ir/verifier.h"
#include "insitu/stablehlo/import.h"

namespace insitu::stablehlo {
namespace {

using testing_data::bytes_of;
using testing_data::load;

StatusOr<std::unique_ptr<Module>> read(const std::string& text) { return read_vhlo(bytes_of(text)); }

TEST(StablehloText, ReadsAsTheSameModuleAsItsArtifacts) {
  for (const char* program : {"add_one", "loop_sum", "cache_update", "branches", "layer", "masks"}) {
    const std::string text = load(std::string(program) + ".mlir");
    ASSERT_TRUE(is_stablehlo_text(bytes_of(text))) << program;
    StatusOr<std::unique_ptr<Module>> got = read(text);
    ASSERT_TRUE(got.ok()) << program << ": " << got.status().to_string();
    ASSERT_TRUE(verify_module(**got).ok()) << program;
    for (const char* version : {"1.22.0", "1.16.3"}) {
      const std::string bytes = load(std::string(program) + ".v" + version + ".mlirbc");
      StatusOr<std::unique_ptr<Module>> want = read_vhlo(bytes_of(bytes));
      ASSERT_TRUE(want.ok()) << want.status().to_string();
      EXPECT_EQ(print_module(**got), print_module(**want)) << program << " v" << version;
    }
  }
}

Literal scalar_f32(float value) {
  Literal literal(Shape::array(PrimitiveType::kF32, {}));
  literal.data<float>()[0] = value;
  return literal;
}

Literal vector_f32(std::vector<float> values) {
  Literal literal(Shape::array(PrimitiveType::kF32, {static_cast<int64_t>(values.size())}));
  for (size_t i = 0; i < values.size(); ++i) literal.data<float>()[i] = values[i];
  return literal;
}

// The printed forms JAX does not emit for the corpus (dot, tuple, slice with strides, a reduce
// with a reducer block, compare without a type, iota, pad, reverse) and the generic form, each
// checked against values computed by hand.
TEST(StablehloText, PrintedAndGenericFormsGiveTheirValues) {
  const std::string text = R"(
// a comment, and an alias
#dims = array<i64: 0>
module @hand {
  func.func @main(%x: tensor<4xf32>, %s: tensor<f32>) -> (tensor<2xf32>, tensor<f32>, tensor<4xf32>) {
    %c = stablehlo.constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>
    %zero = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %0 = stablehlo.slice %x [1:4:2] : (tensor<4xf32>) -> tensor<2xf32>
    %1 = stablehlo.dot %x, %c : (tensor<4xf32>, tensor<4xf32>) -> tensor<f32>
    %2 = stablehlo.reduce(%x init: %zero) across dimensions = [0] : (tensor<4xf32>, tensor<f32>) -> tensor<f32>
     reducer(%a: tensor<f32>, %b: tensor<f32>)  {
      %m = stablehlo.maximum %a, %b : tensor<f32>
      stablehlo.return %m : tensor<f32>
    }
    %3 = "stablehlo.add"(%1, %2) : (tensor<f32>, tensor<f32>) -> tensor<f32>
    %4 = stablehlo.reverse %x, dims = #dims : tensor<4xf32>
    %5 = stablehlo.iota dim = 0 : tensor<4xf32>
    %6 = stablehlo.compare GT, %4, %5 : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>
    %7 = stablehlo.select %6, %4, %5 : tensor<4xi1>, tensor<4xf32>
    %8 = stablehlo.multiply %3, %s : tensor<f32>
    %t = stablehlo.tuple %0, %8 : tuple<tensor<2xf32>, tensor<f32>>
    %9 = stablehlo.get_tuple_element %t[1] : (tuple<tensor<2xf32>, tensor<f32>>) -> tensor<f32>
    return %0, %9, %7 : tensor<2xf32>, tensor<f32>, tensor<4xf32>
  }
}
)";
  StatusOr<std::unique_ptr<Module>> module = read(text);
  ASSERT_TRUE(module.ok()) << module.status().to_string();
  ASSERT_TRUE(verify_module(**module).ok());
  std::vector<Literal> arguments;
  arguments.push_back(vector_f32({5, -1, 2, 0.5}));
  arguments.push_back(scalar_f32(2));
  StatusOr<Literal> result = evaluate_module(**module, std::move(arguments));
  ASSERT_TRUE(result.ok()) << result.status().to_string();
  // slice [1:4:2] = {-1, 0.5}; dot = 5 - 2 + 6 + 2 = 11; max = 5; (11 + 5) * 2 = 32;
  // reverse = {0.5, 2, -1, 5} against iota {0, 1, 2, 3}: {0.5, 2, 2, 5}
  EXPECT_EQ(result->to_string(), "(f32[2], f32[], f32[4]) ({-1, 0.5}, 32, {0.5, 2, 2, 5})") << result->to_string();
}

TEST(StablehloText, ErrorsNameTheLineAndColumn) {
  struct Case {
    std::string text;
    int line, column;
    std::string message;
  };
  const std::vector<Case> cases = {
      {"module {\n  func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {\n    %0 = stablehlo.add %a, %b : tensor<4xf32>\n"
       "    return %0 : tensor<4xf32>\n  }\n}\n",
       3, 28, "%b is not defined here"},
      {"module {\n  func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {\n    %0 = stablehlo.frobnicate %a : tensor<4xf32>\n"
       "    return %0 : tensor<4xf32>\n  }\n}\n",
       3, 10, "stablehlo.frobnicate"},
      {"module {\n  func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {\n    %0 = stablehlo.add %a, %a : tensor<4xf64>\n"
       "    return %0 : tensor<4xf32>\n  }\n}\n",
       3, 33, "operand 0 is not of the type the op names"},
      {"module {\n  func.func @main(%a: tensor<4xfoo>) -> tensor<4xf32> {\n", 2, 32, "'foo' is not a type insitu reads"},
      {"module {\n  func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {\n    %0 = chlo.lgamma %a : tensor<4xf32> -> tensor<4xf32>\n"
       "    return %0 : tensor<4xf32>\n  }\n}\n",
       3, 10, "chlo.lgamma is not read"},
      {"module {\n  func.func @main(%a: tensor<4xf32>) -> tensor<2xf32> {\n    %0 = stablehlo.slice %a [0:2] {bogus = 1} : (tensor<4xf32>) -> tensor<2xf32>\n"
       "    return %0 : tensor<2xf32>\n  }\n}\n",
       3, 10, "'bogus' is not an attribute of stablehlo.slice"},
      {"module {\n  func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {\n    %0 = stablehlo.constant dense<[1.0, 2.0]> : tensor<4xf32>\n",
       3, 29, "dense<...> of 2 values for 4 elements"},
      {"module {\n  func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {\n    return %a : tensor<4xf32>\n  }\n", 5, 1,
       "a region that does not end"},
      {"module {\n  func.func @main(%a: tensor<?xf32>) -> tensor<?xf32> {\n    return %a : tensor<?xf32>\n  }\n}\n", 2, 3,
       "dynamic dimension"},
  };
  for (const Case& c : cases) {
    StatusOr<std::unique_ptr<Module>> module = read(c.text);
    ASSERT_FALSE(module.ok()) << c.text;
    EXPECT_NE(module.status().message().find(c.message), std::string::npos) << module.status().to_string();
    EXPECT_EQ(module.status().location().line, c.line) << module.status().to_string();
    EXPECT_EQ(module.status().location().column, c.column) << module.status().to_string();
  }
}

// Values insitu cannot honour are located errors, never wrapped or guessed; hostile sizes are
// errors before anything is allocated (found by review: these threw or wrapped).
TEST(StablehloText, ValuesOutOfRangeAndHostileSizesAreLocatedErrors) {
  auto wrap = [](const std::string& op, const std::string& type) {
    return "func.func @main(%a: tensor<4xf32>) -> " + type + " {\n  %0 = " + op + "\n  return %0 : " + type + "\n}\n";
  };
  const std::vector<std::pair<std::string, std::string>> cases = {
      {wrap("stablehlo.constant dense<300> : tensor<i8>", "tensor<i8>"), "'300' does not fit s8"},
      {wrap("stablehlo.constant dense<-1> : tensor<ui8>", "tensor<ui8>"), "'-1' does not fit u8"},
      {wrap("stablehlo.constant dense<1.0e39> : tensor<f32>", "tensor<f32>"), "out of f32's range"},
      {wrap("stablehlo.constant dense<[(1.0, 2.0), 3.0]> : tensor<2xcomplex<f32>>", "tensor<2xcomplex<f32>>"),
       "do not fit its element type"},
      {wrap("stablehlo.reduce_precision %a, format = e99999999999999999999m1 : tensor<4xf32>", "tensor<4xf32>"),
       "is not a format eNmM"},
      {wrap("\"chlo.top_k\"(%a) : (tensor<4xf32>) -> tensor<4xf32>", "tensor<4xf32>"), "chlo.top_k without its k"},
      {wrap("\"stablehlo.iota\"() <{iota_dimension = 0 : i64, iota_dimension = 1 : i64}> : () -> tensor<4xf32>",
            "tensor<4xf32>"),
       "names 'iota_dimension' twice"},
      {wrap("stablehlo.constant dense<0.0> : tensor<4294967296x4294967296xf32>", "tensor<4xf32>"), "too many elements"},
      {wrap("\"stablehlo.reduce_window\"(%a, %a) <{window_dimensions = dense<1> : tensor<50000000000xi64>}> ({\n"
            "  ^bb0(%p: tensor<f32>, %q: tensor<f32>):\n    stablehlo.return %p : tensor<f32>\n  }) : "
            "(tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>",
            "tensor<4xf32>"),
       "a window of 50000000000 dimensions"},
  };
  for (const auto& [text, message] : cases) {
    StatusOr<std::unique_ptr<Module>> module = read(text);
    ASSERT_FALSE(module.ok()) << text;
    EXPECT_NE(module.status().message().find(message), std::string::npos) << module.status().to_string();
    EXPECT_TRUE(module.status().location().valid()) << module.status().to_string();
  }
}

// A module read from StableHLO is in the order XLA prints HLO (each sink's operands depth first),
// not the jaxpr's: passes that measure distances in program order see it as from HLO (the
// transformer training step wrote 596 MB a step from its artifact, 566 MB now).
TEST(StablehloText, InstructionsComeInTheOrderXlaPrints) {
  StatusOr<std::unique_ptr<Module>> module = read(R"(
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %t = stablehlo.tanh %x : tensor<4xf32>
  %one = stablehlo.constant dense<1.0> : tensor<f32>
  %b = stablehlo.broadcast_in_dim %one, dims = [] : (tensor<f32>) -> tensor<4xf32>
  %u = stablehlo.subtract %b, %t : tensor<4xf32>
  %e = stablehlo.exponential %x : tensor<4xf32>
  %s = stablehlo.add %e, %u : tensor<4xf32>
  return %s : tensor<4xf32>
}
)");
  ASSERT_TRUE(module.ok()) << module.status().to_string();
  std::vector<std::string> opcodes;
  for (const Instruction* instruction : (*module)->entry()->instructions())
    opcodes.emplace_back(opcode_name(instruction->opcode()));
  EXPECT_EQ(opcodes, (std::vector<std::string>{"parameter", "exponential", "constant", "broadcast", "tanh", "subtract", "add"}));
}

// Any character of a program's text replaced, or the text cut short: an error or a module,
// never a crash.
TEST(StablehloText, CorruptedTextNeverCrashes) {
  for (const char* name : {"layer.mlir", "branches.mlir"}) {
    const std::string text = load(name);
    for (size_t at = 0; at < text.size(); at += 11) {
      for (char replacement : {'}', '%', '<', '0', ' '}) {
        std::string corrupt = text;
        corrupt[at] = replacement;
        StatusOr<std::unique_ptr<Module>> module = read(corrupt);
        if (module.ok()) (void)verify_module(**module);
      }
      StatusOr<std::unique_ptr<Module>> cut = read(text.substr(0, at));
      if (cut.ok()) (void)verify_module(**cut);
    }
  }
}

}  // namespace
}  // namespace insitu::stablehlo
