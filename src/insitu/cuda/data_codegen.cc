// CUDA C++ for reduce and the data-movement ops: dynamic-update-slice in place, slice,
// dynamic-slice, transpose, reverse, concatenate (codegen.h).
#include <unordered_set>
#include <vector>

#include "insitu/cuda/codegen.h"
#include "insitu/cuda/codegen_internal.h"
#include "insitu/evaluator/apply_util.h"
#include "insitu/ir/computation.h"
#include "insitu/support/str.h"

namespace insitu::cuda {

using detail::cuda_type;
using detail::refuse;
using detail::strides_of;

namespace {

// The statement folding element `x0` into `acc0` with `op`'s combiner (called_computations()[0]):
// one binary op of its two parameters, in either order. With `double_sum`, a floating sum is
// kept in double (`sum_in_double` says so; acc0 is then a double).
StatusOr<std::string> fold_step(const Instruction& op, const std::string& type, bool double_sum, bool& sum_in_double) {
  const Computation& combiner = *op.called_computations().at(0);
  const Instruction* root = combiner.root();
  if (combiner.parameter_count() != 2 || root == nullptr || root->operand_count() != 2 ||
      root->operand(0)->opcode() != Opcode::kParameter || root->operand(1)->opcode() != Opcode::kParameter ||
      root->operand(0) == root->operand(1))
    return refuse(op, "a combiner other than one op of its two parameters is not generated yet");
  const bool accumulator_first = root->operand(0)->parameter_number == 0;
  const bool floating = detail::compute_type(type) == "float" || type == "double";
  const bool narrow = detail::compute_type(type) != type;  // bf16, f16: rounded at every step, as evaluated
  const std::string a = accumulator_first ? "acc0" : "x0", b = accumulator_first ? "x0" : "acc0";
  sum_in_double = false;
  switch (root->opcode()) {
    case Opcode::kAdd:
      sum_in_double = floating && double_sum && !narrow;
      return sum_in_double ? std::string("acc0 += (double)x0;") : str_cat("acc0 = ", a, " + ", b, ";");
    case Opcode::kMultiply: return str_cat("acc0 = ", a, " * ", b, ";");
    case Opcode::kMaximum:
      return floating ? str_cat("acc0 = insitu_max(", a, ", ", b, ");") : str_cat("acc0 = ", a, " < ", b, " ? ", b, " : ", a, ";");
    case Opcode::kMinimum:
      return floating ? str_cat("acc0 = insitu_min(", a, ", ", b, ");") : str_cat("acc0 = ", b, " < ", a, " ? ", b, " : ", a, ";");
    case Opcode::kAnd:
      if (floating) return refuse(*root, "a bitwise combiner of floats");
      return str_cat("acc0 = ", a, type == "bool" ? " && " : " & ", b, ";");
    case Opcode::kOr:
      if (floating) return refuse(*root, "a bitwise combiner of floats");
      return str_cat("acc0 = ", a, type == "bool" ? " || " : " | ", b, ";");
    default: return refuse(*root, "this combiner op is not generated yet");
  }
}

}  // namespace

namespace {

// What both forms of a reduce kernel share: the element types, the fold step (`acc0`.. folds
// in `x0`..) and its device function, and the walk: output i's first input element is at
// `base` (of i) and its r-th reduced element `offset` (of r) past it, for r < count.
struct ReduceWalk {
  int64_t inputs = 0;
  std::vector<std::string> types;
  bool sum_in_double = false;  // acc0 is a double
  bool inline_step = false;    // one op of the combiner's parameters, no device function
  std::string step, combiner;
  std::string base, offset;
  int64_t count = 1;
  int64_t outputs = 0;
};

StatusOr<ReduceWalk> reduce_walk(const Instruction& reduce, const std::string& name) {
  if (reduce.opcode() != Opcode::kReduce) return refuse(reduce, "not a reduce");
  ReduceWalk walk;
  const int64_t inputs = walk.inputs = reduce.operand_count() / 2;
  const Shape& result = reduce.shape();
  if (inputs < 1 || reduce.operand_count() != 2 * inputs || (inputs == 1) != result.is_array() ||
      (inputs > 1 && result.tuple_size() != inputs))
    return refuse(reduce, "a reduce whose inputs, inits and results do not pair up");
  const Shape& input = reduce.operand(0)->shape();
  const Shape& out = result.is_tuple() ? result.tuple_shape(0) : result;
  walk.outputs = out.element_count();
  for (int64_t k = 0; k < inputs; ++k) {
    const PrimitiveType element = reduce.operand(k)->shape().element_type();
    const Shape& leaf = result.is_tuple() ? result.tuple_shape(k) : result;
    if (reduce.operand(inputs + k)->shape().element_type() != element || leaf.element_type() != element ||
        reduce.operand(k)->shape().dimensions() != input.dimensions())
      return refuse(reduce, "a reduce that changes the element type is not generated");
    INSITU_ASSIGN_OR_RETURN(std::string type, cuda_type(reduce, element));
    walk.types.push_back(std::move(type));
  }
  // One op of the two parameters: folded inline (a floating sum in double, rounded once: the
  // evaluator's); any other combiner (an argmax's pairs) through a device function of its
  // computation, in the element types, as the evaluator runs it.
  StatusOr<std::string> step = inputs == 1 ? fold_step(reduce, walk.types[0], /*double_sum=*/true, walk.sum_in_double)
                                           : StatusOr<std::string>(std::string());
  walk.inline_step = step.ok() && inputs == 1;
  if (!walk.inline_step) {
    INSITU_ASSIGN_OR_RETURN(GeneratedKernel function,
                            generate_scalar_function(*reduce.called_computations().at(0), reduce, name + "_combine"));
    walk.combiner = function.source;
    std::string call = name + "_combine(", declare, assign;
    for (int64_t k = 0; k < inputs; ++k) call += str_cat("acc", k, ", ");
    for (int64_t k = 0; k < inputs; ++k) call += str_cat("x", k, ", ");
    for (int64_t k = 0; k < inputs; ++k) {
      declare += str_cat(walk.types[k], " next", k, "; ");
      call += str_cat("&next", k, k + 1 < inputs ? ", " : ");");
      assign += str_cat(" acc", k, " = next", k, ";");
    }
    step = str_cat(declare, call, assign);
  }
  walk.step = *step;
  // Output element i: the kept dimensions' coordinates give the first input element; the
  // reduced ones are walked in the input's layout order, minor fastest (the evaluator's fold
  // order: row-major for the default layout).
  const std::vector<int64_t> strides = strides_of(input.dimensions());
  std::unordered_set<int64_t> reduced(reduce.dimensions.begin(), reduce.dimensions.end());
  std::vector<int64_t> kept, walked;
  for (int64_t d = 0; d < input.rank(); ++d)
    if (!reduced.count(d)) kept.push_back(d);
  const std::vector<int64_t> minor_to_major = eval::iteration_minor_to_major(input);
  for (auto d = minor_to_major.rbegin(); d != minor_to_major.rend(); ++d)
    if (reduced.count(*d)) walked.push_back(*d);
  const std::vector<int64_t> out_strides = strides_of(out.dimensions());
  walk.base = "0";
  for (size_t k = 0; k < kept.size(); ++k)
    walk.base += str_cat(" + (i / ", out_strides[k], "ll % ", out.dimension(static_cast<int64_t>(k)), "ll) * ",
                         strides[kept[k]], "ll");
  for (int64_t d : walked) walk.count *= input.dimension(d);
  walk.offset = "0";
  int64_t inner = 1;
  for (auto d = walked.rbegin(); d != walked.rend(); ++d) {
    walk.offset += str_cat(" + (r / ", inner, "ll % ", input.dimension(*d), "ll) * ", strides[*d], "ll");
    inner *= input.dimension(*d);
  }
  return walk;
}

}  // namespace

StatusOr<GeneratedKernel> generate_reduce_kernel(const Instruction& reduce, const std::string& name) {
  INSITU_ASSIGN_OR_RETURN(ReduceWalk walk, reduce_walk(reduce, name));
  // (input0, ..., init0, ..., out0, ..., n)
  std::string parameters, start, read, store;
  const int64_t inputs = walk.inputs;
  for (int64_t k = 0; k < inputs; ++k) parameters += str_cat("const ", walk.types[k], "* __restrict__ input", k, ", ");
  for (int64_t k = 0; k < inputs; ++k) parameters += str_cat("const ", walk.types[k], "* __restrict__ init", k, ", ");
  for (int64_t k = 0; k < inputs; ++k) parameters += str_cat(walk.types[k], "* __restrict__ out", k, ", ");
  for (int64_t k = 0; k < inputs; ++k) {
    start += str_cat("  ", walk.sum_in_double ? "double" : walk.types[k], " acc", k, " = init", k, "[0];\n");
    read += str_cat("    const ", walk.types[k], " x", k, " = input", k, "[base + ", walk.offset, "];\n");
    store += str_cat("  out", k, "[i] = (", walk.types[k], ")acc", k, ";\n");
  }
  GeneratedKernel kernel;
  kernel.name = name;
  kernel.source = str_cat(walk.combiner, "extern \"C\" __global__ void ", name, "(", parameters, "long long n) {\n",
                          "  const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;\n",
                          "  if (i >= n) return;\n", "  const long long base = ", walk.base, ";\n", start,
                          "  for (long long r = 0; r < ", walk.count, "ll; ++r) {\n", read, "    ", walk.step, "\n  }\n",
                          store, "}\n");
  return kernel;
}

StatusOr<std::optional<SplitReduce>> generate_split_reduce(const Instruction& reduce, const std::string& name) {
  INSITU_ASSIGN_OR_RETURN(ReduceWalk walk, reduce_walk(reduce, name));
  // Worth it where one thread per output leaves the device idle or reads rows element by
  // element: long rows, few enough outputs. The partials per output: about 64K threads in all,
  // 32 (a warp) to 1024, each folding at least 8 elements.
  constexpr int64_t kThreads = 65536;
  // (bf16 and f16 round at every step: another order would change the result, not only its last bit.)
  if (!walk.inline_step || walk.count < 256 || walk.outputs == 0 || walk.outputs > kThreads ||
      detail::compute_type(walk.types[0]) != walk.types[0])
    return std::optional<SplitReduce>();
  int64_t partials = 1024;
  while (partials > 32 && (partials * walk.outputs > kThreads || partials * 8 > walk.count)) partials /= 2;
  const std::string& type = walk.types[0];
  const std::string accumulator = walk.sum_in_double ? "double" : type;
  SplitReduce split;
  split.partials = partials;
  split.scratch_bytes = walk.outputs * partials * (walk.sum_in_double ? 8 : byte_width(reduce.shape().element_type()));
  split.partial.name = name;
  split.partial.source = str_cat(
      "extern \"C\" __global__ void ", name, "(const ", type, "* __restrict__ input0, ", accumulator,
      "* __restrict__ scratch, long long n) {\n",
      "  const long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;\n",
      "  if (t >= n) return;\n",
      "  const long long i = t / ", partials, "ll, p = t % ", partials, "ll;\n",
      "  const long long base = ", walk.base, ";\n",
      "  long long r = p;\n",
      "  ", accumulator, " acc0 = (", accumulator, ")input0[base + ", walk.offset, "];\n",
      "  for (r = p + ", partials, "ll; r < ", walk.count, "ll; r += ", partials, "ll) {\n",
      "    const ", type, " x0 = input0[base + ", walk.offset, "];\n",
      "    ", walk.step, "\n  }\n",
      "  scratch[t] = acc0;\n}\n");
  split.finish.name = name + "_finish";
  split.finish.source = str_cat(
      "extern \"C\" __global__ void ", split.finish.name, "(const ", type, "* __restrict__ init0, const ", accumulator,
      "* __restrict__ scratch, ", type, "* __restrict__ out0, long long n) {\n",
      "  const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;\n",
      "  if (i >= n) return;\n",
      "  ", accumulator, " acc0 = init0[0];\n",
      "  for (long long p = 0; p < ", partials, "ll; ++p) {\n",
      "    const ", accumulator, " x0 = scratch[i * ", partials, "ll + p];\n",
      "    ", walk.step, "\n  }\n",
      "  out0[i] = (", type, ")acc0;\n}\n");
  return std::optional<SplitReduce>(std::move(split));
}

StatusOr<GeneratedKernel> generate_select_and_scatter_kernel(const Instruction& op, const std::string& name) {
  if (op.opcode() != Opcode::kSelectAndScatter || op.operand_count() != 3 || op.called_computations().size() != 2)
    return refuse(op, "not a select-and-scatter of (operand, source, init_value) with select= and scatter=");
  const Shape& operand = op.operand(0)->shape();
  const Shape& source = op.operand(1)->shape();
  const int64_t rank = operand.rank();
  if (!operand.is_array() || !source.is_array() || !op.shape().is_array() || source.rank() != rank ||
      static_cast<int64_t>(op.window.size()) != rank || op.shape().dimensions() != operand.dimensions() ||
      op.shape().element_type() != source.element_type() || op.operand(2)->shape().rank() != 0 ||
      op.operand(2)->shape().element_type() != source.element_type())
    return refuse(op, "a select-and-scatter whose operand, source, init and result do not fit (the evaluator says why)");
  for (int64_t d = 0; d < rank; ++d) {
    const WindowDimension& w = op.window[d];
    const int64_t padded = operand.dimension(d) + w.padding_low + w.padding_high;
    if (w.size <= 0 || w.stride <= 0 || w.base_dilation != 1 || w.window_dilation != 1 ||
        source.dimension(d) != (padded < w.size ? 0 : (padded - w.size) / w.stride + 1))
      return refuse(op, "a select-and-scatter window that does not fit its source (the evaluator says why)");
  }
  INSITU_ASSIGN_OR_RETURN(std::string type, cuda_type(op, operand.element_type()));
  INSITU_ASSIGN_OR_RETURN(std::string source_type, cuda_type(op, source.element_type()));
  INSITU_ASSIGN_OR_RETURN(GeneratedKernel select,
                          generate_scalar_function(*op.called_computations()[0], op, name + "_select"));
  INSITU_ASSIGN_OR_RETURN(GeneratedKernel scatter,
                          generate_scalar_function(*op.called_computations()[1], op, name + "_scatter"));
  // Output element i gathers what the evaluator scatters to it: over the windows that hold it
  // (source index s in row-major order, the evaluator's order of combining), each window's pick
  // (its first real element kept while select(pick, next) holds, in row-major order, padding
  // skipped) is computed, and where it is i, source[s] is combined into i's value.
  const std::vector<int64_t> strides = strides_of(operand.dimensions());
  const std::vector<int64_t> source_strides = strides_of(source.dimensions());
  std::string code = str_cat("  ", source_type, " acc = init[0];\n");
  std::string indent = "  ", source_linear = "0";
  for (int64_t d = 0; d < rank; ++d) {
    const WindowDimension& w = op.window[d];
    // Window s covers positions s * stride - low .. + size - 1: s from ceil((j + low - size + 1) / stride).
    const std::string j = str_cat("(i / ", strides[d], "ll % ", operand.dimension(d), "ll)");
    code += str_cat(indent, "const long long first", d, " = ", j, " + ", w.padding_low - w.size + 1, "ll;\n", indent,
                    "for (long long s", d, " = first", d, " <= 0 ? 0 : (first", d, " + ", w.stride - 1, "ll) / ", w.stride,
                    "ll; s", d, " < ", source.dimension(d), "ll && s", d, " * ", w.stride, "ll - ", w.padding_low,
                    "ll <= ", j, "; ++s", d, ") {\n");
    indent += "  ";
    source_linear += str_cat(" + s", d, " * ", source_strides[d], "ll");
  }
  int64_t window_count = 1;
  for (const WindowDimension& w : op.window) window_count *= w.size;
  std::string position = "    long long linear = 0;\n";
  int64_t inner = 1;
  std::vector<std::string> lines(static_cast<size_t>(rank));
  for (int64_t d = rank - 1; d >= 0; --d) {
    const WindowDimension& w = op.window[d];
    lines[d] = str_cat("{ const long long p = s", d, " * ", w.stride, "ll + (r / ", inner, "ll % ", w.size, "ll) - ",
                       w.padding_low, "ll; if (p < 0 || p >= ", operand.dimension(d), "ll) continue; linear += p * ",
                       strides[d], "ll; }\n");
    inner *= w.size;
  }
  code += str_cat(indent, "long long picked = -1;\n", indent, type, " best;\n", indent, "for (long long r = 0; r < ",
                  window_count, "ll; ++r) {\n", indent, "  long long linear = 0;\n");
  for (const std::string& line : lines) code += str_cat(indent, "  ", line);
  code += str_cat(indent, "  const ", type, " next = operand[linear];\n", indent, "  if (picked >= 0) {\n", indent,
                  "    bool keep;\n", indent, "    ", name, "_select(best, next, &keep);\n", indent,
                  "    if (keep) continue;\n", indent, "  }\n", indent, "  picked = linear;\n", indent,
                  "  best = next;\n", indent, "}\n", indent, "if (picked == i) { ", source_type, " combined; ", name,
                  "_scatter(acc, source[", source_linear, "], &combined); acc = combined; }\n");
  for (int64_t d = rank; d-- > 0;) {
    indent.resize(indent.size() - 2);
    code += indent + "}\n";
  }
  GeneratedKernel kernel;
  kernel.name = name;
  kernel.source = str_cat(select.source, scatter.source, "extern \"C\" __global__ void ", name, "(const ", type,
                          "* __restrict__ operand, const ", source_type, "* __restrict__ source, const ", source_type,
                          "* __restrict__ init, ", source_type, "* __restrict__ out, long long n) {\n",
                          "  const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;\n",
                          "  if (i >= n) return;\n", code, "  out[i] = acc;\n}\n");
  return kernel;
}

StatusOr<GeneratedKernel> generate_reduce_window_kernel(const Instruction& reduce_window, const std::string& name) {
  if (reduce_window.opcode() != Opcode::kReduceWindow) return refuse(reduce_window, "not a reduce-window");
  if (reduce_window.operand_count() != 2 || !reduce_window.shape().is_array())
    return refuse(reduce_window, "a reduce-window of several inputs is not generated yet");
  const Shape& input = reduce_window.operand(0)->shape();
  const Shape& out = reduce_window.shape();
  const int64_t rank = input.rank();
  if (input.element_type() != out.element_type() ||
      reduce_window.operand(1)->shape().element_type() != out.element_type() || out.rank() != rank ||
      static_cast<int64_t>(reduce_window.window.size()) != rank)
    return refuse(reduce_window, "a reduce-window that changes the element type or the rank is not generated");
  INSITU_ASSIGN_OR_RETURN(std::string type, cuda_type(reduce_window, out.element_type()));
  bool sum_in_double = false;  // the evaluator folds a window in the element type, step by step
  StatusOr<std::string> step = fold_step(reduce_window, type, /*double_sum=*/false, sum_in_double);
  std::string combiner;
  if (!step.ok()) {  // another combiner (a cumulative op's): through a device function of it
    INSITU_ASSIGN_OR_RETURN(GeneratedKernel function, generate_scalar_function(*reduce_window.called_computations().at(0),
                                                                                reduce_window, name + "_combine"));
    combiner = function.source;
    step = str_cat(type, " next; ", name, "_combine(acc0, x0, &next); acc0 = next;");
  }
  // Output element i folds its window in row-major order, skipping padding and the holes of a
  // base dilation, from the init value: the evaluator's order.
  const std::vector<int64_t> input_strides = strides_of(input.dimensions());
  const std::vector<int64_t> out_strides = strides_of(out.dimensions());
  int64_t window_count = 1;
  for (const WindowDimension& w : reduce_window.window) {
    if (w.size <= 0 || w.stride <= 0 || w.base_dilation <= 0 || w.window_dilation <= 0)
      return refuse(reduce_window, "a window dimension without a positive size, stride and dilations");
    window_count *= w.size;
  }
  std::string body = "    long long linear = 0;\n";
  int64_t inner = 1;
  std::vector<std::string> lines(static_cast<size_t>(rank));
  for (int64_t d = rank - 1; d >= 0; --d) {
    const WindowDimension& w = reduce_window.window[d];
    lines[d] = str_cat("    { long long p = (i / ", out_strides[d], "ll % ", out.dimension(d), "ll) * ", w.stride,
                       "ll + (r / ", inner, "ll % ", w.size, "ll) * ", w.window_dilation, "ll - ", w.padding_low, "ll;\n",
                       w.base_dilation > 1 ? str_cat("      if (p % ", w.base_dilation, "ll != 0) continue;\n      p /= ",
                                                     w.base_dilation, "ll;\n")
                                           : "",
                       "      if (p < 0 || p >= ", input.dimension(d), "ll) continue;\n      linear += p * ",
                       input_strides[d], "ll; }\n");
    inner *= w.size;
  }
  for (const std::string& line : lines) body += line;
  GeneratedKernel kernel;
  kernel.name = name;
  kernel.source = str_cat(combiner, "extern \"C\" __global__ void ", name, "(const ", type, "* __restrict__ input, const ",
                          type, "* __restrict__ init, ", type, "* __restrict__ out, long long n) {\n",
                          "  const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;\n",
                          "  if (i >= n) return;\n  ", type, " acc0 = init[0];\n", "  for (long long r = 0; r < ",
                          window_count, "ll; ++r) {\n", body, "    const ", type, " x0 = input[linear];\n    ", *step,
                          "\n  }\n  out[i] = acc0;\n}\n");
  return kernel;
}

StatusOr<GeneratedKernel> generate_pad_kernel(const Instruction& pad, const std::string& name) {
  if (pad.opcode() != Opcode::kPad || pad.operand_count() != 2 || !pad.shape().is_array())
    return refuse(pad, "not a pad of one array");
  const Shape& operand = pad.operand(0)->shape();
  const Shape& out = pad.shape();
  const int64_t rank = operand.rank();
  if (static_cast<int64_t>(pad.padding.size()) != rank || out.rank() != rank ||
      out.element_type() != operand.element_type())
    return refuse(pad, "padding that does not match the operand");
  INSITU_ASSIGN_OR_RETURN(std::string type, cuda_type(pad, out.element_type()));
  // Output element i is operand element q where, in every dimension, i's coordinate minus the
  // low edge is a multiple of interior + 1 (q's coordinate times it) inside the operand;
  // anything else is padding. Negative edges crop, as in the evaluator.
  const std::vector<int64_t> operand_strides = strides_of(operand.dimensions());
  const std::vector<int64_t> out_strides = strides_of(out.dimensions());
  std::string body;
  for (int64_t d = 0; d < rank; ++d) {
    const PaddingDimension& p = pad.padding[d];
    if (p.interior < 0) return refuse(pad, "negative interior padding");
    body += str_cat("  { long long p = (i / ", out_strides[d], "ll % ", out.dimension(d), "ll) - (", p.low, "ll);\n",
                    p.interior > 0 ? str_cat("    if (p % ", p.interior + 1, "ll != 0) inside = false;\n    p /= ",
                                             p.interior + 1, "ll;\n")
                                   : "",
                    "    if (p < 0 || p >= ", operand.dimension(d), "ll) inside = false;\n    at += p * ",
                    operand_strides[d], "ll; }\n");
  }
  GeneratedKernel kernel;
  kernel.name = name;
  kernel.source = str_cat("extern \"C\" __global__ void ", name, "(const ", type, "* __restrict__ operand, const ", type,
                          "* __restrict__ value, ", type, "* __restrict__ out, long long n) {\n",
                          "  const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;\n",
                          "  if (i >= n) return;\n  bool inside = true;\n  long long at = 0;\n", body,
                          "  out[i] = inside ? operand[at] : value[0];\n}\n");
  return kernel;
}

StatusOr<GeneratedKernel> generate_dynamic_update_slice_kernel(const Instruction& update_slice,
                                                               const std::string& name) {
  if (update_slice.opcode() != Opcode::kDynamicUpdateSlice) return refuse(update_slice, "not a dynamic-update-slice");
  const Shape& operand = update_slice.operand(0)->shape();
  const Shape& update = update_slice.operand(1)->shape();
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

StatusOr<GeneratedKernel> generate_data_movement_kernel(const Instruction& op, const std::string& name) {
  const Opcode opcode = op.opcode();
  if (opcode != Opcode::kSlice && opcode != Opcode::kDynamicSlice && opcode != Opcode::kTranspose &&
      opcode != Opcode::kReverse && opcode != Opcode::kConcatenate)
    return refuse(op, "not a data-movement op the generator handles");
  const Shape& out = op.shape();
  if (!out.is_array()) return refuse(op, "a tuple result");
  INSITU_ASSIGN_OR_RETURN(std::string type, cuda_type(op, out.element_type()));
  const std::vector<int64_t>& dims = out.dimensions();
  const std::vector<std::string> coordinates = detail::coordinates_of(dims);
  auto coordinate = [&](int64_t d) { return coordinates[static_cast<size_t>(d)]; };
  std::string params, body;
  // `source`'s element at coordinates given per dimension (C++ expressions).
  auto element = [&](const std::string& pointer, const Shape& source, const std::vector<std::string>& coordinates) {
    const std::vector<int64_t> strides = strides_of(source.dimensions());
    std::string offset = "0";
    for (size_t d = 0; d < coordinates.size(); ++d) offset += str_cat(" + ", coordinates[d], " * ", strides[d], "ll");
    return str_cat(pointer, "[", offset, "]");
  };
  const Shape& first = op.operand(0)->shape();
  const int64_t rank = out.rank();
  std::vector<std::string> at(static_cast<size_t>(rank));
  switch (opcode) {
    case Opcode::kSlice:
      params = str_cat("const ", type, "* __restrict__ p0, ");
      for (int64_t d = 0; d < rank; ++d)
        at[d] = str_cat("(", op.slice[d].start, "ll + ", coordinate(d), " * ", op.slice[d].stride, "ll)");
      body = str_cat("  out[i] = ", element("p0", first, at), ";\n");
      break;
    case Opcode::kDynamicSlice: {
      params = str_cat("const ", type, "* __restrict__ p0, ");
      for (int64_t d = 0; d < rank; ++d) {
        const Instruction& index = *op.operand(1 + d);
        INSITU_ASSIGN_OR_RETURN(std::string index_type, cuda_type(index, index.shape().element_type()));
        params += str_cat("const ", index_type, "* __restrict__ p", 1 + d, ", ");
        // XLA clamps each start index into [0, operand - size].
        at[d] = str_cat("(insitu_clamp((long long)p", 1 + d, "[0], ", first.dimension(d) - dims[d], "ll) + ",
                        coordinate(d), ")");
      }
      body = str_cat("  out[i] = ", element("p0", first, at), ";\n");
      break;
    }
    case Opcode::kTranspose:
      params = str_cat("const ", type, "* __restrict__ p0, ");
      for (int64_t k = 0; k < rank; ++k) at[op.dimensions[k]] = coordinate(k);  // out dim k is operand dim perm[k]
      body = str_cat("  out[i] = ", element("p0", first, at), ";\n");
      break;
    case Opcode::kReverse:
      params = str_cat("const ", type, "* __restrict__ p0, ");
      for (int64_t d = 0; d < rank; ++d) at[d] = coordinate(d);
      for (int64_t d : op.dimensions) at[d] = str_cat("(", dims[d] - 1, "ll - ", coordinate(d), ")");
      body = str_cat("  out[i] = ", element("p0", first, at), ";\n");
      break;
    case Opcode::kConcatenate: {
      if (op.dimensions.size() != 1) return refuse(op, "concatenate needs one dimension");
      const int64_t c = op.dimensions[0];
      int64_t offset = 0;
      for (int64_t k = 0; k < op.operand_count(); ++k) {
        const Shape& part = op.operand(k)->shape();
        params += str_cat("const ", type, "* __restrict__ p", k, ", ");
        for (int64_t d = 0; d < rank; ++d) at[d] = coordinate(d);
        at[c] = str_cat("(", coordinate(c), " - ", offset, "ll)");
        offset += part.dimension(c);
        body += str_cat(k == 0 ? "  if" : "  else if", " (", coordinate(c), " < ", offset, "ll) out[i] = ",
                        element(str_cat("p", k), part, at), ";\n");
      }
      break;
    }
    default: break;
  }
  GeneratedKernel kernel;
  kernel.name = name;
  kernel.source = str_cat("extern \"C\" __global__ void ", name, "(", params, type,
                          "* __restrict__ out, long long n) {\n",
                          "  const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;\n",
                          "  if (i >= n) return;\n", body, "}\n");
  return kernel;
}

GeneratedKernel generate_gemm_kernel(const GemmCall& g, const std::string& name) {
  const std::string type = g.type == PrimitiveType::kF64 ? "double" : "float";
  const std::string a = g.transpose_a ? str_cat("a[s * ", g.stride_a, "ll + p * ", g.lda, "ll + r]")
                                      : str_cat("a[s * ", g.stride_a, "ll + r * ", g.lda, "ll + p]");
  const std::string b = g.transpose_b ? str_cat("b[s * ", g.stride_b, "ll + c * ", g.ldb, "ll + p]")
                                      : str_cat("b[s * ", g.stride_b, "ll + p * ", g.ldb, "ll + c]");
  GeneratedKernel kernel;
  kernel.name = name;
  kernel.source = str_cat("extern \"C\" __global__ void ", name, "(const ", type, "* __restrict__ a, const ", type,
                          "* __restrict__ b, ", type, "* __restrict__ out, long long n) {\n",
                          "  const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;\n",
                          "  if (i >= n) return;\n", "  const long long s = i / ", g.m * g.n, "ll, r = i / ", g.n,
                          "ll % ", g.m, "ll, c = i % ", g.n, "ll;\n  ", type, " sum = 0;\n",
                          "  for (long long p = 0; p < ", g.k, "ll; ++p) sum += ", a, " * ", b, ";\n",
                          "  out[i] = sum;\n}\n");
  return kernel;
}

}  // namespace insitu::cuda
