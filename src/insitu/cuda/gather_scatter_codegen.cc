// CUDA C++ for gather and for scatter in place (codegen.h: generate_gather_kernel,
// generate_scatter_kernel), with the reference evaluator's index rules.
#include <algorithm>
#include <vector>

#include "insitu/cuda/codegen.h"
#include "insitu/cuda/codegen_internal.h"
#include "insitu/evaluator/index_util.h"
#include "insitu/ir/computation.h"
#include "insitu/support/str.h"

namespace insitu::cuda {

using detail::cuda_type;
using detail::refuse;
using detail::strides_of;

namespace {

// The update statement for `t` (the buffer's element) and `u` (the update's), or empty: the
// combiner is one op of its two parameters (or returns the update), as runtime/scatter_kernels.cc
// runs natively.
std::string combine_statement(const Computation& combiner, const std::string& type) {
  const Instruction* root = combiner.root();
  if (combiner.parameter_count() != 2 || root == nullptr) return "";
  if (root->opcode() == Opcode::kParameter) return root->parameter_number == 1 ? "t = u;" : "";
  if (root->operand_count() != 2 || root->operand(0)->opcode() != Opcode::kParameter ||
      root->operand(1)->opcode() != Opcode::kParameter || root->operand(0) == root->operand(1))
    return "";
  const bool current_first = root->operand(0)->parameter_number == 0;
  const std::string a = current_first ? "t" : "u", b = current_first ? "u" : "t";
  const bool floating = detail::compute_type(type) == "float" || type == "double";
  if (type == "bool") return "";
  // integers wrap, as the evaluator's do: the arithmetic in unsigned
  const std::string ua = floating ? a : str_cat("(unsigned long long)", a), ub = floating ? b : str_cat("(unsigned long long)", b);
  switch (root->opcode()) {
    case Opcode::kAdd: return str_cat("t = (", type, ")(", ua, " + ", ub, ");");
    case Opcode::kMultiply: return str_cat("t = (", type, ")(", ua, " * ", ub, ");");
    case Opcode::kMaximum:
      return floating ? str_cat("t = insitu_max(", a, ", ", b, ");") : str_cat("t = ", a, " < ", b, " ? ", b, " : ", a, ";");
    case Opcode::kMinimum:
      return floating ? str_cat("t = insitu_min(", a, ", ", b, ");") : str_cat("t = ", b, " < ", a, " ? ", b, " : ", a, ";");
    default: return "";
  }
}

}  // namespace

StatusOr<GeneratedKernel> generate_scatter_kernel(const Instruction& scatter, const std::string& name) {
  if (scatter.opcode() != Opcode::kScatter || scatter.operand_count() != 3 || !scatter.shape().is_array())
    return refuse(scatter, "a scatter of several operands is not generated yet");
  const Shape& operand = scatter.operand(0)->shape();
  const Shape& indices = scatter.operand(1)->shape();
  const Shape& updates = scatter.operand(2)->shape();
  if (updates.element_type() != operand.element_type() || scatter.shape().element_type() != operand.element_type())
    return refuse(scatter, "updates of another type than the operand");
  if (!updates.layout().minor_to_major.empty() && !updates.layout().is_default_for_rank(updates.rank()))
    return refuse(scatter, "updates in a layout other than the default (the evaluator walks them in layout order)");
  INSITU_ASSIGN_OR_RETURN(std::string type, cuda_type(scatter, operand.element_type()));
  INSITU_ASSIGN_OR_RETURN(std::string index_type, cuda_type(*scatter.operand(1), indices.element_type()));
  if (scatter.called_computations().empty()) return refuse(scatter, "no update computation");
  const std::string statement = combine_statement(*scatter.called_computations()[0], type);
  if (statement.empty())
    return refuse(scatter, "an update computation other than assignment or one add, multiply, maximum or minimum of "
                           "its two parameters is not generated yet");
  const ScatterDimensionNumbers& numbers = scatter.scatter_dimension_numbers;
  if (numbers.input_batching_dims.size() != numbers.scatter_indices_batching_dims.size())
    return refuse(scatter, "batching dimensions that do not pair up");
  const int64_t operand_rank = operand.rank(), update_rank = updates.rank(), indices_rank = indices.rank();
  const int64_t vector_dim = numbers.index_vector_dim;
  if (vector_dim < 0 || vector_dim > indices_rank) return refuse(scatter, "index_vector_dim out of range");
  const int64_t vector_size = vector_dim == indices_rank ? 1 : indices.dimension(vector_dim);
  if (static_cast<int64_t>(numbers.scatter_dims_to_operand_dims.size()) != vector_size)
    return refuse(scatter, "scatter_dims_to_operand_dims does not match the index vector");
  std::vector<int64_t> window_operand_dimensions, batch_dimensions, update_scatter_dimensions;
  for (int64_t d = 0; d < operand_rank; ++d)
    if (!contains(numbers.inserted_window_dims, d) && !contains(numbers.input_batching_dims, d))
      window_operand_dimensions.push_back(d);
  for (int64_t d = 0; d < indices_rank; ++d)
    if (d != vector_dim) batch_dimensions.push_back(d);
  for (int64_t d = 0; d < update_rank; ++d)
    if (!contains(numbers.update_window_dims, d)) update_scatter_dimensions.push_back(d);
  if (window_operand_dimensions.size() != numbers.update_window_dims.size() ||
      update_scatter_dimensions.size() != batch_dimensions.size())
    return refuse(scatter, "malformed dimension numbers");
  std::vector<int64_t> window_extent(static_cast<size_t>(operand_rank), 1);
  for (size_t k = 0; k < window_operand_dimensions.size(); ++k)
    window_extent[window_operand_dimensions[k]] = updates.dimension(numbers.update_window_dims[k]);
  // One thread per window element, each walking the scatter positions in the evaluator's order
  // (row-major): two updates of one element then combine in that order, in one thread, as long
  // as windows meet only where their starts are equal, which holds when every scattered
  // operand dimension has a window of extent 1.
  for (int64_t d : numbers.scatter_dims_to_operand_dims) {
    if (d < 0 || d >= operand_rank) return refuse(scatter, "scatter_dims_to_operand_dims out of range");
    if (window_extent[d] != 1)
      return refuse(scatter, str_cat("a window of extent ", window_extent[d], " along scattered operand dimension ", d,
                                     " (windows that overlap in part) is not generated yet"));
  }
  const std::vector<int64_t> operand_strides = strides_of(operand.dimensions());
  const std::vector<int64_t> update_strides = strides_of(updates.dimensions());
  const std::vector<int64_t> index_strides = strides_of(indices.dimensions());
  // The window element w: its offsets in the operand and in the updates.
  std::string window_operand = "0", window_update = "0";
  int64_t inner = 1;
  for (size_t k = numbers.update_window_dims.size(); k-- > 0;) {
    const int64_t d = numbers.update_window_dims[k], extent = updates.dimension(d);
    const std::string coordinate = str_cat("(w / ", inner, "ll % ", extent, "ll)");
    window_operand += str_cat(" + ", coordinate, " * ", operand_strides[window_operand_dimensions[k]], "ll");
    window_update += str_cat(" + ", coordinate, " * ", update_strides[d], "ll");
    inner *= extent;
  }
  // The scatter position s: its offset in the updates and in the indices (batch dimensions).
  int64_t positions = 1;
  for (int64_t d : update_scatter_dimensions) positions *= updates.dimension(d);
  std::string position_update = "0", position_index = "0";
  std::vector<std::string> coordinates(update_scatter_dimensions.size());  // of s, per batch dimension
  inner = 1;
  for (size_t j = update_scatter_dimensions.size(); j-- > 0;) {
    const int64_t d = update_scatter_dimensions[j], extent = updates.dimension(d);
    const std::string coordinate = str_cat("(s / ", inner, "ll % ", extent, "ll)");
    coordinates[j] = coordinate;
    position_update += str_cat(" + ", coordinate, " * ", update_strides[d], "ll");
    position_index += str_cat(" + ", coordinate, " * ", index_strides[batch_dimensions[j]], "ll");
    inner *= extent;
  }
  std::string body;
  body += str_cat("    const long long at = ", position_index, ";\n    long long base = 0;\n    bool inside = true;\n");
  for (int64_t k = 0; k < vector_size; ++k) {
    const int64_t d = numbers.scatter_dims_to_operand_dims[k];
    const std::string element = vector_dim < indices_rank ? str_cat("at + ", k * index_strides[vector_dim], "ll") : "at";
    body += str_cat("    { const long long start = (long long)indices[", element, "];\n",
                    "      inside = inside && start >= 0 && start <= ", operand.dimension(d) - window_extent[d], "ll;\n",
                    "      base += start * ", operand_strides[d], "ll; }\n");
  }
  // A batching dimension starts at the position's own coordinate on its indices dimension.
  for (size_t b = 0; b < numbers.input_batching_dims.size(); ++b) {
    const int64_t d = numbers.input_batching_dims[b];
    const auto found = std::find(batch_dimensions.begin(), batch_dimensions.end(), numbers.scatter_indices_batching_dims[b]);
    if (d < 0 || d >= operand_rank || found == batch_dimensions.end())
      return refuse(scatter, "a batching dimension out of range or on the index vector");
    const std::string& start = coordinates[static_cast<size_t>(found - batch_dimensions.begin())];
    body += str_cat("    inside = inside && ", start, " <= ", operand.dimension(d) - window_extent[d], "ll;\n",
                    "    base += ", start, " * ", operand_strides[d], "ll;\n");
  }
  GeneratedKernel kernel;
  kernel.name = name;
  kernel.source = str_cat(
      "extern \"C\" __global__ void ", name, "(", type, "* __restrict__ buffer, const ", index_type,
      "* __restrict__ indices, const ", type, "* __restrict__ updates, long long n) {\n",
      "  const long long w = (long long)blockIdx.x * blockDim.x + threadIdx.x;\n", "  if (w >= n) return;\n",
      "  const long long window_operand = ", window_operand, ";\n", "  const long long window_update = ", window_update,
      ";\n", "  for (long long s = 0; s < ", positions, "ll; ++s) {\n", body,
      "    if (!inside) continue;  // a window that does not fit is dropped whole\n", "    ", type,
      "& t = buffer[base + window_operand];\n", "    const ", type, " u = updates[", position_update,
      " + window_update];\n", "    ", statement, "\n  }\n}\n");
  return kernel;
}

StatusOr<GeneratedKernel> generate_gather_kernel(const Instruction& gather, const std::string& name) {
  if (gather.opcode() != Opcode::kGather || gather.operand_count() != 2 || !gather.shape().is_array())
    return refuse(gather, "not a gather of one operand");
  const Shape& operand = gather.operand(0)->shape();
  const Shape& indices = gather.operand(1)->shape();
  const Shape& out = gather.shape();
  if (out.element_type() != operand.element_type()) return refuse(gather, "a result of another type than the operand");
  INSITU_ASSIGN_OR_RETURN(std::string type, cuda_type(gather, operand.element_type()));
  INSITU_ASSIGN_OR_RETURN(std::string index_type, cuda_type(*gather.operand(1), indices.element_type()));
  const GatherDimensionNumbers& numbers = gather.gather_dimension_numbers;
  const std::vector<int64_t>& slice_sizes = gather.dynamic_slice_sizes;
  const int64_t operand_rank = operand.rank(), indices_rank = indices.rank(), output_rank = out.rank();
  const int64_t vector_dim = numbers.index_vector_dim;
  if (vector_dim < 0 || vector_dim > indices_rank || static_cast<int64_t>(slice_sizes.size()) != operand_rank)
    return refuse(gather, "malformed dimension numbers");
  const int64_t vector_size = vector_dim == indices_rank ? 1 : indices.dimension(vector_dim);
  if (static_cast<int64_t>(numbers.start_index_map.size()) != vector_size ||
      numbers.operand_batching_dims.size() != numbers.start_indices_batching_dims.size())
    return refuse(gather, "malformed dimension numbers");
  std::vector<int64_t> batch_dimensions, offset_operand_dimensions, output_batch_dimensions;
  for (int64_t d = 0; d < indices_rank; ++d)
    if (d != vector_dim) batch_dimensions.push_back(d);
  for (int64_t d = 0; d < operand_rank; ++d)
    if (!contains(numbers.collapsed_slice_dims, d) && !contains(numbers.operand_batching_dims, d))
      offset_operand_dimensions.push_back(d);
  for (int64_t d = 0; d < output_rank; ++d)
    if (!contains(numbers.offset_dims, d)) output_batch_dimensions.push_back(d);
  if (output_batch_dimensions.size() != batch_dimensions.size() ||
      numbers.offset_dims.size() != offset_operand_dimensions.size())
    return refuse(gather, "malformed dimension numbers");
  for (int64_t d : numbers.start_index_map)
    if (d < 0 || d >= operand_rank) return refuse(gather, "start_index_map out of range");
  const std::vector<int64_t> operand_strides = strides_of(operand.dimensions());
  const std::vector<int64_t> index_strides = strides_of(indices.dimensions());
  const std::vector<int64_t> out_strides = strides_of(out.dimensions());
  auto coordinate = [&](int64_t d) { return str_cat("(i / ", out_strides[d], "ll % ", out.dimension(d), "ll)"); };
  // The index vector's position: the output's batch coordinates on the indices' batch dimensions.
  std::string at = "0";
  for (size_t j = 0; j < batch_dimensions.size(); ++j)
    at += str_cat(" + ", coordinate(output_batch_dimensions[j]), " * ", index_strides[batch_dimensions[j]], "ll");
  // Each operand dimension's start, clamped so that the slice stays inside (XLA's rule).
  std::vector<std::string> start(static_cast<size_t>(operand_rank), "0");
  for (int64_t k = 0; k < vector_size; ++k)
    start[numbers.start_index_map[k]] = str_cat(
        "(long long)indices[at", vector_dim < indices_rank ? str_cat(" + ", k * index_strides[vector_dim], "ll") : "", "]");
  for (size_t b = 0; b < numbers.operand_batching_dims.size(); ++b) {
    const int64_t index_dim = numbers.start_indices_batching_dims[b];
    const auto found = std::find(batch_dimensions.begin(), batch_dimensions.end(), index_dim);
    if (found == batch_dimensions.end()) return refuse(gather, "a batching dimension that is the index vector's");
    start[numbers.operand_batching_dims[b]] = coordinate(output_batch_dimensions[found - batch_dimensions.begin()]);
  }
  std::string offset = "0";
  for (int64_t d = 0; d < operand_rank; ++d) {
    if (slice_sizes[d] < 0 || slice_sizes[d] > operand.dimension(d)) return refuse(gather, "a slice larger than the operand");
    if (start[d] != "0")
      offset += str_cat(" + insitu_clamp(", start[d], ", ", operand.dimension(d) - slice_sizes[d], "ll) * ",
                        operand_strides[d], "ll");
  }
  for (size_t k = 0; k < offset_operand_dimensions.size(); ++k)
    offset += str_cat(" + ", coordinate(numbers.offset_dims[k]), " * ", operand_strides[offset_operand_dimensions[k]], "ll");
  GeneratedKernel kernel;
  kernel.name = name;
  kernel.source = str_cat("extern \"C\" __global__ void ", name, "(const ", type, "* __restrict__ operand, const ",
                          index_type, "* __restrict__ indices, ", type, "* __restrict__ out, long long n) {\n",
                          "  const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;\n",
                          "  if (i >= n) return;\n", "  const long long at = ", at, ";\n", "  out[i] = operand[", offset,
                          "];\n}\n");
  return kernel;
}

}  // namespace insitu::cuda
