// CUDA C++ for a dot of any dimension numbers and for a convolution (codegen.h:
// generate_dot_kernel, generate_convolution_kernel).
#include <algorithm>
#include <optional>
#include <vector>

#include "insitu/cuda/codegen.h"
#include "insitu/cuda/codegen_internal.h"
#include "insitu/evaluator/apply_util.h"
#include "insitu/evaluator/convolution.h"
#include "insitu/evaluator/index_util.h"
#include "insitu/support/str.h"

namespace insitu::cuda {

using detail::cuda_type;
using detail::refuse;
using detail::coordinates_of;
using detail::strides_of;

namespace {

// The types of a dot's or convolution's kernel, by the evaluator's rules (evaluator/dot.cc,
// convolution.h): operands converted to the result type, products summed in the accumulator
// (the type for f32/f64, float for bf16/f16, 64 bits for integers, wrapping).
struct Contraction {
  std::string type, lhs_type, rhs_type, accumulator;
  bool integer = false;

  // The statement adding a[a_index] * b[b_index] to `sum`.
  std::string multiply_add(const std::string& a_index, const std::string& b_index) const {
    const std::string a = str_cat("(", accumulator, ")(", type, ")a[", a_index, "]");
    const std::string b = str_cat("(", accumulator, ")(", type, ")b[", b_index, "]");
    return integer ? str_cat("sum = (", accumulator, ")((unsigned long long)sum + (unsigned long long)", a,
                             " * (unsigned long long)", b, ");\n")
                   : str_cat("sum += ", a, " * ", b, ";\n");
  }
  // The kernel's signature up to its body: (const L* a, const R* b, T* c, long long n), i.
  std::string opening(const std::string& name) const {
    return str_cat("extern \"C\" __global__ void ", name, "(const ", lhs_type, "* __restrict__ a, const ", rhs_type,
                   "* __restrict__ b, ", type, "* __restrict__ c, long long n) {\n",
                   "  const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;\n",
                   "  if (i >= n) return;\n");
  }
};

StatusOr<Contraction> contraction(const Instruction& op) {
  const PrimitiveType result = op.shape().element_type();
  const PrimitiveType lhs = op.operand(0)->shape().element_type(), rhs = op.operand(1)->shape().element_type();
  if (result == PrimitiveType::kPred) return refuse(op, "a pred result is not generated");
  Contraction c;
  INSITU_ASSIGN_OR_RETURN(c.type, cuda_type(op, result));
  INSITU_ASSIGN_OR_RETURN(c.lhs_type, cuda_type(op, lhs));
  INSITU_ASSIGN_OR_RETURN(c.rhs_type, cuda_type(op, rhs));
  c.integer = !is_floating(result);
  if (c.integer && (is_floating(lhs) || is_floating(rhs)))
    return refuse(op, "floats contracted into an integer are not generated");
  c.accumulator = c.integer ? (is_signed_integral(result) ? "long long" : "unsigned long long")
                            : detail::compute_type(c.type);
  return c;
}

}  // namespace

StatusOr<GeneratedKernel> generate_dot_kernel(const Instruction& dot, const std::string& name) {
  if (dot.opcode() != Opcode::kDot || dot.operand_count() != 2 || !dot.shape().is_array())
    return refuse(dot, "not a dot of two arrays");
  const Shape& lhs = dot.operand(0)->shape();
  const Shape& rhs = dot.operand(1)->shape();
  const Shape& out = dot.shape();
  if (eval::find_own_attribute(dot, "algorithm") != nullptr)
    return refuse(dot, "a dot with algorithm= (operands rounded to another precision) is not generated yet");
  INSITU_ASSIGN_OR_RETURN(Contraction c, contraction(dot));
  const DotDimensionNumbers& numbers = dot.dot_dimension_numbers;
  if (numbers.lhs_batch_dimensions.size() != numbers.rhs_batch_dimensions.size() ||
      numbers.lhs_contracting_dimensions.size() != numbers.rhs_contracting_dimensions.size())
    return refuse(dot, "batch or contracting dimensions that do not pair up");
  std::vector<int64_t> lhs_free, rhs_free;
  for (int64_t d = 0; d < lhs.rank(); ++d)
    if (!contains(numbers.lhs_batch_dimensions, d) && !contains(numbers.lhs_contracting_dimensions, d))
      lhs_free.push_back(d);
  for (int64_t d = 0; d < rhs.rank(); ++d)
    if (!contains(numbers.rhs_batch_dimensions, d) && !contains(numbers.rhs_contracting_dimensions, d))
      rhs_free.push_back(d);
  const size_t batches = numbers.lhs_batch_dimensions.size();
  if (out.rank() != static_cast<int64_t>(batches + lhs_free.size() + rhs_free.size()))
    return refuse(dot, "a result whose rank is not batch + free dimensions");
  // Output element i: coordinates batch..., lhs free..., rhs free... (XLA's result order); the
  // contracting dimensions are walked in row-major order of their list, summed in the element
  // type (the dot's result within the tolerance library GEMMs are held to, as on the CPU).
  const std::vector<int64_t> lhs_strides = strides_of(lhs.dimensions());
  const std::vector<int64_t> rhs_strides = strides_of(rhs.dimensions());
  const std::vector<std::string> coordinates = coordinates_of(out.dimensions());
  std::string lhs_base = "0", rhs_base = "0";
  int64_t d_out = 0;
  auto coordinate = [&](int64_t d) { return coordinates[static_cast<size_t>(d)]; };
  for (size_t b = 0; b < batches; ++b, ++d_out) {
    lhs_base += str_cat(" + ", coordinate(d_out), " * ", lhs_strides[numbers.lhs_batch_dimensions[b]], "ll");
    rhs_base += str_cat(" + ", coordinate(d_out), " * ", rhs_strides[numbers.rhs_batch_dimensions[b]], "ll");
  }
  for (int64_t d : lhs_free) lhs_base += str_cat(" + ", coordinate(d_out++), " * ", lhs_strides[d], "ll");
  for (int64_t d : rhs_free) rhs_base += str_cat(" + ", coordinate(d_out++), " * ", rhs_strides[d], "ll");
  int64_t count = 1;
  std::string lhs_offset = "0", rhs_offset = "0";
  int64_t inner = 1;
  for (size_t k = numbers.lhs_contracting_dimensions.size(); k-- > 0;) {
    const int64_t l = numbers.lhs_contracting_dimensions[k], r = numbers.rhs_contracting_dimensions[k];
    if (lhs.dimension(l) != rhs.dimension(r)) return refuse(dot, "contracting dimensions of different sizes");
    const std::string c = str_cat("(k / ", inner, "ll % ", lhs.dimension(l), "ll)");
    lhs_offset += str_cat(" + ", c, " * ", lhs_strides[l], "ll");
    rhs_offset += str_cat(" + ", c, " * ", rhs_strides[r], "ll");
    inner *= lhs.dimension(l);
    count *= lhs.dimension(l);
  }
  GeneratedKernel kernel;
  kernel.name = name;
  kernel.source = str_cat(c.opening(name), "  const long long a0 = ", lhs_base, ", b0 = ", rhs_base, ";\n  ",
                          c.accumulator, " sum = 0;\n", "  for (long long k = 0; k < ", count, "ll; ++k)\n    ",
                          c.multiply_add(str_cat("a0 + ", lhs_offset), str_cat("b0 + ", rhs_offset)), "  c[i] = (", c.type,
                          ")sum;\n}\n");
  return kernel;
}

StatusOr<GeneratedKernel> generate_convolution_kernel(const Instruction& convolution, const std::string& name,
                                                      bool border_only) {
  if (convolution.opcode() != Opcode::kConvolution || convolution.operand_count() != 2)
    return refuse(convolution, "not a convolution of two operands");
  const Shape& lhs = convolution.operand(0)->shape();
  const Shape& rhs = convolution.operand(1)->shape();
  // The evaluator's plan: every check it makes (dim_labels, groups, the result's shape) is made.
  INSITU_ASSIGN_OR_RETURN(eval::ConvolutionPlan plan, eval::plan_convolution(convolution, lhs, rhs));
  INSITU_ASSIGN_OR_RETURN(Contraction c, contraction(convolution));
  // Output element i's coordinates, then its bases (convolution.h's convolve, line for line).
  const std::vector<std::string> coordinates = coordinates_of(plan.out_dimensions);
  auto coordinate = [&](int64_t d) { return coordinates[static_cast<size_t>(d)]; };
  std::string code;
  if (border_only) {  // an output whose window lies on input elements alone was computed already
    code += "  bool inside = true;\n";
    for (size_t s = 0; s < plan.window.size(); ++s) {
      const WindowDimension& w = plan.window[s];
      code += str_cat("  {\n    const long long u = ", coordinate(plan.out_spatial[s]), " * ", w.stride, "ll - ",
                      w.padding_low, "ll;\n    if (u < 0 || u + ", (w.size - 1) * w.window_dilation, "ll >= ",
                      plan.lhs_sizes[s], "ll) inside = false;\n  }\n");
    }
    code += "  if (inside) return;\n";
  }
  code += str_cat(
      "  const long long o = ", coordinate(plan.out_feature), ";\n",
      "  const long long a0 = (o / ", plan.batch_group_features, "ll * ", plan.batch_group_size, "ll + ",
      coordinate(plan.out_batch), ") * ", plan.lhs_strides[plan.lhs_batch], "ll + o / ", plan.output_feature_group_size,
      "ll * ", plan.input_feature_group_size * plan.lhs_strides[plan.lhs_feature], "ll;\n",
      "  const long long b0 = o * ", plan.rhs_strides[plan.rhs_output], "ll;\n", "  ", c.accumulator, " sum = 0;\n");
  // The window's positions in row-major order (last spatial dimension fastest), those on an
  // input element only (not padding, not a base-dilation hole), then the group's input features.
  std::string lhs_offset = "a0", rhs_offset = "b0", indent = "  ";
  for (size_t s = 0; s < plan.window.size(); ++s) {
    const WindowDimension& w = plan.window[s];
    const std::string p = str_cat("p", s), u = str_cat("u", s), q = str_cat("q", s);
    code += str_cat(indent, "for (long long ", p, " = 0; ", p, " < ", w.size, "ll; ++", p, ") {\n");
    indent += "  ";
    code += str_cat(indent, "const long long ", u, " = ", coordinate(plan.out_spatial[s]), " * ", w.stride, "ll - ",
                    w.padding_low, "ll + ", p, " * ", w.window_dilation, "ll;\n");
    if (w.base_dilation != 1) code += str_cat(indent, "if (", u, " % ", w.base_dilation, "ll != 0) continue;\n");
    code += str_cat(indent, "const long long ", q, " = ", u, " / ", w.base_dilation, "ll;\n", indent, "if (", q,
                    " < 0 || ", q, " >= ", plan.lhs_sizes[s], "ll) continue;\n");
    lhs_offset += str_cat(" + ", q, " * ", plan.lhs_strides[plan.lhs_spatial[s]], "ll");
    rhs_offset += str_cat(" + ", w.window_reversal ? str_cat("(", w.size - 1, "ll - ", p, ")") : p, " * ",
                          plan.rhs_strides[plan.rhs_spatial[s]], "ll");
  }
  code += str_cat(indent, "const long long lo = ", lhs_offset, ", ro = ", rhs_offset, ";\n", indent,
                  "for (long long z = 0; z < ", plan.input_feature_group_size, "ll; ++z)\n", indent, "  ",
                  c.multiply_add(str_cat("lo + z * ", plan.lhs_strides[plan.lhs_feature], "ll"),
                                 str_cat("ro + z * ", plan.rhs_strides[plan.rhs_input], "ll")));
  for (size_t s = plan.window.size(); s-- > 0;) {
    indent.resize(indent.size() - 2);
    code += indent + "}\n";
  }
  GeneratedKernel kernel;
  kernel.name = name;
  kernel.source = str_cat(c.opening(name), code, "  c[i] = (", c.type, ")sum;\n}\n");
  return kernel;
}

StatusOr<std::optional<ConvolutionGemm>> generate_convolution_gemm(const Instruction& convolution,
                                                                   const std::string& name) {
  if (convolution.opcode() != Opcode::kConvolution || convolution.operand_count() != 2)
    return refuse(convolution, "not a convolution of two operands");
  const Shape& lhs = convolution.operand(0)->shape();
  const Shape& rhs = convolution.operand(1)->shape();
  const Shape& out = convolution.shape();
  INSITU_ASSIGN_OR_RETURN(eval::ConvolutionPlan plan, eval::plan_convolution(convolution, lhs, rhs));
  const PrimitiveType type = out.element_type();
  const int64_t rank = static_cast<int64_t>(plan.out_dimensions.size());
  const int64_t features = plan.out_dimensions[plan.out_feature];
  if ((type != PrimitiveType::kF32 && type != PrimitiveType::kF64) || lhs.element_type() != type ||
      rhs.element_type() != type || plan.out_feature != rank - 1 || plan.output_feature_group_size != features ||
      lhs.dimension(plan.lhs_batch) != plan.out_dimensions[plan.out_batch] ||  // batch groups
      plan.input_feature_group_size != lhs.dimension(plan.lhs_feature))
    return std::optional<ConvolutionGemm>();
  // The GEMM is exact where a window lies on input elements alone; the outputs whose window
  // touches padding are computed again by `border`, which skips it as the evaluator does. Worth
  // it where most outputs are inside (not with base dilation, whose holes every window meets).
  double inside = 1;
  bool padded = false;
  for (size_t s = 0; s < plan.window.size(); ++s) {
    const WindowDimension& w = plan.window[s];
    if (w.base_dilation != 1) return std::optional<ConvolutionGemm>();
    padded = padded || w.padding_low > 0 || w.padding_high > 0;
    const int64_t size = plan.out_dimensions[plan.out_spatial[s]];
    int64_t count = 0;
    for (int64_t o = 0; o < size; ++o) {
      const int64_t u = o * w.stride - w.padding_low;
      count += u >= 0 && u + (w.size - 1) * w.window_dilation < plan.lhs_sizes[s];
    }
    inside *= size == 0 ? 1.0 : static_cast<double>(count) / static_cast<double>(size);
  }
  if (inside < 0.5) return std::optional<ConvolutionGemm>();
  ConvolutionGemm result;
  if (padded) {
    INSITU_ASSIGN_OR_RETURN(GeneratedKernel border,
                            generate_convolution_kernel(convolution, name + "_border", /*border_only=*/true));
    result.border = std::move(border);
  }
  GemmCall& gemm = result.gemm;
  gemm.type = type;
  gemm.m = out.element_count() / std::max<int64_t>(features, 1);
  gemm.n = features;
  gemm.k = plan.window_positions * plan.input_feature_group_size;
  gemm.lda = gemm.k;
  gemm.ldb = gemm.ldc = gemm.n;
  gemm.stride_a = gemm.m * gemm.k;
  gemm.stride_b = gemm.k * gemm.n;
  gemm.stride_c = gemm.m * gemm.n;
  const int64_t width = byte_width(type);
  result.patch_bytes = gemm.m * gemm.k * width;
  result.weight_bytes = gemm.k * gemm.n * width;
  if (result.patch_bytes > kMaxPatchBytes) return std::optional<ConvolutionGemm>();
  const std::string t = type == PrimitiveType::kF64 ? "double" : "float";
  // Column k's window position (row-major over the window, last spatial dimension fastest) and
  // input feature z.
  std::string position = str_cat("  const long long z = k % ", plan.input_feature_group_size, "ll;\n");
  int64_t inner = plan.input_feature_group_size;
  for (size_t s = plan.window.size(); s-- > 0;) {
    position += str_cat("  const long long p", s, " = k / ", inner, "ll % ", plan.window[s].size, "ll;\n");
    inner *= plan.window[s].size;
  }
  const std::string opening = "  const long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;\n  if (t >= n) return;\n";
  // Patches: output position m is output element m * O (its feature 0).
  const std::vector<std::string> coordinates = coordinates_of(plan.out_dimensions);
  auto coordinate = [&](int64_t d) { return coordinates[static_cast<size_t>(d)]; };
  std::string patch = str_cat(opening, "  const long long m = t / ", gemm.k, "ll, k = t % ", gemm.k, "ll;\n",
                              "  const long long i = m * ", features, "ll;\n", position, "  long long at = ",
                              coordinate(plan.out_batch), " * ", plan.lhs_strides[plan.lhs_batch], "ll + z * ",
                              plan.lhs_strides[plan.lhs_feature], "ll;\n  bool inside = true;\n");
  std::string weight = str_cat(opening, "  const long long k = t / ", features, "ll, o = t % ", features, "ll;\n",
                               position, "  const long long at = o * ", plan.rhs_strides[plan.rhs_output], "ll + z * ",
                               plan.rhs_strides[plan.rhs_input], "ll");
  for (size_t s = 0; s < plan.window.size(); ++s) {
    const WindowDimension& w = plan.window[s];
    patch += str_cat("  {\n    const long long u = ", coordinate(plan.out_spatial[s]), " * ", w.stride, "ll - ",
                     w.padding_low, "ll + p", s, " * ", w.window_dilation, "ll;\n",
                     w.base_dilation != 1 ? str_cat("    if (u % ", w.base_dilation, "ll != 0) inside = false;\n") : "",
                     "    const long long q = u / ", w.base_dilation, "ll;\n", "    if (u < 0 || q >= ", plan.lhs_sizes[s],
                     "ll) inside = false;\n", "    at += q * ", plan.lhs_strides[plan.lhs_spatial[s]], "ll;\n  }\n");
    weight += str_cat(" + ", w.window_reversal ? str_cat("(", w.size - 1, "ll - p", s, ")") : str_cat("p", s), " * ",
                      plan.rhs_strides[plan.rhs_spatial[s]], "ll");
  }
  result.patches.name = name + "_patches";
  result.patches.source = str_cat("extern \"C\" __global__ void ", result.patches.name, "(const ", t, "* __restrict__ lhs, ",
                                  t, "* __restrict__ a, long long n) {\n", patch, "  a[t] = inside ? lhs[at] : (", t,
                                  ")0;\n}\n");
  result.weights.name = name + "_weights";
  result.weights.source = str_cat("extern \"C\" __global__ void ", result.weights.name, "(const ", t,
                                  "* __restrict__ rhs, ", t, "* __restrict__ b, long long n) {\n", weight, ";\n",
                                  "  b[t] = rhs[at];\n}\n");
  return std::optional<ConvolutionGemm>(std::move(result));
}

}  // namespace insitu::cuda
