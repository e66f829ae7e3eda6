// CUDA C++ for sort and topk (codegen.h: generate_sort_kernel, generate_topk_kernel).
#include <vector>

#include "insitu/cuda/codegen.h"
#include "insitu/cuda/codegen_internal.h"
#include "insitu/evaluator/ops.h"
#include "insitu/ir/computation.h"
#include "insitu/support/str.h"

namespace insitu::cuda {

using detail::cuda_type;
using detail::refuse;
using detail::strides_of;

StatusOr<GeneratedKernel> generate_sort_kernel(const Instruction& sort, const std::string& name) {
  if (sort.opcode() != Opcode::kSort || sort.operand_count() < 1 || sort.dimensions.size() != 1)
    return refuse(sort, "not a sort along one dimension");
  const int64_t count = sort.operand_count();
  const Shape& keys = sort.operand(0)->shape();
  const int64_t rank = keys.rank(), dimension = sort.dimensions[0];
  if (dimension < 0 || dimension >= rank) return refuse(sort, "a sort dimension out of range");
  std::vector<std::string> types;
  for (int64_t k = 0; k < count; ++k) {
    if (sort.operand(k)->shape().dimensions() != keys.dimensions())
      return refuse(sort, "operands of different shapes");
    INSITU_ASSIGN_OR_RETURN(std::string type, cuda_type(sort, sort.operand(k)->shape().element_type()));
    types.push_back(std::move(type));
  }
  if (sort.called_computations().empty()) return refuse(sort, "no comparator");
  INSITU_ASSIGN_OR_RETURN(GeneratedKernel comparator,
                          generate_scalar_function(*sort.called_computations()[0], sort, name + "_less"));
  // Thread r sorts row r (the slice along `dimension` at the other dimensions' coordinates r,
  // row-major): the row is copied into the outputs, then a stable insertion sort moves every
  // operand's element together. A stable sort gives the evaluator's order (std::stable_sort)
  // for any comparator that is a strict weak order; one that is not (LT with NaNs) has no
  // defined order in XLA either.
  const std::vector<int64_t> strides = strides_of(keys.dimensions());
  const int64_t length = keys.dimension(dimension), step = strides[dimension];
  std::string base = "0";
  int64_t inner = 1;
  for (int64_t d = rank - 1; d >= 0; --d) {
    if (d == dimension) continue;
    base += str_cat(" + (r / ", inner, "ll % ", keys.dimension(d), "ll) * ", strides[d], "ll");
    inner *= keys.dimension(d);
  }
  std::string parameters, copy, hold, less = name + "_less(", move, put;
  for (int64_t k = 0; k < count; ++k) parameters += str_cat("const ", types[k], "* __restrict__ in", k, ", ");
  for (int64_t k = 0; k < count; ++k) parameters += str_cat(types[k], "* __restrict__ out", k, ", ");
  for (int64_t k = 0; k < count; ++k) {
    copy += str_cat("    out", k, "[base + j * ", step, "ll] = in", k, "[base + j * ", step, "ll];\n");
    hold += str_cat("    const ", types[k], " h", k, " = out", k, "[base + j * ", step, "ll];\n");
    less += str_cat("h", k, ", out", k, "[base + i * ", step, "ll], ");
    move += str_cat("      out", k, "[base + (i + 1) * ", step, "ll] = out", k, "[base + i * ", step, "ll];\n");
    put += str_cat("    out", k, "[base + (i + 1) * ", step, "ll] = h", k, ";\n");
  }
  less += "&before);\n";
  GeneratedKernel kernel;
  kernel.name = name;
  kernel.source = str_cat(comparator.source, "extern \"C\" __global__ void ", name, "(", parameters, "long long n) {\n",
                          "  const long long r = (long long)blockIdx.x * blockDim.x + threadIdx.x;\n",
                          "  if (r >= n) return;\n", "  const long long base = ", base, ";\n",
                          "  for (long long j = 0; j < ", length, "ll; ++j) {\n", copy, "  }\n",
                          "  for (long long j = 1; j < ", length, "ll; ++j) {\n", hold, "    long long i = j - 1;\n",
                          "    for (; i >= 0; --i) {\n      bool before = false;\n      ", less,
                          "      if (!before) break;  // element j goes after element i: stays behind it\n", move,
                          "    }\n", put, "  }\n}\n");
  return kernel;
}

StatusOr<GeneratedKernel> generate_topk_kernel(const Instruction& topk, const std::string& name) {
  if (topk.opcode() != Opcode::kTopk || topk.operand_count() != 1 || !topk.shape().is_tuple() ||
      topk.shape().tuple_size() != 2)
    return refuse(topk, "not a topk of one array into (values, indices)");
  const Shape& input = topk.operand(0)->shape();
  if (input.rank() == 0) return refuse(topk, "a topk of a scalar");
  const int64_t length = input.dimensions().back();
  INSITU_ASSIGN_OR_RETURN(eval::TopkAttributes attributes, eval::topk_attributes(topk, length));
  const PrimitiveType element = input.element_type();
  const bool floating = element == PrimitiveType::kF32 || element == PrimitiveType::kF64;
  if (!floating && element != PrimitiveType::kS32 && element != PrimitiveType::kS64)
    return refuse(topk, "a topk of other types than f32, f64, s32 and s64 is not generated yet");
  INSITU_ASSIGN_OR_RETURN(std::string type, cuda_type(topk, element));
  const PrimitiveType index_element = topk.shape().tuple_shape(1).element_type();
  INSITU_ASSIGN_OR_RETURN(std::string index_type, cuda_type(topk, index_element));
  // Thread r picks row r's k first elements in the evaluator's order (a stable sort by the
  // total-order key, largest or smallest first): each pick is the first element, in that
  // order, after the previous pick, so ties keep their positions and nothing needs scratch.
  const std::string key = floating ? "insitu_total_order(in[base + e])" : "in[base + e]";
  const std::string key_type = element == PrimitiveType::kF32 ? "int" : "long long";
  const char* better = attributes.largest ? ">" : "<";
  const char* worse = attributes.largest ? "<" : ">";
  const int64_t k = attributes.k;
  GeneratedKernel kernel;
  kernel.name = name;
  kernel.source = str_cat(
      "extern \"C\" __global__ void ", name, "(const ", type, "* __restrict__ in, ", type, "* __restrict__ values, ",
      index_type, "* __restrict__ indices, long long n) {\n",
      "  const long long r = (long long)blockIdx.x * blockDim.x + threadIdx.x;\n", "  if (r >= n) return;\n",
      "  const long long base = r * ", length, "ll;\n", "  long long previous = -1;\n  ", key_type,
      " previous_key = 0;\n", "  for (long long j = 0; j < ", k, "ll; ++j) {\n", "    long long best = -1;\n    ",
      key_type, " best_key = 0;\n", "    for (long long e = 0; e < ", length, "ll; ++e) {\n", "      const ", key_type,
      " key = ", key, ";\n",
      "      if (previous >= 0 && !(key ", worse, " previous_key || (key == previous_key && e > previous))) continue;\n",
      "      if (best < 0 || key ", better, " best_key || (key == best_key && e < best)) { best = e; best_key = key; }\n",
      "    }\n", "    values[r * ", k, "ll + j] = in[base + best];\n", "    indices[r * ", k, "ll + j] = (", index_type,
      ")best;\n", "    previous = best;\n    previous_key = best_key;\n  }\n}\n");
  return kernel;
}

}  // namespace insitu::cuda
