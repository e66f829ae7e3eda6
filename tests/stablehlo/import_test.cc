// VHLO artifacts that jaxlib wrote (tests/data/stablehlo, generate.py) read into modules that
// give the values of the HLO text JAX converts the same program to, under the reference
// evaluator; and the reader's errors.
#include "insitu/stablehlo/import.h"

#include <gtest/gtest.h>

#include "test_data.h"
#include "insitu/evaluator/evaluator.h"
#include "insitu/ir/parser.h"
#include "insitu/ir/printer.h"
#include "insitu/ir/verifier.h"

namespace insitu::stablehlo {
namespace {

using testing_data::bytes_of;
using testing_data::load;

// Arguments for the entry's parameters: element i is (i * 37 + seed) % 11 - 3 (so indices go out
// of range and negative too), pred alternating.
std::vector<Literal> arguments(const Module& module, int seed) {
  std::vector<Literal> values;
  for (const Instruction* parameter : module.entry()->parameters()) {
    Literal literal(parameter->shape());
    for (int64_t i = 0; i < literal.element_count(); ++i) {
      const int64_t value = (i * 37 + seed) % 11 - 3;
      dispatch_element_type(parameter->shape().element_type(), [&](auto tag) {
        using T = decltype(tag);
        if constexpr (std::is_same_v<T, bool>) literal.data<T>()[i] = (i + seed) % 2 == 0;
        else if constexpr (std::is_arithmetic_v<T>) literal.data<T>()[i] = static_cast<T>(value);
      });
    }
    values.push_back(std::move(literal));
  }
  return values;
}

TEST(VhloImport, ArtifactsGiveTheValuesOfJaxsHlo) {
  for (const char* program : {"add_one", "loop_sum", "cache_update", "branches", "layer", "masks"}) {
    StatusOr<std::unique_ptr<Module>> want = parse_module(load(std::string(program) + ".hlo"));
    ASSERT_TRUE(want.ok()) << want.status().to_string();
    for (const char* version : {"1.22.0", "1.16.3"}) {
      const std::string name = std::string(program) + ".v" + version + ".mlirbc";
      const std::string bytes = load(name);
      StatusOr<std::unique_ptr<Module>> got = read_vhlo(bytes_of(bytes));
      ASSERT_TRUE(got.ok()) << name << ": " << got.status().to_string();
      ASSERT_TRUE(verify_module(**got).ok()) << name;
      EXPECT_EQ((*got)->entry()->parameters().size(), (*want)->entry()->parameters().size()) << name;
      EXPECT_EQ((*got)->config().input_output_alias.size(), (*want)->config().input_output_alias.size()) << name;
      for (int seed : {0, 5}) {
        StatusOr<Literal> expected = evaluate_module(**want, arguments(**want, seed));
        StatusOr<Literal> actual = evaluate_module(**got, arguments(**got, seed));
        ASSERT_TRUE(expected.ok()) << expected.status().to_string();
        ASSERT_TRUE(actual.ok()) << name << ": " << actual.status().to_string();
        EXPECT_EQ(actual->to_string(), expected->to_string()) << name << " seed " << seed << "\n"
                                                             << print_module(**got);
      }
    }
  }
}

TEST(VhloImport, DonationBecomesTheModulesAliasing) {
  const std::string bytes = load("cache_update.v1.22.0.mlirbc");
  StatusOr<std::unique_ptr<Module>> module = read_vhlo(bytes_of(bytes));
  ASSERT_TRUE(module.ok()) << module.status().to_string();
  const std::string text = print_module(**module);
  EXPECT_NE(text.find("input_output_alias={ {}: (0, {}, may-alias) }"), std::string::npos) << text;
}

TEST(VhloImport, AnOpNotReadIsALocatedErrorNamingIt) {
  std::string bytes = load("add_one.v1.22.0.mlirbc");
  // rename vhlo.add_v1 in the string table (same length): an op insitu does not know
  const size_t at = bytes.find(std::string("add_v1\0", 7));
  ASSERT_NE(at, std::string::npos);
  bytes.replace(at, 6, "adz_v1");
  StatusOr<std::unique_ptr<Module>> module = read_vhlo(bytes_of(bytes));
  ASSERT_FALSE(module.ok());
  EXPECT_TRUE(module.status().message().starts_with("byte ")) << module.status().message();
  EXPECT_NE(module.status().message().find("vhlo.adz_v1 is not read by insitu"), std::string::npos)
      << module.status().message();
}

// Found by scripts/fuzz stablehlo: a constant whose (corrupted) op names operands, one of them a
// constant read from outside the region, recursed through the importer until the stack ran out.
TEST(VhloImport, AConstantWithOperandsIsAnErrorNotARecursion) {
  const std::string bytes = load("fuzz_constant_with_operands.mlirbc");
  StatusOr<std::unique_ptr<Module>> module = read_vhlo(bytes_of(bytes));
  ASSERT_FALSE(module.ok());
  EXPECT_NE(module.status().message().find("a constant with operands"), std::string::npos) << module.status().message();
}

// Any byte of an artifact changed: an error or a module, never a crash (the whole reader, not
// only the container).
TEST(VhloImport, CorruptedArtifactsNeverCrash) {
  for (const char* name : {"loop_sum.v1.22.0.mlirbc", "layer.v1.16.3.mlirbc", "branches.v1.22.0.mlirbc"}) {
    const std::string bytes = load(name);
    for (size_t at = 0; at < bytes.size(); ++at) {
      for (uint8_t flip : {uint8_t{0x01}, uint8_t{0x06}, uint8_t{0x80}}) {
        std::string corrupt = bytes;
        corrupt[at] = static_cast<char>(corrupt[at] ^ flip);
        StatusOr<std::unique_ptr<Module>> module = read_vhlo(bytes_of(corrupt));
        if (module.ok()) (void)verify_module(**module);
      }
    }
  }
}

}  // namespace
}  // namespace insitu::stablehlo
