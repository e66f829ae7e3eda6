// The attribute table (attribute_table.h) walked rule by rule: every attribute the parser
// accepts is modelled, documented as metadata-only, a custom-call kernel's input, or belongs
// to an opcode insitu refuses to run; and what the parser keeps verbatim is never a modelled one.
#include "insitu/ir/attribute_table.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <fstream>
#include <sstream>

#include "insitu/evaluator/collectives.h"
#include "insitu/evaluator/evaluator.h"
#include "insitu/evaluator/ops.h"
#include "insitu/ir/parser.h"
#include "insitu/support/str.h"

namespace insitu {
namespace {

namespace fs = std::filesystem;

TEST(AttributeTableTest, EveryRuleSaysWhy) {
  for (const AttributeRule& rule : attribute_rules()) {
    SCOPED_TRACE(std::string(rule.name));
    if (rule.use == AttributeUse::kModelled || rule.use == AttributeUse::kMetadataOnly) {
      EXPECT_FALSE(rule.note.empty()) << "a modelled attribute names its consumer; a metadata-only one says why";
    }
    // Only attributes that mean nothing for values (or order instructions) apply to every opcode.
    if (rule.opcodes.empty()) {
      EXPECT_TRUE(rule.use == AttributeUse::kMetadataOnly || rule.name == "control-predecessors");
    }
  }
}

TEST(AttributeTableTest, NoAttributeHasTwoRulesOnOneOpcode) {
  const auto rules = attribute_rules();
  for (size_t i = 0; i < rules.size(); ++i)
    for (size_t j = i + 1; j < rules.size(); ++j) {
      if (rules[i].name != rules[j].name) continue;
      for (Opcode opcode : rules[i].opcodes)
        EXPECT_EQ(std::find(rules[j].opcodes.begin(), rules[j].opcodes.end(), opcode), rules[j].opcodes.end())
            << rules[i].name << " on " << opcode_name(opcode);
    }
}

// An async chain (start, update, done around a computation that negates) with `name`="bogus" on
// its `opcode` link: async_execution_thread names a thread (any name; no value depends on it),
// anything else is refused by name. Returns 1 when the attribute was read.
int check_async_attribute(std::string_view name, Opcode opcode) {
  if (name == "calls") return 0;  // resolved into the called computation, never kept verbatim
  Module module("m");
  const Shape matrix = Shape::array(PrimitiveType::kF32, {2, 2});
  Computation* wrapped = module.add_computation(std::make_unique<Computation>("w"));
  auto inner = std::make_unique<Instruction>(Opcode::kParameter, "q", matrix);
  inner->parameter_number = 0;
  Instruction* q = wrapped->add_instruction(std::move(inner));
  auto negate = std::make_unique<Instruction>(Opcode::kNegate, "n", matrix);
  negate->append_operand(q);
  wrapped->set_root(wrapped->add_instruction(std::move(negate)));
  Computation* entry = module.add_computation(std::make_unique<Computation>("e"));
  module.set_entry(entry);
  auto parameter = std::make_unique<Instruction>(Opcode::kParameter, "p", matrix);
  parameter->parameter_number = 0;
  Instruction* previous = entry->add_instruction(std::move(parameter));
  const Shape chain = Shape::tuple({Shape::tuple({matrix}), matrix});
  for (Opcode link : {Opcode::kAsyncStart, Opcode::kAsyncUpdate, Opcode::kAsyncDone}) {
    auto instruction = std::make_unique<Instruction>(link, opcode_name(link).data(),
                                                     link == Opcode::kAsyncDone ? matrix : chain);
    instruction->append_operand(previous);
    instruction->set_called_computations({wrapped});
    if (link == opcode) instruction->extra_attributes.push_back({std::string(name), "bogus"});
    previous = entry->add_instruction(std::move(instruction));
  }
  entry->set_root(previous);
  std::vector<Literal> arguments(1, Literal(matrix));
  StatusOr<Literal> result = evaluate_module(module, arguments);
  if (name == "async_execution_thread") {
    EXPECT_TRUE(result.ok()) << result.status().to_string();
  } else {
    EXPECT_FALSE(result.ok());
    if (!result.ok())
      EXPECT_NE(result.status().message().find(str_cat(name, "=")), std::string::npos) << result.status().to_string();
  }
  return 1;
}

// An opcode's own attribute can never be ignored while computing a value: either the
// evaluator refuses the opcode, or its function reads the attribute (a bad value, on an
// otherwise valid instruction, is an error that names it).
TEST(AttributeTableTest, OwnAttributesAreReadOrTheirOpcodeIsRefused) {
  // What each runnable opcode with own attributes needs besides the one under test.
  const std::map<Opcode, std::vector<RawAttribute>> valid = {
      {Opcode::kTopk, {{"k", "1"}}},
      {Opcode::kCholesky, {}},
      {Opcode::kTriangularSolve, {{"transpose_a", "NO_TRANSPOSE"}}},
      {Opcode::kConvolution, {{"dim_labels", "bf_io->bf"}}},
      {Opcode::kFft, {{"fft_type", "FFT"}, {"fft_length", "{2}"}}},
      {Opcode::kRngBitGenerator, {}},
      {Opcode::kAllReduce, {}},
      {Opcode::kAllReduceStart, {}},
      {Opcode::kAllGather, {{"dimensions", "{0}"}}},
      {Opcode::kReduceScatter, {{"dimensions", "{0}"}}},
      {Opcode::kAllToAll, {}},
      {Opcode::kCollectiveBroadcast, {}},
      {Opcode::kCollectivePermute, {{"source_target_pairs", "{}"}}},
      {Opcode::kAllGatherStart, {{"dimensions", "{0}"}}},
      {Opcode::kCollectivePermuteStart, {{"source_target_pairs", "{}"}}},
      {Opcode::kScan, {{"dimensions", "{0}"}, {"num_carries", "0"}}},
      {Opcode::kGetDimensionSize, {{"dimensions", "{0}"}}},
      {Opcode::kSetDimensionSize, {{"dimensions", "{0}"}}},
      {Opcode::kBatchNormTraining, {{"epsilon", "0.001"}, {"feature_index", "1"}}},
      {Opcode::kBatchNormInference, {{"epsilon", "0.001"}, {"feature_index", "1"}}},
      {Opcode::kBatchNormGrad, {{"epsilon", "0.001"}, {"feature_index", "1"}}},
  };
  int read = 0;
  for (const AttributeRule& rule : attribute_rules()) {
    if (rule.use != AttributeUse::kOwn) continue;
    for (Opcode opcode : rule.opcodes) {
      SCOPED_TRACE(str_cat(rule.name, " on ", opcode_name(opcode)));
      if (opcode == Opcode::kAsyncStart || opcode == Opcode::kAsyncUpdate || opcode == Opcode::kAsyncDone) {
        read += check_async_attribute(rule.name, opcode);
        continue;
      }
      const bool runs = eval::has_op_function(opcode) || is_collective_opcode(opcode);
      if (runs && rule.name != "to_apply") {
        ASSERT_TRUE(valid.contains(opcode)) << "add the opcode's valid attributes to this test";
      }
      Module module("m");
      Computation* entry = module.add_computation(std::make_unique<Computation>("e"));
      module.set_entry(entry);
      const Shape matrix = Shape::array(PrimitiveType::kF32, {2, 2});
      std::vector<Instruction*> operands;
      for (int i = 0; runs && i < (opcode == Opcode::kTriangularSolve || opcode == Opcode::kConvolution ? 2 : 1); ++i) {
        auto parameter = std::make_unique<Instruction>(Opcode::kParameter, str_cat("p", i), matrix);
        parameter->parameter_number = i;
        operands.push_back(entry->add_instruction(std::move(parameter)));
      }
      auto instruction = std::make_unique<Instruction>(opcode, "x", runs ? matrix : Shape::scalar(PrimitiveType::kF32));
      for (Instruction* operand : operands) instruction->append_operand(operand);
      if (runs) {
        for (const RawAttribute& attribute : valid.at(opcode))
          if (attribute.key != rule.name) instruction->extra_attributes.push_back(attribute);
        instruction->extra_attributes.push_back({std::string(rule.name), "bogus"});
      }
      entry->set_root(entry->add_instruction(std::move(instruction)));
      std::vector<Literal> arguments(operands.size(), Literal(matrix));
      StatusOr<Literal> result = evaluate_module(module, arguments);
      ASSERT_FALSE(result.ok());
      if (runs) {
        EXPECT_NE(result.status().message().find(str_cat(rule.name, "=")), std::string::npos)
            << result.status().to_string();
        ++read;
      } else {
        EXPECT_EQ(result.status().code(), StatusCode::kUnimplemented) << result.status().to_string();
      }
    }
  }
  EXPECT_GE(read, 15);  // topk 3, cholesky 1, triangular-solve 4, convolution 4, fft 2, rng-bit-generator 1
}

TEST(AttributeTableTest, TheParserRefusesWhatTheTableDoesNot) {
  auto parse = [](std::string_view attribute) {
    return parse_module(str_cat("HloModule m\nENTRY e {\n  p = f32[4] parameter(0)\n  ROOT r = f32[4] negate(p), ",
                                attribute, "\n}\n"));
  };
  EXPECT_TRUE(parse("metadata={op_name=\"x\"}").ok());
  EXPECT_TRUE(parse("statistics={visualizing_index=1}").ok());
  StatusOr<std::unique_ptr<Module>> unknown = parse("frobnicate=1");
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.status().message(),
            "unknown attribute frobnicate on negate %r (insitu never ignores an attribute silently)");
  StatusOr<std::unique_ptr<Module>> misplaced = parse("index=0");
  ASSERT_FALSE(misplaced.ok());
  EXPECT_EQ(misplaced.status().message(), "negate %r has no attribute index (it is an attribute of get-tuple-element)");
}

// Over every module the repository holds (the JAX corpus, the golden tests, the seeds): what
// the parser kept verbatim is in the table and is not a modelled attribute (which would be read
// and then ignored).
TEST(AttributeTableTest, VerbatimAttributesAreNeverModelledOnes) {
  int modules = 0, verbatim = 0;
  for (const char* folder : {"tests/data/jax", "tests/golden", "examples"}) {
    for (const auto& entry : fs::recursive_directory_iterator(fs::path(INSITU_SOURCE_DIR) / folder)) {
      if (entry.path().extension() != ".hlo") continue;
      std::ifstream in(entry.path());
      std::stringstream text;
      text << in.rdbuf();
      // golden files hold several cases (some of them errors): only whole modules that parse count
      StatusOr<std::unique_ptr<Module>> module = parse_module(text.str());
      if (!module.ok()) continue;
      ++modules;
      for (const Computation* computation : (*module)->computations())
        for (const Instruction* instruction : computation->instructions())
          for (const RawAttribute& attribute : instruction->extra_attributes) {
            ++verbatim;
            const AttributeRule* rule = find_attribute_rule(instruction->opcode(), attribute.key);
            ASSERT_NE(rule, nullptr) << entry.path() << ": " << attribute.key;
            if (attribute.key != "algorithm")
              EXPECT_NE(rule->use, AttributeUse::kModelled) << entry.path() << ": %" << instruction->name() << " "
                                                            << attribute.key;
          }
    }
  }
  EXPECT_GE(modules, 50);
  EXPECT_GT(verbatim, 0);
}

}  // namespace
}  // namespace insitu
