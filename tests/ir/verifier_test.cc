// Verifier tests on HLO text: the seed modules and good modules pass; each bad module fails
// with the expected "LINE:COL: error: message".
#include "insitu/ir/verifier.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "insitu/ir/parser.h"
#include "insitu/support/str.h"

namespace insitu {
namespace {

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

// "ok", or the verifier's "LINE:COL: error: message"; parse errors are marked as such.
std::string verify_text(std::string_view text) {
  auto module = parse_module(text);
  if (!module.ok()) return "parse error: " + module.status().to_string();
  return verify_module(**module).to_string();
}

TEST(VerifierSeedTest, SeedModulesVerify) {
  for (const char* name : {"ir_to_hlo.hlo", "sync_tensors_graph.before_optimizations.hlo",
                           "sync_tensors_graph.after_optimizations.hlo"}) {
    std::string text = read_file(std::string(INSITU_SEED_DIR) + "/" + name);
    ASSERT_FALSE(text.empty()) << name;
    EXPECT_EQ(verify_text(text), "ok") << name;
  }
}

TEST(VerifierTest, GoodModuleWithCalledComputations) {
  EXPECT_EQ(verify_text(R"(HloModule good, input_output_alias={ {1}: (1, {}, must-alias) }, buffer_donor={ (0, {}) }

add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}

cond {
  st = (s32[], f32[4]) parameter(0)
  i = s32[] get-tuple-element(st), index=0
  n = s32[] constant(3)
  ROOT lt = pred[] compare(i, n), direction=LT
}

body {
  st = (s32[], f32[4]) parameter(0)
  i = s32[] get-tuple-element(st), index=0
  v = f32[4] get-tuple-element(st), index=1
  one = s32[] constant(1)
  next = s32[] add(i, one)
  w = f32[4] add(v, v)
  ROOT t = (s32[], f32[4]) tuple(next, w)
}

ENTRY main {
  p0 = f32[2,4] parameter(0)
  p1 = f32[4] parameter(1)
  zero = f32[] constant(0)
  r = f32[4] reduce(p0, zero), dimensions={0}, to_apply=add
  i0 = s32[] constant(0)
  init = (s32[], f32[4]) tuple(i0, r)
  loop = (s32[], f32[4]) while(init), condition=cond, body=body
  out = f32[4] get-tuple-element(loop), index=1
  sum = f32[4] add(out, p1)
  ROOT result = (f32[4], f32[4]) tuple(out, sum)
}
)"),
            "ok");
}

TEST(VerifierTest, ParameterLayoutMayDifferFromEntryLayout) {
  EXPECT_EQ(verify_text(R"(HloModule m, entry_computation_layout={(f32[2,3]{0,1})->f32[2,3]{1,0}}

ENTRY e {
  p = f32[2,3]{1,0} parameter(0)
  ROOT c = f32[2,3]{1,0} copy(p)
}
)"),
            "ok");
}

struct BadCase {
  const char* name;
  const char* text;
  const char* expected;
};

class VerifierBadModuleTest : public ::testing::TestWithParam<BadCase> {};

TEST_P(VerifierBadModuleTest, FailsWithLocatedMessage) {
  EXPECT_EQ(verify_text(GetParam().text), GetParam().expected);
}

const BadCase kBadCases[] = {
    {"ShapeMismatch",
     "HloModule m\n\nENTRY e {\n  a = s32[8] parameter(0)\n  %add.3 = s32[4] add(a, a)\n  ROOT t = (s32[4]) tuple(%add.3)\n}\n",
     "5:3: error: %add.3: shape s32[4] does not match the inferred shape s32[8] of add(s32[8], s32[8])"},
    {"GetTupleElementOfArray",
     "HloModule m\n\nENTRY e {\n  a = f32[2] parameter(0)\n  ROOT g = f32[2] get-tuple-element(a), index=0\n}\n",
     "5:8: error: %g: get-tuple-element needs a tuple operand, got f32[2]"},
    {"LogicalOpOnFloat",
     "HloModule m\n\nENTRY e {\n  a = f32[2] parameter(0)\n  ROOT x = f32[2] and(a, a)\n}\n",
     "5:8: error: %x: and needs pred or integer operands, got f32"},
    {"ShiftOnFloat",
     "HloModule m\n\nENTRY e {\n  a = f32[2] parameter(0)\n  ROOT x = f32[2] shift-left(a, a)\n}\n",
     "5:8: error: %x: shift-left needs integer operands, got f32"},
    {"CompareResultNotPred",
     "HloModule m\n\nENTRY e {\n  a = f32[2] parameter(0)\n  ROOT x = f32[2] compare(a, a), direction=LT\n}\n",
     "5:8: error: %x: shape f32[2] does not match the inferred shape pred[2] of compare(f32[2], f32[2])"},
    {"ImplicitBroadcast",
     "HloModule m\n\nENTRY e {\n  a = f32[2] parameter(0)\n  b = f32[] parameter(1)\n  ROOT x = f32[2] multiply(a, b)\n}\n",
     "6:8: error: %x: multiply operands must have one shape (HLO has no implicit broadcast), got f32[2] and f32[]; "
     "broadcast explicitly"},
    {"BroadcastDimensions",
     "HloModule m\n\nENTRY e {\n  a = f32[3] parameter(0)\n  ROOT b = f32[3,2] broadcast(a), dimensions={1}\n}\n",
     "5:8: error: %b: broadcast operand dimension 0 (size 3) maps to output dimension 1 (size 2); sizes must be equal or "
     "the operand's 1"},
    {"ReshapeElementCount",
     "HloModule m\n\nENTRY e {\n  a = f32[6] parameter(0)\n  ROOT r = f32[4] reshape(a)\n}\n",
     "5:8: error: %r: reshape from f32[6] (6 elements) to f32[4] (4 elements) changes the element count"},
    {"TransposeNotPermutation",
     "HloModule m\n\nENTRY e {\n  a = f32[2,3] parameter(0)\n  ROOT t = f32[3,2] transpose(a), dimensions={1,1}\n}\n",
     "5:8: error: %t: transpose dimensions={1,1} repeats dimension 1"},
    {"DynamicSliceFloatIndex",
     "HloModule m\n\nENTRY e {\n  a = f32[8] parameter(0)\n  i = f32[] parameter(1)\n"
     "  ROOT d = f32[2] dynamic-slice(a, i), dynamic_slice_sizes={2}\n}\n",
     "6:8: error: %d: dynamic-slice start index 0 (%i) must be an integer scalar, got f32[]"},
    {"GetTupleElementOutOfRange",
     "HloModule m\n\nENTRY e {\n  p = (f32[2], s32[]) parameter(0)\n  ROOT g = f32[2] get-tuple-element(p), index=2\n}\n",
     "5:8: error: %g: index=2 is out of range for (f32[2], s32[]) (2 elements)"},
    {"ReduceToApplyWrongArity",
     "HloModule m\n\nneg {\n  a = f32[] parameter(0)\n  ROOT n = f32[] negate(a)\n}\n\n"
     "ENTRY e {\n  p = f32[4] parameter(0)\n  z = f32[] constant(0)\n  ROOT r = f32[] reduce(p, z), dimensions={0}, to_apply=neg\n}\n",
     "11:8: error: %r: to_apply computation %neg takes 1 parameters, but reduce passes 2 (f32[], f32[])"},
    {"WhileConditionNotPred",
     "HloModule m\n\ncond {\n  s = s32[] parameter(0)\n  ROOT c = s32[] copy(s)\n}\n\nbody {\n  s = s32[] parameter(0)\n"
     "  ROOT c = s32[] copy(s)\n}\n\nENTRY e {\n  p = s32[] parameter(0)\n  ROOT w = s32[] while(p), condition=cond, body=body\n}\n",
     "15:8: error: %w: condition computation %cond returns s32[] but while needs pred[]"},
    {"WhileBodyChangesState",
     "HloModule m\n\ncond {\n  s = s32[] parameter(0)\n  ROOT c = pred[] constant(true)\n}\n\nbody {\n  s = s32[] parameter(0)\n"
     "  ROOT c = f32[] convert(s)\n}\n\nENTRY e {\n  p = s32[] parameter(0)\n  ROOT w = s32[] while(p), condition=cond, body=body\n}\n",
     "15:8: error: %w: body computation %body returns f32[] but while needs s32[]"},
    {"ConditionalBranchMismatch",
     "HloModule m\n\nb0 {\n  x = f32[2] parameter(0)\n  ROOT n = f32[2] negate(x)\n}\n\nb1 {\n  x = f32[2] parameter(0)\n"
     "  ROOT c = s32[2] convert(x)\n}\n\nENTRY e {\n  p = pred[] parameter(0)\n  x = f32[2] parameter(1)\n"
     "  ROOT c = f32[2] conditional(p, x, x), true_computation=b0, false_computation=b1\n}\n",
     "16:8: error: %c: branch 1 computation %b1 returns s32[2] but conditional needs f32[2]"},
    {"SortComparatorNotPred",
     "HloModule m\n\nless {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT s = f32[] add(a, b)\n}\n\n"
     "ENTRY e {\n  p = f32[8] parameter(0)\n  ROOT s2 = f32[8] sort(p), dimensions={0}, to_apply=less\n}\n",
     "11:8: error: %s2: comparator computation %less returns f32[] but sort needs pred[]"},
    {"BitcastByteSize",
     "HloModule m\n\nENTRY e {\n  a = f32[4] parameter(0)\n  ROOT b = f64[4] bitcast(a)\n}\n",
     "5:8: error: %b: bitcast from f32[4] (16 bytes) to f64[4] (32 bytes) changes the byte size; use reshape or convert"},
    {"CustomCallLayoutConstraintShape",
     "HloModule m\n\nENTRY e {\n  a = s32[4] parameter(0)\n"
     "  ROOT c = s32[4] custom-call(a), custom_call_target=\"k\", operand_layout_constraints={s32[8]{0}}\n}\n",
     "5:8: error: %c: operand_layout_constraints[0] is s32[8] but operand 0 (%a) is s32[4]"},
    {"CustomCallAliasShape",
     "HloModule m\n\nENTRY e {\n  a = s32[8] parameter(0)\n"
     "  ROOT c = s32[4] custom-call(a), custom_call_target=\"k\", output_to_operand_aliasing={{}: (0, {})}\n}\n",
     "5:8: error: %c: output_to_operand_aliasing {}: (0, {}): output s32[4] and operand s32[8] differ; an aliased output "
     "must have its operand's shape"},
    {"AliasByteSizeTuple",
     "HloModule m, input_output_alias={ {0}: (0, {}, may-alias) }\n\nENTRY e {\n  p = f32[4] parameter(0)\n"
     "  c = f32[8] concatenate(p, p), dimensions={0}\n  ROOT t = (f32[8]) tuple(c)\n}\n",
     "1:14: error: input_output_alias: output {0} (f32[8], 32 bytes) cannot alias parameter 0 {} (f32[4], 16 bytes): "
     "aliased buffers must have equal byte sizes"},
    {"AliasOutputIndexMissing",
     "HloModule m, input_output_alias={ {1}: (0, {}, may-alias) }\n\nENTRY e {\n  p = f32[4] parameter(0)\n"
     "  ROOT t = (f32[4]) tuple(p)\n}\n",
     "1:14: error: input_output_alias: output {1} does not exist in the entry result (f32[4]); use an index of the result"},
    {"AliasParameterMissing",
     "HloModule m, input_output_alias={ {0}: (2, {}, may-alias) }\n\nENTRY e {\n  p = f32[4] parameter(0)\n"
     "  ROOT t = (f32[4]) tuple(p)\n}\n",
     "1:14: error: input_output_alias: parameter 2 does not exist; the entry computation %e has 1 parameters"},
    {"AliasParameterTwice",
     "HloModule m, input_output_alias={ {0}: (0, {}, may-alias), {1}: (0, {}, may-alias) }\n\nENTRY e {\n"
     "  p = f32[4] parameter(0)\n  ROOT t = (f32[4], f32[4]) tuple(p, p)\n}\n",
     "1:14: error: input_output_alias: parameter 0 {} is aliased to outputs {0} and {1}; a parameter buffer can back only "
     "one output, remove one alias"},
    {"MustAliasLayoutDiffers",
     "HloModule m, input_output_alias={ {0}: (0, {}, must-alias) }, "
     "entry_computation_layout={(f32[2,3]{0,1})->(f32[2,3]{1,0})}\n\nENTRY e {\n  p = f32[2,3] parameter(0)\n"
     "  ROOT t = (f32[2,3]) tuple(p)\n}\n",
     "1:14: error: input_output_alias: must-alias output {0} (f32[2,3]{1,0}) and parameter 0 {} (f32[2,3]{0,1}) must have "
     "identical shapes, layouts and memory spaces; make them agree or use may-alias"},
    {"DonorAlsoAliased",
     "HloModule m, input_output_alias={ {0}: (0, {}, may-alias) }, buffer_donor={ (0, {}) }\n\nENTRY e {\n"
     "  p = f32[4] parameter(0)\n  ROOT t = (f32[4]) tuple(p)\n}\n",
     "1:62: error: buffer_donor: parameter 0 {} is also in input_output_alias (output {0}); a buffer is either donated or "
     "aliased, remove one of the two"},
    {"DonorParameterMissing",
     "HloModule m, buffer_donor={ (1, {}) }\n\nENTRY e {\n  p = f32[4] parameter(0)\n  ROOT t = (f32[4]) tuple(p)\n}\n",
     "1:14: error: buffer_donor: parameter 1 does not exist; the entry computation %e has 1 parameters"},
    {"EntryLayoutParameterCount",
     "HloModule m, entry_computation_layout={(f32[4]{0}, f32[4]{0})->f32[4]{0}}\n\nENTRY e {\n  p = f32[4] parameter(0)\n"
     "  ROOT c = f32[4] copy(p)\n}\n",
     "1:14: error: entry_computation_layout has 2 parameters but the entry computation %e has 1; make them agree"},
    {"EntryLayoutResultDims",
     "HloModule m, entry_computation_layout={(f32[4]{0})->f32[8]{0}}\n\nENTRY e {\n  p = f32[4] parameter(0)\n"
     "  ROOT c = f32[4] copy(p)\n}\n",
     "1:14: error: entry_computation_layout result is f32[8] but the entry root %c is f32[4]; they must agree except for "
     "layouts"},
    {"SelectPredicateNotPred",
     "HloModule m\n\nENTRY e {\n  p = s32[4] parameter(0)\n  x = f32[4] parameter(1)\n"
     "  ROOT s = f32[4] select(p, x, x)\n}\n",
     "6:8: error: %s: select needs a pred predicate, got s32[4]"},
};

INSTANTIATE_TEST_SUITE_P(Cases, VerifierBadModuleTest, ::testing::ValuesIn(kBadCases),
                         [](const ::testing::TestParamInfo<BadCase>& info) { return std::string(info.param.name); });

// Structural errors the parser cannot produce, on modules built in code.
class VerifierStructureTest : public ::testing::Test {
 protected:
  VerifierStructureTest() : module_("m") {
    entry_ = module_.add_computation(std::make_unique<Computation>("e"));
    module_.set_entry(entry_);
  }
  Instruction* add(Computation* computation, Opcode opcode, std::string name, Shape shape,
                   std::vector<Instruction*> operands = {}, int64_t parameter_number = -1) {
    auto instruction = std::make_unique<Instruction>(opcode, std::move(name), std::move(shape));
    instruction->parameter_number = parameter_number;
    for (Instruction* operand : operands) instruction->append_operand(operand);
    return computation->add_instruction(std::move(instruction));
  }
  static Shape f32x4() { return Shape::array(PrimitiveType::kF32, {4}); }

