// Text spellings of HLO attribute values, shared by the printer (printer.cc) and anything else
// that needs to write an attribute exactly as XLA's printer does (window_util.cc,
// hlo_instructions.cc, hlo_instruction.cc, hlo_input_output_alias_config.cc).
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "insitu/ir/attributes.h"
#include "insitu/ir/module.h"

namespace insitu {

// absl::CEscape: \n \r \t \" \' \\ as two-character escapes, other non-printable bytes as \ooo.
std::string c_escape(std::string_view text);
// True when `text` is one balanced `{...}` JSON-like dict (XLA's LexesAsJsonDict): such values
// print unquoted.
bool lexes_as_json_dict(std::string_view text);

// "{1,2,3}"
std::string int_list_to_string(const std::vector<int64_t>& values);
// "size=2x2 stride=2x1 pad=0_1x0_0 lhs_dilate=.. rhs_dilate=.. rhs_reversal=.." (no braces).
std::string window_to_string(const std::vector<WindowDimension>& window);
// "0_0x1_2" or, when any dimension has interior padding, "0_0_0x1_2_1".
std::string padding_to_string(const std::vector<PaddingDimension>& padding);
// "{[0:2], [1:4]}" ("[a:b:s]" on every dimension when any stride is not 1).
std::string slice_to_string(const std::vector<SliceDimension>& slice);
// "lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={0}, rhs_contracting_dims={1}"
std::string dot_dimension_numbers_to_string(const DotDimensionNumbers& numbers);
// "offset_dims={..}, collapsed_slice_dims={..}, start_index_map={..}, index_vector_dim=N"
std::string gather_dimension_numbers_to_string(const GatherDimensionNumbers& numbers);
// "update_window_dims={..}, inserted_window_dims={..}, scatter_dims_to_operand_dims={..},
// index_vector_dim=N"
std::string scatter_dimension_numbers_to_string(const ScatterDimensionNumbers& numbers);
// "{{0}: (0, {}), {1}: (2, {})}"
std::string output_operand_aliasing_to_string(const std::vector<OutputOperandAlias>& aliasing);
// `{key="value",other={"json": 1}}`, sorted by key.
std::string frontend_attributes_to_string(const std::vector<std::pair<std::string, std::string>>& attributes);
// "{0}: (0, {}, may-alias), {1}: (1, {}, must-alias)" (without the surrounding "{ }").
std::string input_output_alias_to_string(const std::vector<InputOutputAlias>& aliases);
// "(0, {}), (1, {})"
std::string buffer_donors_to_string(const std::vector<BufferDonor>& donors);
// "(f32[2]{0}, s32[]{:T(256)})->f32[2]{0}" with "/*index=5*/" every fifth parameter, as XLA.
std::string computation_layout_to_string(const ComputationLayout& layout);

}  // namespace insitu
