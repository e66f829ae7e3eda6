// Helpers for the runtime kernel tests: random literals (with NaN, infinities, -0 and integer
// extremes mixed in; one canonical NaN per type), views over literal bytes, and the reference evaluator's results.
#pragma once

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <span>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "insitu/evaluator/ops.h"
#include "insitu/runtime/kernels.h"

namespace insitu::testing_runtime {

inline Literal random_literal(PrimitiveType type, std::vector<int64_t> dimensions, std::mt19937& rng) {
  Literal literal(Shape::array(type, std::move(dimensions)));
  std::uniform_real_distribution<double> real(-4.0, 4.0);
  std::uniform_int_distribution<int> pick(0, 19);
  dispatch_element_type(type, [&](auto tag) {
    using T = decltype(tag);
    auto data = literal.data<T>();
    for (auto& value : data) {
      const int special = pick(rng);
      if constexpr (std::is_same_v<T, bool>) {
        value = (rng() & 1) != 0;
      } else if constexpr (std::is_integral_v<T>) {
        if (special == 0) value = std::numeric_limits<T>::min();
        else if (special == 1) value = std::numeric_limits<T>::max();
        else if (special == 2) value = 0;
        else if (special == 3) value = static_cast<T>(-1);
        else value = static_cast<T>(static_cast<int64_t>(rng() % 2001) - 1000);
      } else if constexpr (kIsSubByteInt<T>) {
        value = T::wrap(rng());
      } else if constexpr (kIsNarrowFloat<T>) {
        value = T::from_float(T::from_bits(static_cast<uint8_t>(rng())).to_float());  // any value, NaN too
      } else if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) {
        if (special == 0) value = T::from_float(std::numeric_limits<float>::quiet_NaN());
        else if (special == 1) value = T::from_float(-std::numeric_limits<float>::infinity());
        else if (special == 2) value = T::from_float(-0.0f);
        else if (special == 3) {
          // Any finite or infinite bit pattern. (Not NaN payloads: which of two NaN operands an
          // op returns depends on how the compiler ordered the operands, in the evaluator too.)
          value = T::from_bits(static_cast<uint16_t>(rng()));
          if (std::isnan(value.to_float())) value = T::from_float(1.5f);
        }
        else value = T::from_float(static_cast<float>(real(rng)));
      } else if constexpr (std::is_floating_point_v<T>) {
        if (special == 0) value = std::numeric_limits<T>::quiet_NaN();
        else if (special == 1) value = std::numeric_limits<T>::infinity();
        else if (special == 2) value = T(-0.0);
        else if (special == 3) value = T(1e30);
        else value = static_cast<T>(real(rng));
      } else {
        value = T(static_cast<double>(real(rng)), static_cast<double>(real(rng)));
      }
    }
  });
  return literal;
}

inline ArrayView view_of(Literal& literal, bool scalar = false) {
  return ArrayView{literal.untyped_data(), &literal.shape(), scalar};
}

// The evaluator's result for an elementwise or data-movement op.
inline Literal evaluate(const Instruction& instruction, const std::vector<const Literal*>& operands) {
  StatusOr<Literal> result = (is_elementwise(instruction.opcode()))
                                 ? eval::evaluate_elementwise(instruction, operands)
                                 : eval::evaluate_data_movement(instruction, operands);
  EXPECT_TRUE(result.ok()) << result.status().to_string();
  return result.ok() ? std::move(result).value() : Literal();
}

// A literal of `shape` with every element equal to the scalar's (what a broadcast gives).
inline Literal splat(const Literal& scalar, const Shape& shape) {
  Literal result(Shape::array(scalar.shape().element_type(), shape.dimensions()));
  const int64_t width = byte_width(scalar.shape().element_type());
  for (int64_t i = 0; i < result.element_count(); ++i)
    std::memcpy(result.untyped_data() + i * width, scalar.untyped_data(), static_cast<size_t>(width));
  return result;
}

// Within runtime/library_gemm.h's bound for two summation orders of K products: every f32
// element of `actual` within K * 2^-23 * magnitude of `expected`, where `magnitude` is the
// evaluator's result on the operands' absolute values (sum_k |a_k * b_k|); 0.1% slack for the
// second-order terms and that sum's own rounding.
inline void expect_within_gemm_tolerance(const Literal& actual, const Literal& expected, const Literal& magnitude,
                                         int64_t k, const std::string& what) {
  ASSERT_TRUE(actual.shape().compatible(expected.shape())) << what;
  std::span<const float> a = actual.data<float>(), e = expected.data<float>(), m = magnitude.data<float>();
  int64_t mismatches = 0;
  for (size_t i = 0; i < e.size(); ++i) {
    const double bound = static_cast<double>(k) * std::ldexp(1.0, -23) * m[i] * 1.001;
    if (!(std::fabs(static_cast<double>(a[i]) - e[i]) <= bound) && mismatches++ < 3)
      ADD_FAILURE() << what << " element " << i << ": native " << a[i] << " evaluator " << e[i] << " bound " << bound;
  }
  EXPECT_EQ(mismatches, 0) << what;
}

}  // namespace insitu::testing_runtime
