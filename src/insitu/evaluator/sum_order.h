// The order of a floating-point sum: a reduce of one floating input whose to_apply is a plain
// add. XLA leaves a reduction's order unspecified; insitu fixes one, so that the reference
// evaluator and every CPU kernel give the same value bit for bit, on one thread or sixteen.
//
// Each output's reduced elements, in the evaluator's walk order (the input's layout order), fall
// into blocks of kSumBlock. Block 0 sums the init value, then x0, x1, ... in double; every later
// block sums its own elements in double from -0.0 (the additive identity, so a block's sum starts
// exactly at its first element); the later blocks' sums are added to block 0's in block order,
// in double; the total rounds once to the element type. An output of at most kSumBlock elements
// is therefore init + x0 + x1 + ... in double, one chain, as XLA's evaluator sums.
//
// Why blocks: one chain of dependent double adds waits an add's latency per element (a global
// norm over 7M gradients: 7 ms on one thread); independent blocks run side by side in vector
// lanes and on every worker, and their boundaries do not depend on the thread count.
#pragma once

#include <cstdint>

namespace insitu {

inline constexpr int64_t kSumBlock = int64_t{1} << 16;

}  // namespace insitu
