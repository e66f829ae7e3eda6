// The attribute table (attribute_table.h) walked rule by rule: every attribute the parser
// accepts is modelled, documented as metadata-only, a custom-call kernel's input, or belongs
// to an opcode insitu refuses to run; and what the parser keeps verbatim is never a modelled one.
#include "insitu/ir/attribute_table.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "insitu/evaluator/evaluator.h"
#include "insitu/ir/parser.h"
#include "insitu/support/str.h"

namespace insitu {
namespace {

namespace fs = std::filesystem;

TEST(AttributeTableTest, EveryRuleSaysWhy) {
  for (const AttributeRule& rule : attribute_rules()) {
    SCOPED_TRACE(std::string(rule.name));
    if (rule.use == AttributeUse::kModelled || rule.use == AttributeUse::kMetadataOnly)
      EXPECT_FALSE(rule.note.empty()) << "a modelled attribute names its consumer; a metadata-only one says why";
    // Only attributes that mean nothing for values (or order instructions) apply to every opcode.
    if (rule.opcodes.empty())
      EXPECT_TRUE(rule.use == AttributeUse::kMetadataOnly || rule.name == "control-predecessors");
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

// An attribute kept only because its opcode cannot run: the evaluator really refuses that
// opcode (so the attribute can never be ignored while computing a value).
TEST(AttributeTableTest, UnrunnableOpcodesAreRefused) {
  for (const AttributeRule& rule : attribute_rules()) {
    if (rule.use != AttributeUse::kUnrunnable) continue;
    for (Opcode opcode : rule.opcodes) {
      SCOPED_TRACE(str_cat(rule.name, " on ", opcode_name(opcode)));
      Module module("m");
      Computation* entry = module.add_computation(std::make_unique<Computation>("e"));
      module.set_entry(entry);
      entry->set_root(
          entry->add_instruction(std::make_unique<Instruction>(opcode, "x", Shape::scalar(PrimitiveType::kF32))));
      StatusOr<Literal> result = evaluate_module(module, {});
      ASSERT_FALSE(result.ok());
      EXPECT_EQ(result.status().code(), StatusCode::kUnimplemented) << result.status().to_string();
    }
  }
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
// and then ignored), except topk's, which topk.cc reads from there.
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
            if (instruction->opcode() != Opcode::kTopk && attribute.key != "algorithm")
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
