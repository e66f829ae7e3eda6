// The printed forms of the module, func ops, StableHLO ops and the CHLO ops JAX leaves in its
// text (text.h, text_internal.h): each becomes a TextOp with its attributes named as the op's
// generic form (and VHLO's properties) name them. An op printed in a form not listed here can
// be read in MLIR's generic form ("stablehlo.op"(...) <{...}> : (...) -> ...).
#include <algorithm>
#include <cctype>
#include <set>

#include "insitu/stablehlo/text_internal.h"
#include "insitu/support/str.h"

namespace insitu::stablehlo::text_internal {
namespace {

// Ops printed as `operands attr-dict : types` (their attributes, if any, in the dictionary).
const std::set<std::string, std::less<>>& plain_ops() {
  static const auto* ops = new std::set<std::string, std::less<>>{
      "abs", "add", "and", "atan2", "bitcast_convert", "cbrt", "ceil", "clamp", "complex", "convert", "cosine",
      "count_leading_zeros", "divide", "dynamic_update_slice", "exponential", "exponential_minus_one", "floor", "imag",
      "is_finite", "log", "log_plus_one", "logistic", "maximum", "minimum", "multiply", "negate", "not", "or", "popcnt",
      "power", "real", "remainder", "reshape", "round_nearest_afz", "round_nearest_even", "rsqrt", "select",
      "shift_left", "shift_right_arithmetic", "shift_right_logical", "sign", "sine", "sqrt", "subtract", "tan", "tanh",
      "xor", "after_all", "create_token", "replica_id", "partition_id", "optimization_barrier",
  };
  return *ops;
}

// CHLO ops read: the elementwise ones insitu has as HLO ops, square, erf_inv, top_k.
const std::set<std::string, std::less<>>& chlo_unary_ops() {
  static const auto* ops = new std::set<std::string, std::less<>>{
      "square", "erf", "erf_inv", "sinh", "cosh", "tan", "asin", "acos", "atan", "asinh", "acosh", "atanh",
  };
  return *ops;
}

}  // namespace

Status Parser::convolution_dimensions(Attribute& fields) {
  // each list names, by position, what each dimension is: b/f (or i/o) and the spatial numbers
  fields.kind = Attribute::Kind::kDictionary;
  const char* kFirst[] = {"input_batch_dimension", "kernel_input_feature_dimension", "output_batch_dimension"};
  const char* kSecond[] = {"input_feature_dimension", "kernel_output_feature_dimension", "output_feature_dimension"};
  const char* kSpatial[] = {"input_spatial_dimensions", "kernel_spatial_dimensions", "output_spatial_dimensions"};
  const char kLabels[3][2] = {{'b', 'f'}, {'i', 'o'}, {'b', 'f'}};
  for (int list = 0; list < 3; ++list) {
    if (list == 1) INSITU_RETURN_IF_ERROR(expect("x"));
    if (list == 2) INSITU_RETURN_IF_ERROR(expect("->"));
    const size_t at = position();
    INSITU_RETURN_IF_ERROR(expect("["));
    int64_t first = -1, second = -1, position = 0;
    std::vector<int64_t> spatial;
    if (!consume("]")) {
      do {
        skip_space();
        const std::string_view label = word();
        const bool is_first = label.size() == 1 && label[0] == kLabels[list][0];
        const bool is_second = label.size() == 1 && label[0] == kLabels[list][1];
        if ((is_first && first >= 0) || (is_second && second >= 0))
          return error_at(at, str_cat("'", label, "' named twice in convolution dimension numbers"));
        if (is_first) first = position;
        else if (is_second) second = position;
        else if (!label.empty() && std::all_of(label.begin(), label.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); })) {
          const size_t k = label.size() > 2 ? 99 : std::stoul(std::string(label));
          if (k > 16) return error_at(at, "a convolution of more than 16 spatial dimensions");
          if (spatial.size() <= k) spatial.resize(k + 1, -1);
          if (spatial[k] >= 0) return error_at(at, str_cat("spatial dimension ", k, " named twice"));
          spatial[k] = position;
        } else {
          return error_at(at, str_cat("'", label, "' is not a convolution dimension label"));
        }
        ++position;
      } while (consume(","));
      INSITU_RETURN_IF_ERROR(expect("]"));
    }
    if (first < 0 || second < 0 || std::find(spatial.begin(), spatial.end(), -1) != spatial.end())
      return error_at(at, "convolution dimension numbers that do not name every dimension once");
    fields.elements.push_back(string_attribute(kFirst[list], at));
    fields.elements.push_back(integer_attribute(first, PrimitiveType::kS64, at));
    fields.elements.push_back(string_attribute(kSecond[list], at));
    fields.elements.push_back(integer_attribute(second, PrimitiveType::kS64, at));
    fields.elements.push_back(string_attribute(kSpatial[list], at));
    fields.elements.push_back(integers_attribute(spatial, at));
  }
  return ok_status();
}

