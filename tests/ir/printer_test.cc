// Printer: XLA's HLO text for IR built in code, in long and short form.
#include "insitu/ir/printer.h"

#include <gtest/gtest.h>

#include "insitu/ir/module_equal.h"

namespace insitu {
namespace {

Shape s32(std::vector<int64_t> dims) { return Shape::array(PrimitiveType::kS32, std::move(dims)); }
Shape f32(std::vector<int64_t> dims) { return Shape::array(PrimitiveType::kF32, std::move(dims)); }
Shape pred() { return Shape::scalar(PrimitiveType::kPred); }

Instruction* add(Computation* c, Opcode opcode, const std::string& name, Shape shape,
                 std::vector<Instruction*> operands = {}) {
  auto instruction = std::make_unique<Instruction>(opcode, name, std::move(shape));
  for (Instruction* operand : operands) instruction->append_operand(operand);
  return c->add_instruction(std::move(instruction));
}

Instruction* parameter(Computation* c, int64_t number, const std::string& name, Shape shape) {
  auto instruction = std::make_unique<Instruction>(Opcode::kParameter, name, std::move(shape));
  instruction->parameter_number = number;
  return c->add_instruction(std::move(instruction));
}

// add(a, b) over s32 scalars, named `name`.
Computation* scalar_add(Module& module, const std::string& name) {
  Computation* c = module.add_computation(std::make_unique<Computation>(name));
  Instruction* a = parameter(c, 0, "x", s32({}));
  Instruction* b = parameter(c, 1, "y", s32({}));
  c->set_root(add(c, Opcode::kAdd, "sum", s32({}), {a, b}));
  return c;
}

TEST(PrinterTest, SeedStyleLongForm) {
  Module module("IrToHlo.4");
  module.config().entry_computation_layout =
      ComputationLayout{{s32({4})}, Shape::tuple({s32({4})})};
  Computation* entry = module.add_computation(std::make_unique<Computation>("IrToHlo.4"));
  module.set_entry(entry);
  Instruction* p0 = parameter(entry, 0, "p0.1", s32({4}));
  p0->has_metadata = true;
  p0->metadata = {{"op_type", "\"xla__device_data\""}, {"source_line", "742"}};
  Instruction* call = add(entry, Opcode::kCustomCall, "custom-call.2", s32({4}), {p0});
  call->custom_call.target = "tpu_custom_call";
  call->custom_call.operand_layout_constraints = std::vector<Shape>{s32({4})};
  call->backend_config = R"({"custom_call_config": {"body": "TUzv"}})";
  entry->set_root(add(entry, Opcode::kTuple, "tuple.3", Shape::tuple({s32({4})}), {call}));

  EXPECT_EQ(print_module(module),
            "HloModule IrToHlo.4, entry_computation_layout={(s32[4]{0})->(s32[4]{0})}\n"
            "\n"
            "ENTRY %IrToHlo.4 (p0.1: s32[4]) -> (s32[4]) {\n"
            "  %p0.1 = s32[4]{0} parameter(0), metadata={op_type=\"xla__device_data\" source_line=742}\n"
            "  %custom-call.2 = s32[4]{0} custom-call(s32[4]{0} %p0.1), custom_call_target=\"tpu_custom_call\", "
            "operand_layout_constraints={s32[4]{0}}, backend_config={\"custom_call_config\": {\"body\": \"TUzv\"}}\n"
            "  ROOT %tuple.3 = (s32[4]{0}) tuple(s32[4]{0} %custom-call.2)\n"
            "}\n");

  PrintOptions short_form;
  short_form.long_form = false;
  EXPECT_EQ(print_instruction(*entry->root(), short_form), "tuple.3 = (s32[4]{0}) tuple(custom-call.2)");
  EXPECT_EQ(print_computation(*entry, short_form).substr(0, 23), "ENTRY IrToHlo.4 {\n  p0.");
}

TEST(PrinterTest, HeaderAttributesInXlaOrder) {
  Module module("SyncTensorsGraph.4");
  ModuleConfig& config = module.config();
  config.is_scheduled = true;
  config.input_output_alias = {InputOutputAlias{{0}, 0, {}, AliasKind::kMayAlias},
                               InputOutputAlias{{1}, 1, {}, AliasKind::kMustAlias}};
  config.buffer_donors = {BufferDonor{2, {}}};
  Layout tiled = Layout::descending(1);
  tiled.tiles.push_back(Tile{{128}});
  config.entry_computation_layout = ComputationLayout{
      {Shape::array(PrimitiveType::kS32, {4}, tiled)}, Shape::tuple({Shape::array(PrimitiveType::kS32, {4}, tiled)})};
  config.replica_count = 4;
  config.num_partitions = 2;
  config.frontend_attributes = {{"zeta", "1"}, {"alpha", "a\"b"}};
  config.extra_attributes = {{"custom_key", "{x}"}};
  std::string text = print_module(module);
  EXPECT_EQ(text,
            "HloModule SyncTensorsGraph.4, is_scheduled=true, input_output_alias={ {0}: (0, {}, may-alias), "
            "{1}: (1, {}, must-alias) }, buffer_donor={ (2, {}) }, "
            "entry_computation_layout={(s32[4]{0:T(128)})->(s32[4]{0:T(128)})}, replica_count=4, num_partitions=2, "
            "frontend_attributes={alpha=\"a\\\"b\",zeta=\"1\"}, custom_key={x}\n");
}

TEST(PrinterTest, EntryLayoutMarksEveryFifthParameter) {
  Module module("m");
  ComputationLayout layout;
  for (int i = 0; i < 6; ++i) layout.parameter_shapes.push_back(f32({}));
  layout.result_shape = f32({});
  module.config().entry_computation_layout = layout;
  EXPECT_EQ(print_module(module),
            "HloModule m, entry_computation_layout={(f32[], f32[], f32[], f32[], f32[], /*index=5*/f32[])->f32[]}\n");
}

TEST(PrinterTest, WhileAndConditionalName) {
  Module module("loop");
  Computation* body = module.add_computation(std::make_unique<Computation>("body"));
  Shape state = Shape::tuple({s32({}), f32({4})});
  body->set_root(parameter(body, 0, "state", state));
  Computation* cond = module.add_computation(std::make_unique<Computation>("cond"));
  Instruction* cp = parameter(cond, 0, "state", state);
  Instruction* counter = add(cond, Opcode::kGetTupleElement, "i", s32({}), {cp});
  counter->tuple_index = 0;
  Instruction* limit = add(cond, Opcode::kConstant, "limit", s32({}));
  limit->literal = Literal::scalar<int32_t>(10);
  Instruction* lt = add(cond, Opcode::kCompare, "lt", pred(), {counter, limit});
  lt->comparison_direction = ComparisonDirection::kLt;
  cond->set_root(lt);
  Computation* entry = module.add_computation(std::make_unique<Computation>("main"));
  module.set_entry(entry);
  Instruction* init = parameter(entry, 0, "init", state);
  Instruction* loop = add(entry, Opcode::kWhile, "while", state, {init});
  loop->set_called_computations({cond, body});
  entry->set_root(loop);

  EXPECT_EQ(print_instruction(*lt), "%lt = pred[] compare(s32[] %i, s32[] %limit), direction=LT");
  EXPECT_EQ(print_instruction(*limit), "%limit = s32[] constant(10)");
  EXPECT_EQ(print_instruction(*counter), "%i = s32[] get-tuple-element((s32[], f32[4]{0}) %state), index=0");
  EXPECT_EQ(print_instruction(*loop),
            "%while = (s32[], f32[4]{0}) while((s32[], f32[4]{0}) %init), condition=%cond, body=%body");
  PrintOptions short_form;
  short_form.long_form = false;
  EXPECT_EQ(print_instruction(*loop, short_form), "while = (s32[], f32[4]{0}) while(init), condition=cond, body=body");
  EXPECT_EQ(print_module(module, short_form),
            "HloModule loop\n\nbody {\n  ROOT state = (s32[], f32[4]{0}) parameter(0)\n}\n\n"
            "cond {\n  state = (s32[], f32[4]{0}) parameter(0)\n  i = s32[] get-tuple-element(state), index=0\n"
            "  limit = s32[] constant(10)\n  ROOT lt = pred[] compare(i, limit), direction=LT\n}\n\n"
            "ENTRY main {\n  init = (s32[], f32[4]{0}) parameter(0)\n"
            "  ROOT while = (s32[], f32[4]{0}) while(init), condition=cond, body=body\n}\n");

  // Conditional: pred selector -> true/false computations; s32 selector -> branch_computations.
  Instruction* flag = parameter(entry, 1, "flag", pred());
  Instruction* conditional = add(entry, Opcode::kConditional, "conditional", state, {flag, init, init});
  conditional->set_called_computations({body, body});
  EXPECT_EQ(print_instruction(*conditional, short_form),
            "conditional = (s32[], f32[4]{0}) conditional(flag, init, init), true_computation=body, "
            "false_computation=body");
  Instruction* index = parameter(entry, 2, "index", s32({}));
  conditional->replace_operand(0, index);
  EXPECT_EQ(print_instruction(*conditional, short_form),
            "conditional = (s32[], f32[4]{0}) conditional(index, init, init), branch_computations={body, body}");
}

TEST(PrinterTest, OperandIndexMarkersInLongForm) {
  Module module("m");
  Computation* c = module.add_computation(std::make_unique<Computation>("c"));
  std::vector<Instruction*> values;
  for (int i = 0; i < 6; ++i) values.push_back(parameter(c, i, "p" + std::to_string(i), s32({})));
  Instruction* tuple = add(c, Opcode::kTuple, "t", Shape::tuple(std::vector<Shape>(6, s32({}))), values);
  // The result shape is Shape::to_string's business (XLA also marks /*index=5*/ inside tuple shapes).
  EXPECT_EQ(print_instruction(*tuple),
            "%t = " + tuple->shape().to_string() +
                " tuple(s32[] %p0, s32[] %p1, s32[] %p2, s32[] %p3, s32[] %p4, /*index=5*/s32[] %p5)");
}

TEST(PrinterTest, DataMovementAttributes) {
  Module module("m");
  Computation* c = module.add_computation(std::make_unique<Computation>("c"));
  Instruction* x = parameter(c, 0, "x", f32({4, 8}));
  PrintOptions s;
  s.long_form = false;

  Instruction* slice = add(c, Opcode::kSlice, "slice", f32({2, 4}), {x});
  slice->slice = {{0, 2, 1}, {0, 8, 2}};
  EXPECT_EQ(print_instruction(*slice, s), "slice = f32[2,4]{1,0} slice(x), slice={[0:2:1], [0:8:2]}");
  slice->slice = {{0, 2, 1}, {4, 8, 1}};
  EXPECT_EQ(print_instruction(*slice, s), "slice = f32[2,4]{1,0} slice(x), slice={[0:2], [4:8]}");

  Instruction* zero = add(c, Opcode::kConstant, "zero", f32({}));
  zero->literal = Literal::scalar<float>(0.0f);
  Instruction* pad = add(c, Opcode::kPad, "pad", f32({6, 17}), {x, zero});
  pad->padding = {{1, 1, 0}, {0, 2, 1}};
  EXPECT_EQ(print_instruction(*pad, s), "pad = f32[6,17]{1,0} pad(x, zero), padding=1_1_0x0_2_1");
  pad->padding = {{1, 1, 0}, {0, 2, 0}};
  EXPECT_EQ(print_instruction(*pad, s), "pad = f32[6,17]{1,0} pad(x, zero), padding=1_1x0_2");

  Instruction* transpose = add(c, Opcode::kTranspose, "transpose", f32({8, 4}), {x});
  transpose->dimensions = {1, 0};
  EXPECT_EQ(print_instruction(*transpose, s), "transpose = f32[8,4]{1,0} transpose(x), dimensions={1,0}");

  Instruction* broadcast = add(c, Opcode::kBroadcast, "broadcast", f32({4, 8}), {zero});
  EXPECT_EQ(print_instruction(*broadcast, s), "broadcast = f32[4,8]{1,0} broadcast(zero), dimensions={}");

  Instruction* iota = add(c, Opcode::kIota, "iota", s32({4, 8}));
  iota->iota_dimension = 1;
  EXPECT_EQ(print_instruction(*iota, s), "iota = s32[4,8]{1,0} iota(), iota_dimension=1");

  Instruction* index = add(c, Opcode::kConstant, "i", s32({}));
  index->literal = Literal::scalar<int32_t>(1);
  Instruction* ds = add(c, Opcode::kDynamicSlice, "ds", f32({1, 8}), {x, index, index});
  ds->dynamic_slice_sizes = {1, 8};
  EXPECT_EQ(print_instruction(*ds, s), "ds = f32[1,8]{1,0} dynamic-slice(x, i, i), dynamic_slice_sizes={1,8}");
}

TEST(PrinterTest, ReduceWindowDotGatherScatterSort) {
  Module module("m");
  Computation* sum = scalar_add(module, "add");
  Computation* c = module.add_computation(std::make_unique<Computation>("c"));
  PrintOptions s;
  s.long_form = false;
  Instruction* x = parameter(c, 0, "x", s32({4, 8}));
  Instruction* zero = add(c, Opcode::kConstant, "zero", s32({}));
  zero->literal = Literal::scalar<int32_t>(0);

  Instruction* rw = add(c, Opcode::kReduceWindow, "rw", s32({2, 8}), {x, zero});
  rw->window = {WindowDimension{2, 2, 0, 0, 1, 1, false}, WindowDimension{3, 1, 1, 1, 1, 1, false}};
  rw->set_called_computations({sum});
  EXPECT_EQ(print_instruction(*rw, s),
            "rw = s32[2,8]{1,0} reduce-window(x, zero), window={size=2x3 stride=2x1 pad=0_0x1_1}, to_apply=add");
  rw->window = {WindowDimension{2, 1, 0, 0, 2, 3, true}};
  EXPECT_EQ(print_instruction(*rw, s),
            "rw = s32[2,8]{1,0} reduce-window(x, zero), window={size=2 lhs_dilate=2 rhs_dilate=3 rhs_reversal=1}, "
            "to_apply=add");

  Instruction* reduce = add(c, Opcode::kReduce, "reduce", s32({4}), {x, zero});
  reduce->dimensions = {1};
  reduce->set_called_computations({sum});
  EXPECT_EQ(print_instruction(*reduce, s), "reduce = s32[4]{0} reduce(x, zero), dimensions={1}, to_apply=add");

  Instruction* dot = add(c, Opcode::kDot, "dot", s32({4, 4}), {x, x});
  dot->dot_dimension_numbers.lhs_contracting_dimensions = {1};
  dot->dot_dimension_numbers.rhs_contracting_dimensions = {1};
  EXPECT_EQ(print_instruction(*dot, s), "dot = s32[4,4]{1,0} dot(x, x), lhs_contracting_dims={1}, rhs_contracting_dims={1}");
  dot->dot_dimension_numbers.lhs_batch_dimensions = {0};
  dot->dot_dimension_numbers.rhs_batch_dimensions = {0};
  dot->operand_precision = {"highest", "default"};
  EXPECT_EQ(print_instruction(*dot, s),
            "dot = s32[4,4]{1,0} dot(x, x), lhs_batch_dims={0}, lhs_contracting_dims={1}, rhs_batch_dims={0}, "
            "rhs_contracting_dims={1}, operand_precision={highest,default}");

  Instruction* indices = parameter(c, 1, "idx", s32({3, 1}));
  Instruction* gather = add(c, Opcode::kGather, "gather", s32({3, 8}), {x, indices});
  gather->gather_dimension_numbers = {{1}, {0}, {0}, {}, {}, 1};
  gather->dynamic_slice_sizes = {1, 8};
  gather->indices_are_sorted = true;
  EXPECT_EQ(print_instruction(*gather, s),
            "gather = s32[3,8]{1,0} gather(x, idx), offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, "
            "index_vector_dim=1, slice_sizes={1,8}, indices_are_sorted=true");

  Instruction* updates = parameter(c, 2, "upd", s32({3, 8}));
  Instruction* scatter = add(c, Opcode::kScatter, "scatter", s32({4, 8}), {x, indices, updates});
  scatter->scatter_dimension_numbers = {{1}, {0}, {0}, {}, {}, 1};
  scatter->unique_indices = true;
  scatter->set_called_computations({sum});
  EXPECT_EQ(print_instruction(*scatter, s),
            "scatter = s32[4,8]{1,0} scatter(x, idx, upd), update_window_dims={1}, inserted_window_dims={0}, "
            "scatter_dims_to_operand_dims={0}, index_vector_dim=1, unique_indices=true, to_apply=add");

  Instruction* sort = add(c, Opcode::kSort, "sort", s32({4, 8}), {x});
  sort->dimensions = {1};
  sort->is_stable = true;
  sort->set_called_computations({sum});
  EXPECT_EQ(print_instruction(*sort, s), "sort = s32[4,8]{1,0} sort(x), dimensions={1}, is_stable=true, to_apply=add");
}

TEST(PrinterTest, FusionCustomCallAndCommonAttributes) {
  Module module("m");
  Computation* fused = scalar_add(module, "fused");
  Computation* c = module.add_computation(std::make_unique<Computation>("c"));
  Instruction* a = parameter(c, 0, "a", s32({}));
  Instruction* b = parameter(c, 1, "b", s32({}));
  Instruction* fusion = add(c, Opcode::kFusion, "fusion", s32({}), {a, b});
  fusion->fusion_kind = "kLoop";
  fusion->set_called_computations({fused});
  fusion->fusion_output_to_operand_aliasing = {OutputOperandAlias{{}, 0, {}}};
  EXPECT_EQ(print_instruction(*fusion),
            "%fusion = s32[] fusion(s32[] %a, s32[] %b), kind=kLoop, output_to_operand_aliasing={{}: (0, {})}, "
            "calls=%fused");

  Instruction* call = add(c, Opcode::kCustomCall, "cc", Shape::tuple({s32({}), s32({})}), {a, b});
  call->custom_call.target = "kernel\n";
  call->custom_call.has_side_effect = true;
  call->custom_call.output_to_operand_aliasing = {OutputOperandAlias{{0}, 0, {}}, OutputOperandAlias{{1}, 1, {}}};
  call->custom_call.schedule = "SCHEDULE_LATEST";
  call->custom_call.api_version = "API_VERSION_TYPED_FFI";
  call->sharding = "{replicated}";
  call->frontend_attributes = {{"z", "x\ty"}, {"a", "{\"k\": 1}"}};
  call->add_control_predecessor(fusion);
  call->extra_attributes = {{"channel_id", "3"}, {"origin", "{{\"x\"}}"}};
  call->has_metadata = true;
  call->metadata = {{"op_name", "\"jit(f)/kernel\""}};
  call->backend_config = "\"opaque\"";
  PrintOptions s;
  s.long_form = false;
  EXPECT_EQ(print_instruction(*call, s),
            "cc = (s32[], s32[]) custom-call(a, b), custom_call_target=\"kernel\\n\", custom_call_has_side_effect=true, "
            "output_to_operand_aliasing={{0}: (0, {}), {1}: (1, {})}, schedule=SCHEDULE_LATEST, "
            "api_version=API_VERSION_TYPED_FFI, channel_id=3, sharding={replicated}, "
            "frontend_attributes={a={\"k\": 1},z=\"x\\ty\"}, control-predecessors={fusion}, origin={{\"x\"}}, "
            "metadata={op_name=\"jit(f)/kernel\"}, backend_config=\"opaque\"");
  call->has_metadata = true;
  call->metadata.clear();
  EXPECT_NE(print_instruction(*call, s).find("metadata={}"), std::string::npos)
      << "an explicitly written empty metadata={} is kept so it round-trips";
  s.print_metadata = false;
  s.print_backend_config = false;
  EXPECT_EQ(print_instruction(*call, s).find("metadata"), std::string::npos);
  EXPECT_EQ(print_instruction(*call, s).find("backend_config"), std::string::npos);
}

TEST(PrinterTest, ConstantsAndComputationDetails) {
  Module module("m");
  Computation* c = module.add_computation(std::make_unique<Computation>("c"));
  c->set_execution_thread("host");
  Instruction* k = add(c, Opcode::kConstant, "k", f32({2, 2}));
  k->literal = Literal::from_values<float>({2, 2}, {1.5f, -2.0f, 0.25f, 1e10f});
  c->set_root(k);
  EXPECT_EQ(print_computation(*c), "%c () -> f32[2,2] {\n  ROOT %k = f32[2,2]{1,0} constant({ { 1.5, -2 }, { 0.25, 1e+10 } })\n}, execution_thread=\"host\"");
  EXPECT_EQ(k->to_string(), "%k = f32[2,2]{1,0} constant({ { 1.5, -2 }, { 0.25, 1e+10 } })");
}

TEST(PrinterTest, StackFrameSectionsBetweenHeaderAndComputations) {
  Module module("m");
  Computation* c = module.add_computation(std::make_unique<Computation>("main"));
  module.set_entry(c);
  c->set_root(parameter(c, 0, "p", f32({})));
  module.set_stack_frame_sections("FileNames\n1 \"a.py\"\n\nStackFrames\n1 {file_location_id=1 parent_frame_id=0}\n");
  PrintOptions s;
  s.long_form = false;
  EXPECT_EQ(print_module(module, s),
            "HloModule m\n\nFileNames\n1 \"a.py\"\n\nStackFrames\n1 {file_location_id=1 parent_frame_id=0}\n\n"
            "ENTRY main {\n  ROOT p = f32[] parameter(0)\n}\n");
}

TEST(ModuleEqualTest, NamesTheFirstDifference) {
  auto build = [](int32_t value) {
    auto module = std::make_unique<Module>("m");
    Computation* c = module->add_computation(std::make_unique<Computation>("main"));
    module->set_entry(c);
    Instruction* k = add(c, Opcode::kConstant, "k", s32({}));
    k->literal = Literal::scalar<int32_t>(value);
    Instruction* p = parameter(c, 0, "p", s32({}));
    c->set_root(add(c, Opcode::kAdd, "sum", s32({}), {k, p}));
    return module;
  };
  std::string difference;
  EXPECT_TRUE(modules_equal(*build(1), *build(1), &difference)) << difference;
  EXPECT_FALSE(modules_equal(*build(1), *build(2), &difference));
  EXPECT_EQ(difference,
            "computation main, instruction #0 (k vs k): attributes (%k = s32[] constant(1) vs %k = s32[] constant(2)) "
            "differs");

  auto a = build(1);
  auto b = build(1);
  b->entry()->root()->frontend_attributes = {{"x", "1"}};
  EXPECT_FALSE(modules_equal(*a, *b, &difference));
  EXPECT_EQ(difference,
            "computation main, instruction #2 (sum vs sum): attributes (%sum = s32[] add(s32[] %k, s32[] %p) vs "
            "%sum = s32[] add(s32[] %k, s32[] %p), frontend_attributes={x=\"1\"}) differs");
  a->entry()->root()->frontend_attributes = {{"x", "1"}};
  a->entry()->root()->set_location({3, 4});
  EXPECT_TRUE(modules_equal(*a, *b, &difference)) << "locations are ignored";

  b->config().replica_count = 2;
  EXPECT_FALSE(modules_equal(*a, *b, &difference));
  EXPECT_EQ(difference, "header attribute replica_count differs");

  auto c = build(1);
  c->entry()->root()->mutable_shape() = Shape::array(PrimitiveType::kS32, {}, Layout{{}, {Tile{{256}}}, 0, ""});
  EXPECT_FALSE(modules_equal(*build(1), *c, &difference));
  EXPECT_NE(difference.find("shape"), std::string::npos) << difference;
}

}  // namespace
}  // namespace insitu
