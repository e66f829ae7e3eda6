// Internal to the runtime's elementwise kernels: the dispatch over the element types that have
// native kernels (defined in evaluator/element_arithmetic.h, with the compute types and the
// round trip through them that mirror the reference evaluator).
#pragma once

#include <cstring>
#include <limits>
#include <type_traits>

#include "insitu/evaluator/element_arithmetic.h"
#include "insitu/ir/dtype.h"

namespace insitu::kernels {


// The dispatch over the types with native kernels lives beside the arithmetic it selects
// (element_arithmetic.h), so that the evaluator's communicator uses the same one.
using insitu::dispatch_native_numeric;

}  // namespace insitu::kernels