Status Parser::custom(TextOp& op, const ResultNames& results) {
  const size_t at = op.offset;
  std::string name = op.name;
  auto named = [&](std::string key, uint64_t value) { op.attributes.emplace_back(std::move(key), value); };
  auto list = [&](std::string key) -> Status {  // key = [1, 2] (or an attribute: #alias, array<i64: ...>)
    INSITU_RETURN_IF_ERROR(expect("="));
    skip_space();
    const size_t list_at = position();
    if (!peek("[")) {
      INSITU_ASSIGN_OR_RETURN(uint64_t value, attribute());
      named(std::move(key), value);
      return ok_status();
    }
    INSITU_ASSIGN_OR_RETURN(std::vector<int64_t> values, integer_list());
    named(std::move(key), integers_attribute(values, list_at));
    return ok_status();
  };
  auto keyword_list = [&](std::string_view keyword, std::string key) -> Status {  // , keyword = [..]
    INSITU_RETURN_IF_ERROR(expect(","));
    INSITU_RETURN_IF_ERROR(expect(keyword));
    return list(std::move(key));
  };
  auto enum_word = [&](VhloEnum code, std::vector<std::string_view> values, std::string key) -> Status {
    skip_space();
    const size_t word_at = position();
    const std::string_view found = word();
    for (size_t i = 0; i < values.size(); ++i)
      if (values[i] == found) {
        named(std::move(key), enum_attribute(code, static_cast<int64_t>(i), word_at));
        return ok_status();
      }
    return error_at(word_at, str_cat("'", found, "' is not a ", key, " (", str_join(values, ", "), ")"));
  };
  auto finish = [&]() -> Status {  // attr-dict : types
    INSITU_RETURN_IF_ERROR(attribute_dictionary(op));
    return trailing_types(op, results.total);
  };

  if (name == "module" || name == "builtin.module") {
    op.name = "builtin.module";
    if (consume("@")) named("sym_name", string_attribute(std::string(word()), at));
    if (consume("attributes")) INSITU_RETURN_IF_ERROR(attribute_dictionary(op));
    return region(op.regions.emplace_back(), {});
  }
  if (name == "func.func") return function(op);
  if (name == "return" || name == "func.return" || name == "stablehlo.return") {
    op.name = name == "stablehlo.return" ? name : "func.return";
    INSITU_ASSIGN_OR_RETURN(op.operands, value_uses());
    if (op.operands.empty()) return ok_status();
    return finish();
  }
  if (name == "call" || name == "func.call") {
    op.name = "func.call";
    INSITU_RETURN_IF_ERROR(expect("@"));
    named("callee", string_attribute(std::string(word()), at));
    INSITU_RETURN_IF_ERROR(expect("("));
    INSITU_ASSIGN_OR_RETURN(op.operands, value_uses());
    INSITU_RETURN_IF_ERROR(expect(")"));
    return finish();
  }
  if (name.starts_with("chlo.")) {
    const std::string chlo = name.substr(5);
    if (chlo == "top_k") {  // chlo.top_k(%x, k = 3) : T -> (T, U)
      INSITU_RETURN_IF_ERROR(expect("("));
      INSITU_ASSIGN_OR_RETURN(TextValue operand, value_use());
      op.operands.push_back(operand);
      INSITU_RETURN_IF_ERROR(expect(","));
      INSITU_RETURN_IF_ERROR(expect("k"));
      INSITU_RETURN_IF_ERROR(expect("="));
      INSITU_ASSIGN_OR_RETURN(int64_t k, integer());
      named("k", integer_attribute(k, PrimitiveType::kS64, at));
      INSITU_RETURN_IF_ERROR(expect(")"));
      return finish();
    }
    if (!chlo_unary_ops().count(chlo))
      return error_at(at, str_cat(name, " is not read (insitu reads the CHLO ops top_k, ", str_join(chlo_unary_ops(), ", "),
                                  "; jax.export's artifact has the others decomposed into StableHLO)"));
    INSITU_ASSIGN_OR_RETURN(op.operands, value_uses());
    return finish();
  }
  if (name == "sdy.mesh") {  // sdy.mesh @name = <...> {...}: where values would be placed
    INSITU_RETURN_IF_ERROR(expect("@"));
    word();
    INSITU_RETURN_IF_ERROR(expect("="));
    skip_space();
    INSITU_ASSIGN_OR_RETURN(uint64_t mesh, opaque(position(), "a Shardy mesh"));
    named("sdy.mesh", mesh);
    return attribute_dictionary(op);
  }
  if (name == "sdy.sharding_constraint") {  // sdy.sharding_constraint %x <@mesh, [...]> : T
    INSITU_ASSIGN_OR_RETURN(TextValue operand, value_use());
    op.operands.push_back(operand);
    skip_space();
    INSITU_ASSIGN_OR_RETURN(uint64_t sharding, opaque(position(), "a Shardy sharding"));
    named("sdy.sharding", sharding);
    return finish();
  }
  if (!name.starts_with("stablehlo."))
    return error_at(at, str_cat("'", name, "' is not an op insitu reads (StableHLO, CHLO and func ops are)"));
  const std::string base = name.substr(10);
  if (plain_ops().count(base)) {
    INSITU_ASSIGN_OR_RETURN(op.operands, value_uses());
    return finish();
  }
  if (base == "constant") {
    INSITU_RETURN_IF_ERROR(attribute_dictionary(op));
    skip_space();
    const size_t value_at = position();
    INSITU_ASSIGN_OR_RETURN(uint64_t value, attribute());
    if (attribute_at(value).kind != Attribute::Kind::kTensor) return error_at(value_at, "a constant whose value is not dense<...>");
    named("value", value);
    op.result_types = {attribute_at(value).type};
    return ok_status();
  }
  if (base == "iota") {  // iota dim = 0 : T
    INSITU_RETURN_IF_ERROR(expect("dim"));
    INSITU_RETURN_IF_ERROR(expect("="));
    INSITU_ASSIGN_OR_RETURN(int64_t dimension, integer());
    named("iota_dimension", integer_attribute(dimension, PrimitiveType::kS64, at));
    return finish();
  }
  if (base == "tuple") {  // tuple %a, %b : tuple<A, B>
    INSITU_ASSIGN_OR_RETURN(op.operands, value_uses());
    INSITU_RETURN_IF_ERROR(attribute_dictionary(op));
    INSITU_RETURN_IF_ERROR(expect(":"));
    INSITU_ASSIGN_OR_RETURN(uint64_t t, type());
    op.result_types = {t};
    return ok_status();
  }
  if (base == "get_tuple_element") {  // get_tuple_element %t[0] : (tuple<...>) -> T
    INSITU_ASSIGN_OR_RETURN(TextValue tuple, value_use());
    op.operands.push_back(tuple);
    INSITU_RETURN_IF_ERROR(expect("["));
    INSITU_ASSIGN_OR_RETURN(int64_t index, integer());
    INSITU_RETURN_IF_ERROR(expect("]"));
    named("index", integer_attribute(index, PrimitiveType::kS32, at));
    return finish();
  }
  if (base == "broadcast_in_dim" || base == "transpose" || base == "reverse") {  // %x, dims = [..]
    INSITU_ASSIGN_OR_RETURN(TextValue operand, value_use());
    op.operands.push_back(operand);
    INSITU_RETURN_IF_ERROR(keyword_list("dims", base == "broadcast_in_dim" ? "broadcast_dimensions"
                                                : base == "transpose"      ? "permutation"
                                                                           : "dimensions"));
    return finish();
  }
  if (base == "concatenate") {  // %a, %b, dim = 0
    INSITU_ASSIGN_OR_RETURN(op.operands, value_uses());
    INSITU_RETURN_IF_ERROR(expect(","));
    INSITU_RETURN_IF_ERROR(expect("dim"));
    INSITU_RETURN_IF_ERROR(expect("="));
    INSITU_ASSIGN_OR_RETURN(int64_t dimension, integer());
    named("dimension", integer_attribute(dimension, PrimitiveType::kS64, at));
    return finish();
  }
  if (base == "slice") {  // %x [0:2, 1:4:2]
    INSITU_ASSIGN_OR_RETURN(TextValue operand, value_use());
    op.operands.push_back(operand);
    skip_space();
    const size_t ranges_at = position();
    INSITU_RETURN_IF_ERROR(expect("["));
    std::vector<int64_t> starts, limits, strides;
    if (!consume("]")) {
      do {
        INSITU_ASSIGN_OR_RETURN(int64_t start, integer());
        INSITU_RETURN_IF_ERROR(expect(":"));
        INSITU_ASSIGN_OR_RETURN(int64_t limit, integer());
        int64_t stride = 1;
        if (consume(":")) {
          INSITU_ASSIGN_OR_RETURN(stride, integer());
        }
        starts.push_back(start), limits.push_back(limit), strides.push_back(stride);
      } while (consume(","));
      INSITU_RETURN_IF_ERROR(expect("]"));
    }
    named("start_indices", integers_attribute(starts, ranges_at));
    named("limit_indices", integers_attribute(limits, ranges_at));
    named("strides", integers_attribute(strides, ranges_at));
    return finish();
  }
  if (base == "dynamic_slice") {  // %x, %i, %j, sizes = [..]
    INSITU_ASSIGN_OR_RETURN(op.operands, value_uses());
    INSITU_RETURN_IF_ERROR(keyword_list("sizes", "slice_sizes"));
    return finish();
  }
  if (base == "compare") {  // compare LT, %a, %b(, FLOAT)?
    INSITU_RETURN_IF_ERROR(enum_word(kComparisonDirection, {"EQ", "NE", "GE", "GT", "LE", "LT"}, "comparison_direction"));
    INSITU_RETURN_IF_ERROR(expect(","));
    INSITU_ASSIGN_OR_RETURN(op.operands, value_uses());
    if (consume(",")) {
      INSITU_RETURN_IF_ERROR(enum_word(kComparisonType, {"NOTYPE", "FLOAT", "TOTALORDER", "SIGNED", "UNSIGNED"}, "compare_type"));
    }
    return finish();
  }
  if (base == "dot_general" || base == "dot") {
    // %a, %b(, batching_dims = [..] x [..])?(, contracting_dims = [..] x [..])?(, precision = [..])?(, algorithm = ...)?
    INSITU_ASSIGN_OR_RETURN(op.operands, value_uses());
    if (base == "dot") {  // a dot_general contracting the lhs's last dimension with the rhs's first
      op.name = "stablehlo.dot_general";
      if (op.operands.size() != 2) return error_at(at, "a dot of other than two operands");
      const int64_t rank = static_cast<int64_t>(type_at(type_of(op.operands[0])).dimensions.size());
      named("lhs_contracting_dimensions", integers_attribute({rank - 1}, at));
      named("rhs_contracting_dimensions", integers_attribute({0}, at));
    }
    while (consume(",")) {
      skip_space();
      const size_t key_at = position();
      const std::string key(word());
      INSITU_RETURN_IF_ERROR(expect("="));
      if (key == "batching_dims" || key == "contracting_dims") {
        const std::string field = key == "batching_dims" ? "batching_dimensions" : "contracting_dimensions";
        INSITU_ASSIGN_OR_RETURN(std::vector<int64_t> lhs, integer_list());
        INSITU_RETURN_IF_ERROR(expect("x"));
        INSITU_ASSIGN_OR_RETURN(std::vector<int64_t> rhs, integer_list());
        named("lhs_" + field, integers_attribute(lhs, key_at));
        named("rhs_" + field, integers_attribute(rhs, key_at));
      } else if (key == "precision") {
        INSITU_RETURN_IF_ERROR(expect("["));
        std::vector<uint64_t> precisions;
        if (!consume("]")) {
          do {
            INSITU_RETURN_IF_ERROR(enum_word(kPrecision, {"DEFAULT", "HIGH", "HIGHEST"}, "precision"));
            precisions.push_back(op.attributes.back().second);
            op.attributes.pop_back();
          } while (consume(","));
          INSITU_RETURN_IF_ERROR(expect("]"));
        }
        named("precision_config", array_attribute(std::move(precisions), key_at));
      } else if (key == "algorithm") {
        return error_at(key_at, str_cat(name, " with an algorithm is not read"));
      } else {
        return error_at(key_at, str_cat("'", key, "' is not a field of ", name));
      }
    }
    return finish();
  }
  if (base == "convolution") {  // (%a, %b) dim_numbers = ..., window = {...} attr-dict : (...) -> ...
    INSITU_RETURN_IF_ERROR(expect("("));
    INSITU_ASSIGN_OR_RETURN(op.operands, value_uses());
    INSITU_RETURN_IF_ERROR(expect(")"));
    INSITU_RETURN_IF_ERROR(expect("dim_numbers"));
    INSITU_RETURN_IF_ERROR(expect("="));
    Attribute dimensions;
    INSITU_RETURN_IF_ERROR(convolution_dimensions(dimensions));
    for (size_t i = 0; i + 1 < dimensions.elements.size(); i += 2)
      named(attribute_at(dimensions.elements[i]).text, dimensions.elements[i + 1]);
    if (consume(",")) {
      INSITU_RETURN_IF_ERROR(expect("window"));
      INSITU_RETURN_IF_ERROR(expect("="));
      INSITU_RETURN_IF_ERROR(expect("{"));
      if (!consume("}")) {
        do {
          skip_space();
          const size_t key_at = position();
          const std::string key(word());
          INSITU_RETURN_IF_ERROR(expect("="));
          if (key == "pad") {  // [[low, high], ...]
            std::vector<int64_t> pairs;
            INSITU_RETURN_IF_ERROR(expect("["));
            do {
              INSITU_ASSIGN_OR_RETURN(std::vector<int64_t> pair, integer_list());
              if (pair.size() != 2) return error_at(key_at, "a pad entry that is not [low, high]");
              pairs.insert(pairs.end(), pair.begin(), pair.end());
            } while (consume(","));
            INSITU_RETURN_IF_ERROR(expect("]"));
            named("padding", integers_attribute(pairs, key_at));
          } else if (key == "reverse") {  // [false, true] or [0, 1]
            INSITU_ASSIGN_OR_RETURN(uint64_t flags, attribute());
            std::vector<int64_t> values;
            for (uint64_t element : attribute_at(flags).elements) {
              const Attribute& flag = attribute_at(element);
              if (flag.kind != Attribute::Kind::kBoolean && flag.kind != Attribute::Kind::kInteger)
                return error_at(key_at, "a reverse entry that is not a boolean");
              values.push_back(flag.integer != 0);
            }
            named("window_reversal", integers_attribute(values, key_at));
          } else {
            static const std::map<std::string, std::string, std::less<>> kFields = {
                {"stride", "window_strides"}, {"lhs_dilate", "lhs_dilation"}, {"rhs_dilate", "rhs_dilation"}};
            auto found = kFields.find(key);
            if (found == kFields.end()) return error_at(key_at, str_cat("'", key, "' is not a convolution window field"));
            INSITU_ASSIGN_OR_RETURN(std::vector<int64_t> values, integer_list());
            named(found->second, integers_attribute(values, key_at));
          }
        } while (consume(","));
        INSITU_RETURN_IF_ERROR(expect("}"));
      }
    }
    return finish();
  }
  if (base == "reduce") {
    // reduce(%x init: %i), ... applies stablehlo.op across dimensions = [..] : (...) -> ...
    // reduce(%x init: %i), ... across dimensions = [..] : (...) -> ... reducer(%a: T, %b: T) ... { body }
    std::vector<TextValue> inputs, inits;
    do {
      INSITU_RETURN_IF_ERROR(expect("("));
      INSITU_ASSIGN_OR_RETURN(TextValue input, value_use());
      INSITU_RETURN_IF_ERROR(expect("init"));
      INSITU_RETURN_IF_ERROR(expect(":"));
      INSITU_ASSIGN_OR_RETURN(TextValue init, value_use());
      INSITU_RETURN_IF_ERROR(expect(")"));
      inputs.push_back(input), inits.push_back(init);
    } while (consume(","));
    op.operands = inputs;
    op.operands.insert(op.operands.end(), inits.begin(), inits.end());
    std::string applied;
    if (consume("applies")) {
      skip_space();
      applied = std::string(word());
    }
    INSITU_RETURN_IF_ERROR(expect("across"));
    INSITU_RETURN_IF_ERROR(expect("dimensions"));
    INSITU_RETURN_IF_ERROR(list("dimensions"));
    INSITU_RETURN_IF_ERROR(finish());
    TextRegion& body = op.regions.emplace_back();
    if (applied.empty()) {
      INSITU_RETURN_IF_ERROR(expect("reducer"));
      std::vector<std::pair<std::string, uint64_t>> firsts, seconds;
      while (consume("(")) {
        for (int i = 0; i < 2; ++i) {
          if (i == 1) INSITU_RETURN_IF_ERROR(expect(","));
          INSITU_RETURN_IF_ERROR(expect("%"));
          std::string argument(word());
          INSITU_RETURN_IF_ERROR(expect(":"));
          INSITU_ASSIGN_OR_RETURN(uint64_t t, type());
          (i == 0 ? firsts : seconds).emplace_back(std::move(argument), t);
        }
        INSITU_RETURN_IF_ERROR(expect(")"));
      }
      firsts.insert(firsts.end(), seconds.begin(), seconds.end());
      return region(body, firsts);
    }
    // the applied op over one pair of scalars
    if (inputs.size() != 1) return error_at(at, "a reduce 'applies' form of several inputs");
    const uint64_t scalar = type_of(inits[0]);
    TextBlock& block = *body.blocks.emplace_back(std::make_unique<TextBlock>());
    block.argument_types = {scalar, scalar};
    auto apply = std::make_unique<TextOp>();
    apply->name = applied;
    apply->offset = at;
    apply->operands = {TextValue{nullptr, &block, 0}, TextValue{nullptr, &block, 1}};
    apply->result_types = {scalar};
    auto ret = std::make_unique<TextOp>();
    ret->name = "stablehlo.return";
    ret->offset = at;
    ret->operands = {TextValue{apply.get(), nullptr, 0}};
    block.ops.push_back(std::move(apply));
    block.ops.push_back(std::move(ret));
    return ok_status();
  }
  if (base == "while") {  // while(%iterArg = %init, ...) : T, ... [attributes {...}] cond { } do { }
    INSITU_RETURN_IF_ERROR(expect("("));
    std::vector<std::pair<std::string, uint64_t>> arguments;
    if (!consume(")")) {
      do {
        INSITU_RETURN_IF_ERROR(expect("%"));
        std::string argument(word());
        INSITU_RETURN_IF_ERROR(expect("="));
        INSITU_ASSIGN_OR_RETURN(TextValue init, value_use());
        op.operands.push_back(init);
        arguments.emplace_back(std::move(argument), type_of(init));
      } while (consume(","));
      INSITU_RETURN_IF_ERROR(expect(")"));
    }
    if (!op.operands.empty()) INSITU_RETURN_IF_ERROR(trailing_types(op, results.total));
    if (consume("attributes")) INSITU_RETURN_IF_ERROR(attribute_dictionary(op));
    INSITU_RETURN_IF_ERROR(expect("cond"));
    INSITU_RETURN_IF_ERROR(region(op.regions.emplace_back(), arguments));
    INSITU_RETURN_IF_ERROR(expect("do"));
    return region(op.regions.emplace_back(), arguments);
  }
  if (base == "custom_call") {  // custom_call @target(%a, ...) {attrs} : (...) -> ...
    INSITU_RETURN_IF_ERROR(expect("@"));
    std::string target;
    if (peek("\"")) {
      INSITU_ASSIGN_OR_RETURN(target, string_literal());
    } else {
      target = std::string(word());
    }
    named("call_target_name", string_attribute(std::move(target), at));
    INSITU_RETURN_IF_ERROR(expect("("));
    INSITU_ASSIGN_OR_RETURN(op.operands, value_uses());
    INSITU_RETURN_IF_ERROR(expect(")"));
    return finish();
  }
  if (base == "fft") {  // %x, type = FFT, length = [..]
    INSITU_ASSIGN_OR_RETURN(TextValue operand, value_use());
    op.operands.push_back(operand);
    INSITU_RETURN_IF_ERROR(expect(","));
    INSITU_RETURN_IF_ERROR(expect("type"));
    INSITU_RETURN_IF_ERROR(expect("="));
    INSITU_RETURN_IF_ERROR(enum_word(kFftType, {"FFT", "IFFT", "RFFT", "IRFFT"}, "fft_type"));
    INSITU_RETURN_IF_ERROR(keyword_list("length", "fft_length"));
    return finish();
  }
  if (base == "rng_bit_generator") {  // %state, algorithm = DEFAULT
    INSITU_ASSIGN_OR_RETURN(TextValue operand, value_use());
    op.operands.push_back(operand);
    INSITU_RETURN_IF_ERROR(expect(","));
    INSITU_RETURN_IF_ERROR(expect("algorithm"));
    INSITU_RETURN_IF_ERROR(expect("="));
    INSITU_RETURN_IF_ERROR(enum_word(kRngAlgorithm, {"DEFAULT", "THREE_FRY", "PHILOX"}, "rng_algorithm"));
    return finish();
  }
  if (base == "pad") {  // %x, %v, low = [..], high = [..], interior = [..]
    INSITU_ASSIGN_OR_RETURN(op.operands, value_uses());
    INSITU_RETURN_IF_ERROR(keyword_list("low", "edge_padding_low"));
    INSITU_RETURN_IF_ERROR(keyword_list("high", "edge_padding_high"));
    INSITU_RETURN_IF_ERROR(keyword_list("interior", "interior_padding"));
    return finish();
  }
  if (base == "reduce_precision") {  // %x, format = e5m10
    INSITU_ASSIGN_OR_RETURN(TextValue operand, value_use());
    op.operands.push_back(operand);
    INSITU_RETURN_IF_ERROR(expect(","));
    INSITU_RETURN_IF_ERROR(expect("format"));
    INSITU_RETURN_IF_ERROR(expect("="));
    skip_space();
    const size_t format_at = position();
    const std::string format(word());
    const size_t m = format.find('m');
    auto bits = [](std::string_view digits) -> int64_t {  // 1 to 3 digits, else -1
      if (digits.empty() || digits.size() > 3) return -1;
      for (char c : digits)
        if (!std::isdigit(static_cast<unsigned char>(c))) return -1;
      return std::stoll(std::string(digits));
    };
    const int64_t exponent = m == std::string::npos || format.empty() || format[0] != 'e' ? -1 : bits(std::string_view(format).substr(1, m - 1));
    const int64_t mantissa = m == std::string::npos ? -1 : bits(std::string_view(format).substr(m + 1));
    if (exponent < 1 || mantissa < 0) return error_at(format_at, str_cat("'", format, "' is not a format eNmM"));
    named("exponent_bits", integer_attribute(exponent, PrimitiveType::kS32, format_at));
    named("mantissa_bits", integer_attribute(mantissa, PrimitiveType::kS32, format_at));
    return finish();
  }
  if (base == "composite") {  // composite "name" %a, ... {composite_attributes = {..}, decomposition = @f} : (...) -> ...
    INSITU_ASSIGN_OR_RETURN(std::string composite, string_literal());
    named("name", string_attribute(std::move(composite), at));
    INSITU_ASSIGN_OR_RETURN(op.operands, value_uses());
    return finish();
  }
  return error_at(at, str_cat(name, " in its printed form is not read: insitu reads it in MLIR's generic form, or not at all ",
                              "(the generic form names what is missing)"));
}

}  // namespace insitu::stablehlo::text_internal
