// Each VHLO op as its HLO instruction (import.h, import_internal.h): the elementwise table,
// constants, and the ops with attributes (dot, convolution, reductions, gather/scatter, ...;
// custom calls in import_custom_call.cc).
#include <algorithm>
#include <cctype>
#include <cstring>
#include <map>

#include "insitu/stablehlo/import_internal.h"

namespace insitu::stablehlo::import_internal {
namespace {

constexpr int64_t kMaxConstantBytes = int64_t{1} << 30;  // as the HLO parser's literals

// VHLO ops that are one HLO op of the same operands, with no attribute (or only a
// result_accuracy, which must be the default).
const std::map<std::string, std::string, std::less<>>& elementwise_ops() {
  static const auto* table = new std::map<std::string, std::string, std::less<>>{
      {"abs_v1", "abs"}, {"add_v1", "add"}, {"and_v1", "and"}, {"atan2_v1", "atan2"},
      {"bitcast_convert_v1", "bitcast-convert"}, {"cbrt_v1", "cbrt"}, {"cbrt_v2", "cbrt"}, {"ceil_v1", "ceil"},
      {"clamp_v1", "clamp"}, {"complex_v1", "complex"}, {"convert_v1", "convert"},
      {"cosine_v1", "cosine"}, {"cosine_v2", "cosine"}, {"count_leading_zeros_v1", "count-leading-zeros"},
      {"divide_v1", "divide"}, {"exponential_minus_one_v1", "exponential-minus-one"},
      {"exponential_minus_one_v2", "exponential-minus-one"}, {"exponential_v1", "exponential"},
      {"exponential_v2", "exponential"}, {"floor_v1", "floor"}, {"imag_v1", "imag"}, {"is_finite_v1", "is-finite"},
      {"log_plus_one_v1", "log-plus-one"}, {"log_plus_one_v2", "log-plus-one"}, {"log_v1", "log"}, {"log_v2", "log"},
      {"logistic_v1", "logistic"}, {"logistic_v2", "logistic"}, {"maximum_v1", "maximum"}, {"minimum_v1", "minimum"},
      {"multiply_v1", "multiply"}, {"negate_v1", "negate"}, {"not_v1", "not"}, {"or_v1", "or"},
      {"popcnt_v1", "popcnt"}, {"power_v1", "power"}, {"real_v1", "real"}, {"remainder_v1", "remainder"},
      {"reshape_v1", "reshape"}, {"round_nearest_afz_v1", "round-nearest-afz"},
      {"round_nearest_even_v1", "round-nearest-even"}, {"rsqrt_v1", "rsqrt"}, {"rsqrt_v2", "rsqrt"},
      {"select_v1", "select"}, {"shift_left_v1", "shift-left"}, {"shift_right_arithmetic_v1", "shift-right-arithmetic"},
      {"shift_right_logical_v1", "shift-right-logical"}, {"sign_v1", "sign"}, {"sine_v1", "sine"}, {"sine_v2", "sine"},
      {"sqrt_v1", "sqrt"}, {"sqrt_v2", "sqrt"}, {"subtract_v1", "subtract"}, {"tan_v1", "tan"}, {"tan_v2", "tan"},
      {"tanh_v1", "tanh"}, {"tanh_v2", "tanh"}, {"xor_v1", "xor"}, {"dynamic_update_slice_v1", "dynamic-update-slice"},
      {"partition_id_v1", "partition-id"}, {"replica_id_v1", "replica-id"}, {"after_all_v1", "after-all"},
      {"create_token_v1", "after-all"}, {"tuple_v1", "tuple"},
  };
  return *table;
}

}  // namespace

Status Importer::constant(Scope& scope, const Operation& op, uint64_t value) {
  INSITU_ASSIGN_OR_RETURN(const Attribute* tensor, symbols_.attribute(value));
  if (tensor->kind != Attribute::Kind::kTensor) return error(op, "a constant whose value is not a tensor");
  StatusOr<Shape> shape = symbols_.shape(tensor->type, "a constant");
  if (!shape.ok() || !shape->is_array()) return error(op, "a constant that is not an array");
  const int64_t count = shape->element_count();
  const size_t data = tensor->data.size();
  HloText::Constant constant;
  std::vector<uint8_t>& bytes = constant.owned;
  if (shape->byte_size() > kMaxConstantBytes)
    return error(op, str_cat("a constant of ", shape->byte_size(), " bytes (insitu reads up to ", kMaxConstantBytes, ")"));
  if (shape->element_type() == PrimitiveType::kPred) {
    const std::vector<bool> bits = unpack_booleans(tensor->data, count);
    if (static_cast<int64_t>(bits.size()) != count)
      return error(op, str_cat("a pred constant of ", count, " elements in ", data, " bytes"));
    for (bool bit : bits) bytes.push_back(bit ? 1 : 0);
  } else if (is_sub_byte_integral(shape->element_type()) || byte_width(shape->element_type()) * 8 != bit_width(shape->element_type())) {
    return error(op, str_cat("a constant of ", primitive_type_name(shape->element_type()), " (packed narrow types are not read)"));
  } else {
    const size_t width = static_cast<size_t>(byte_width(shape->element_type()));
    if (data == static_cast<size_t>(shape->byte_size())) {
      constant.data = tensor->data;  // copied once, into the parsed constant
    } else if (data == width && count > 1) {
      bytes.resize(static_cast<size_t>(shape->byte_size()));
      for (int64_t i = 0; i < count; ++i) std::memcpy(bytes.data() + i * width, tensor->data.data(), width);
    } else {
      return error(op, str_cat("a constant of ", count, " elements in ", data, " bytes"));
    }
  }
  const std::string result = fresh("constant");
  scope.lines.push_back(str_cat(result, " = ", shape->to_string(), " constant(0)"));
  scope.names[{&op, 0}] = result;
  constant.name = result;
  constants_.push_back(std::move(constant));
  return ok_status();
}

StatusOr<std::string> Importer::dims(uint64_t attribute, std::string_view what) {
  INSITU_ASSIGN_OR_RETURN(std::vector<int64_t> values, symbols_.integers(attribute, what));
  return braces(values);
}

Status Importer::default_accuracy(const Operation& op, uint64_t attribute) {
  INSITU_ASSIGN_OR_RETURN(const Attribute* accuracy, symbols_.attribute(attribute));
  if (accuracy->kind != Attribute::Kind::kResultAccuracy) return error(op, "result_accuracy is not a result accuracy");
  int64_t mode = -1;
  if (!accuracy->elements.empty()) {
    INSITU_ASSIGN_OR_RETURN(mode, symbols_.integer(accuracy->elements[0], "its mode"));
  }
  if (accuracy->bits != 0 || accuracy->output_index.at(0) != 0 || accuracy->output_index.at(1) != 0 || mode != 0)
    return error(op, str_cat(name(op), " with a result_accuracy other than the default is not read"));
  return ok_status();
}

Status Importer::emit(Scope& scope, const Operation& op) {
  const std::string full = name(op);
  // Identities here: the casts XLA's serializer puts around an op of another dialect (VHLO types
  // to builtin ones and back), and a Shardy sharding constraint (placement, on one device none).
  if (full == "builtin.unrealized_conversion_cast" || full == "sdy.sharding_constraint") {
    if (op.operands.size() != 1 || op.result_types.size() != 1 || !op.regions.empty())
      return error(op, str_cat(full, " of ", op.operands.size(), " operands and ", op.result_types.size(),
                               " results is not read"));
    INSITU_ASSIGN_OR_RETURN(std::vector<std::string> names, operands(scope, op));
    scope.names[{&op, 0}] = names[0];
    return ok_status();
  }
  if (full.starts_with("chlo.")) return chlo(scope, op);
  if (!full.starts_with("vhlo.")) return error(op, str_cat(full, " is not read (insitu reads VHLO ops)"));
  const std::string op_name = full.substr(5);
  if (auto found = elementwise_ops().find(op_name); found != elementwise_ops().end()) {
    if (op.properties) {
      INSITU_ASSIGN_OR_RETURN(std::vector<uint64_t> properties, this->properties(op, 1));
      INSITU_RETURN_IF_ERROR(default_accuracy(op, properties[0]));
    }
    INSITU_ASSIGN_OR_RETURN(std::vector<std::string> names, operands(scope, op));
    return define(scope, op, str_cat(found->second, "(", str_join(names, ", "), ")"));
  }
  INSITU_ASSIGN_OR_RETURN(std::vector<std::string> names, operands(scope, op));
  const std::string args = str_join(names, ", ");
  if (op_name == "constant_v1") {
    if (!op.operands.empty()) return error(op, "a constant with operands");
    INSITU_ASSIGN_OR_RETURN(std::vector<uint64_t> p, properties(op, 1));
    return constant(scope, op, p[0]);
  }
  if (op_name == "broadcast_in_dim_v1") return broadcast_in_dim(scope, op, args);
  if (op_name == "transpose_v1" || op_name == "reverse_v1") {
    INSITU_ASSIGN_OR_RETURN(std::vector<uint64_t> p, properties(op, 1));
    INSITU_ASSIGN_OR_RETURN(std::string d, dims(p[0], "dimensions"));
    return define(scope, op, str_cat(op_name == "transpose_v1" ? "transpose(" : "reverse(", args, "), dimensions=", d));
  }
  if (op_name == "iota_v1") {
    INSITU_ASSIGN_OR_RETURN(std::vector<uint64_t> p, properties(op, 1));
    INSITU_ASSIGN_OR_RETURN(int64_t dimension, symbols_.integer(p[0], "iota_dimension"));
    return define(scope, op, str_cat("iota(), iota_dimension=", dimension));
  }
  if (op_name == "concatenate_v1") {
    INSITU_ASSIGN_OR_RETURN(std::vector<uint64_t> p, properties(op, 1));
    INSITU_ASSIGN_OR_RETURN(int64_t dimension, symbols_.integer(p[0], "dimension"));
    return define(scope, op, str_cat("concatenate(", args, "), dimensions={", dimension, "}"));
  }
  if (op_name == "get_tuple_element_v1") {
    INSITU_ASSIGN_OR_RETURN(std::vector<uint64_t> p, properties(op, 1));
    INSITU_ASSIGN_OR_RETURN(int64_t index, symbols_.integer(p[0], "index"));
    return define(scope, op, str_cat("get-tuple-element(", args, "), index=", index));
  }
  if (op_name == "compare_v1") {
    INSITU_ASSIGN_OR_RETURN(std::vector<uint64_t> p, properties(op, 2));  // compare_type, comparison_direction
    INSITU_ASSIGN_OR_RETURN(int64_t type, symbols_.integer(p[0], "compare_type"));
    INSITU_ASSIGN_OR_RETURN(int64_t direction, symbols_.integer(p[1], "comparison_direction"));
    static const char* kDirections[] = {"EQ", "NE", "GE", "GT", "LE", "LT"};
    static const char* kTypes[] = {"", "FLOAT", "TOTALORDER", "SIGNED", "UNSIGNED"};
    if (direction < 0 || direction > 5 || type < 0 || type > 4) return error(op, "a comparison of unknown kind");
    std::string text = str_cat("compare(", args, "), direction=", kDirections[direction]);
    if (type != 0) text += str_cat(", type=", kTypes[type]);
    return define(scope, op, text);
  }
  if (op_name == "slice_v1") {
    INSITU_ASSIGN_OR_RETURN(std::vector<uint64_t> p, properties(op, 3));  // limit, start, strides
    INSITU_ASSIGN_OR_RETURN(std::vector<int64_t> limits, symbols_.integers(p[0], "limit_indices"));
    INSITU_ASSIGN_OR_RETURN(std::vector<int64_t> starts, symbols_.integers(p[1], "start_indices"));
    INSITU_ASSIGN_OR_RETURN(std::vector<int64_t> strides, symbols_.integers(p[2], "strides"));
    if (limits.size() != starts.size() || strides.size() != starts.size()) return error(op, "slice lists of different lengths");
    std::vector<std::string> ranges;
    for (size_t d = 0; d < starts.size(); ++d) ranges.push_back(str_cat("[", starts[d], ":", limits[d], ":", strides[d], "]"));
    return define(scope, op, str_cat("slice(", args, "), slice={", str_join(ranges, ", "), "}"));
  }
  if (op_name == "dynamic_slice_v1") {
    INSITU_ASSIGN_OR_RETURN(std::vector<uint64_t> p, properties(op, 1));
    INSITU_ASSIGN_OR_RETURN(std::string sizes, dims(p[0], "slice_sizes"));
    return define(scope, op, str_cat("dynamic-slice(", args, "), dynamic_slice_sizes=", sizes));
  }
  if (op_name == "pad_v1") {
    INSITU_ASSIGN_OR_RETURN(std::vector<uint64_t> p, properties(op, 3));  // high, low, interior
    INSITU_ASSIGN_OR_RETURN(std::vector<int64_t> high, symbols_.integers(p[0], "edge_padding_high"));
    INSITU_ASSIGN_OR_RETURN(std::vector<int64_t> low, symbols_.integers(p[1], "edge_padding_low"));
    INSITU_ASSIGN_OR_RETURN(std::vector<int64_t> interior, symbols_.integers(p[2], "interior_padding"));
    if (low.size() != high.size() || interior.size() != low.size()) return error(op, "pad lists of different lengths");
    std::vector<std::string> padding;
    for (size_t d = 0; d < low.size(); ++d) padding.push_back(str_cat(low[d], "_", high[d], "_", interior[d]));
    return define(scope, op, str_cat("pad(", args, "), padding=", str_join(padding, "x")));
  }
  if (op_name == "dot_general_v2") {
    INSITU_ASSIGN_OR_RETURN(std::vector<uint64_t> p, properties(op, 12));
    for (size_t i : {0, 1, 3, 5, 6, 9, 11}) {  // the algorithm's fields: none (JAX's default)
      INSITU_ASSIGN_OR_RETURN(const Attribute* field, symbols_.attribute(p[i]));
      bool none = false;
      if (field->kind == Attribute::Kind::kType) {
        INSITU_ASSIGN_OR_RETURN(const Type* type, symbols_.type(field->type));
        none = type->kind == Type::Kind::kNone;
      }
      if (!none) return error(op, "a dot_general with an algorithm is not read");
    }
    INSITU_ASSIGN_OR_RETURN(std::string lb, dims(p[2], "lhs_batching_dimensions"));
    INSITU_ASSIGN_OR_RETURN(std::string lc, dims(p[4], "lhs_contracting_dimensions"));
    INSITU_ASSIGN_OR_RETURN(std::string rb, dims(p[8], "rhs_batching_dimensions"));
    INSITU_ASSIGN_OR_RETURN(std::string rc, dims(p[10], "rhs_contracting_dimensions"));
    return define(scope, op, str_cat("dot(", args, "), lhs_batch_dims=", lb, ", lhs_contracting_dims=", lc,
                                     ", rhs_batch_dims=", rb, ", rhs_contracting_dims=", rc));
  }
  if (op_name == "reduce_v1" || op_name == "reduce_window_v1") {
    if (op.regions.size() != 1) return error(op, "a reduction without its body");
    INSITU_ASSIGN_OR_RETURN(std::string body, applier(op, op.regions[0], "reducer"));
    if (op_name == "reduce_v1") {
      INSITU_ASSIGN_OR_RETURN(std::vector<uint64_t> p, properties(op, 1));
      INSITU_ASSIGN_OR_RETURN(std::string d, dims(p[0], "dimensions"));
      return define(scope, op, str_cat("reduce(", args, "), dimensions=", d, ", to_apply=", body));
    }
    // base_dilations, padding, window_dilations, window_dimensions, window_strides
    INSITU_ASSIGN_OR_RETURN(std::vector<uint64_t> p, properties(op, 5));
    INSITU_ASSIGN_OR_RETURN(std::vector<int64_t> base, symbols_.integers(p[0], "base_dilations"));
    INSITU_ASSIGN_OR_RETURN(std::vector<int64_t> window_dilations, symbols_.integers(p[2], "window_dilations"));
    INSITU_ASSIGN_OR_RETURN(std::vector<int64_t> sizes, symbols_.integers(p[3], "window_dimensions"));
    INSITU_ASSIGN_OR_RETURN(std::vector<int64_t> padding, padding_pairs(p[1], sizes.size()));
    INSITU_ASSIGN_OR_RETURN(std::vector<int64_t> strides, symbols_.integers(p[4], "window_strides"));
    std::vector<std::string> size, stride, pad, lhs, rhs;
    for (size_t d = 0; d < sizes.size(); ++d) {
      size.push_back(str_cat(sizes[d]));
      stride.push_back(str_cat(d < strides.size() ? strides[d] : 1));
      pad.push_back(str_cat(2 * d + 1 < padding.size() ? padding[2 * d] : 0, "_",
                            2 * d + 1 < padding.size() ? padding[2 * d + 1] : 0));
      lhs.push_back(str_cat(d < base.size() ? base[d] : 1));
      rhs.push_back(str_cat(d < window_dilations.size() ? window_dilations[d] : 1));
    }
    return define(scope, op, str_cat("reduce-window(", args, "), window={size=", str_join(size, "x"), " stride=",
                                     str_join(stride, "x"), " pad=", str_join(pad, "x"), " lhs_dilate=",
                                     str_join(lhs, "x"), " rhs_dilate=", str_join(rhs, "x"), "}, to_apply=", body));
  }
  if (op_name == "scatter_v2") {
    if (op.regions.size() != 1) return error(op, "a scatter without its update computation");
    INSITU_ASSIGN_OR_RETURN(std::string body, applier(op, op.regions[0], "update"));
    // index_vector_dim, indices_are_sorted, input_batching_dims, inserted_window_dims,
    // scatter_dims_to_operand_dims, scatter_indices_batching_dims, unique_indices, update_window_dims
    INSITU_ASSIGN_OR_RETURN(std::vector<uint64_t> p, properties(op, 8));
    INSITU_ASSIGN_OR_RETURN(int64_t index_vector_dim, symbols_.integer(p[0], "index_vector_dim"));
    INSITU_ASSIGN_OR_RETURN(int64_t sorted, symbols_.integer(p[1], "indices_are_sorted"));
    INSITU_ASSIGN_OR_RETURN(std::string input_batching, dims(p[2], "input_batching_dims"));
    INSITU_ASSIGN_OR_RETURN(std::string inserted, dims(p[3], "inserted_window_dims"));
    INSITU_ASSIGN_OR_RETURN(std::string to_operand, dims(p[4], "scatter_dims_to_operand_dims"));
    INSITU_ASSIGN_OR_RETURN(std::string indices_batching, dims(p[5], "scatter_indices_batching_dims"));
    INSITU_ASSIGN_OR_RETURN(int64_t unique, symbols_.integer(p[6], "unique_indices"));
    INSITU_ASSIGN_OR_RETURN(std::string window, dims(p[7], "update_window_dims"));
    return define(scope, op, str_cat("scatter(", args, "), update_window_dims=", window, ", inserted_window_dims=", inserted,
                                     ", scatter_dims_to_operand_dims=", to_operand, ", input_batching_dims=", input_batching,
                                     ", scatter_indices_batching_dims=", indices_batching,
                                     ", index_vector_dim=", index_vector_dim, sorted ? ", indices_are_sorted=true" : "",
                                     unique ? ", unique_indices=true" : "", ", to_apply=", body));
  }
  if (op_name == "gather_v2") {
    // collapsed_slice_dims, index_vector_dim, indices_are_sorted, offset_dims, operand_batching_dims,
    // slice_sizes, start_index_map, start_indices_batching_dims
    INSITU_ASSIGN_OR_RETURN(std::vector<uint64_t> p, properties(op, 8));
    INSITU_ASSIGN_OR_RETURN(std::string collapsed, dims(p[0], "collapsed_slice_dims"));
    INSITU_ASSIGN_OR_RETURN(int64_t index_vector_dim, symbols_.integer(p[1], "index_vector_dim"));
    INSITU_ASSIGN_OR_RETURN(int64_t sorted, symbols_.integer(p[2], "indices_are_sorted"));
    INSITU_ASSIGN_OR_RETURN(std::string offset, dims(p[3], "offset_dims"));
    INSITU_ASSIGN_OR_RETURN(std::string operand_batching, dims(p[4], "operand_batching_dims"));
    INSITU_ASSIGN_OR_RETURN(std::string sizes, dims(p[5], "slice_sizes"));
    INSITU_ASSIGN_OR_RETURN(std::string start_map, dims(p[6], "start_index_map"));
    INSITU_ASSIGN_OR_RETURN(std::string start_batching, dims(p[7], "start_indices_batching_dims"));
    return define(scope, op, str_cat("gather(", args, "), offset_dims=", offset, ", collapsed_slice_dims=", collapsed,
                                     ", start_index_map=", start_map, ", operand_batching_dims=", operand_batching,
                                     ", start_indices_batching_dims=", start_batching, ", index_vector_dim=",
                                     index_vector_dim, ", slice_sizes=", sizes,
                                     sorted ? ", indices_are_sorted=true" : ""));
  }
  if (op_name == "sort_v1") {
    if (op.regions.size() != 1) return error(op, "a sort without its comparator");
    INSITU_ASSIGN_OR_RETURN(std::string comparator, applier(op, op.regions[0], "comparator"));
    INSITU_ASSIGN_OR_RETURN(std::vector<uint64_t> p, properties(op, 2));  // dimension, is_stable
    INSITU_ASSIGN_OR_RETURN(int64_t dimension, symbols_.integer(p[0], "dimension"));
    INSITU_ASSIGN_OR_RETURN(int64_t stable, symbols_.integer(p[1], "is_stable"));
    return define(scope, op, str_cat("sort(", args, "), dimensions={", dimension, "}",
                                     stable ? ", is_stable=true" : "", ", to_apply=", comparator));
  }
  if (op_name == "call_v1") {
    INSITU_ASSIGN_OR_RETURN(std::vector<uint64_t> p, properties(op, 1));
    INSITU_ASSIGN_OR_RETURN(std::string callee, symbols_.string(p[0], "callee"));
    auto found = functions_.find(callee);
    if (found == functions_.end()) return error(op, str_cat("a call of @", callee, ", which the artifact does not define"));
    return define(scope, op, str_cat("call(", args, "), to_apply=", found->second));
  }
  if (op_name == "reduce_precision_v1") {
    INSITU_ASSIGN_OR_RETURN(std::vector<uint64_t> p, properties(op, 2));  // exponent_bits, mantissa_bits
    INSITU_ASSIGN_OR_RETURN(int64_t exponent, symbols_.integer(p[0], "exponent_bits"));
    INSITU_ASSIGN_OR_RETURN(int64_t mantissa, symbols_.integer(p[1], "mantissa_bits"));
    return define(scope, op, str_cat("reduce-precision(", args, "), exponent_bits=", exponent, ", mantissa_bits=", mantissa));
  }
  if (op_name == "convolution_v1") return convolution(scope, op, args);
  if (op_name == "rng_bit_generator_v1") {
    INSITU_ASSIGN_OR_RETURN(std::vector<uint64_t> p, properties(op, 1));
    INSITU_ASSIGN_OR_RETURN(int64_t algorithm, symbols_.integer(p[0], "rng_algorithm"));
    static const char* kAlgorithms[] = {"rng_default", "rng_three_fry", "rng_philox"};
    if (algorithm < 0 || algorithm > 2) return error(op, str_cat("an rng_bit_generator of unknown algorithm ", algorithm));
    return define(scope, op, str_cat("rng-bit-generator(", args, "), algorithm=", kAlgorithms[algorithm]));
  }
  if (op_name == "optimization_barrier_v1") {  // HLO's opt-barrier takes and gives one tuple
    std::vector<std::string> shapes;
    for (uint64_t type : op.result_types) {
      INSITU_ASSIGN_OR_RETURN(std::string shape, shape_text(type, op));
      shapes.push_back(std::move(shape));
    }
    const std::string tuple_shape = str_cat("(", str_join(shapes, ", "), ")");
    const std::string tuple = fresh("barrier_operand"), barrier = fresh("barrier");
    scope.lines.push_back(str_cat(tuple, " = ", tuple_shape, " tuple(", args, ")"));
    scope.lines.push_back(str_cat(barrier, " = ", tuple_shape, " opt-barrier(", tuple, ")"));
    for (size_t i = 0; i < shapes.size(); ++i) {
      const std::string element = fresh("barrier_result");
      scope.lines.push_back(str_cat(element, " = ", shapes[i], " get-tuple-element(", barrier, "), index=", i));
      scope.names[{&op, i}] = element;
    }
    return ok_status();
  }
  if (op_name == "composite_v2" || op_name == "composite_v1") {
    // composite_attributes, decomposition, name, version: the decomposition is its meaning
    INSITU_ASSIGN_OR_RETURN(std::vector<uint64_t> p, properties(op, 4));
    INSITU_ASSIGN_OR_RETURN(std::string decomposition, symbols_.string(p[1], "decomposition"));
    auto found = functions_.find(decomposition);
    if (found == functions_.end())
      return error(op, str_cat("a composite whose decomposition @", decomposition, " the artifact does not define"));
    return define(scope, op, str_cat("call(", args, "), to_apply=", found->second));
  }
  if (op_name == "select_and_scatter_v1") {
    if (op.regions.size() != 2) return error(op, "a select_and_scatter without its select and scatter");
    INSITU_ASSIGN_OR_RETURN(std::string select, applier(op, op.regions[0], "select"));
    INSITU_ASSIGN_OR_RETURN(std::string scatter, applier(op, op.regions[1], "scatter"));
    INSITU_ASSIGN_OR_RETURN(std::vector<uint64_t> p, properties(op, 3));  // padding, window_dimensions, window_strides
    INSITU_ASSIGN_OR_RETURN(std::vector<int64_t> sizes, symbols_.integers(p[1], "window_dimensions"));
    INSITU_ASSIGN_OR_RETURN(std::vector<int64_t> strides, symbols_.integers(p[2], "window_strides"));
    INSITU_ASSIGN_OR_RETURN(std::vector<int64_t> padding, padding_pairs(p[0], sizes.size()));
    std::vector<std::string> size, stride, pad;
    for (size_t d = 0; d < sizes.size(); ++d) {
      size.push_back(str_cat(sizes[d]));
      stride.push_back(str_cat(d < strides.size() ? strides[d] : 1));
      pad.push_back(str_cat(padding[2 * d], "_", padding[2 * d + 1]));
    }
    return define(scope, op, str_cat("select-and-scatter(", args, "), window={size=", str_join(size, "x"), " stride=",
                                     str_join(stride, "x"), " pad=", str_join(pad, "x"), "}, select=", select,
                                     ", scatter=", scatter));
  }
  if (op_name == "fft_v1") {
    INSITU_ASSIGN_OR_RETURN(std::vector<uint64_t> p, properties(op, 2));  // fft_length, fft_type
    INSITU_ASSIGN_OR_RETURN(std::string lengths, dims(p[0], "fft_length"));
    INSITU_ASSIGN_OR_RETURN(int64_t type, symbols_.integer(p[1], "fft_type"));
    static const char* kTypes[] = {"FFT", "IFFT", "RFFT", "IRFFT"};
    if (type < 0 || type > 3) return error(op, str_cat("an fft of unknown type ", type));
    return define(scope, op, str_cat("fft(", args, "), fft_type=", kTypes[type], ", fft_length=", lengths));
  }
  if (op_name == "custom_call_v1" || op_name == "custom_call_v2") return custom_call(scope, op, args);
  if (op_name == "while_v1") return while_loop(scope, op, names);
  if (op_name == "if_v1" || op_name == "case_v1") return branches(scope, op, names);
  return error(op, str_cat(full, " is not read by insitu yet"));
}

Status Importer::chlo(Scope& scope, const Operation& op) {
  const std::string which = name(op).substr(5);
  INSITU_ASSIGN_OR_RETURN(std::vector<std::string> names, operands(scope, op));
  if (names.size() != 1 || op.result_types.empty()) return error(op, str_cat(name(op), " of other than one operand"));
  const std::string& x = names[0];
  static const std::map<std::string, std::string, std::less<>> kUnary = {
      {"erf", "erf"}, {"sinh", "sinh"}, {"cosh", "cosh"}, {"tan", "tan"}, {"asin", "asin"}, {"acos", "acos"},
      {"atan", "atan"}, {"asinh", "asinh"}, {"acosh", "acosh"}, {"atanh", "atanh"}};
  if (which == "square") return define(scope, op, str_cat("multiply(", x, ", ", x, ")"));
  if (auto found = kUnary.find(which); found != kUnary.end()) return define(scope, op, str_cat(found->second, "(", x, ")"));
  if (which == "top_k") {
    INSITU_ASSIGN_OR_RETURN(std::vector<uint64_t> p, properties(op, 1));
    INSITU_ASSIGN_OR_RETURN(int64_t k, symbols_.integer(p[0], "k"));
    return define(scope, op, str_cat("topk(", x, "), k=", k, ", largest=true"));
  }
  if (which != "erf_inv") return error(op, str_cat(name(op), " is not read"));
  // Giles' single-precision approximation (as XLA expands chlo.erf_inv): w = -log1p(-x*x); a
  // degree-8 polynomial in w - 2.5 (w < 5) or sqrt(w) - 3, times x; +-inf at |x| = 1. f16 and
  // bf16 are computed in f32.
  StatusOr<Shape> result = symbols_.shape(op.result_types[0], "erf_inv");
  if (!result.ok()) return error(op, result.status().message());
  const PrimitiveType type = result->element_type();
  if (type != PrimitiveType::kF32 && type != PrimitiveType::kF16 && type != PrimitiveType::kBF16)
    return error(op, str_cat("chlo.erf_inv of ", primitive_type_name(type), " is not read (f32, f16 and bf16 are)"));
  const std::string shape = Shape::array(PrimitiveType::kF32, result->dimensions()).to_string();
  const std::string pred = Shape::array(PrimitiveType::kPred, result->dimensions()).to_string();
  auto line = [&](const std::string& of, const std::string& expression) {
    const std::string named = fresh("erf_inv");
    scope.lines.push_back(str_cat(named, " = ", of, " ", expression));
    return named;
  };
  auto splat = [&](std::string_view value) {
    return line(shape, str_cat("broadcast(", line("f32[]", str_cat("constant(", value, ")")), "), dimensions={}"));
  };
  const std::string v = type == PrimitiveType::kF32 ? x : line(shape, str_cat("convert(", x, ")"));
  const std::string w = line(shape, str_cat("negate(", line(shape, str_cat("log-plus-one(", line(shape, str_cat("multiply(", v, ", ", line(shape, str_cat("negate(", v, ")")), ")")), ")")), ")"));
  const std::string small = line(pred, str_cat("compare(", w, ", ", splat("5"), "), direction=LT"));
  const std::string t = line(shape, str_cat("select(", small, ", ", line(shape, str_cat("subtract(", w, ", ", splat("2.5"), ")")), ", ",
                                            line(shape, str_cat("subtract(", line(shape, str_cat("sqrt(", w, ")")), ", ", splat("3"), ")")), ")"));
  static const char* kSmall[] = {"2.81022636e-08", "3.43273939e-07", "-3.5233877e-06", "-4.39150654e-06", "0.00021858087",
                                 "-0.00125372503", "-0.00417768164", "0.246640727", "1.50140941"};
  static const char* kLarge[] = {"-0.000200214257", "0.000100950558", "0.00134934322", "-0.00367342844", "0.00573950773",
                                 "-0.0076224613", "0.00943887047", "1.00167406", "2.83297682"};
  auto coefficient = [&](int i) { return line(shape, str_cat("select(", small, ", ", splat(kSmall[i]), ", ", splat(kLarge[i]), ")")); };
  std::string p = coefficient(0);
  for (int i = 1; i < 9; ++i) p = line(shape, str_cat("add(", coefficient(i), ", ", line(shape, str_cat("multiply(", p, ", ", t, ")")), ")"));
  const std::string finite = line(shape, str_cat("multiply(", p, ", ", v, ")"));
  const std::string one = line(pred, str_cat("compare(", line(shape, str_cat("abs(", v, ")")), ", ", splat("1"), "), direction=EQ"));
  const std::string chosen = str_cat("select(", one, ", ", line(shape, str_cat("multiply(", v, ", ", splat("inf"), ")")), ", ", finite, ")");
  if (type == PrimitiveType::kF32) return define(scope, op, chosen);
  return define(scope, op, str_cat("convert(", line(shape, chosen), ")"));
}

Status Importer::broadcast_in_dim(Scope& scope, const Operation& op, const std::string& args) {
  INSITU_ASSIGN_OR_RETURN(std::vector<uint64_t> p, properties(op, 1));
  INSITU_ASSIGN_OR_RETURN(std::vector<int64_t> mapped, symbols_.integers(p[0], "broadcast_dimensions"));
  if (op.operands.size() != 1) return error(op, "a broadcast of other than one operand");
  StatusOr<Shape> operand = symbols_.shape(type_of(op.operands[0]), "a broadcast's operand");
  StatusOr<Shape> result = op.result_types.size() == 1 ? symbols_.shape(op.result_types[0], "a broadcast's result")
                                                        : StatusOr<Shape>(invalid_argument("a broadcast of several results"));
  if (!operand.ok()) return error(op, operand.status().message());
  if (!result.ok()) return error(op, result.status().message());
  if (!operand->is_array() || static_cast<int64_t>(mapped.size()) != operand->rank())
    return error(op, "broadcast_dimensions of another length than the operand's rank");
  std::vector<int64_t> kept_dims, kept_mapped;
  for (size_t d = 0; d < mapped.size(); ++d) {
    if (mapped[d] < 0 || mapped[d] >= result->rank()) return error(op, "a broadcast dimension out of the result's range");
    const bool stretched = operand->dimension(d) == 1 && result->dimension(mapped[d]) != 1;
    if (stretched) continue;
    kept_dims.push_back(operand->dimension(d));
    kept_mapped.push_back(mapped[d]);
  }
  std::string source = args;
  if (kept_dims.size() != mapped.size()) {
    source = fresh("unit_dropped");
    scope.lines.push_back(str_cat(source, " = ", Shape::array(operand->element_type(), kept_dims).to_string(),
                                  " reshape(", args, ")"));
  }
  return define(scope, op, str_cat("broadcast(", source, "), dimensions=", braces(kept_mapped)));
}

StatusOr<std::vector<int64_t>> Importer::padding_pairs(uint64_t attribute, size_t dimensions) {
  INSITU_ASSIGN_OR_RETURN(std::vector<int64_t> values, symbols_.integers(attribute, "padding"));
  if (values.size() != 2 * dimensions)
    return symbols_.attribute_error(attribute, str_cat("padding of ", values.size(), " values for ", dimensions, " dimensions"));
  return values;
}

Status Importer::convolution(Scope& scope, const Operation& op, const std::string& args) {
  INSITU_ASSIGN_OR_RETURN(std::vector<uint64_t> p, properties(op, 17));
  auto integer = [&](size_t i, std::string_view what) { return symbols_.integer(p[i], what); };
  auto list = [&](size_t i, std::string_view what) { return symbols_.integers(p[i], what); };
  INSITU_ASSIGN_OR_RETURN(int64_t batch_groups, integer(0, "batch_group_count"));
  INSITU_ASSIGN_OR_RETURN(int64_t feature_groups, integer(1, "feature_group_count"));
  INSITU_ASSIGN_OR_RETURN(int64_t input_batch, integer(2, "input_batch_dimension"));
  INSITU_ASSIGN_OR_RETURN(int64_t input_feature, integer(3, "input_feature_dimension"));
  INSITU_ASSIGN_OR_RETURN(std::vector<int64_t> input_spatial, list(4, "input_spatial_dimensions"));
  INSITU_ASSIGN_OR_RETURN(int64_t kernel_input, integer(5, "kernel_input_feature_dimension"));
  INSITU_ASSIGN_OR_RETURN(int64_t kernel_output, integer(6, "kernel_output_feature_dimension"));
  INSITU_ASSIGN_OR_RETURN(std::vector<int64_t> kernel_spatial, list(7, "kernel_spatial_dimensions"));
  INSITU_ASSIGN_OR_RETURN(std::vector<int64_t> lhs_dilation, list(8, "lhs_dilation"));
  INSITU_ASSIGN_OR_RETURN(int64_t output_batch, integer(9, "output_batch_dimension"));
  INSITU_ASSIGN_OR_RETURN(int64_t output_feature, integer(10, "output_feature_dimension"));
  INSITU_ASSIGN_OR_RETURN(std::vector<int64_t> output_spatial, list(11, "output_spatial_dimensions"));
  const size_t spatial = input_spatial.size();
  INSITU_ASSIGN_OR_RETURN(std::vector<int64_t> padding, padding_pairs(p[12], spatial));
  INSITU_ASSIGN_OR_RETURN(std::vector<int64_t> rhs_dilation, list(14, "rhs_dilation"));
  INSITU_ASSIGN_OR_RETURN(std::vector<int64_t> reversal, list(15, "window_reversal"));
  INSITU_ASSIGN_OR_RETURN(std::vector<int64_t> strides, list(16, "window_strides"));
  if (op.operands.size() != 2 || spatial > 9 || kernel_spatial.size() != spatial || output_spatial.size() != spatial ||
      lhs_dilation.size() != spatial || rhs_dilation.size() != spatial || strides.size() != spatial ||
      (reversal.size() != spatial && !reversal.empty()))
    return error(op, "a convolution whose dimension lists do not agree");
  INSITU_ASSIGN_OR_RETURN(const Type* kernel, symbols_.type(type_of(op.operands[1])));
  // labels: b/f (or i/o) and the spatial dimensions' numbers, by position
  auto labels = [&](size_t rank, int64_t first, char first_label, int64_t second, char second_label,
                    const std::vector<int64_t>& spatial_dims) -> StatusOr<std::string> {
    std::string text(rank, '?');
    auto put = [&](int64_t at, char label) -> Status {
      if (at < 0 || static_cast<size_t>(at) >= rank || text[at] != '?') return error(op, "convolution dimension numbers that do not fit");
      text[at] = label;
      return ok_status();
    };
    INSITU_RETURN_IF_ERROR(put(first, first_label));
    INSITU_RETURN_IF_ERROR(put(second, second_label));
    for (size_t k = 0; k < spatial_dims.size(); ++k) INSITU_RETURN_IF_ERROR(put(spatial_dims[k], static_cast<char>('0' + k)));
    return text;
  };
  const size_t rank = spatial + 2;
  INSITU_ASSIGN_OR_RETURN(std::string lhs, labels(rank, input_batch, 'b', input_feature, 'f', input_spatial));
  INSITU_ASSIGN_OR_RETURN(std::string rhs, labels(rank, kernel_input, 'i', kernel_output, 'o', kernel_spatial));
  INSITU_ASSIGN_OR_RETURN(std::string out, labels(rank, output_batch, 'b', output_feature, 'f', output_spatial));
  if (kernel->kind != Type::Kind::kTensor || kernel->dimensions.size() != rank) return error(op, "a convolution kernel of another rank");
  std::vector<std::string> size, stride, pad, lhs_dilate, rhs_dilate, reverse;
  for (size_t k = 0; k < spatial; ++k) {
    size.push_back(str_cat(kernel->dimensions[kernel_spatial[k]]));
    stride.push_back(str_cat(strides[k]));
    pad.push_back(str_cat(padding[2 * k], "_", padding[2 * k + 1]));
    lhs_dilate.push_back(str_cat(lhs_dilation[k]));
    rhs_dilate.push_back(str_cat(rhs_dilation[k]));
    reverse.push_back(reversal.empty() ? "0" : str_cat(reversal[k]));
  }
  std::string window = str_cat("window={size=", str_join(size, "x"), " stride=", str_join(stride, "x"), " pad=",
                               str_join(pad, "x"), " lhs_dilate=", str_join(lhs_dilate, "x"), " rhs_dilate=",
                               str_join(rhs_dilate, "x"));
  if (std::find(reversal.begin(), reversal.end(), 1) != reversal.end()) window += str_cat(" rhs_reversal=", str_join(reverse, "x"));
  window += "}";
  return define(scope, op, str_cat("convolution(", args, "), ", spatial == 0 ? "" : window + ", ", "dim_labels=", lhs, "_",
                                   rhs, "->", out, feature_groups != 1 ? str_cat(", feature_group_count=", feature_groups) : "",
                                   batch_groups != 1 ? str_cat(", batch_group_count=", batch_groups) : ""));
}

}  // namespace insitu::stablehlo::import_internal
