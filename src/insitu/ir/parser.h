// Parser for XLA's HLO text format, long form (`%name = f32[2]{0} add(f32[2]{0} %a, ...)`)
// and short form (`name = f32[2] add(a, b)`), as XLA's hlo_parser.cc accepts it.
//
// Every error is a Status with the line:column of the offending token and a message saying
// what was expected. Shapes written without a layout get the default layout. Attributes insitu
// does not model are kept verbatim (Instruction::extra_attributes), so dumps with attributes
// from newer XLA versions still load and print back unchanged.
#pragma once

#include <memory>
#include <string_view>

#include "insitu/ir/module.h"

namespace insitu {

StatusOr<std::unique_ptr<Module>> parse_module(std::string_view text);
// One shape, e.g. "f32[2,3]{0,1}" or "(s32[], token[])".
StatusOr<Shape> parse_shape(std::string_view text);
// A literal value of `shape` as constant(...) writes it: "{1, 2, 3}", "{ {1, 2}, {3, 4} }", "7",
// "(1, {2, 3})" for tuples.
StatusOr<Literal> parse_literal(std::string_view text, const Shape& shape);

}  // namespace insitu
