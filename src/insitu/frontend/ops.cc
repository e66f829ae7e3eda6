// Elementwise ops, constants, data movement and reductions (ops.h).
#include "insitu/evaluator/element_arithmetic.h"
#include "insitu/frontend/ops.h"

#include <limits>

#include "insitu/frontend/ops_internal.h"

namespace insitu {

using frontend_internal::make_op;
using frontend_internal::tracer_for;

namespace {

Literal scalar_literal(double value, PrimitiveType type) {
  Literal literal(Shape::scalar(type));
  dispatch_element_type(type, [&](auto tag) {
    using T = decltype(tag);
    literal.data<T>()[0] = convert_value<T>(value);
  });
  return literal;
}

// Broadcasts a rank-0 operand to the other's shape (numpy's scalar rule).
std::pair<Tensor, Tensor> match_scalars(const Tensor& a, const Tensor& b) {
  if (!a.valid() || !b.valid()) return {a, b};
  if (a.rank() == 0 && b.rank() > 0) return {broadcast(a, b.dimensions(), {}), b};
  if (b.rank() == 0 && a.rank() > 0) return {a, broadcast(b, a.dimensions(), {})};
  return {a, b};
}

Tensor binary(std::string_view name, Opcode opcode, const Tensor& a, const Tensor& b) {
  auto [lhs, rhs] = match_scalars(a, b);
  return make_op(name, opcode, {lhs, rhs});
}

Tensor unary(std::string_view name, Opcode opcode, const Tensor& x) { return make_op(name, opcode, {x}); }

Tensor number_like(const Tensor& like, double value) {
  if (!like.valid()) return Tensor();
  return scalar(value, like.dtype());
}

Tensor reduce(std::string_view name, Opcode combiner, const Tensor& x, std::vector<int64_t> dimensions, double init) {
  Tracer* tracer = tracer_for(name, {x});
  if (tracer == nullptr) return Tensor();
  Tensor initial = scalar(init, x.dtype());
  Computation* reducer = tracer->scalar_reducer(combiner, x.dtype());
  return make_op(name, Opcode::kReduce, {x, initial}, [&](Instruction& instruction) {
    instruction.dimensions = std::move(dimensions);
    instruction.set_called_computations({reducer});
  });
}

}  // namespace

Tensor constant(const Literal& value) {
  Tracer* tracer = tracer_for("constant", {});
  auto instruction = std::make_unique<Instruction>(Opcode::kConstant, tracer->unique_name("constant"), value.shape());
  instruction->literal = value;
  return Tensor::from_instruction(tracer, tracer->emit(std::move(instruction), /*infer=*/false));
}

Tensor scalar(double value, PrimitiveType type) { return constant(scalar_literal(value, type)); }

Tensor full_like(const Tensor& like, double value) {
  if (!like.valid()) return Tensor();
  return broadcast(scalar(value, like.dtype()), like.dimensions(), {});
}

Tensor iota(const Shape& shape, int64_t iota_dimension) {
  return make_op("iota", Opcode::kIota, {}, [&](Instruction& i) { i.iota_dimension = iota_dimension; }, &shape);
}

Tensor add(const Tensor& a, const Tensor& b) { return binary("add", Opcode::kAdd, a, b); }
Tensor subtract(const Tensor& a, const Tensor& b) { return binary("subtract", Opcode::kSubtract, a, b); }
Tensor multiply(const Tensor& a, const Tensor& b) { return binary("multiply", Opcode::kMultiply, a, b); }
Tensor divide(const Tensor& a, const Tensor& b) { return binary("divide", Opcode::kDivide, a, b); }
Tensor maximum(const Tensor& a, const Tensor& b) { return binary("maximum", Opcode::kMaximum, a, b); }
Tensor minimum(const Tensor& a, const Tensor& b) { return binary("minimum", Opcode::kMinimum, a, b); }
Tensor negate(const Tensor& x) { return unary("negate", Opcode::kNegate, x); }
Tensor exp(const Tensor& x) { return unary("exponential", Opcode::kExp, x); }
Tensor log(const Tensor& x) { return unary("log", Opcode::kLog, x); }
Tensor sqrt(const Tensor& x) { return unary("sqrt", Opcode::kSqrt, x); }
Tensor tanh(const Tensor& x) { return unary("tanh", Opcode::kTanh, x); }
Tensor abs(const Tensor& x) { return unary("abs", Opcode::kAbs, x); }

Tensor compare(const Tensor& a, const Tensor& b, ComparisonDirection direction) {
  auto [lhs, rhs] = match_scalars(a, b);
  return make_op("compare", Opcode::kCompare, {lhs, rhs}, [&](Instruction& i) { i.comparison_direction = direction; });
}

Tensor select(const Tensor& predicate, const Tensor& on_true, const Tensor& on_false) {
  return make_op("select", Opcode::kSelect, {predicate, on_true, on_false});
}

Tensor convert(const Tensor& x, PrimitiveType type) {
  if (!x.valid()) return make_op("convert", Opcode::kConvert, {x});
  Shape shape = Shape::array(type, x.dimensions());
  return make_op("convert", Opcode::kConvert, {x}, {}, &shape);
}

Tensor operator+(const Tensor& a, const Tensor& b) { return add(a, b); }
Tensor operator-(const Tensor& a, const Tensor& b) { return subtract(a, b); }
Tensor operator*(const Tensor& a, const Tensor& b) { return multiply(a, b); }
Tensor operator/(const Tensor& a, const Tensor& b) { return divide(a, b); }
Tensor operator-(const Tensor& x) { return negate(x); }
Tensor operator+(const Tensor& a, double b) { return add(a, number_like(a, b)); }
Tensor operator-(const Tensor& a, double b) { return subtract(a, number_like(a, b)); }
Tensor operator*(const Tensor& a, double b) { return multiply(a, number_like(a, b)); }
Tensor operator/(const Tensor& a, double b) { return divide(a, number_like(a, b)); }
Tensor operator+(double a, const Tensor& b) { return add(number_like(b, a), b); }
Tensor operator-(double a, const Tensor& b) { return subtract(number_like(b, a), b); }
Tensor operator*(double a, const Tensor& b) { return multiply(number_like(b, a), b); }
Tensor operator/(double a, const Tensor& b) { return divide(number_like(b, a), b); }

Tensor broadcast(const Tensor& x, std::vector<int64_t> dimensions, std::vector<int64_t> broadcast_dimensions) {
  if (!x.valid()) return make_op("broadcast", Opcode::kBroadcast, {x});
  Shape shape = Shape::array(x.dtype(), std::move(dimensions));
  return make_op("broadcast", Opcode::kBroadcast, {x},
                 [&](Instruction& i) { i.dimensions = std::move(broadcast_dimensions); }, &shape);
}

Tensor reshape(const Tensor& x, std::vector<int64_t> dimensions) {
  if (!x.valid()) return make_op("reshape", Opcode::kReshape, {x});
  Shape shape = Shape::array(x.dtype(), std::move(dimensions));
  return make_op("reshape", Opcode::kReshape, {x}, {}, &shape);
}

Tensor transpose(const Tensor& x, std::vector<int64_t> permutation) {
  return make_op("transpose", Opcode::kTranspose, {x}, [&](Instruction& i) { i.dimensions = std::move(permutation); });
}

Tensor slice(const Tensor& x, std::vector<int64_t> starts, std::vector<int64_t> limits, std::vector<int64_t> strides) {
  return make_op("slice", Opcode::kSlice, {x}, [&](Instruction& i) {
    for (size_t d = 0; d < starts.size(); ++d)
      i.slice.push_back({starts[d], d < limits.size() ? limits[d] : 0, d < strides.size() ? strides[d] : 1});
  });
}

Tensor dynamic_slice(const Tensor& x, const std::vector<Tensor>& starts, std::vector<int64_t> sizes) {
  std::vector<Tensor> operands = {x};
  operands.insert(operands.end(), starts.begin(), starts.end());
  return make_op("dynamic-slice", Opcode::kDynamicSlice, operands,
                 [&](Instruction& i) { i.dynamic_slice_sizes = std::move(sizes); });
}

Tensor dynamic_update_slice(const Tensor& x, const Tensor& update, const std::vector<Tensor>& starts) {
  std::vector<Tensor> operands = {x, update};
  operands.insert(operands.end(), starts.begin(), starts.end());
  return make_op("dynamic-update-slice", Opcode::kDynamicUpdateSlice, operands);
}

Tensor concatenate(const std::vector<Tensor>& pieces, int64_t dimension) {
  return make_op("concatenate", Opcode::kConcatenate, pieces, [&](Instruction& i) { i.dimensions = {dimension}; });
}

Tensor reduce_sum(const Tensor& x, std::vector<int64_t> dimensions) {
  return reduce("reduce", Opcode::kAdd, x, std::move(dimensions), 0.0);
}

Tensor reduce_max(const Tensor& x, std::vector<int64_t> dimensions) {
  double lowest = -std::numeric_limits<double>::infinity();
  if (x.valid() && !is_floating(x.dtype())) {
    lowest = dispatch_element_type(x.dtype(), [](auto tag) -> double {
      using T = decltype(tag);
      if constexpr (std::is_integral_v<T>) return static_cast<double>(std::numeric_limits<T>::lowest());
      return 0.0;
    });
  }
  return reduce("reduce", Opcode::kMaximum, x, std::move(dimensions), lowest);
}

Tensor dot(const Tensor& a, const Tensor& b, const DotDimensionNumbers& dimension_numbers) {
  return make_op("dot", Opcode::kDot, {a, b}, [&](Instruction& i) { i.dot_dimension_numbers = dimension_numbers; });
}

Tensor matmul(const Tensor& a, const Tensor& b) {
  DotDimensionNumbers numbers;
  numbers.lhs_contracting_dimensions = {a.valid() ? a.rank() - 1 : 0};
  numbers.rhs_contracting_dimensions = {0};
  return dot(a, b, numbers);
}

Tensor scatter_add(const Tensor& operand, const Tensor& indices, const Tensor& updates,
                   const ScatterDimensionNumbers& dimension_numbers) {
  Tracer* tracer = tracer_for("scatter", {operand, indices, updates});
  if (tracer == nullptr) return Tensor();
  Computation* combiner = tracer->scalar_reducer(Opcode::kAdd, operand.dtype());
  return make_op("scatter", Opcode::kScatter, {operand, indices, updates}, [&](Instruction& i) {
    i.scatter_dimension_numbers = dimension_numbers;
    i.set_called_computations({combiner});
  });
}

Tensor scatter_add_rows(const Tensor& operand, const Tensor& indices, const Tensor& updates) {
  ScatterDimensionNumbers numbers;
  if (operand.valid()) {
    for (int64_t d = 1; d < operand.rank(); ++d) numbers.update_window_dims.push_back(d);
  }
  numbers.inserted_window_dims = {0};
  numbers.scatter_dims_to_operand_dims = {0};
  numbers.index_vector_dim = 1;
  return scatter_add(operand, indices, updates, numbers);
}

}  // namespace insitu
