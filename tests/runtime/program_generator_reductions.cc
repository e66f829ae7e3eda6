// The reduction part of the program generator (see program_generator.h): reduces of
// elementwise chains appended to a program as more outputs (emit_reductions).
#include <algorithm>
#include <vector>

#include "program_generator_internal.h"

namespace insitu::testing_generator::generator_internal {

// Row reductions of elementwise chains (what the fusion pass fuses with their inputs: kInput
// fusions, the input a second output when read again after the reduce, cheap values computed by
// each reader), reductions over leading or all dimensions beside them, appended as more outputs.
// They draw from a stream of their own after every other choice is made, so the rest of each
// seed's program is what it was before they existed (regression seeds keep their meaning).
void Generator::emit_reductions(Scope& entry, std::vector<Value>& outputs) {
  rng_ = SplitMix64(seed_ ^ 0x5DEECE66Dull);
  if (!rng_.chance(1, 2)) return;
  for (int64_t count = rng_.uniform(1, 2); count > 0; --count) {
    Value input = pick(entry);
    if (input.dims.empty()) continue;
    for (int64_t steps = rng_.uniform(1, 3); steps > 0; --steps) {
      const int64_t kind = rng_.uniform(0, 3);
      if (kind == 0 && input.type == Type::kF32) {
        input = emit(entry, "exp", input.type, input.dims, str_cat("exponential(", input.name, ")"));
      } else if (kind == 1) {
        input = emit(entry, "sq", input.type, input.dims, str_cat("multiply(", input.name, ", ", input.name, ")"));
      } else {
        emit_elementwise(entry, &input);
        input = entry.values.back();
      }
    }
    const int64_t rank = static_cast<int64_t>(input.dims.size());
    // the trailing dimension (a row reduce) mostly; the leading one or all of them sometimes
    std::vector<int64_t> reduced = {rank - 1};
    if (rank == 2 && rng_.chance(1, 4)) reduced = rng_.chance(1, 2) ? std::vector<int64_t>{0} : std::vector<int64_t>{0, 1};
    std::vector<int64_t> kept_dims, kept;
    for (int64_t d = 0; d < rank; ++d)
      if (std::find(reduced.begin(), reduced.end(), d) == reduced.end()) {
        kept_dims.push_back(input.dims[d]);
        kept.push_back(d);
      }
    const bool maximum = rng_.chance(1, 3);
    const std::string type = std::string(type_name(input.type));
    std::string to_apply = combiner(input.type, /*add=*/true);
    std::string init = str_cat(type, "[] constant(0)");
    if (maximum) {
      to_apply = str_cat("reduce_max_", type);
      if (std::find(combiners_.begin(), combiners_.end(), to_apply) == combiners_.end()) {
        combiners_.push_back(to_apply);
        computations_.push_back(str_cat(to_apply, " {\n  a = ", type, "[] parameter(0)\n  b = ", type,
                                        "[] parameter(1)\n  ROOT m = ", type, "[] maximum(a, b)\n}\n"));
      }
      init = input.type == Type::kF32 ? "f32[] constant(-inf)" : "s32[] constant(-2147483648)";
    }
    const std::string start = fresh("init");
    entry.lines.push_back(str_cat("  ", start, " = ", init));
    const Value sum = emit(entry, "red", input.type, kept_dims,
                           str_cat("reduce(", input.name, ", ", start, "), dimensions={", str_join(reduced, ","),
                                   "}, to_apply=", to_apply));
    outputs.push_back(sum);
    if (rng_.chance(1, 2)) {  // the input read again after the reduce, with the reduce stretched over it
      const Value stretched = emit(entry, "bc", input.type, input.dims,
                                   str_cat("broadcast(", sum.name, "), dimensions={", str_join(kept, ","), "}"));
      outputs.push_back(emit(entry, "after", input.type, input.dims,
                             str_cat(rng_.chance(1, 2) ? "subtract(" : "add(", input.name, ", ", stretched.name, ")")));
    }
  }
}

}  // namespace insitu::testing_generator::generator_internal
