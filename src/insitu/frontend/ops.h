// The traced ops: each appends one HLO instruction (a few append a small group) to the function
// being traced and returns its value. Names follow jax.lax; shapes and semantics are XLA's
// (the verifier's shape inference checks every op; a mismatch is a traced error naming it).
//
// Binary ops broadcast a rank-0 operand to the other operand's shape (numpy's scalar rule);
// C++ numbers convert to constants of the other operand's element type: `x * 2.0 + 1.0`.
#pragma once

#include <vector>

#include "insitu/frontend/tracer.h"
#include "insitu/ir/literal.h"

namespace insitu {

// --- constants and iota (use the active tracer) ---
Tensor constant(const Literal& value);
// A scalar of `type` holding `value` (converted as static_cast would).
Tensor scalar(double value, PrimitiveType type);
// `value` broadcast to `like`'s shape and element type.
Tensor full_like(const Tensor& like, double value);
Tensor iota(const Shape& shape, int64_t iota_dimension);

// --- elementwise ---
Tensor add(const Tensor& a, const Tensor& b);
Tensor subtract(const Tensor& a, const Tensor& b);
Tensor multiply(const Tensor& a, const Tensor& b);
Tensor divide(const Tensor& a, const Tensor& b);
Tensor maximum(const Tensor& a, const Tensor& b);
Tensor minimum(const Tensor& a, const Tensor& b);
Tensor negate(const Tensor& x);
Tensor exp(const Tensor& x);
Tensor log(const Tensor& x);
Tensor sqrt(const Tensor& x);
Tensor tanh(const Tensor& x);
Tensor abs(const Tensor& x);
Tensor compare(const Tensor& a, const Tensor& b, ComparisonDirection direction);
Tensor select(const Tensor& predicate, const Tensor& on_true, const Tensor& on_false);
Tensor convert(const Tensor& x, PrimitiveType type);

Tensor operator+(const Tensor& a, const Tensor& b);
Tensor operator-(const Tensor& a, const Tensor& b);
Tensor operator*(const Tensor& a, const Tensor& b);
Tensor operator/(const Tensor& a, const Tensor& b);
Tensor operator-(const Tensor& x);
Tensor operator+(const Tensor& a, double b);
Tensor operator-(const Tensor& a, double b);
Tensor operator*(const Tensor& a, double b);
Tensor operator/(const Tensor& a, double b);
Tensor operator+(double a, const Tensor& b);
Tensor operator-(double a, const Tensor& b);
Tensor operator*(double a, const Tensor& b);
Tensor operator/(double a, const Tensor& b);

// --- data movement ---
// broadcast: operand dimension i becomes output dimension broadcast_dimensions[i].
Tensor broadcast(const Tensor& x, std::vector<int64_t> dimensions, std::vector<int64_t> broadcast_dimensions);
Tensor reshape(const Tensor& x, std::vector<int64_t> dimensions);
Tensor transpose(const Tensor& x, std::vector<int64_t> permutation);
Tensor slice(const Tensor& x, std::vector<int64_t> starts, std::vector<int64_t> limits, std::vector<int64_t> strides = {});
// Start indices are integer scalars (clamped into range, as XLA does).
Tensor dynamic_slice(const Tensor& x, const std::vector<Tensor>& starts, std::vector<int64_t> sizes);
Tensor dynamic_update_slice(const Tensor& x, const Tensor& update, const std::vector<Tensor>& starts);
Tensor concatenate(const std::vector<Tensor>& pieces, int64_t dimension);

// --- reductions, contractions, scatter ---
Tensor reduce_sum(const Tensor& x, std::vector<int64_t> dimensions);
Tensor reduce_max(const Tensor& x, std::vector<int64_t> dimensions);
Tensor dot(const Tensor& a, const Tensor& b, const DotDimensionNumbers& dimension_numbers);
// a[..., k] x b[k, n] for rank-2 (or rank-1 lhs) operands.
Tensor matmul(const Tensor& a, const Tensor& b);
// XLA scatter with an add combiner.
Tensor scatter_add(const Tensor& operand, const Tensor& indices, const Tensor& updates,
                   const ScatterDimensionNumbers& dimension_numbers);
// operand[indices[i], ...] += updates[i, ...] for an s32[N] index vector (rows of operand).
Tensor scatter_add_rows(const Tensor& operand, const Tensor& indices, const Tensor& updates);

}  // namespace insitu
