// Traced control flow, as jax.lax's: while_loop, fori_loop and cond over a tuple of values.
//
// The callbacks are traced once into their own computations (a while body, a branch); inside
// them only their own arguments (and new constants) may be used: a value from the enclosing
// function is passed through the carry or the operands, which is what HLO requires. Using one
// anyway is a traced error naming the value and what to do.
#pragma once

#include <functional>
#include <vector>

#include "insitu/frontend/tracer.h"

namespace insitu {

using LoopCondition = std::function<Tensor(const std::vector<Tensor>& carry)>;
using LoopBody = std::function<std::vector<Tensor>(const std::vector<Tensor>& carry)>;

// while (condition(carry)) carry = body(carry); returns the final carry.
std::vector<Tensor> while_loop(const LoopCondition& condition, const LoopBody& body, const std::vector<Tensor>& init);

// for (i = lower; i < upper; ++i) carry = body(i, carry), with i an s32 scalar.
using ForiBody = std::function<std::vector<Tensor>(const Tensor& i, const std::vector<Tensor>& carry)>;
std::vector<Tensor> fori_loop(int64_t lower, int64_t upper, const ForiBody& body, const std::vector<Tensor>& init);

// predicate ? on_true(operands) : on_false(operands); both branches return the same shapes.
using Branch = std::function<std::vector<Tensor>(const std::vector<Tensor>& operands)>;
std::vector<Tensor> cond(const Tensor& predicate, const Branch& on_true, const Branch& on_false,
                         const std::vector<Tensor>& operands);

}  // namespace insitu