  Module module_;
  Computation* entry_;
};

TEST_F(VerifierStructureTest, BuiltModulePasses) {
  Instruction* p = add(entry_, Opcode::kParameter, "p", f32x4(), {}, 0);
  entry_->set_root(add(entry_, Opcode::kNegate, "n", f32x4(), {p}));
  EXPECT_EQ(verify_module(module_).to_string(), "ok");
}

TEST_F(VerifierStructureTest, NoEntry) {
  module_.set_entry(nullptr);
  EXPECT_EQ(verify_module(module_).to_string(), "error: module m has no ENTRY computation; mark one with ENTRY");
}

TEST_F(VerifierStructureTest, NoRoot) {
  add(entry_, Opcode::kParameter, "p", f32x4(), {}, 0);
  EXPECT_EQ(verify_module(module_).to_string(), "error: computation %e has no ROOT instruction");
}

TEST_F(VerifierStructureTest, OperandDefinedLater) {
  Instruction* p = add(entry_, Opcode::kParameter, "p", f32x4(), {}, 0);
  Instruction* later = std::make_unique<Instruction>(Opcode::kNegate, "later", f32x4()).release();
  std::unique_ptr<Instruction> owner(later);
  later->append_operand(p);
  Instruction* user = add(entry_, Opcode::kCopy, "user", f32x4(), {later});
  entry_->add_instruction(std::move(owner));
  entry_->set_root(user);
  EXPECT_EQ(verify_module(module_).to_string(),
            "error: %user uses %later before it is defined; instructions must come after their operands");
}

TEST_F(VerifierStructureTest, ParameterNumberGap) {
  Instruction* p = add(entry_, Opcode::kParameter, "p", f32x4(), {}, 1);
  entry_->set_root(p);
  EXPECT_EQ(verify_module(module_).to_string(),
            "error: computation %e has no parameter(0) but has parameter(1); number parameters 0..n-1");
}

TEST_F(VerifierStructureTest, OperandFromAnotherComputation) {
  Computation* other = module_.add_computation(std::make_unique<Computation>("other"));
  Instruction* q = add(other, Opcode::kParameter, "q", f32x4(), {}, 0);
  other->set_root(q);
  entry_->set_root(add(entry_, Opcode::kCopy, "c", f32x4(), {q}));
  EXPECT_EQ(verify_module(module_).to_string(),
            "error: %c uses %q from another computation (%other); pass values to called computations as operands");
}

// The second of two instructions of one name is the one named (parsed text never gets here:
// the parser refuses the name first).
TEST_F(VerifierStructureTest, DuplicateInstructionName) {
  Instruction* p = add(entry_, Opcode::kParameter, "p", f32x4(), {}, 0);
  Instruction* twin = add(entry_, Opcode::kNegate, "t", f32x4(), {p});
  add(entry_, Opcode::kNegate, "a", f32x4(), {twin});
  entry_->set_root(add(entry_, Opcode::kNegate, "t", f32x4(), {twin}));
  EXPECT_EQ(verify_module(module_).to_string(), "error: instruction name %t is used twice in %e; rename one");
}

// A computation longer than the verifier searches (32 instructions) is checked the same way.
TEST_F(VerifierStructureTest, OperandDefinedLaterInALongComputation) {
  Instruction* value = add(entry_, Opcode::kParameter, "p", f32x4(), {}, 0);
  for (int i = 0; i < 40; ++i) value = add(entry_, Opcode::kNegate, str_cat("n", i), f32x4(), {value});
  auto later = std::make_unique<Instruction>(Opcode::kNegate, "later", f32x4());
  later->append_operand(value);
  Instruction* user = add(entry_, Opcode::kCopy, "user", f32x4(), {later.get()});
  entry_->add_instruction(std::move(later));
  entry_->set_root(user);
  EXPECT_EQ(verify_module(module_).to_string(),
            "error: %user uses %later before it is defined; instructions must come after their operands");
}

TEST_F(VerifierStructureTest, DuplicateComputationName) {
  Instruction* p = add(entry_, Opcode::kParameter, "p", f32x4(), {}, 0);
  entry_->set_root(p);
  Computation* twin = module_.add_computation(std::make_unique<Computation>("e"));
  twin->set_root(add(twin, Opcode::kParameter, "p", f32x4(), {}, 0));
  EXPECT_EQ(verify_module(module_).to_string(), "error: computation name %e is used twice; rename one");
}

}  // namespace
}  // namespace insitu
