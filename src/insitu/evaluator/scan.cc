// scan (XLA's HloScanInstruction), get-dimension-size and set-dimension-size, for the reference
// evaluator.
//
//   scan(inputs..., inits...), dimensions={d}, num_carries=C, is_reverse=, is_associative=,
//        to_apply=body
// The last C operands are the carries' initial values. Step i (i = 0..n-1 along dimension d of
// the inputs, n-1..0 with is_reverse=true) calls body(slice i of every input, the carries) and
// gets (slice i of every output, the new carries). The result is (every output with its slices
// stacked along d, the final carries), a tuple unless it is one array. is_associative only
// allows a backend to reorder the steps; the sequential order computed here is one it allows.
#include "insitu/evaluator/apply_util.h"
#include "insitu/evaluator/ops.h"
#include "insitu/ir/computation.h"
#include "insitu/ir/replica_groups.h"
#include "insitu/support/str.h"

namespace insitu::eval {
namespace {

// Row-major (outer, size along d, inner bytes) of an array shape around dimension d.
struct Around {
  int64_t outer = 1;
  int64_t count = 1;
  int64_t inner_bytes = 1;
};

Around around(const Shape& shape, int64_t d) {
  Around a;
  for (int64_t i = 0; i < d; ++i) a.outer *= shape.dimension(i);
  a.count = shape.dimension(d);
  a.inner_bytes = byte_width(shape.element_type());
  for (int64_t i = d + 1; i < shape.rank(); ++i) a.inner_bytes *= shape.dimension(i);
  return a;
}

Shape without_dimension(const Shape& shape, int64_t d) {
  std::vector<int64_t> dimensions = shape.dimensions();
  dimensions.erase(dimensions.begin() + d);
  return Shape::array(shape.element_type(), std::move(dimensions));
}

// Slice i of `array` along d (the dimension removed), or written back into it.
Literal take_slice(const Literal& array, int64_t d, int64_t i) {
  const Around a = around(array.shape(), d);
  Literal slice(without_dimension(array.shape(), d));
  for (int64_t o = 0; o < a.outer; ++o)
    std::memcpy(slice.untyped_data() + o * a.inner_bytes, array.untyped_data() + (o * a.count + i) * a.inner_bytes,
                static_cast<size_t>(a.inner_bytes));
  return slice;
}

void put_slice(Literal& array, int64_t d, int64_t i, const Literal& slice) {
  const Around a = around(array.shape(), d);
  for (int64_t o = 0; o < a.outer; ++o)
    std::memcpy(array.untyped_data() + (o * a.count + i) * a.inner_bytes, slice.untyped_data() + o * a.inner_bytes,
                static_cast<size_t>(a.inner_bytes));
}

}  // namespace

StatusOr<Literal> evaluate_scan(const Instruction& instruction, Operands operands, ComputationRunner& runner) {
  const RawAttribute* dimensions = find_own_attribute(instruction, "dimensions");
  if (dimensions == nullptr) return bad_instruction(instruction, "needs dimensions={d}");
  AttributeReader reader(instruction, "dimensions", dimensions->value);
  INSITU_ASSIGN_OR_RETURN(std::vector<int64_t> scanned, reader.integers('{', '}'));
  if (scanned.size() != 1 || !reader.done() || scanned[0] < 0)
    return bad_instruction(instruction, str_cat("dimensions=", dimensions->value, " must name one dimension"));
  const int64_t d = scanned[0];
  int64_t carries = 0;
  if (const RawAttribute* written = find_own_attribute(instruction, "num_carries")) {
    char* end = nullptr;
    carries = std::strtoll(written->value.c_str(), &end, 10);
    if (end == written->value.c_str() || *end != '\0' || carries < 0)
      return bad_instruction(instruction, str_cat("num_carries=", written->value, " must be a count"));
  }
  INSITU_ASSIGN_OR_RETURN(bool reverse, own_bool_attribute(instruction, "is_reverse", false));
  if (const RawAttribute* associative = find_own_attribute(instruction, "is_associative");
      associative != nullptr && associative->value != "true" && associative->value != "false")
    return bad_instruction(instruction, str_cat("is_associative=", associative->value, " must be true or false"));
  INSITU_ASSIGN_OR_RETURN(const Computation* body, find_to_apply(instruction));
  const int64_t operand_count = static_cast<int64_t>(operands.size());
  const Shape& shape = instruction.shape();
  const std::vector<Shape> results = shape.is_tuple() ? shape.tuple_shapes() : std::vector<Shape>{shape};
  const int64_t result_count = static_cast<int64_t>(results.size());
  if (carries > operand_count || carries > result_count || (carries == operand_count && carries == result_count))
    return bad_instruction(instruction, str_cat("has ", operand_count, " operands, ", result_count, " results and ",
                                                carries, " carries: it needs carries <= both and an input or output"));
  const int64_t inputs = operand_count - carries, outputs = result_count - carries;
  if (body->parameter_count() != operand_count)
    return bad_instruction(instruction, str_cat("to_apply %", body->name(), " takes ", body->parameter_count(),
                                                " parameters, the scan passes ", operand_count));
  // The scan's length: the inputs' dimension d (all equal), else the outputs'.
  int64_t length = -1;
  for (int64_t k = 0; k < inputs + outputs; ++k) {
    const Shape& array = k < inputs ? operands[k]->shape() : results[k - inputs];
    if (!array.is_array() || d >= array.rank())
      return bad_instruction(instruction, str_cat("dimension ", d, " does not exist in ", array.to_string(false)));
    if (length >= 0 && array.dimension(d) != length)
      return bad_instruction(instruction, str_cat("scans ", length, " steps but ", array.to_string(false),
                                                  " has ", array.dimension(d), " along dimension ", d));
    length = array.dimension(d);
  }
  std::vector<Literal> state;  // the carries
  for (int64_t c = 0; c < carries; ++c) state.push_back(*operands[inputs + c]);
  std::vector<Literal> stacked;
  for (int64_t k = 0; k < outputs; ++k) stacked.emplace_back(results[k]);
  std::vector<Literal> slices(static_cast<size_t>(inputs));
  std::vector<const Literal*> arguments(static_cast<size_t>(operand_count));
  for (int64_t step = 0; step < length; ++step) {
    const int64_t i = reverse ? length - 1 - step : step;
    for (int64_t k = 0; k < inputs; ++k) {
      slices[k] = take_slice(*operands[k], d, i);
      arguments[k] = &slices[k];
    }
    for (int64_t c = 0; c < carries; ++c) arguments[inputs + c] = &state[c];
    INSITU_ASSIGN_OR_RETURN(Literal value, runner.run(*body, arguments));
    std::vector<Literal> parts;
    if (value.shape().is_tuple()) parts = std::move(value.elements());
    else parts.push_back(std::move(value));
    if (static_cast<int64_t>(parts.size()) != result_count)
      return bad_instruction(instruction, str_cat("to_apply %", body->name(), " returns ", parts.size(),
                                                  " values, the scan has ", result_count, " results"));
    for (int64_t k = 0; k < outputs; ++k) {
      if (!parts[k].shape().compatible(without_dimension(results[k], d)))
        return bad_instruction(instruction, str_cat("to_apply %", body->name(), " returns ", parts[k].shape().to_string(false),
                                                    " for output ", k, " of ", results[k].to_string(false)));
      put_slice(stacked[k], d, i, parts[k]);
    }
    for (int64_t c = 0; c < carries; ++c) {
      if (!parts[outputs + c].shape().compatible(results[outputs + c]))
        return bad_instruction(instruction, str_cat("to_apply %", body->name(), " returns ",
                                                    parts[outputs + c].shape().to_string(false), " for carry ", c,
                                                    " of ", results[outputs + c].to_string(false)));
      state[c] = std::move(parts[outputs + c]);
    }
  }
  for (Literal& carry : state) stacked.push_back(std::move(carry));
  if (!shape.is_tuple()) return std::move(stacked.front());
  Literal result = Literal::tuple(std::move(stacked));
  result.set_shape_layouts(shape);
  return result;
}

// The one dimension `dimensions={d}` of get/set-dimension-size names in `shape`.
StatusOr<int64_t> named_dimension(const Instruction& instruction, const Shape& shape) {
  const RawAttribute* dimensions = find_own_attribute(instruction, "dimensions");
  if (dimensions == nullptr) return bad_instruction(instruction, "needs dimensions={d}");
  AttributeReader reader(instruction, "dimensions", dimensions->value);
  INSITU_ASSIGN_OR_RETURN(std::vector<int64_t> which, reader.integers('{', '}'));
  if (which.size() != 1 || !reader.done() || which[0] < 0 || which[0] >= shape.rank())
    return bad_instruction(instruction, str_cat("dimensions=", dimensions->value, " must name one dimension of ",
                                                shape.to_string(false)));
  return which[0];
}

// get-dimension-size(x), dimensions={d}: the size of dimension d as s32. insitu keeps no
// dynamic sizes, so a bounded-dynamic dimension (f32[<=8]) is refused rather than answered
// with its bound.
StatusOr<Literal> evaluate_get_dimension_size(const Instruction& instruction, Operands operands) {
  if (operands.size() != 1 || !operands[0]->shape().is_array())
    return bad_instruction(instruction, "needs one array operand and dimensions={d}");
  const Shape& shape = operands[0]->shape();
  INSITU_ASSIGN_OR_RETURN(const int64_t dimension, named_dimension(instruction, shape));
  if (shape.dynamic_dimensions()[dimension])
    return bad_instruction(instruction, str_cat("dimension ", dimension, " of ", shape.to_string(false),
                                                " is dynamic; insitu keeps no dynamic sizes and will not answer with "
                                                "the bound"));
  if (instruction.shape() != Shape::scalar(PrimitiveType::kS32))
    return bad_instruction(instruction, str_cat("must be s32[], not ", instruction.shape().to_string(false)));
  return Literal::scalar<int32_t>(static_cast<int32_t>(shape.dimension(dimension)));
}

// set-dimension-size(x, size), dimensions={d}: x with dimension d's dynamic size set to `size`.
// insitu keeps no dynamic sizes: every array is its full bound. A size equal to the bound
// changes nothing and runs; any other size would make the padding beyond it meaningless to the
// ops that follow (a reduce skips it, a reshape moves it), so it is a located refusal, never an
// array computed as if it had its bound.
StatusOr<Literal> evaluate_set_dimension_size(const Instruction& instruction, Operands operands) {
  if (operands.size() != 2 || !operands[0]->shape().is_array() || !operands[1]->shape().is_array() ||
      operands[1]->shape().rank() != 0)
    return bad_instruction(instruction, "needs an array, a scalar size and dimensions={d}");
  const Shape& shape = operands[0]->shape();
  INSITU_ASSIGN_OR_RETURN(const int64_t dimension, named_dimension(instruction, shape));
  const Shape& result = instruction.shape();
  if (!result.is_array() || result.element_type() != shape.element_type() || result.dimensions() != shape.dimensions())
    return bad_instruction(instruction, str_cat("result ", result.to_string(false), " must be ",
                                                shape.to_string(false), " with dimension ", dimension,
                                                " bounded by its size"));
  if (operands[1]->shape().element_type() != PrimitiveType::kS32)
    return bad_instruction(instruction, str_cat("size must be s32[], not ", operands[1]->shape().to_string(false)));
  const int64_t size = operands[1]->data<int32_t>()[0];
  const int64_t bound = shape.dimension(dimension);
  if (size != bound)
    return bad_instruction(instruction, str_cat("sets dimension ", dimension, " of ", shape.to_string(false), " to ",
                                                size, ", not its bound ", bound,
                                                "; insitu keeps no dynamic sizes and runs only sizes equal to the "
                                                "bound"));
  // The value is static: its size is its bound.
  Shape static_result = result;
  for (int64_t i = 0; i < static_result.rank(); ++i) static_result.set_dynamic_dimension(i, false);
  Literal out = *operands[0];
  out.set_shape_layouts(static_result);
  return out;
}

}  // namespace insitu::eval
