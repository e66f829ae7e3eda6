// Opcode-specific attribute types of HLO instructions (windows, slices, dimension numbers,
// aliasing), spelled as XLA's text format spells them; see printer.cc for the exact syntax.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "insitu/ir/shape.h"

namespace insitu {

// slice={[start:limit:stride], ...}
struct SliceDimension {
  int64_t start = 0;
  int64_t limit = 0;
  int64_t stride = 1;
  bool operator==(const SliceDimension&) const = default;
};

// padding=low_high_interior x ...   (e.g. 0_0x1_2_1)
struct PaddingDimension {
  int64_t low = 0;
  int64_t high = 0;
  int64_t interior = 0;
  bool operator==(const PaddingDimension&) const = default;
};

// window={size=2x2 stride=1x1 pad=0_0x0_0 lhs_dilate=1x1 rhs_dilate=1x1 rhs_reversal=0x0}
struct WindowDimension {
  int64_t size = 1;
  int64_t stride = 1;
  int64_t padding_low = 0;
  int64_t padding_high = 0;
  int64_t base_dilation = 1;    // lhs_dilate
  int64_t window_dilation = 1;  // rhs_dilate
  bool window_reversal = false; // rhs_reversal
  bool operator==(const WindowDimension&) const = default;
};

// lhs_batch_dims={..}, lhs_contracting_dims={..}, rhs_batch_dims={..}, rhs_contracting_dims={..}
struct DotDimensionNumbers {
  std::vector<int64_t> lhs_batch_dimensions;
  std::vector<int64_t> lhs_contracting_dimensions;
  std::vector<int64_t> rhs_batch_dimensions;
  std::vector<int64_t> rhs_contracting_dimensions;
  bool operator==(const DotDimensionNumbers&) const = default;
};

// dot's algorithm=dot_<in>_<in>_<acc>[_xN] (XLA's PrecisionConfig::Algorithm): the operands are
// rounded to `input` (tf32: f32 with 10 mantissa bits) and multiplied and summed in
// `accumulation`; with `pieces` > 1 each f32 operand is split into that many `input` pieces
// (x = hi + mid + lo, each the rounding of what the earlier ones left) and `products` of the
// piece pairs are summed, smallest first. dot_any_f8_any_f8_f32(_fast_accum) takes f8 operands
// as they are. unset, dot_f32_f32_f32 and dot_f64_f64_f64 compute at the operands' precision.
enum class DotInput : uint8_t { kOperands, kBF16, kF16, kTF32 };
struct DotAlgorithm {
  DotInput input = DotInput::kOperands;
  PrimitiveType accumulation = PrimitiveType::kInvalid;  // kInvalid: the result's type, as without algorithm=
  int pieces = 1;
  int products = 1;
  bool changes_precision() const { return input != DotInput::kOperands || accumulation != PrimitiveType::kInvalid; }
};
// nullopt for a name XLA does not define.
std::optional<DotAlgorithm> parse_dot_algorithm(std::string_view name);

// offset_dims, collapsed_slice_dims, start_index_map, operand_batching_dims,
// start_indices_batching_dims, index_vector_dim (+ slice_sizes, indices_are_sorted on the
// instruction).
struct GatherDimensionNumbers {
  std::vector<int64_t> offset_dims;
  std::vector<int64_t> collapsed_slice_dims;
  std::vector<int64_t> start_index_map;
  std::vector<int64_t> operand_batching_dims;
  std::vector<int64_t> start_indices_batching_dims;
  int64_t index_vector_dim = 0;
  bool operator==(const GatherDimensionNumbers&) const = default;
};

// update_window_dims, inserted_window_dims, scatter_dims_to_operand_dims,
// input_batching_dims, scatter_indices_batching_dims, index_vector_dim.
struct ScatterDimensionNumbers {
  std::vector<int64_t> update_window_dims;
  std::vector<int64_t> inserted_window_dims;
  std::vector<int64_t> scatter_dims_to_operand_dims;
  std::vector<int64_t> input_batching_dims;
  std::vector<int64_t> scatter_indices_batching_dims;
  int64_t index_vector_dim = 0;
  bool operator==(const ScatterDimensionNumbers&) const = default;
};

enum class ComparisonDirection : uint8_t { kEq, kNe, kGe, kGt, kLe, kLt };
// type= of compare. kDefault means "not written": the type follows from the element type.
enum class ComparisonType : uint8_t { kDefault, kFloat, kTotalOrder, kSigned, kUnsigned };

std::string_view comparison_direction_name(ComparisonDirection direction);  // "EQ"
std::optional<ComparisonDirection> parse_comparison_direction(std::string_view name);
std::string_view comparison_type_name(ComparisonType type);  // "TOTALORDER"
std::optional<ComparisonType> parse_comparison_type(std::string_view name);

// One entry of custom-call/fusion output_to_operand_aliasing={ {out}: (operand, {index}) }:
// the output at `output_index` is written into operand `operand_number`'s buffer at
// `operand_index`.
struct OutputOperandAlias {
  ShapeIndex output_index;
  int64_t operand_number = 0;
  ShapeIndex operand_index;
  bool operator==(const OutputOperandAlias&) const = default;
};

// key=value where value is kept as the exact source text (metadata entries, unmodelled
// attributes, header attributes insitu does not interpret).
struct RawAttribute {
  std::string key;
  std::string value;
  bool operator==(const RawAttribute&) const = default;
};

}  // namespace insitu
