// How `insitu run` prints results: XLA literal text (Literal::to_string), with arrays of more
// than kAbbreviateAbove elements abbreviated as numpy does: the first and last 3 entries of
// every dimension, "..." in between.
#pragma once

#include <string>

#include "insitu/ir/literal.h"

namespace insitu::cli {

inline constexpr int64_t kAbbreviateAbove = 1000;

std::string format_result(const Literal& literal, int64_t abbreviate_above = kAbbreviateAbove);

}  // namespace insitu::cli
