// HLO text parser (stub: being written).
#include "insitu/ir/parser.h"

namespace insitu {

StatusOr<std::unique_ptr<Module>> parse_module(std::string_view) { return unimplemented("parser not written yet"); }
StatusOr<Shape> parse_shape(std::string_view) { return unimplemented("parser not written yet"); }
StatusOr<Literal> parse_literal(std::string_view, const Shape&) { return unimplemented("parser not written yet"); }

}  // namespace insitu
