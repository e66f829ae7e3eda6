// batch-norm-training, batch-norm-inference and batch-norm-grad in the reference evaluator, as
// XLA's operation semantics define them (the runtime runs them through this fallback). Over
// each feature f (dimension feature_index of the operand), with N the elements per feature:
//
//   training(x, scale, offset)    mean = sum(x)/N, var = sum((x - mean)^2)/N (biased),
//                                 y = (x - mean) * scale / sqrt(var + epsilon) + offset
//                                 -> (y, mean, var)
//   inference(x, scale, offset, mean, var)  y as above with the given mean and var
//   grad(x, scale, mean, var, dy) r = 1/sqrt(var + epsilon), xhat = (x - mean) * r,
//                                 grad_offset = sum(dy), grad_scale = sum(dy * xhat),
//                                 dx = scale * r * (dy - grad_offset/N - xhat * grad_scale/N)
//                                 -> (dx, grad_scale, grad_offset)
//
// Sums and products are computed in double and each result rounded once to the element type
// (floating types only). XLA:CPU expands these ops into reductions in the element type, so its
// last bits differ; what they compute is the same.
#include <cmath>
#include <cstring>

#include "insitu/evaluator/apply_util.h"
#include "insitu/evaluator/element_arithmetic.h"
#include "insitu/evaluator/ops.h"
#include "insitu/ir/replica_groups.h"

