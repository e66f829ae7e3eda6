// CUDA C++ for sort and topk (codegen.h: generate_sort_kernel, generate_topk_kernel).
#include <optional>
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

namespace {

// What both sort forms need: the operands' CUDA types, the comparator as a device function
// (NAME_less), and where row r starts (`base`, an expression of r: the slice along `dimension`
// at the other dimensions' coordinates r, row-major) and how far apart its elements are.
struct SortRows {
  int64_t count = 0;  // operands
  std::vector<std::string> types;
  GeneratedKernel comparator;
  int64_t length = 0, step = 0, rows = 0;
  std::string base;
};

StatusOr<SortRows> sort_rows(const Instruction& sort, const std::string& name) {
  if (sort.opcode() != Opcode::kSort || sort.operand_count() < 1 || sort.dimensions.size() != 1)
    return refuse(sort, "not a sort along one dimension");
  SortRows rows;
  rows.count = sort.operand_count();
  const Shape& keys = sort.operand(0)->shape();
  const int64_t rank = keys.rank(), dimension = sort.dimensions[0];
  if (dimension < 0 || dimension >= rank) return refuse(sort, "a sort dimension out of range");
  for (int64_t k = 0; k < rows.count; ++k) {
    if (sort.operand(k)->shape().dimensions() != keys.dimensions())
      return refuse(sort, "operands of different shapes");
    INSITU_ASSIGN_OR_RETURN(std::string type, cuda_type(sort, sort.operand(k)->shape().element_type()));
    rows.types.push_back(std::move(type));
  }
  if (sort.called_computations().empty()) return refuse(sort, "no comparator");
  INSITU_ASSIGN_OR_RETURN(rows.comparator,
                          generate_scalar_function(*sort.called_computations()[0], sort, name + "_less"));
  const std::vector<int64_t> strides = strides_of(keys.dimensions());
  rows.length = keys.dimension(dimension);
  rows.step = strides[dimension];
  rows.rows = rows.length == 0 ? 0 : keys.element_count() / rows.length;
  rows.base = "0";
  int64_t inner = 1;
  for (int64_t d = rank - 1; d >= 0; --d) {
    if (d == dimension) continue;
    rows.base += str_cat(" + (r / ", inner, "ll % ", keys.dimension(d), "ll) * ", strides[d], "ll");
    inner *= keys.dimension(d);
  }
  return rows;
}

}  // namespace

StatusOr<GeneratedKernel> generate_sort_kernel(const Instruction& sort, const std::string& name) {
  INSITU_ASSIGN_OR_RETURN(SortRows rows, sort_rows(sort, name));
  const int64_t count = rows.count, length = rows.length, step = rows.step;
  const std::vector<std::string>& types = rows.types;
  const GeneratedKernel& comparator = rows.comparator;
  const std::string& base = rows.base;
  // Thread r sorts row r: the row is copied into the outputs, then a stable insertion sort
  // moves every operand's element together. A stable sort gives the evaluator's order
  // (std::stable_sort) for any comparator that is a strict weak order; one that is not (LT
  // with NaNs) has no defined order in XLA either.
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

StatusOr<std::optional<StagedSort>> generate_staged_sort(const Instruction& sort, const std::string& name) {
  INSITU_ASSIGN_OR_RETURN(SortRows rows, sort_rows(sort, name));
  if (rows.length < kStagedSortLength || rows.length > (int64_t{1} << 30)) return std::optional<StagedSort>();
  StagedSort staged;
  staged.rows = rows.rows;
  staged.length = rows.length;
  staged.padded = 1;
  while (staged.padded < rows.length) staged.padded *= 2;
  staged.scratch_bytes = rows.rows * staged.padded * static_cast<int64_t>(sizeof(int32_t));
  for (int64_t block = 2; block <= staged.padded; block *= 2)
    for (int64_t half = block / 2; half > 0; half /= 2) staged.stages.emplace_back(half, block);
  const int64_t length = rows.length, step = rows.step, padded = staged.padded;
  std::string inputs, input_names, before_call = name + "_less(", after_call = name + "_less(", outputs, gather;
  for (int64_t k = 0; k < rows.count; ++k) {
    inputs += str_cat("const ", rows.types[k], "* __restrict__ in", k, ", ");
    input_names += str_cat("in", k, ", ");
    before_call += str_cat("in", k, "[base + x * ", step, "ll], in", k, "[base + y * ", step, "ll], ");
    after_call += str_cat("in", k, "[base + y * ", step, "ll], in", k, "[base + x * ", step, "ll], ");
    outputs += str_cat(rows.types[k], "* __restrict__ out", k, ", ");
    gather += str_cat("  out", k, "[base + j * ", step, "ll] = in", k, "[base + (long long)from * ", step, "ll];\n");
  }
  before_call += "&less);\n";
  after_call += "&less);\n";
  const std::string index = "  const long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;\n  if (t >= n) return;\n";
  staged.setup.name = name;
  staged.setup.source = str_cat("extern \"C\" __global__ void ", name, "(int* __restrict__ order, long long n) {\n",
                                index, "  order[t] = (int)(t % ", padded, "ll);\n}\n");
  // Whether position x of row r goes strictly before position y: the comparator's order, ties
  // by position, padding last.
  const std::string before = name + "_before";
  staged.stage.name = name + "_stage";
  staged.stage.source = str_cat(
      rows.comparator.source, "static __device__ bool ", before, "(", inputs, "long long r, int x, int y) {\n",
      "  if (x >= ", length, ") return false;\n  if (y >= ", length, ") return true;\n",
      "  const long long base = ", rows.base, ";\n  bool less = false;\n  ", before_call,
      "  if (less) return true;\n  ", after_call, "  if (less) return false;\n  return x < y;\n}\n",
      "extern \"C\" __global__ void ", staged.stage.name, "(", inputs,
      "int* __restrict__ order, long long half, long long block, long long n) {\n", index,
      "  const long long r = t / ", padded / 2, "ll, q = t % ", padded / 2, "ll;\n",
      "  const long long i = 2 * half * (q / half) + q % half;  // the pair's lower position: its `half` bit clear\n",
      "  int* row = order + r * ", padded, "ll;\n  const int a = row[i], b = row[i + half];\n",
      "  const bool swap = (i & block) == 0 ? ", before, "(", input_names, "r, b, a) : ", before, "(", input_names,
      "r, a, b);\n", "  if (swap) {\n    row[i] = b;\n    row[i + half] = a;\n  }\n}\n");
  staged.finish.name = name + "_gather";
  staged.finish.source = str_cat("extern \"C\" __global__ void ", staged.finish.name, "(", inputs,
                                 "const int* __restrict__ order, ", outputs, "long long n) {\n", index,
                                 "  const long long r = t / ", length, "ll, j = t % ", length, "ll;\n",
                                 "  const long long base = ", rows.base, ";\n",
                                 "  const int from = order[r * ", padded, "ll + j];\n", gather, "}\n");
  return std::optional<StagedSort>(std::move(staged));
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
