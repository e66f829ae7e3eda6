// Shape inference on instructions built in code (no parser): XLA's result shapes and the
// errors for wrong operand counts, element types and attributes.
#include "insitu/ir/shape_inference.h"

#include <gtest/gtest.h>

#include <memory>

#include "insitu/ir/computation.h"

namespace insitu {
namespace {

using T = PrimitiveType;

class ShapeInferenceTest : public ::testing::Test {
 protected:
  // A standalone instruction (owned by the fixture).
  Instruction* make(Opcode opcode, const std::string& name, Shape shape, std::vector<Instruction*> operands = {}) {
    owned_.push_back(std::make_unique<Instruction>(opcode, name, std::move(shape)));
    for (Instruction* operand : operands) owned_.back()->append_operand(operand);
    return owned_.back().get();
  }
  Instruction* param(const std::string& name, Shape shape) { return make(Opcode::kParameter, name, std::move(shape)); }
  static Shape s(T type, std::vector<int64_t> dims) { return Shape::array(type, std::move(dims)); }
  static std::string inferred(const Instruction* instruction) {
    StatusOr<Shape> shape = infer_shape(*instruction);
    return shape.ok() ? shape->to_string(false) : "error: " + shape.status().message();
  }
  // A computation (params -> root built by `body`), owned by the fixture.
  Computation* computation(const std::string& name, std::vector<Shape> parameters, Shape root_shape, Opcode root_opcode) {
    computations_.push_back(std::make_unique<Computation>(name));
    Computation* c = computations_.back().get();
    std::vector<Instruction*> ps;
    for (size_t i = 0; i < parameters.size(); ++i) {
      auto p = std::make_unique<Instruction>(Opcode::kParameter, name + ".p" + std::to_string(i), parameters[i]);
      p->parameter_number = static_cast<int64_t>(i);
      ps.push_back(c->add_instruction(std::move(p)));
    }
    auto root = std::make_unique<Instruction>(root_opcode, name + ".root", root_shape);
    if (root_opcode == Opcode::kConstant) root->literal = Literal(root_shape);
    else for (Instruction* p : ps) root->append_operand(p);
    c->set_root(c->add_instruction(std::move(root)));
    return c;
  }

