// Parser tests: the seed modules, long and short form, header attributes, shapes and layouts,
// literals, and every family of instruction attributes.
#include "test_util.h"
#include "insitu/ir/parser.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

namespace insitu {
namespace {

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}


Instruction* find(const Module& module, std::string_view name) {
  for (Computation* computation : module.computations())
    if (Instruction* instruction = computation->find_instruction(name)) return instruction;
  return nullptr;
}

TEST(ParserSeedTest, IrToHlo) {
  std::string text = read_file(std::string(INSITU_SEED_DIR) + "/ir_to_hlo.hlo");
  ASSERT_FALSE(text.empty());
  auto module = parse_text(text);
  ASSERT_NE(module, nullptr);
  EXPECT_EQ(module->name(), "IrToHlo.4");
  ASSERT_EQ(module->computations().size(), 1u);
  Computation* entry = module->entry();
  ASSERT_NE(entry, nullptr);
  EXPECT_EQ(entry->name(), "IrToHlo.4");
  EXPECT_EQ(entry->location(), (SourceLocation{3, 1}));
  ASSERT_EQ(entry->instruction_count(), 3);
  EXPECT_EQ(entry->root()->name(), "tuple.3");
  EXPECT_EQ(entry->root()->opcode(), Opcode::kTuple);
  ASSERT_EQ(entry->parameter_count(), 1);
  Instruction* p0 = entry->parameter(0);
  EXPECT_EQ(p0->name(), "p0.1");
  EXPECT_EQ(p0->location(), (SourceLocation{4, 3}));
  EXPECT_EQ(p0->shape(), Shape::array(PrimitiveType::kS32, {4}));
  ASSERT_TRUE(p0->has_metadata);
  ASSERT_EQ(p0->metadata.size(), 4u);
  EXPECT_EQ(p0->metadata[0].key, "op_type");
  EXPECT_EQ(p0->metadata[0].value, "\"xla__device_data\"");
  EXPECT_EQ(p0->metadata[3].key, "source_line");
  EXPECT_EQ(p0->metadata[3].value, "742");

  Instruction* call = find(*module, "custom-call.2");
  ASSERT_NE(call, nullptr);
  EXPECT_EQ(call->opcode(), Opcode::kCustomCall);
  EXPECT_EQ(call->custom_call.target, "tpu_custom_call");
  ASSERT_EQ(call->operand_count(), 1);
  EXPECT_EQ(call->operand(0), p0);
  ASSERT_TRUE(call->custom_call.operand_layout_constraints.has_value());
  EXPECT_EQ(call->custom_call.operand_layout_constraints->at(0), Shape::array(PrimitiveType::kS32, {4}));
  EXPECT_TRUE(call->custom_call.output_to_operand_aliasing.empty());
  EXPECT_EQ(call->backend_config.substr(0, 37), "{\"custom_call_config\": {\"body\": \"TUzv");
  // Verbatim: exactly the text after "backend_config=" up to the end of that line.
  size_t start = text.find("backend_config=") + std::string("backend_config=").size();
  EXPECT_EQ(call->backend_config, text.substr(start, text.find('\n', start) - start));
  EXPECT_EQ(module->config().entry_computation_layout->parameter_shapes.at(0), Shape::array(PrimitiveType::kS32, {4}));
}

TEST(ParserSeedTest, AfterOptimizations) {
  std::string text = read_file(std::string(INSITU_SEED_DIR) + "/sync_tensors_graph.after_optimizations.hlo");
  auto module = parse_text(text);
  ASSERT_NE(module, nullptr);
  const ModuleConfig& config = module->config();
  EXPECT_EQ(config.is_scheduled, true);
  EXPECT_EQ(config.replica_count, 4);
  ASSERT_EQ(config.input_output_alias.size(), 1u);
  EXPECT_EQ(config.input_output_alias[0], (InputOutputAlias{{0}, 0, {}, AliasKind::kMayAlias}));
  Layout tiled = Layout::descending(1);
  tiled.tiles = {Tile{{128}}};
  ASSERT_TRUE(config.entry_computation_layout.has_value());
  EXPECT_EQ(config.entry_computation_layout->parameter_shapes.at(0), Shape::array(PrimitiveType::kS32, {4}, tiled));
  EXPECT_EQ(config.entry_computation_layout->result_shape,
            Shape::tuple({Shape::array(PrimitiveType::kS32, {4}, tiled)}));
  Instruction* copy = find(*module, "copy.3");
  ASSERT_NE(copy, nullptr);
  EXPECT_EQ(copy->shape().layout().memory_space, 3);
  EXPECT_EQ(copy->shape().layout().tiles, tiled.tiles);
  Instruction* call = find(*module, "name");
  ASSERT_NE(call, nullptr);
  EXPECT_EQ(call->operand(0), copy);
  EXPECT_EQ(module->entry()->root()->name(), "tuple");
}

TEST(ParserSeedTest, BeforeOptimizations) {
  std::string text = read_file(std::string(INSITU_SEED_DIR) + "/sync_tensors_graph.before_optimizations.hlo");
  auto module = parse_text(text);
  ASSERT_NE(module, nullptr);
  ASSERT_EQ(module->config().buffer_donors.size(), 1u);
  EXPECT_EQ(module->config().buffer_donors[0], (BufferDonor{0, {}}));
  EXPECT_TRUE(module->config().input_output_alias.empty());
  EXPECT_FALSE(module->config().is_scheduled.has_value());
}


TEST(ParserModuleTest, LongFormWhile) {
  auto module = parse_text(R"(HloModule WhileWithScalarS32Result_module, entry_computation_layout={()->s32[]}

%body.v3 (prev.1: s32[]) -> s32[] {
  %constant = s32[] constant(1)
  %prev.1 = s32[] parameter(0)
  ROOT %add = s32[] add(s32[] %constant, s32[] %prev.1)
}

%condition.v3 (prev.2: s32[]) -> pred[] {
  %constant.1 = s32[] constant(5)
  %prev.2 = s32[] parameter(0)
  ROOT %greater-than = pred[] compare(s32[] %constant.1, s32[] %prev.2), direction=GT
}

ENTRY %WhileWithScalarS32Result.v2 () -> s32[] {
  %constant.2 = s32[] constant(0)
  ROOT %while = s32[] while(s32[] %constant.2), body=%body.v3, condition=%condition.v3
}
)");
  ASSERT_NE(module, nullptr);
  ASSERT_EQ(module->computations().size(), 3u);
  EXPECT_EQ(module->entry()->name(), "WhileWithScalarS32Result.v2");
  Instruction* loop = module->entry()->root();
  ASSERT_EQ(loop->called_computations().size(), 2u);
  EXPECT_EQ(loop->while_condition()->name(), "condition.v3");  // order fixed, not textual
  EXPECT_EQ(loop->while_body()->name(), "body.v3");
  Instruction* compare = find(*module, "greater-than");
  EXPECT_EQ(compare->comparison_direction, ComparisonDirection::kGt);
  EXPECT_EQ(compare->comparison_type, ComparisonType::kDefault);
  EXPECT_EQ(find(*module, "constant.1")->literal, Literal::scalar<int32_t>(5));
  EXPECT_EQ(find(*module, "add")->location(), (SourceLocation{6, 8}));
}

TEST(ParserModuleTest, ShortFormNoEntryAndExecutionThread) {
  auto module = parse_text(R"(HloModule short
add {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = f32[] add(x, y)
}, execution_thread="host"

main {
  p = f32[4,2] parameter(0)
  zero = f32[] constant(0)
  r = f32[4] reduce(p, zero), dimensions={1}, to_apply=add
  b = f32[4,2] broadcast(r), dimensions={0}
  last = f32[4,2] multiply(b, p)
}
)");
  ASSERT_NE(module, nullptr);
  EXPECT_EQ(module->entry()->name(), "main");  // no ENTRY: the last computation
  EXPECT_EQ(module->entry()->root()->name(), "last");  // no ROOT: the last instruction
  EXPECT_EQ(module->find_computation("add")->execution_thread(), "host");
  Instruction* reduce = find(*module, "r");
  EXPECT_EQ(reduce->dimensions, (std::vector<int64_t>{1}));
  ASSERT_EQ(reduce->called_computations().size(), 1u);
  EXPECT_EQ(reduce->to_apply(), module->find_computation("add"));
  EXPECT_EQ(reduce->shape().layout(), Layout::descending(1));
  EXPECT_EQ(find(*module, "p")->shape().layout().minor_to_major, (std::vector<int64_t>{1, 0}));
  EXPECT_EQ(find(*module, "b")->users().size(), 1u);
}

TEST(ParserModuleTest, HeaderAttributes) {
  auto module = parse_text(R"(HloModule m, is_scheduled=false, input_output_alias={ {0}: (0, {}, must-alias), {1}: (1, {1}) }, buffer_donor={ (1, {0}), (2, {}) }, alias_passthrough_params=true, allow_spmd_sharding_propagation_to_parameters={true,false}, allow_spmd_sharding_propagation_to_output={true}, replica_count=2, num_partitions=8, frontend_attributes={attr_a="x\"y",attr_b="2"}, xla_future_attribute={a=1, b={2}}

ENTRY e {
  a = f32[2] parameter(0)
  b = (f32[2], f32[2]) parameter(1)
  c = f32[2] parameter(2)
  ROOT t = (f32[2], f32[2]) tuple(a, c)
}
)");
  ASSERT_NE(module, nullptr);
  const ModuleConfig& config = module->config();
  EXPECT_EQ(config.is_scheduled, false);
  ASSERT_EQ(config.input_output_alias.size(), 2u);
  EXPECT_EQ(config.input_output_alias[0], (InputOutputAlias{{0}, 0, {}, AliasKind::kMustAlias}));
  EXPECT_EQ(config.input_output_alias[1], (InputOutputAlias{{1}, 1, {1}, AliasKind::kMayAlias}));
  ASSERT_EQ(config.buffer_donors.size(), 2u);
  EXPECT_EQ(config.buffer_donors[0], (BufferDonor{1, {0}}));
  EXPECT_EQ(config.buffer_donors[1], (BufferDonor{2, {}}));
  EXPECT_EQ(config.alias_passthrough_params, true);
  EXPECT_EQ(config.allow_spmd_sharding_propagation_to_parameters, "{true,false}");
  EXPECT_EQ(config.allow_spmd_sharding_propagation_to_output, "{true}");
  EXPECT_EQ(config.replica_count, 2);
  EXPECT_EQ(config.num_partitions, 8);
  ASSERT_EQ(config.frontend_attributes.size(), 2u);
  EXPECT_EQ(config.frontend_attributes[0], (std::pair<std::string, std::string>{"attr_a", "x\"y"}));
  ASSERT_EQ(config.extra_attributes.size(), 1u);
  EXPECT_EQ(config.extra_attributes[0], (RawAttribute{"xla_future_attribute", "{a=1, b={2}}"}));
  EXPECT_FALSE(config.entry_computation_layout.has_value());
}