namespace insitu::eval {
namespace {

struct BatchNormAttributes {
  double epsilon = 0;
  int64_t feature_index = 0;
};

StatusOr<BatchNormAttributes> read_attributes(const Instruction& instruction, const Shape& operand) {
  BatchNormAttributes read;
  const RawAttribute* epsilon = find_own_attribute(instruction, "epsilon");
  const RawAttribute* feature = find_own_attribute(instruction, "feature_index");
  if (epsilon == nullptr || feature == nullptr)
    return bad_instruction(instruction, "needs epsilon= and feature_index=");
  char* end = nullptr;
  read.epsilon = std::strtod(epsilon->value.c_str(), &end);
  if (epsilon->value.empty() || *end != '\0' || !std::isfinite(read.epsilon) || read.epsilon < 0)
    return bad_instruction(instruction, str_cat("epsilon=", epsilon->value, " must be a finite number >= 0"));
  AttributeReader reader(instruction, "feature_index", feature->value);
  StatusOr<int64_t> index = reader.integer();
  if (!index.ok() || !reader.done() || *index < 0 || *index >= operand.rank())
    return bad_instruction(instruction, str_cat("feature_index=", feature->value, " must name a dimension of ",
                                                operand.to_string(false)));
  read.feature_index = *index;
  return read;
}

// A floating-point literal's elements as doubles, and doubles rounded once into one.
std::vector<double> doubles(const Literal& value) {
  std::vector<double> out(static_cast<size_t>(value.element_count()));
  dispatch_native_numeric(value.shape().element_type(), [&](auto tag) {
    using T = decltype(tag);
    const T* data = reinterpret_cast<const T*>(value.untyped_data());
    for (size_t e = 0; e < out.size(); ++e) out[e] = convert_value<double>(data[e]);
  });
  return out;
}

Literal of_shape(const Shape& shape, const std::vector<double>& values) {
  Literal out(shape);
  dispatch_native_numeric(shape.element_type(), [&](auto tag) {
    using T = decltype(tag);
    T* data = reinterpret_cast<T*>(out.untyped_data());
    for (size_t e = 0; e < values.size(); ++e) data[e] = convert_value<T>(values[e]);
  });
  return out;
}

// The operand's elements as doubles, and each element's feature.
struct Features {
  std::vector<double> x;
  std::vector<int64_t> feature;
  int64_t count = 0;      // features
  int64_t per_feature = 0;  // N
};

Features by_feature(const Literal& operand, int64_t feature_index) {
  Features out;
  const Shape& shape = operand.shape();
  out.count = shape.dimension(feature_index);
  int64_t inner = 1;
  for (int64_t d = feature_index + 1; d < shape.rank(); ++d) inner *= shape.dimension(d);
  const int64_t n = operand.element_count();
  out.per_feature = out.count == 0 ? 0 : n / out.count;
  out.x = doubles(operand);
  out.feature.resize(static_cast<size_t>(n));
  for (int64_t e = 0; e < n; ++e) out.feature[e] = out.count == 0 ? 0 : (e / inner) % out.count;
  return out;
}

}  // namespace

StatusOr<Literal> evaluate_batch_norm(const Instruction& instruction, Operands operands) {
  const Opcode opcode = instruction.opcode();
  const size_t want = opcode == Opcode::kBatchNormTraining ? 3 : 5;
  if (operands.empty()) return bad_instruction(instruction, str_cat("takes ", want, " operands"));
  const Shape& shape = operands[0]->shape();
  if (!shape.is_array() || !is_floating(shape.element_type()) || is_complex(shape.element_type()))
    return bad_instruction(instruction, str_cat("takes a floating-point operand, not ", shape.to_string(false)));
  INSITU_ASSIGN_OR_RETURN(BatchNormAttributes attributes, read_attributes(instruction, shape));
  if (operands.size() != want) return bad_instruction(instruction, str_cat("takes ", want, " operands"));
  const Features x = by_feature(*operands[0], attributes.feature_index);
  const Shape feature_shape = Shape::array(shape.element_type(), {x.count});
  for (size_t i = 1; i < operands.size(); ++i)
    if (i != 4 || opcode != Opcode::kBatchNormGrad) {
      if (!operands[i]->shape().compatible(feature_shape))
        return bad_instruction(instruction, str_cat("operand ", i, " must be ", feature_shape.to_string(false),
                                                    ", one value per feature; got ",
                                                    operands[i]->shape().to_string(false)));
    } else if (!operands[i]->shape().compatible(shape)) {
      return bad_instruction(instruction, str_cat("grad_output must be ", shape.to_string(false)));
    }
  const std::vector<double> scale = doubles(*operands[1]);
  const double n = static_cast<double>(x.per_feature);
  std::vector<double> mean(x.count, 0), var(x.count, 0);
  if (opcode == Opcode::kBatchNormTraining) {
    for (size_t e = 0; e < x.x.size(); ++e) mean[x.feature[e]] += x.x[e];
    for (double& m : mean) m = n == 0 ? 0 : m / n;
    for (size_t e = 0; e < x.x.size(); ++e) var[x.feature[e]] += (x.x[e] - mean[x.feature[e]]) * (x.x[e] - mean[x.feature[e]]);
    for (double& v : var) v = n == 0 ? 0 : v / n;
  } else {
    mean = doubles(*operands[opcode == Opcode::kBatchNormInference ? 3 : 2]);
    var = doubles(*operands[opcode == Opcode::kBatchNormInference ? 4 : 3]);
  }
  std::vector<double> r(x.count);
  for (int64_t f = 0; f < x.count; ++f) r[f] = 1.0 / std::sqrt(var[f] + attributes.epsilon);
  if (opcode != Opcode::kBatchNormGrad) {
    const std::vector<double> offset = doubles(*operands[2]);
    std::vector<double> y(x.x.size());
    for (size_t e = 0; e < y.size(); ++e) {
      const int64_t f = x.feature[e];
      y[e] = (x.x[e] - mean[f]) * r[f] * scale[f] + offset[f];
    }
    if (opcode == Opcode::kBatchNormInference) return of_shape(shape, y);
    return Literal::tuple({of_shape(shape, y), of_shape(feature_shape, mean), of_shape(feature_shape, var)});
  }
  const std::vector<double> dy = doubles(*operands[4]);
  std::vector<double> grad_offset(x.count, 0), grad_scale(x.count, 0), dx(x.x.size());
  for (size_t e = 0; e < dy.size(); ++e) {
    const int64_t f = x.feature[e];
    grad_offset[f] += dy[e];
    grad_scale[f] += dy[e] * (x.x[e] - mean[f]) * r[f];
  }
  for (size_t e = 0; e < dx.size(); ++e) {
    const int64_t f = x.feature[e];
    const double xhat = (x.x[e] - mean[f]) * r[f];
    dx[e] = n == 0 ? 0 : scale[f] * r[f] * (dy[e] - grad_offset[f] / n - xhat * grad_scale[f] / n);
  }
  return Literal::tuple({of_shape(shape, dx), of_shape(feature_shape, grad_scale), of_shape(feature_shape, grad_offset)});
}

}  // namespace insitu::eval