  std::vector<std::unique_ptr<Instruction>> owned_;
  std::vector<std::unique_ptr<Computation>> computations_;
};

TEST_F(ShapeInferenceTest, BinaryArithmetic) {
  Instruction* a = param("a", s(T::kS32, {8}));
  Instruction* b = param("b", s(T::kS32, {8}));
  EXPECT_EQ(inferred(make(Opcode::kAdd, "add.3", s(T::kS32, {4}), {a, b})), "s32[8]");
  EXPECT_EQ(inferred(make(Opcode::kCompare, "cmp", s(T::kPred, {8}), {a, b})), "pred[8]");
  EXPECT_EQ(inferred(make(Opcode::kShiftLeft, "shl", s(T::kS32, {8}), {a, b})), "s32[8]");
}

TEST_F(ShapeInferenceTest, OperandCount) {
  Instruction* x = param("a", s(T::kF32, {2}));
  EXPECT_EQ(inferred(make(Opcode::kAdd, "x", s(T::kF32, {2}), {x, x, x})), "error: add needs 2 operands, %x has 3");
  EXPECT_EQ(inferred(make(Opcode::kNegate, "n", s(T::kF32, {2}), {})), "error: negate needs 1 operand, %n has 0");
}

TEST_F(ShapeInferenceTest, ElementTypeRules) {
  Instruction* f = param("f", s(T::kF32, {2}));
  Instruction* i = param("i", s(T::kS32, {2}));
  Instruction* u = param("u", s(T::kU32, {2}));
  EXPECT_EQ(inferred(make(Opcode::kAnd, "x", s(T::kF32, {2}), {f, f})), "error: %x: and needs pred or integer operands, got f32");
  EXPECT_EQ(inferred(make(Opcode::kShiftRightLogical, "sh", s(T::kF32, {2}), {f, f})),
            "error: %sh: shift-right-logical needs integer operands, got f32");
  EXPECT_EQ(inferred(make(Opcode::kExp, "e", s(T::kS32, {2}), {i})),
            "error: %e: exponential needs floating-point or complex operands, got s32");
  EXPECT_EQ(inferred(make(Opcode::kFloor, "fl", s(T::kF32, {2}), {f})), "f32[2]");
  EXPECT_EQ(inferred(make(Opcode::kAbs, "abs", s(T::kU32, {2}), {u})),
            "error: %abs: abs needs signed integer, floating-point or complex operands, got u32");
  EXPECT_EQ(inferred(make(Opcode::kIsFinite, "fin", s(T::kPred, {2}), {f})), "pred[2]");
  EXPECT_EQ(inferred(make(Opcode::kNot, "not", s(T::kS32, {2}), {i})), "s32[2]");
  EXPECT_EQ(inferred(make(Opcode::kAdd, "mixed", s(T::kF32, {2}), {f, i})),
            "error: %mixed: add operands must have one element type, got f32[2] and s32[2]; convert one of them");
}

TEST_F(ShapeInferenceTest, NoImplicitBroadcast) {
  Instruction* a = param("a", s(T::kF32, {2}));
  Instruction* b = param("b", s(T::kF32, {}));
  EXPECT_EQ(inferred(make(Opcode::kMultiply, "m", s(T::kF32, {2}), {a, b})),
            "error: %m: multiply operands must have one shape (HLO has no implicit broadcast), got f32[2] and f32[]; broadcast explicitly");
}

TEST_F(ShapeInferenceTest, ComplexRealImag) {
  Instruction* re = param("re", s(T::kF32, {3}));
  Instruction* c = make(Opcode::kComplex, "c", s(T::kC64, {3}), {re, re});
  EXPECT_EQ(inferred(c), "c64[3]");
  EXPECT_EQ(inferred(make(Opcode::kReal, "r", s(T::kF32, {3}), {c})), "f32[3]");
  EXPECT_EQ(inferred(make(Opcode::kImag, "i", s(T::kF32, {3}), {c})), "f32[3]");
  EXPECT_EQ(inferred(make(Opcode::kAbs, "a", s(T::kF32, {3}), {c})), "f32[3]");
  Instruction* h = param("h", s(T::kF16, {3}));
  EXPECT_EQ(inferred(make(Opcode::kComplex, "bad", s(T::kC64, {3}), {h, h})), "error: %bad: complex needs f32 or f64 operands, got f16");
}

TEST_F(ShapeInferenceTest, SelectAndClamp) {
  Instruction* p = param("p", s(T::kPred, {4}));
  Instruction* ps = param("ps", s(T::kPred, {}));
  Instruction* x = param("x", s(T::kF32, {4}));
  Instruction* lo = param("lo", s(T::kF32, {}));
  Instruction* i = param("i", s(T::kS32, {4}));
  EXPECT_EQ(inferred(make(Opcode::kSelect, "s", s(T::kF32, {4}), {p, x, x})), "f32[4]");
  EXPECT_EQ(inferred(make(Opcode::kSelect, "s2", s(T::kF32, {4}), {ps, x, x})), "f32[4]");
  EXPECT_EQ(inferred(make(Opcode::kSelect, "s3", s(T::kF32, {4}), {i, x, x})), "error: %s3: select needs a pred predicate, got s32[4]");
  EXPECT_EQ(inferred(make(Opcode::kClamp, "c", s(T::kF32, {4}), {lo, x, lo})), "f32[4]");
  EXPECT_EQ(inferred(make(Opcode::kClamp, "c2", s(T::kF32, {4}), {i, x, lo})),
            "error: %c2: clamp min s32[4] must be a scalar or have the operand's shape, with its element type f32[4]");
}

TEST_F(ShapeInferenceTest, ConvertAndBitcastConvert) {
  Instruction* x = param("x", s(T::kS32, {4}));
  EXPECT_EQ(inferred(make(Opcode::kConvert, "c", s(T::kF16, {4}), {x})), "f16[4]");
  EXPECT_EQ(inferred(make(Opcode::kBitcastConvert, "b", s(T::kF32, {4}), {x})), "f32[4]");
  EXPECT_EQ(inferred(make(Opcode::kBitcastConvert, "wide_to_narrow", s(T::kU8, {4, 4}), {x})), "u8[4,4]");
  Instruction* bytes = param("bytes", s(T::kU8, {3, 4}));
  EXPECT_EQ(inferred(make(Opcode::kBitcastConvert, "narrow_to_wide", s(T::kS32, {3}), {bytes})), "s32[3]");
  Instruction* odd = param("odd", s(T::kU8, {3, 2}));
  EXPECT_EQ(inferred(make(Opcode::kBitcastConvert, "bad", s(T::kS32, {3}), {odd})),
            "error: %bad: bitcast-convert from u8[3,2] to s32 needs a last dimension of 4 (the ratio of bit widths)");
}

TEST_F(ShapeInferenceTest, TupleAndGetTupleElement) {
  Instruction* a = param("a", s(T::kF32, {2}));
  Instruction* b = param("b", s(T::kS32, {}));
  Instruction* t = make(Opcode::kTuple, "t", Shape::tuple({s(T::kF32, {2}), s(T::kS32, {})}), {a, b});
  EXPECT_EQ(inferred(t), "(f32[2], s32[])");
  Instruction* gte = make(Opcode::kGetTupleElement, "g", s(T::kS32, {}), {t});
  gte->tuple_index = 1;
  EXPECT_EQ(inferred(gte), "s32[]");
  gte->tuple_index = 2;
  EXPECT_EQ(inferred(gte), "error: %g: index=2 is out of range for (f32[2], s32[]) (2 elements)");
}

TEST_F(ShapeInferenceTest, CopyStartDoneAndBitcast) {
  Instruction* a = param("a", s(T::kF32, {2, 3}));
  Instruction* start = make(Opcode::kCopyStart, "cs", Shape(), {a});
  EXPECT_EQ(inferred(start), "(f32[2,3], f32[2,3], u32[])");
  start->set_shape(*infer_shape(*start));
  EXPECT_EQ(inferred(make(Opcode::kCopyDone, "cd", s(T::kF32, {2, 3}), {start})), "f32[2,3]");
  EXPECT_EQ(inferred(make(Opcode::kBitcast, "bc", s(T::kS32, {6}), {a})), "s32[6]");
  EXPECT_EQ(inferred(make(Opcode::kBitcast, "bad", s(T::kF32, {5}), {a})),
            "error: %bad: bitcast from f32[2,3] (24 bytes) to f32[5] (20 bytes) changes the byte size; use reshape or convert");
}

TEST_F(ShapeInferenceTest, BroadcastReshapeTranspose) {
  Instruction* a = param("a", s(T::kF32, {3}));
  Instruction* bc = make(Opcode::kBroadcast, "bc", s(T::kF32, {2, 3}), {a});
  bc->dimensions = {1};
  EXPECT_EQ(inferred(bc), "f32[2,3]");
  bc->dimensions = {0};
  EXPECT_EQ(inferred(bc), "error: %bc: broadcast operand dimension 0 (size 3) maps to output dimension 0 (size 2); sizes must be equal or the operand's 1");
  // A size-1 operand dimension is stretched (tests/golden/run/layouts.hlo runs it).
  Instruction* one = param("one", s(T::kF32, {1, 3}));
  Instruction* stretch = make(Opcode::kBroadcast, "stretch", s(T::kF32, {4, 3}), {one});
  stretch->dimensions = {0, 1};
  EXPECT_EQ(inferred(stretch), "f32[4,3]");
  // Unsorted dimensions (a transpose and a broadcast in one) are HLO; a repeated one is not.
  Instruction* square = param("square", s(T::kF32, {2, 3}));
  Instruction* swapped = make(Opcode::kBroadcast, "swapped", s(T::kF32, {3, 5, 2}), {square});
  swapped->dimensions = {2, 0};
  EXPECT_EQ(inferred(swapped), "f32[3,5,2]");
  Instruction* twice = make(Opcode::kBroadcast, "twice", s(T::kF32, {3, 3}), {param("v", s(T::kF32, {3, 3}))});
  twice->dimensions = {1, 1};
  EXPECT_EQ(inferred(twice), "error: %twice: broadcast dimensions={1,1} names output dimension 1 twice");
  Instruction* m = param("m", s(T::kF32, {2, 3, 4}));
  EXPECT_EQ(inferred(make(Opcode::kReshape, "r", s(T::kF32, {6, 4}), {m})), "f32[6,4]");
  EXPECT_EQ(inferred(make(Opcode::kReshape, "r2", s(T::kF32, {5}), {m})),
            "error: %r2: reshape from f32[2,3,4] (24 elements) to f32[5] (5 elements) changes the element count");
  Instruction* t = make(Opcode::kTranspose, "t", s(T::kF32, {4, 2, 3}), {m});
  t->dimensions = {2, 0, 1};
  EXPECT_EQ(inferred(t), "f32[4,2,3]");
  t->dimensions = {2, 0, 0};
  EXPECT_EQ(inferred(t), "error: %t: transpose dimensions={2,0,0} repeats dimension 0");
}

TEST_F(ShapeInferenceTest, SliceAndDynamicSlice) {
  Instruction* a = param("a", s(T::kF32, {10, 8}));
  Instruction* sl = make(Opcode::kSlice, "sl", s(T::kF32, {}), {a});
  sl->slice = {{1, 9, 3}, {0, 8, 1}};
  EXPECT_EQ(inferred(sl), "f32[3,8]");
  sl->slice = {{0, 11, 1}, {0, 8, 1}};
  EXPECT_EQ(inferred(sl), "error: %sl: slice dimension 0 [0:11:1] is invalid for size 10; need 0 <= start <= limit <= size and stride > 0");
  Instruction* i = param("i", s(T::kS32, {}));
  Instruction* f = param("f", s(T::kF32, {}));
  Instruction* ds = make(Opcode::kDynamicSlice, "ds", s(T::kF32, {2, 2}), {a, i, i});
  ds->dynamic_slice_sizes = {2, 2};
  EXPECT_EQ(inferred(ds), "f32[2,2]");
  Instruction* bad = make(Opcode::kDynamicSlice, "bad", s(T::kF32, {2, 2}), {a, i, f});
  bad->dynamic_slice_sizes = {2, 2};
  EXPECT_EQ(inferred(bad), "error: %bad: dynamic-slice start index 1 (%f) must be an integer scalar, got f32[]");
  Instruction* few = make(Opcode::kDynamicSlice, "few", s(T::kF32, {2, 2}), {a, i});
  EXPECT_EQ(inferred(few), "error: dynamic-slice needs 3 operands (2 scalar start indices for rank 2), %few has 2");
  Instruction* update = param("u", s(T::kF32, {2, 9}));
  EXPECT_EQ(inferred(make(Opcode::kDynamicUpdateSlice, "dus", s(T::kF32, {10, 8}), {a, update, i, i})),
            "error: %dus: dynamic-update-slice update f32[2,9] is larger than the operand f32[10,8] in dimension 1");
}

TEST_F(ShapeInferenceTest, ConcatenatePadReverse) {
  Instruction* a = param("a", s(T::kF32, {2, 3}));
  Instruction* b = param("b", s(T::kF32, {4, 3}));
  Instruction* c = make(Opcode::kConcatenate, "c", s(T::kF32, {6, 3}), {a, b});
  c->dimensions = {0};
  EXPECT_EQ(inferred(c), "f32[6,3]");
  c->dimensions = {1};
  EXPECT_EQ(inferred(c), "error: %c: concatenate operands f32[2,3] and f32[4,3] must match in element type and every dimension except 1");
  Instruction* zero = param("z", s(T::kF32, {}));
  Instruction* pad = make(Opcode::kPad, "pad", s(T::kF32, {}), {a, zero});
  pad->padding = {{1, 2, 0}, {-1, 0, 1}};
  EXPECT_EQ(inferred(pad), "f32[5,4]");
  Instruction* rev = make(Opcode::kReverse, "rev", s(T::kF32, {2, 3}), {a});
  rev->dimensions = {1};
  EXPECT_EQ(inferred(rev), "f32[2,3]");
  rev->dimensions = {2};
  EXPECT_EQ(inferred(rev), "error: %rev: reverse dimensions={2}: dimension 2 is out of range for f32[2,3]");
}

TEST_F(ShapeInferenceTest, Dot) {
  Instruction* lhs = param("l", s(T::kF32, {5, 2, 3}));
  Instruction* rhs = param("r", s(T::kF32, {5, 3, 7}));
  Instruction* dot = make(Opcode::kDot, "dot", s(T::kF32, {}), {lhs, rhs});
  dot->dot_dimension_numbers = {{0}, {2}, {0}, {1}};
  EXPECT_EQ(inferred(dot), "f32[5,2,7]");
  dot->dot_dimension_numbers = {{0}, {1}, {0}, {1}};
  EXPECT_EQ(inferred(dot), "error: %dot: dot contracting dimension sizes differ: lhs 2 vs rhs 3 (f32[5,2,3] x f32[5,3,7])");
  Instruction* i8 = param("i8", s(T::kS8, {2, 3}));
  Instruction* widen = make(Opcode::kDot, "w", s(T::kS32, {2, 2}), {i8, i8});
  widen->dot_dimension_numbers = {{}, {1}, {}, {1}};
  EXPECT_EQ(inferred(widen), "s32[2,2]");
}

TEST_F(ShapeInferenceTest, Gather) {
  // jnp.take(operand, indices, axis=0) on f32[5,4] with s32[3] indices.
  Instruction* operand = param("o", s(T::kF32, {5, 4}));
  Instruction* indices = param("i", s(T::kS32, {3, 1}));
  Instruction* g = make(Opcode::kGather, "g", s(T::kF32, {3, 4}), {operand, indices});
  g->gather_dimension_numbers.offset_dims = {1};
  g->gather_dimension_numbers.collapsed_slice_dims = {0};
  g->gather_dimension_numbers.start_index_map = {0};
  g->gather_dimension_numbers.index_vector_dim = 1;
  g->dynamic_slice_sizes = {1, 4};
  EXPECT_EQ(inferred(g), "f32[3,4]");
  g->dynamic_slice_sizes = {2, 4};
  EXPECT_EQ(inferred(g), "error: %g: gather collapses dimension 0 whose slice size 2 is not 1");
}

TEST_F(ShapeInferenceTest, ScatterChecksUpdateShapeAndToApply) {
  Instruction* operand = param("o", s(T::kF32, {5, 4}));
  Instruction* indices = param("i", s(T::kS32, {3, 1}));
  Instruction* updates = param("u", s(T::kF32, {3, 4}));
  Instruction* sc = make(Opcode::kScatter, "sc", s(T::kF32, {5, 4}), {operand, indices, updates});
  sc->scatter_dimension_numbers.update_window_dims = {1};
  sc->scatter_dimension_numbers.inserted_window_dims = {0};
  sc->scatter_dimension_numbers.scatter_dims_to_operand_dims = {0};
  sc->scatter_dimension_numbers.index_vector_dim = 1;
  Computation* add = computation("add", {Shape::scalar(T::kF32), Shape::scalar(T::kF32)}, Shape::scalar(T::kF32), Opcode::kAdd);
  sc->set_called_computations({add});
  EXPECT_EQ(inferred(sc), "f32[5,4]");
  Computation* wrong = computation("wrong", {Shape::scalar(T::kF32)}, Shape::scalar(T::kF32), Opcode::kNegate);
  sc->set_called_computations({wrong});
  EXPECT_EQ(inferred(sc), "error: %sc: to_apply computation %wrong takes 1 parameters, but scatter passes 2 (f32[], f32[])");
}

TEST_F(ShapeInferenceTest, VariadicReduce) {
  Instruction* x = param("x", s(T::kF32, {2, 3}));
  Instruction* y = param("y", s(T::kS32, {2, 3}));
  Instruction* fi = param("fi", s(T::kF32, {}));
  Instruction* si = param("si", s(T::kS32, {}));
  Computation* reducer = computation("reducer", {s(T::kF32, {}), s(T::kS32, {}), s(T::kF32, {}), s(T::kS32, {})},
                                     Shape::tuple({s(T::kF32, {}), s(T::kS32, {})}), Opcode::kTuple);
  Instruction* r = make(Opcode::kReduce, "r", Shape(), {x, y, fi, si});
  r->dimensions = {1};
  r->set_called_computations({reducer});
  EXPECT_EQ(inferred(r), "(f32[2], s32[2])");
  Instruction* bad = make(Opcode::kReduce, "bad", Shape(), {x, y, fi});
  EXPECT_EQ(inferred(bad), "error: reduce needs N inputs and N init values (an even count >= 2), %bad has 3");
}

TEST_F(ShapeInferenceTest, ReduceWindow) {
  Instruction* x = param("x", s(T::kF32, {4, 6}));
  Instruction* init = param("init", s(T::kF32, {}));
  Computation* add = computation("add", {Shape::scalar(T::kF32), Shape::scalar(T::kF32)}, Shape::scalar(T::kF32), Opcode::kAdd);
  Instruction* rw = make(Opcode::kReduceWindow, "rw", s(T::kF32, {}), {x, init});
  rw->set_called_computations({add});
  WindowDimension a{2, 2, 0, 0, 1, 1, false};
  WindowDimension b{3, 1, 1, 1, 1, 1, false};
  rw->window = {a, b};
  EXPECT_EQ(inferred(rw), "f32[2,6]");
}

TEST_F(ShapeInferenceTest, WhileSignature) {
  Shape state = Shape::tuple({s(T::kS32, {}), s(T::kF32, {4})});
  Instruction* init = make(Opcode::kTuple, "init", state, {param("i", s(T::kS32, {})), param("v", s(T::kF32, {4}))});
  Computation* cond = computation("cond", {state}, Shape::scalar(T::kPred), Opcode::kConstant);
  Computation* body = computation("body", {state}, state, Opcode::kCopy);
  Instruction* w = make(Opcode::kWhile, "w", state, {init});
  w->set_called_computations({cond, body});
  EXPECT_EQ(inferred(w), "(s32[], f32[4])");
  Computation* bad_cond = computation("bad_cond", {state}, Shape::scalar(T::kS32), Opcode::kConstant);
  w->set_called_computations({bad_cond, body});
  EXPECT_EQ(inferred(w), "error: %w: condition computation %bad_cond returns s32[] but while needs pred[]");
}

TEST_F(ShapeInferenceTest, ConditionalBranches) {
  Instruction* pred = param("p", s(T::kPred, {}));
  Instruction* index = param("idx", s(T::kS32, {}));
  Instruction* x = param("x", s(T::kF32, {2}));
  Computation* b0 = computation("b0", {s(T::kF32, {2})}, s(T::kF32, {2}), Opcode::kNegate);
  Computation* b1 = computation("b1", {s(T::kF32, {2})}, s(T::kF32, {2}), Opcode::kCopy);
  Computation* b2 = computation("b2", {s(T::kF32, {2})}, s(T::kS32, {2}), Opcode::kConvert);
  Instruction* c = make(Opcode::kConditional, "c", s(T::kF32, {2}), {pred, x, x});
  c->set_called_computations({b0, b1});
  EXPECT_EQ(inferred(c), "f32[2]");
  Instruction* c3 = make(Opcode::kConditional, "c3", s(T::kF32, {2}), {index, x, x, x});
  c3->set_called_computations({b0, b1, b2});
  EXPECT_EQ(inferred(c3), "error: %c3: branch 2 computation %b2 returns s32[2] but conditional needs f32[2]");
  Instruction* c4 = make(Opcode::kConditional, "c4", s(T::kF32, {2}), {pred, x, x, x});
  c4->set_called_computations({b0, b1, b1});
  EXPECT_EQ(inferred(c4), "error: %c4: conditional with a pred[] selector needs 2 branches (true_computation, false_computation), got 3");
}

TEST_F(ShapeInferenceTest, SortComparatorReturnsPred) {
  Instruction* keys = param("k", s(T::kF32, {8}));
  Instruction* values = param("v", s(T::kS32, {8}));
  Computation* less = computation("less", {s(T::kF32, {}), s(T::kF32, {}), s(T::kS32, {}), s(T::kS32, {})},
                                  Shape::scalar(T::kPred), Opcode::kConstant);
  Instruction* sort = make(Opcode::kSort, "sort", Shape(), {keys, values});
  sort->dimensions = {0};
  sort->set_called_computations({less});
  EXPECT_EQ(inferred(sort), "(f32[8], s32[8])");
}

TEST_F(ShapeInferenceTest, CallMapFusion) {
  Instruction* x = param("x", s(T::kF32, {3}));
  Computation* neg = computation("neg", {s(T::kF32, {})}, s(T::kF32, {}), Opcode::kNegate);
  Instruction* map = make(Opcode::kMap, "map", s(T::kF32, {3}), {x});
  map->dimensions = {0};
  map->set_called_computations({neg});
  EXPECT_EQ(inferred(map), "f32[3]");
  Computation* neg3 = computation("neg3", {s(T::kF32, {3})}, s(T::kF32, {3}), Opcode::kNegate);
  Instruction* call = make(Opcode::kCall, "call", s(T::kF32, {3}), {x});
  call->set_called_computations({neg3});
  EXPECT_EQ(inferred(call), "f32[3]");
  Instruction* fusion = make(Opcode::kFusion, "fusion", s(T::kF32, {3}), {x, x});
  fusion->set_called_computations({neg3});
  EXPECT_EQ(inferred(fusion), "error: %fusion: calls computation %neg3 takes 1 parameters, but fusion passes 2 (f32[3], f32[3])");
}

TEST_F(ShapeInferenceTest, CustomCallAliasingAndLayoutConstraints) {
  Instruction* x = param("x", s(T::kS32, {4}));
  Instruction* cc = make(Opcode::kCustomCall, "cc", s(T::kS32, {4}), {x});
  cc->custom_call.target = "kernel";
  cc->custom_call.output_to_operand_aliasing = {OutputOperandAlias{{}, 0, {}}};
  EXPECT_EQ(inferred(cc), "s32[4]");
  cc->custom_call.output_to_operand_aliasing = {OutputOperandAlias{{}, 1, {}}};
  EXPECT_EQ(inferred(cc), "error: %cc: output_to_operand_aliasing {}: (1, {}): operand 1 does not exist (the custom-call has 1 operands)");
  cc->custom_call.output_to_operand_aliasing = {};
  cc->custom_call.operand_layout_constraints = std::vector<Shape>{s(T::kS32, {4}), s(T::kS32, {4})};
  EXPECT_EQ(inferred(cc), "error: %cc: operand_layout_constraints has 2 shapes but the custom-call has 1 operands; write one shape per operand");
}

}  // namespace
}  // namespace insitu
