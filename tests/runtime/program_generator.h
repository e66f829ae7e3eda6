// A deterministic random HLO program generator for differential tests (reference evaluator vs
// optimized runtime).
//
// generate_program(seed) writes a valid module as HLO *text*, so a failing case can be printed
// and rerun with `insitu run`. The mix: entry parameters of f32/s32 arrays (rank 0-2, small),
// a random DAG of elementwise ops (add, subtract, multiply, maximum, minimum, divide,
// remainder, negate, abs, select over compare, convert f32<->s32), broadcasts, slice/reshape
// to scalar indices, dynamic-slice and dynamic-update-slice with constant or computed indices
// (out-of-range ones clamp), scatter with add or overwrite combiners and duplicate (and
// out-of-bounds) indices, while loops (counter + state tuple, fixed trip count), conditionals
// (pred and index selectors, branches passing state through or updating it in place), nested
// once, and random input_output_alias (may/must) and buffer_donor entries; the result is a
// tuple that may return parameters unchanged or one value twice.
//
// On top of that mix, views for buffer assignment (a quarter of the ops add one): chains of
// slices and reshapes (row ranges, a part of one row, 1-D sub-ranges; column ranges and strided
// slices, which are not contiguous; reshapes between factorizations such as [4,3] -> [12] ->
// [2,6] and [1,N] <-> [N]; slice -> reshape -> slice), read by elementwise ops, dynamic-slice,
// as the update of a dynamic-update-slice (into their own source too), or carried by a loop or
// conditional; and hazards: a view of X, then X written (a dynamic-update-slice, a scatter, one
// whose update is the view, an elementwise op that may reuse X's bytes, a loop or conditional
// carrying X), then a reader of the view after it. X is an entry parameter (whose new value
// usually becomes an output, so donation updates it in place), a temporary, or a loop body's or
// branch's state slot (whose result is the new value). Views also become entry results.
//
// Layouts (issue 13): a quarter of rank-2 parameters are column-major ({0,1}); layout ops
// transpose into {0,1}, copy between layouts, write {0,1} from an elementwise op, and bitcast
// values in whatever layout they have, so a layout ignored anywhere changes the values. Loop
// and branch state keeps its slots' layouts; entry results may have non-default layouts.
//
// Reductions (issue 34's fusions): half the programs end with one or two reduces of an
// elementwise chain (exp, squares, the mix's ops) over the trailing dimension (sometimes the
// leading one, or all), with add or maximum, some read again after the reduce, as more
// outputs. They draw from a stream of their own after every other choice, so the rest of each
// seed's program is unchanged.
//
// Randomness comes only from SplitMix64 below (std:: distributions differ between standard
// libraries), so the same seed gives the same text everywhere.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "insitu/ir/literal.h"
#include "insitu/ir/module.h"

namespace insitu::testing_generator {

// SplitMix64 (Steele, Lea, Flood 2014): tiny, fast, and fully specified.
class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t seed) : state_(seed) {}
  uint64_t next() {
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  // Uniform in [low, high] (inclusive); the modulo bias is irrelevant here.
  int64_t uniform(int64_t low, int64_t high) {
    return low + static_cast<int64_t>(next() % static_cast<uint64_t>(high - low + 1));
  }
  // True with probability numerator/denominator.
  bool chance(int numerator, int denominator) { return uniform(1, denominator) <= numerator; }

 private:
  uint64_t state_;
};

struct GeneratedProgram {
  std::string text;
  // One flag per entry parameter (all parameters are arrays, so one per argument): whether the
  // test donates it. Must-alias parameters are always donated.
  std::vector<bool> donate;
};

GeneratedProgram generate_program(uint64_t seed);

// Deterministic arguments for the module's entry parameters: floats k/8 in [-4, 4], integers in
// [-3, 6] (so computed indices are sometimes out of range and clamp).
std::vector<Literal> make_generated_arguments(const Module& module, uint64_t seed);

}  // namespace insitu::testing_generator
