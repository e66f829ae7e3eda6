// XLA literal text for Literal::to_string (stub: being written).
#include "insitu/ir/literal.h"

namespace insitu {

std::string Literal::to_string() const { return shape_.to_string(false) + " " + values_to_string(); }
std::string Literal::values_to_string() const { return "{...}"; }

}  // namespace insitu
