// Structural equality of modules: the check behind "parse(print(m)) equals m".
#pragma once

#include <string>

#include "insitu/ir/module.h"

namespace insitu {

// True when both modules have the same header configuration, computations (by name, in
// order), instructions (names, opcodes, shapes with layouts, operands by name, attributes,
// called computations) and roots. Source locations are ignored. On a difference, `difference`
// (if given) says where the first one is.
bool modules_equal(const Module& a, const Module& b, std::string* difference = nullptr);

}  // namespace insitu
