// Pipeline: passes run in order, the verifier catches a pass that breaks the module and names
// it, after_pass sees every stage, and the optimization pipeline runs end to end with results
// equal to the reference evaluator's.
#include "insitu/passes/pipeline.h"

#include "pass_test_util.h"

namespace insitu {
namespace {


constexpr std::string_view kSmall = R"(
HloModule m

ENTRY main {
  a = f32[4] parameter(0)
  ROOT n = f32[4] negate(a)
}
)";

TEST(PipelineTest, RunsPassesInOrderAndReportsEachStage) {
  auto module = parse_verified(kSmall);
  std::vector<std::string> seen;
  Pipeline pipeline({.after_pass = [&](int index, std::string_view name, const Module& m) {
    seen.push_back(std::to_string(index) + ":" + std::string(name) + ":" + m.entry()->root()->name());
  }});
  pipeline.add(make_pass("rename-root", [](Module& m) -> StatusOr<bool> {
    m.entry()->root()->set_name("renamed");
    return true;
  }));
  pipeline.add(make_pass("nothing", [](Module&) -> StatusOr<bool> { return false; }));
  auto changed = pipeline.run(*module);
  ASSERT_TRUE(changed.ok()) << changed.status().to_string();
  EXPECT_TRUE(*changed);
  EXPECT_EQ(seen, (std::vector<std::string>{"0:rename-root:renamed", "1:nothing:renamed"}));
  EXPECT_EQ(pipeline.pass_names(), (std::vector<std::string_view>{"rename-root", "nothing"}));
}

TEST(PipelineTest, UnchangedWhenNoPassChanges) {
  auto module = parse_verified(kSmall);
  Pipeline pipeline;
  pipeline.add(make_pass("nothing", [](Module&) -> StatusOr<bool> { return false; }));
  auto changed = pipeline.run(*module);
  ASSERT_TRUE(changed.ok());
  EXPECT_FALSE(*changed);
}

TEST(PipelineTest, VerifierNamesThePassThatBrokeTheModule) {
  auto module = parse_verified(kSmall);
  int later_passes_run = 0;
  Pipeline pipeline;
  pipeline.add(make_pass("break-shapes", [](Module& m) -> StatusOr<bool> {
    m.entry()->root()->set_shape(Shape::array(PrimitiveType::kF32, {5}));
    return true;
  }));
  pipeline.add(make_pass("later", [&](Module&) -> StatusOr<bool> {
    ++later_passes_run;
    return false;
  }));
  auto changed = pipeline.run(*module);
  ASSERT_FALSE(changed.ok());
  EXPECT_NE(changed.status().message().find("after pass break-shapes"), std::string::npos)
      << changed.status().message();
  EXPECT_EQ(later_passes_run, 0);

  // without verification the broken module goes through
  auto unverified = parse_verified(kSmall);
  Pipeline lenient({.verify_each = false});
  lenient.add(make_pass("break-shapes", [](Module& m) -> StatusOr<bool> {
    m.entry()->root()->set_shape(Shape::array(PrimitiveType::kF32, {5}));
    return true;
  }));
  EXPECT_TRUE(lenient.run(*unverified).ok());
}

// An invalid input (the C++ API does not go through the CLI's verifier) is the caller's
// located error, not "a bug in" the first pass, and no pass runs on it.
TEST(PipelineTest, AnInvalidInputIsTheCallersErrorNotAPassBug) {
  auto parsed = parse_module(R"(
HloModule m

ENTRY main {
  s = u64[2] parameter(0)
  ROOT c = u64[3] concatenate(s, s), dimensions={0}
}
)");
  ASSERT_TRUE(parsed.ok()) << parsed.status().to_string();  // it parses; the verifier refuses it
  std::unique_ptr<Module> module = std::move(parsed).value();
  int passes_run = 0;
  Pipeline pipeline;
  pipeline.add(make_pass("counts", [&](Module&) -> StatusOr<bool> {
    ++passes_run;
    return false;
  }));
  auto changed = pipeline.run(*module);
  ASSERT_FALSE(changed.ok());
  EXPECT_EQ(changed.status().message().find("after pass"), std::string::npos) << changed.status().message();
  EXPECT_NE(changed.status().message().find("does not match the inferred shape u64[4]"), std::string::npos)
      << changed.status().message();
  EXPECT_EQ(changed.status().location().line, 6);
  EXPECT_EQ(passes_run, 0);
}

TEST(PipelineTest, PassErrorCarriesThePassName) {
  auto module = parse_verified(kSmall);
  Pipeline pipeline;
  pipeline.add(make_pass("fails", [](Module&) -> StatusOr<bool> {
    return invalid_argument("the module is not what this pass needs");
  }));
  auto changed = pipeline.run(*module);
  ASSERT_FALSE(changed.ok());
  EXPECT_EQ(changed.status().message(), "in pass fails: the module is not what this pass needs");
}

TEST(PipelineTest, OptimizationPipelineReadsAsTheDesignedStages) {
  std::vector<std::string_view> names = optimization_pipeline().pass_names();
  ASSERT_GE(names.size(), 13u);
  EXPECT_EQ(names[0], "loop-peeling");
  EXPECT_EQ(names[1], "flatten-calls");
  EXPECT_EQ(names[2], "bitcast-lowering");
  EXPECT_EQ(names[3], "simplify");
  EXPECT_EQ(names[4], "cse");
  EXPECT_EQ(names[5], "scan-in-place");
  EXPECT_EQ(names[6], "slice-update-folding");
  EXPECT_EQ(names[7], "layout-assignment");
  EXPECT_EQ(names[8], "fusion");
  EXPECT_EQ(names[9], "reshape-bitcasts");
  EXPECT_EQ(names[10], "row-fusion");
  EXPECT_EQ(names[11], "conditional-in-place");
  EXPECT_EQ(names[12], "donor-matching");
  EXPECT_NE(std::find(names.begin(), names.end(), "copy-insertion"), names.end());
}

TEST(PipelineTest, OptimizationPipelineKeepsResultsAndPairsDonorsByDataflow) {
  auto module = parse_verified(R"(
HloModule m, buffer_donor={ (0, {}), (1, {}) }

update {
  buffer = f32[8] parameter(0)
  rows = f32[2] parameter(1)
  at = s32[] parameter(2)
  ROOT d = f32[8] dynamic-update-slice(buffer, rows, at)
}

ENTRY main {
  p0 = f32[8] parameter(0)
  p1 = f32[8] parameter(1)
  u = f32[2] parameter(2)
  i = s32[] parameter(3)
  d1 = f32[8] call(p1, u, i), to_apply=update
  d0 = f32[8] call(p0, u, i), to_apply=update
  t = (f32[8], f32[8]) tuple(d1, d0)
  g0 = f32[8] get-tuple-element(t), index=0
  g1 = f32[8] get-tuple-element(t), index=1
  ROOT out = (f32[8], f32[8]) tuple(g0, g1)
}
)");
  std::vector<std::string> stages;
  auto optimized = testing::run_and_compare(
      *module,
      [&](Module& m) {
        return optimization_pipeline({.after_pass = [&](int, std::string_view name, const Module&) {
                                        stages.emplace_back(name);
                                      }})
            .run(m);
      },
      /*expect_changed=*/true);
  EXPECT_EQ(stages.size(), optimization_pipeline().pass_names().size());
  EXPECT_EQ(optimized->computations().size(), 1u);
  EXPECT_TRUE(optimized->config().buffer_donors.empty());
  ASSERT_EQ(optimized->config().input_output_alias.size(), 2u);
  EXPECT_EQ(optimized->config().input_output_alias[0].parameter_number, 1);
  EXPECT_EQ(optimized->config().input_output_alias[1].parameter_number, 0);
  // both updates happen in the donated buffers: no copy is needed
  EXPECT_EQ(testing::count_opcode(*optimized, Opcode::kCopy), 0) << print_module(*optimized);
}

}  // namespace
}  // namespace insitu
