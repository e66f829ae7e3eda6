// The importer's parts (import.h): import.cc writes the module, its functions, regions and
// control flow; import_ops.cc writes each VHLO op's HLO, import_custom_call.cc custom calls.
// Not an API.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "insitu/stablehlo/attributes.h"
#include "insitu/stablehlo/import.h"
#include "insitu/stablehlo/text.h"
#include "insitu/support/str.h"

namespace insitu::stablehlo::import_internal {

using bytecode::Block;
using bytecode::File;
using bytecode::Operation;
using bytecode::Region;
using bytecode::ValueRef;

inline std::string braces(const std::vector<int64_t>& values) { return str_cat("{", str_join(values, ","), "}"); }

// One HLO computation being written: its lines and the HLO name of each value it can read.
struct Scope {
  std::vector<std::string> lines;
  std::map<std::pair<const void*, uint64_t>, std::string> names;
  static std::pair<const void*, uint64_t> key(const ValueRef& value) {
    return value.operation != nullptr ? std::pair<const void*, uint64_t>{value.operation, value.index}
                                      : std::pair<const void*, uint64_t>{value.block, value.index};
  }
};

// Writes one artifact's module as HLO text (import.h says how each part maps).
class Importer {
 public:
  explicit Importer(const File& file) : file_(file), symbols_(file) {}
  // A File read from text, with its attributes and types decoded (text.h).
  explicit Importer(const TextFile& text) : file_(text.file), symbols_(text.file, text.attributes, text.types) {}

  StatusOr<HloText> run();

 private:
  std::string name(const Operation& op) const;

  // "byte N (file:line): message": the op's offset, and its source location where it has one.
  Status error(const Operation& op, std::string message);

  std::string fresh(std::string_view base);

  static std::string sanitize(std::string_view text);

  // The op's properties: `count` attribute indices in the order of their names.
  StatusOr<std::vector<uint64_t>> properties(const Operation& op, size_t count);

  StatusOr<std::string> shape_text(uint64_t type, const Operation& op);

  StatusOr<std::string> value(Scope& scope, const Operation& op, const ValueRef& operand);

  StatusOr<std::vector<std::string>> operands(Scope& scope, const Operation& op, size_t from = 0, size_t to = SIZE_MAX);

  // Emits `name = shape expression` for the op's results: one result directly; several as a
  // tuple and one get-tuple-element each.
  Status define(Scope& scope, const Operation& op, const std::string& expression,
                std::vector<std::string> shapes = {});

  // A computation of `region` whose block arguments are one scalar parameter each (reduce,
  // scatter, sort, ... appliers); its result the returned values (a tuple for several).
  StatusOr<std::string> applier(const Operation& op, const Region& region, std::string_view base);

  // Writes the block's ops and the computation whose root is what its return_v1 returns (a
  // tuple when several, or always with `tuple_result`); returns the computation's name.
  StatusOr<std::string> finish(Scope& scope, const Block& block, std::string_view base, bool tuple_result,
                               const std::vector<std::string>& extra_results = {});

  // The values a region reads that are defined outside it (but constants), in first-use order.
  void captures(const Region& region, std::vector<ValueRef>& out);

  // A computation taking one tuple parameter: the block's arguments (if any) and then the
  // captured values, in that order.
  StatusOr<std::string> tuple_region(const Operation& op, const Region& region, std::string_view base,
                                     const std::vector<std::string>& parameter_shapes, const std::vector<ValueRef>& captured,
                                     bool tuple_result, bool pass_captures_through);

  Status function(const Operation& op);

  // tf.aliasing_output (the output the argument's buffer becomes) and jax.buffer_donor.
  Status donation(const Operation& op, uint64_t arg_attrs, size_t results);

  // A constant: a placeholder in the text, its bytes copied in after parsing.
  Status constant(Scope& scope, const Operation& op, uint64_t value);

  StatusOr<std::string> dims(uint64_t attribute, std::string_view what);

  Status default_accuracy(const Operation& op, uint64_t attribute);

  Status emit(Scope& scope, const Operation& op);

  // The CHLO ops StableHLO text may hold (text.h): square, top_k, erf_inv (expanded as XLA does)
  // and the elementwise functions insitu has as HLO ops.
  Status chlo(Scope& scope, const Operation& op);

  // broadcast_in_dim may stretch an operand dimension of size 1 over a larger one (StableHLO's
  // implicit expansion, what keepdims reductions feed); HLO's broadcast maps dimensions of equal
  // size. Such dimensions are reshaped away first, as XLA's import does, so the passes see the
  // broadcast XLA's HLO has.
  Status broadcast_in_dim(Scope& scope, const Operation& op, const std::string& args);

  // A padding attribute: [N, 2] pairs (low, high), flattened.
  StatusOr<std::vector<int64_t>> padding_pairs(uint64_t attribute, size_t dimensions);

  // The type index of the value an operand reads.
  static uint64_t type_of(const ValueRef& value);

  // convolution_v1's 17 properties, by name: dim_labels and window in HLO's text form.
  Status convolution(Scope& scope, const Operation& op, const std::string& args);

  // An FFI attribute as MLIR writes it in a backend_config dictionary: `76 : ui8`, `1.5 : f32`,
  // `true`, `"text"`, `{a = 1 : i32}`.
  StatusOr<std::string> ffi_attribute(uint64_t index, int depth = 0);

  // The op's discardable attribute `key` (its attribute index), if it has one.
  StatusOr<std::optional<uint64_t>> discardable(const Operation& op, std::string_view key);

  // mhlo.frontend_attributes as HLO's frontend_attributes={k="v",...} (string values).
  StatusOr<std::string> frontend_attributes(const Operation& op);

  // Names written into the HLO as they are: letters, digits, '_', '.', '-'.
  static bool is_identifier(const std::string& text);

  static std::string ffi_quote(const std::string& text);

  // A shape with a layout (minor to major) from a custom call's operand or result layouts.
  StatusOr<std::string> shape_with_layout(uint64_t type, const std::vector<int64_t>& minor_to_major, const Operation& op);

  // custom_call v1/v2: api_version, backend_config, call_target_name, called_computations,
  // has_side_effect, operand_layouts, output_operand_aliases, result_layouts (, result_tilings)
  Status custom_call(Scope& scope, const Operation& op, const std::string& args);

  // while: the loop state is the operands and then the values the condition or body read from
  // outside (passed through unchanged); the results are the first ones.
  Status while_loop(Scope& scope, const Operation& op, const std::vector<std::string>& names);

  // if/case: each branch takes the values its region reads from outside as one tuple.
  Status branches(Scope& scope, const Operation& op, const std::vector<std::string>& names);

  const File& file_;
  Symbols symbols_;
  int64_t next_ = 0;
  std::vector<std::string> computations_;
  std::vector<HloText::Constant> constants_;
  std::map<std::string, std::string> functions_;  // symbol -> computation name
  std::vector<std::string> aliases_, donors_;
  std::string entry_;
};

}  // namespace insitu::stablehlo::import_internal
