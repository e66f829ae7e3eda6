// CUDA C++ for reduce and dynamic-update-slice (codegen.h).
#include <unordered_set>

#include "insitu/cuda/codegen.h"
#include "insitu/cuda/codegen_internal.h"
#include "insitu/ir/computation.h"
#include "insitu/support/str.h"

namespace insitu::cuda {

using detail::cuda_type;
using detail::refuse;
using detail::row_major;
using detail::strides_of;

StatusOr<GeneratedKernel> generate_reduce_kernel(const Instruction& reduce, const std::string& name) {
  if (reduce.opcode() != Opcode::kReduce) return refuse(reduce, "not a reduce");
  if (reduce.operand_count() != 2 || !reduce.shape().is_array())
    return refuse(reduce, "a reduce of several inputs is not generated yet");
  const Shape& input = reduce.operand(0)->shape();
  const Shape& out = reduce.shape();
  if (!row_major(input) || !row_major(out)) return refuse(reduce, "a layout other than row-major is not generated");
  if (input.element_type() != out.element_type() || reduce.operand(1)->shape().element_type() != out.element_type())
    return refuse(reduce, "a reduce that changes the element type is not generated");
  // The combiner: one binary op of the two parameters (either order).
  const Computation& combiner = *reduce.called_computations().at(0);
  const Instruction* root = combiner.root();
  if (combiner.parameter_count() != 2 || root == nullptr || root->operand_count() != 2 ||
      root->operand(0)->opcode() != Opcode::kParameter || root->operand(1)->opcode() != Opcode::kParameter ||
      root->operand(0) == root->operand(1))
    return refuse(reduce, "a combiner other than one op of its two parameters is not generated yet");
  const bool accumulator_first = root->operand(0)->parameter_number == 0;
  INSITU_ASSIGN_OR_RETURN(std::string type, cuda_type(reduce, out.element_type()));
  const bool floating = type == "float" || type == "double";
  const std::string acc = "acc", x = "x";
  const std::string a = accumulator_first ? acc : x, b = accumulator_first ? x : acc;
  std::string step;
  bool sum_in_double = false;
  switch (root->opcode()) {
    case Opcode::kAdd:
      sum_in_double = floating;  // the evaluator's: a floating sum in double, rounded once
      step = sum_in_double ? "acc += (double)x;" : str_cat("acc = ", a, " + ", b, ";");
      break;
    case Opcode::kMultiply: step = str_cat("acc = ", a, " * ", b, ";"); break;
    case Opcode::kMaximum:
      step = floating ? str_cat("acc = insitu_max(", a, ", ", b, ");") : str_cat("acc = ", a, " < ", b, " ? ", b, " : ", a, ";");
      break;
    case Opcode::kMinimum:
      step = floating ? str_cat("acc = insitu_min(", a, ", ", b, ");") : str_cat("acc = ", b, " < ", a, " ? ", b, " : ", a, ";");
      break;
    case Opcode::kAnd:
      if (floating) return refuse(*root, "a bitwise combiner of floats");
      step = str_cat("acc = ", a, type == "bool" ? " && " : " & ", b, ";");
      break;
    case Opcode::kOr:
      if (floating) return refuse(*root, "a bitwise combiner of floats");
      step = str_cat("acc = ", a, type == "bool" ? " || " : " | ", b, ";");
      break;
    default: return refuse(*root, "this combiner op is not generated yet");
  }
  // Output element i: the kept dimensions' coordinates give the first input element; the
  // reduced ones are walked in row-major order (the evaluator's fold order).
  const std::vector<int64_t> strides = strides_of(input.dimensions());
  std::unordered_set<int64_t> reduced(reduce.dimensions.begin(), reduce.dimensions.end());
  std::vector<int64_t> kept, walked;
  for (int64_t d = 0; d < input.rank(); ++d) (reduced.count(d) ? walked : kept).push_back(d);
  const std::vector<int64_t> out_strides = strides_of(out.dimensions());
  std::string base = "0";
  for (size_t k = 0; k < kept.size(); ++k)
    base += str_cat(" + (i / ", out_strides[k], "ll % ", out.dimension(static_cast<int64_t>(k)), "ll) * ", strides[kept[k]],
                    "ll");
  int64_t count = 1;
  for (int64_t d : walked) count *= input.dimension(d);
  std::string offset = "0";
  int64_t inner = 1;
  for (auto d = walked.rbegin(); d != walked.rend(); ++d) {
    offset += str_cat(" + (r / ", inner, "ll % ", input.dimension(*d), "ll) * ", strides[*d], "ll");
    inner *= input.dimension(*d);
  }
  GeneratedKernel kernel;
  kernel.name = name;
  kernel.source = str_cat("extern \"C\" __global__ void ", name, "(const ", type, "* __restrict__ input, const ", type,
                          "* __restrict__ init, ", type, "* __restrict__ out, long long n) {\n",
                          "  const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;\n",
                          "  if (i >= n) return;\n", "  const long long base = ", base, ";\n  ",
                          sum_in_double ? "double acc = (double)init[0];\n" : str_cat(type, " acc = init[0];\n"),
                          "  for (long long r = 0; r < ", count, "ll; ++r) {\n", "    const ", type,
                          " x = input[base + ", offset, "];\n    ", step, "\n  }\n", "  out[i] = (", type, ")acc;\n}\n");
  return kernel;
}

StatusOr<GeneratedKernel> generate_dynamic_update_slice_kernel(const Instruction& update_slice,
                                                               const std::string& name) {
  if (update_slice.opcode() != Opcode::kDynamicUpdateSlice) return refuse(update_slice, "not a dynamic-update-slice");
  const Shape& operand = update_slice.operand(0)->shape();
  const Shape& update = update_slice.operand(1)->shape();
  if (!row_major(operand) || !row_major(update)) return refuse(update_slice, "a layout other than row-major");
  INSITU_ASSIGN_OR_RETURN(std::string type, cuda_type(update_slice, operand.element_type()));
  std::string params, offset = "0";
  const std::vector<int64_t> operand_strides = strides_of(operand.dimensions());
  const std::vector<int64_t> update_strides = strides_of(update.dimensions());
  for (int64_t d = 0; d < operand.rank(); ++d) {
    const Instruction& index = *update_slice.operand(2 + d);
    INSITU_ASSIGN_OR_RETURN(std::string index_type, cuda_type(index, index.shape().element_type()));
    params += str_cat("const ", index_type, "* __restrict__ s", d, ", ");
    // XLA clamps each start index into [0, operand - update].
    const int64_t last = operand.dimension(d) - update.dimension(d);
    offset += str_cat(" + ((i / ", update_strides[d], "ll % ", update.dimension(d), "ll) + insitu_clamp((long long)s", d,
                      "[0], ", last, "ll)) * ", operand_strides[d], "ll");
  }
  GeneratedKernel kernel;
  kernel.name = name;
  kernel.source = str_cat("extern \"C\" __global__ void ", name, "(", type, "* __restrict__ buffer, const ", type,
                          "* __restrict__ update, ", params, "long long n) {\n",
                          "  const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;\n",
                          "  if (i >= n) return;\n  buffer[", offset, "] = update[i];\n}\n");
  return kernel;
}

}  // namespace insitu::cuda