TEST(ParserModuleTest, StackFrameSections) {
  const std::string sections = R"(FileNames
1 "<embedded module>"
2 "yet/another/test.py"

FunctionNames
1 "main"

FileLocations
1 {file_name_id=1 function_name_id=1 line=153 end_line=153 column=2 end_column=31}

StackFrames
1 {file_location_id=1 parent_frame_id=1})";
  auto module = parse_text("HloModule m, entry_computation_layout={()->pred[]}\n\n" + sections +
                         "\n\nENTRY %c () -> pred[] {\n  ROOT %k = pred[] constant(true), metadata={op_type=\"const\" "
                         "stack_frame_id=1}\n}\n");
  ASSERT_NE(module, nullptr);
  EXPECT_EQ(module->stack_frame_sections(), sections);
  EXPECT_EQ(module->entry()->root()->literal, Literal::scalar<bool>(true));
  EXPECT_EQ(module->entry()->root()->metadata[1], (RawAttribute{"stack_frame_id", "1"}));
}

TEST(ParserShapeTest, LayoutsAndShapes) {
  auto shape = parse_shape("pred[123,456]{1,0:T(2,128)S(3)SC(1:200)}");
  ASSERT_TRUE(shape.ok()) << shape.status().to_string();
  EXPECT_EQ(shape->layout().minor_to_major, (std::vector<int64_t>{1, 0}));
  EXPECT_EQ(shape->layout().tiles, (std::vector<Tile>{Tile{{2, 128}}}));
  EXPECT_EQ(shape->layout().memory_space, 3);
  EXPECT_EQ(shape->layout().other_fields, "SC(1:200)");

  shape = parse_shape("f32[8,128]{0,1:T(8,*)(2,1)L(4)E(4)S(1)M(8)}");
  ASSERT_TRUE(shape.ok()) << shape.status().to_string();
  EXPECT_EQ(shape->layout().tiles, (std::vector<Tile>{Tile{{8, kCombineDimension}}, Tile{{2, 1}}}));
  EXPECT_EQ(shape->layout().other_fields, "L(4)E(4)M(8)");
  EXPECT_EQ(shape->layout().memory_space, 1);

  shape = parse_shape("f32[]{:T(256)}");
  ASSERT_TRUE(shape.ok()) << shape.status().to_string();
  EXPECT_EQ(shape->rank(), 0);
  EXPECT_EQ(shape->layout().tiles, (std::vector<Tile>{Tile{{256}}}));

  shape = parse_shape("f32[<=8,3]");
  ASSERT_TRUE(shape.ok()) << shape.status().to_string();
  EXPECT_EQ(shape->dimensions(), (std::vector<int64_t>{8, 3}));
  EXPECT_EQ(shape->dynamic_dimensions(), (std::vector<bool>{true, false}));
  EXPECT_EQ(shape->layout(), Layout::descending(2));

  shape = parse_shape("(s32[], (f32[2]{0}, token[]), ())");
  ASSERT_TRUE(shape.ok()) << shape.status().to_string();
  EXPECT_EQ(*shape, Shape::tuple({Shape::scalar(PrimitiveType::kS32),
                                  Shape::tuple({Shape::array(PrimitiveType::kF32, {2}), Shape::token()}),
                                  Shape::tuple({})}));
  for (const char* type : {"pred", "s8", "s16", "s32", "s64", "u8", "u16", "u32", "u64", "f16", "bf16", "f32", "f64",
                           "c64", "c128"}) {
    auto parsed = parse_shape(std::string(type) + "[3]");
    ASSERT_TRUE(parsed.ok()) << type;
    EXPECT_EQ(primitive_type_name(parsed->element_type()), type);
  }
}

TEST(ParserLiteralTest, ScalarsArraysTuples) {
  auto parse = [](std::string_view text, std::string_view shape) {
    auto parsed_shape = parse_shape(shape);
    EXPECT_TRUE(parsed_shape.ok());
    auto literal = parse_literal(text, *parsed_shape);
    EXPECT_TRUE(literal.ok()) << text << ": " << literal.status().to_string();
    return literal.ok() ? *literal : Literal();
  };
  EXPECT_EQ(parse("-42", "s32[]"), Literal::scalar<int32_t>(-42));
  EXPECT_EQ(parse("18446744073709551615", "u64[]"), Literal::scalar<uint64_t>(UINT64_MAX));
  EXPECT_EQ(parse("true", "pred[]"), Literal::scalar<bool>(true));
  EXPECT_EQ(parse("1.5e-3", "f64[]"), Literal::scalar<double>(1.5e-3));
  EXPECT_EQ(parse("0x1p-3", "f32[]"), Literal::scalar<float>(0.125f));
  EXPECT_EQ(parse("500", "bf16[]"), Literal::scalar<BFloat16>(BFloat16::from_float(500)));
  EXPECT_EQ(parse("-2.5", "f16[]"), Literal::scalar<Half>(Half::from_float(-2.5f)));
  EXPECT_EQ(parse("(1, -2)", "c64[]"), Literal::scalar(std::complex<float>(1, -2)));
  Literal non_finite = parse("{nan, 7, inf, -inf}", "f32[4]");
  ASSERT_TRUE(non_finite.valid());
  EXPECT_TRUE(std::isnan(non_finite.data<float>()[0]));
  EXPECT_EQ(non_finite.data<float>()[2], INFINITY);
  EXPECT_EQ(non_finite.data<float>()[3], -INFINITY);
  EXPECT_EQ(parse("{ { 1, 2, 3 }, { 4, 5, 6 } }", "s32[2,3]"),
            Literal::from_values<int32_t>({2, 3}, {1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(parse("{ { /*i0=0*/ }, { /*i0=1*/ } }", "f32[2,0,4]"), Literal(*parse_shape("f32[2,0,4]")));
  EXPECT_EQ(parse("{...}", "s32[3]"), Literal::from_values<int32_t>({3}, {0, 0, 0}));
  EXPECT_EQ(parse("( { {1}, {2} }, {2, 42} )", "(f32[2,1], f32[2])"),
            Literal::tuple({Literal::from_values<float>({2, 1}, {1, 2}), Literal::vector<float>({2, 42})}));
}

TEST(ParserAttributeTest, TypedFields) {
  const char* text = R"(HloModule attrs

%add (x: f32[], y: f32[]) -> f32[] {
  %x = f32[] parameter(0)
  %y = f32[] parameter(1)
  ROOT %s = f32[] add(f32[] %x, f32[] %y)
}

%fused (p: f32[4]) -> f32[4] {
  ROOT %p = f32[4]{0} parameter(0)
}

%ge (a: f32[], b: f32[]) -> pred[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %c = pred[] compare(f32[] %a, f32[] %b), direction=GE, type=TOTALORDER
}

ENTRY %main (p0: f32[4], p1: s32[], p2: pred[]) -> f32[4] {
  %p0 = f32[4]{0} parameter(0), sharding={maximal device=1}, frontend_attributes={_xla_copy_reason="loop-carried",note="a\tb"}
  %p1 = s32[] parameter(1)
  %p2 = pred[] parameter(2)
  %slice = f32[2]{0} slice(f32[4]{0} %p0), slice={[0:4:2]}, metadata={op_type="x", op_name="y" source_line=3 profile_type={1}}
  %zero = f32[] constant(0)
  %pad = f32[9]{0} pad(f32[4]{0} %p0, f32[] %zero), padding=-1_2_1
  %dus = f32[4]{0} dynamic-update-slice(f32[4]{0} %p0, f32[2]{0} %slice, s32[] %p1)
  %ds = f32[2]{0} dynamic-slice(f32[4]{0} %dus, s32[] %p1), dynamic_slice_sizes={2}
  %rw = f32[2]{0} reduce-window(f32[4]{0} %p0, f32[] %zero), window={size=3 stride=2 pad=1_0 rhs_dilate=1}, to_apply=%add
  %dot = f32[] dot(f32[4]{0} %p0, f32[4]{0} %dus), lhs_contracting_dims={0}, rhs_contracting_dims={0}, operand_precision={highest,default}
  %fusion = f32[4]{0} fusion(f32[4]{0} %dus), kind=kLoop, calls=%fused, output_to_operand_aliasing={{}: (0, {})}
  %cc = f32[4]{0:T(128)} custom-call(f32[4]{0} %fusion, s32[] %p1), custom_call_target="kernel", api_version=API_VERSION_TYPED_FFI, custom_call_has_side_effect=true, output_to_operand_aliasing={{}: (0, {})}, operand_layout_constraints={f32[4]{0}, s32[]}, schedule=SCHEDULE_LATEST, backend_config="quoted \"cfg\"", control-predecessors={%dot, %ds}
  %cond = f32[4]{0} conditional(pred[] %p2, f32[4]{0} %p0, f32[4]{0} %cc), true_computation=%fused, false_computation=%fused
  %sas = f32[4]{0} select-and-scatter(f32[4]{0} %p0, f32[4]{0} %cond, f32[] %zero), window={size=1}, select=%ge, scatter=%add
  %idx = s32[2,1]{1,0} iota(), iota_dimension=0, statistics={visualizing_index=1,stat-1=33}
  %gather = f32[2,2]{1,0} gather(f32[4]{0} %sas, s32[2,1]{1,0} %idx), offset_dims={1}, collapsed_slice_dims={}, start_index_map={0}, index_vector_dim=1, slice_sizes={2}, indices_are_sorted=true
  %upd = f32[2]{0} constant({1, 2})
  %scatter = f32[4]{0} scatter(f32[4]{0} %sas, s32[2,1]{1,0} %idx, f32[2]{0} %upd), update_window_dims={}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, input_batching_dims={}, index_vector_dim=1, unique_indices=true, to_apply=%add
  %sort = f32[4]{0} sort(f32[4]{0} %scatter), dimensions={0}, is_stable=true, to_apply=%ge
  %rp = f32[4]{0} reduce-precision(f32[4]{0} %sort), exponent_bits=5, mantissa_bits=10
  %conv = f32[4]{0} convolution(f32[4]{0} %rp, f32[4]{0} %rp), dim_labels=b0f_0io->b0f, origin={{"x"}}
  %branches = f32[4]{0} conditional(s32[] %p1, f32[4]{0} %conv), branch_computations={%fused, %fused}
  %tuple = (f32[4]{0}) tuple(f32[4]{0} %branches)
  ROOT %gte = f32[4]{0} get-tuple-element((f32[4]{0}) %tuple), index=0
}
)";
  auto module = parse_text(text);
  ASSERT_NE(module, nullptr);
  Computation* fused = module->find_computation("fused");
  Computation* add = module->find_computation("add");
  Computation* ge = module->find_computation("ge");

  Instruction* p0 = find(*module, "p0");
  EXPECT_EQ(p0->sharding, "{maximal device=1}");
  ASSERT_EQ(p0->frontend_attributes.size(), 2u);
  EXPECT_EQ(*p0->frontend_attribute("_xla_copy_reason"), "loop-carried");
  EXPECT_EQ(*p0->frontend_attribute("note"), "a\tb");

  Instruction* slice = find(*module, "slice");
  EXPECT_EQ(slice->slice, (std::vector<SliceDimension>{{0, 4, 2}}));
  EXPECT_EQ(slice->metadata, (std::vector<RawAttribute>{{"op_type", "\"x\""}, {"op_name", "\"y\""},
                                                        {"source_line", "3"}, {"profile_type", "{1}"}}));
  EXPECT_EQ(find(*module, "pad")->padding, (std::vector<PaddingDimension>{{-1, 2, 1}}));
  EXPECT_EQ(find(*module, "dus")->operand_count(), 3);
  EXPECT_EQ(find(*module, "ds")->dynamic_slice_sizes, (std::vector<int64_t>{2}));

  Instruction* rw = find(*module, "rw");
  ASSERT_EQ(rw->window.size(), 1u);
  EXPECT_EQ(rw->window[0], (WindowDimension{3, 2, 1, 0, 1, 1, false}));
  EXPECT_EQ(rw->to_apply(), add);

  Instruction* dot = find(*module, "dot");
  EXPECT_EQ(dot->dot_dimension_numbers.lhs_contracting_dimensions, (std::vector<int64_t>{0}));
  EXPECT_EQ(dot->dot_dimension_numbers.rhs_contracting_dimensions, (std::vector<int64_t>{0}));
  EXPECT_TRUE(dot->dot_dimension_numbers.lhs_batch_dimensions.empty());
  EXPECT_EQ(dot->operand_precision, (std::vector<std::string>{"highest", "default"}));

  Instruction* fusion = find(*module, "fusion");
  EXPECT_EQ(fusion->fusion_kind, "kLoop");
  EXPECT_EQ(fusion->called_computations(), (std::vector<Computation*>{fused}));
  EXPECT_EQ(fusion->fusion_output_to_operand_aliasing, (std::vector<OutputOperandAlias>{{{}, 0, {}}}));

  Instruction* cc = find(*module, "cc");
  EXPECT_EQ(cc->custom_call.target, "kernel");
  EXPECT_EQ(cc->custom_call.api_version, "API_VERSION_TYPED_FFI");
  EXPECT_TRUE(cc->custom_call.has_side_effect);
  EXPECT_EQ(cc->custom_call.output_to_operand_aliasing, (std::vector<OutputOperandAlias>{{{}, 0, {}}}));
  ASSERT_TRUE(cc->custom_call.operand_layout_constraints.has_value());
  EXPECT_EQ(cc->custom_call.operand_layout_constraints->size(), 2u);
  EXPECT_EQ(cc->custom_call.schedule, "SCHEDULE_LATEST");
  EXPECT_EQ(cc->backend_config, "\"quoted \\\"cfg\\\"\"");
  EXPECT_EQ(cc->control_predecessors(), (std::vector<Instruction*>{dot, find(*module, "ds")}));
  EXPECT_EQ(dot->control_successors(), (std::vector<Instruction*>{cc}));

  EXPECT_EQ(find(*module, "cond")->called_computations(), (std::vector<Computation*>{fused, fused}));
  EXPECT_EQ(find(*module, "sas")->called_computations(), (std::vector<Computation*>{ge, add}));
  Instruction* iota = find(*module, "idx");
  EXPECT_EQ(iota->iota_dimension, 0);
  EXPECT_EQ(iota->extra_attributes, (std::vector<RawAttribute>{{"statistics", "{visualizing_index=1,stat-1=33}"}}));

  Instruction* gather = find(*module, "gather");
  EXPECT_EQ(gather->gather_dimension_numbers.offset_dims, (std::vector<int64_t>{1}));
  EXPECT_EQ(gather->gather_dimension_numbers.start_index_map, (std::vector<int64_t>{0}));
  EXPECT_EQ(gather->gather_dimension_numbers.index_vector_dim, 1);
  EXPECT_EQ(gather->dynamic_slice_sizes, (std::vector<int64_t>{2}));
  EXPECT_TRUE(gather->indices_are_sorted);

  Instruction* scatter = find(*module, "scatter");
  EXPECT_EQ(scatter->scatter_dimension_numbers.inserted_window_dims, (std::vector<int64_t>{0}));
  EXPECT_EQ(scatter->scatter_dimension_numbers.scatter_dims_to_operand_dims, (std::vector<int64_t>{0}));
  EXPECT_EQ(scatter->scatter_dimension_numbers.index_vector_dim, 1);
  EXPECT_TRUE(scatter->unique_indices);
  EXPECT_EQ(scatter->to_apply(), add);

  EXPECT_TRUE(find(*module, "sort")->is_stable);
  EXPECT_EQ(find(*module, "rp")->exponent_bits, 5);
  EXPECT_EQ(find(*module, "rp")->mantissa_bits, 10);
  EXPECT_EQ(find(*module, "conv")->extra_attributes,
            (std::vector<RawAttribute>{{"dim_labels", "b0f_0io->b0f"}, {"origin", "{{\"x\"}}"}}));
  EXPECT_EQ(find(*module, "branches")->called_computations(), (std::vector<Computation*>{fused, fused}));
  EXPECT_EQ(find(*module, "gte")->tuple_index, 0);
  EXPECT_EQ(find(*module, "c")->comparison_type, ComparisonType::kTotalOrder);
}

TEST(ParserAttributeTest, CustomCallLiteralAndComments) {
  auto module = parse_text(R"(HloModule custom_call
// a line comment
ENTRY %CustomCall () -> f32[1,2,3] {
  %constant = f32[1]{0} constant({12345}) /* block
  comment */
  ROOT %custom-call = f32[1,2,3]{0,2,1} custom-call(/*index=0*/f32[1]{0} %constant), custom_call_target="foo\"bar", literal=s32[2]{0} {1, 2}, backend_config={key: "value"}
}
)");
  ASSERT_NE(module, nullptr);
  Instruction* call = module->entry()->root();
  EXPECT_EQ(call->custom_call.target, "foo\"bar");
  EXPECT_EQ(call->extra_attributes, (std::vector<RawAttribute>{{"literal", "s32[2]{0} {1, 2}"}}));
  EXPECT_EQ(call->backend_config, "{key: \"value\"}");
  EXPECT_EQ(call->shape().layout().minor_to_major, (std::vector<int64_t>{0, 2, 1}));
}
}  // namespace
}  // namespace insitu
