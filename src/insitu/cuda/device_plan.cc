#include "insitu/cuda/device_plan.h"

#include <algorithm>
#include <optional>
#include <unordered_map>

#include "insitu/cuda/codegen.h"
#include "insitu/cuda/codegen_internal.h"
#include "insitu/evaluator/apply_util.h"
#include "insitu/passes/bitcast_lowering.h"
#include "insitu/support/str.h"

namespace insitu::cuda {
namespace {

using detail::refuse;
using detail::strides_of;

// The free (neither batch nor contracting) dimensions of a dot operand, when they are
// consecutive: one row-major block of `size` elements per batch and contracted index, starting
// at dimension `first` and ending at `last` (-1: none). `consecutive` is false when another
// dimension splits them.
struct FreeDimensions {
  int64_t first = -1, last = -1, size = 1;
  bool consecutive = true;
};
FreeDimensions free_dimensions(const Shape& operand, const std::vector<int64_t>& batch,
                               const std::vector<int64_t>& contracting) {
  FreeDimensions free;
  for (int64_t d = 0; d < operand.rank(); ++d) {
    if (std::count(batch.begin(), batch.end(), d) || std::count(contracting.begin(), contracting.end(), d)) continue;
    if (free.first < 0) free.first = d;
    else if (d != free.last + 1) free.consecutive = false;
    free.last = d;
    free.size *= operand.dimension(d);
  }
  return free;
}

}  // namespace

namespace {

// A matrix rows x cols inside an operand, element (r, c) at r * row_stride + c * col_stride, as
// a GEMM takes it: row-major with leading dimension `ld`, or stored transposed (cols x rows);
// nullopt where neither dimension has unit stride.
struct StoredMatrix {
  bool transposed = false;
  int64_t ld = 1;
};
std::optional<StoredMatrix> stored_matrix(int64_t rows, int64_t row_stride, int64_t cols, int64_t col_stride) {
  if (cols == 1 || col_stride == 1) return StoredMatrix{false, rows == 1 ? cols : row_stride};
  if (rows == 1 || row_stride == 1) return StoredMatrix{true, col_stride};
  return std::nullopt;
}

}  // namespace

StatusOr<GemmCall> plan_gemm(const Instruction& dot) {
  const Shape& lhs = dot.operand(0)->shape();
  const Shape& rhs = dot.operand(1)->shape();
  const Shape& out = dot.shape();
  if (lhs.element_type() != out.element_type() || rhs.element_type() != out.element_type() ||
      (out.element_type() != PrimitiveType::kF32 && out.element_type() != PrimitiveType::kF64))
    return refuse(dot, "a GEMM of other types than f32 x f32 -> f32 or f64 is not planned yet");
  if (eval::find_own_attribute(dot, "algorithm") != nullptr)  // the evaluator rounds the operands first
    return refuse(dot, "a dot with algorithm= (operands rounded to another precision) is not planned yet");
  const DotDimensionNumbers& numbers = dot.dot_dimension_numbers;
  // Several contracting dimensions side by side in both operands, paired in the same order,
  // are one of their product (a weight gradient's [B, T, D] x [B, T, F] contracting B and T).
  const std::vector<int64_t>& lhs_contracting = numbers.lhs_contracting_dimensions;
  const std::vector<int64_t>& rhs_contracting = numbers.rhs_contracting_dimensions;
  if (lhs_contracting.empty()) return refuse(dot, "a dot contracting no dimension (an outer product) is not planned yet");
  for (size_t i = 1; i < lhs_contracting.size(); ++i)
    if (lhs_contracting[i] != lhs_contracting[i - 1] + 1 || rhs_contracting[i] != rhs_contracting[i - 1] + 1)
      return refuse(dot, "contracting dimensions that are not side by side, in the same order in both operands, are "
                         "not planned yet");
  // Several free dimensions side by side are one, of their product (a dense layer's [B, T, D]
  // x [D, F] is an M = B * T GEMM): row-major, they are one block, and the result lists them
  // in order after the batch dimensions.
  const FreeDimensions lhs_free =
      free_dimensions(lhs, numbers.lhs_batch_dimensions, numbers.lhs_contracting_dimensions);
  const FreeDimensions rhs_free =
      free_dimensions(rhs, numbers.rhs_batch_dimensions, numbers.rhs_contracting_dimensions);
  if (!lhs_free.consecutive || !rhs_free.consecutive)
    return refuse(dot, "an operand whose free dimensions a batch or contracting dimension splits is not planned yet");
  const std::vector<int64_t> lhs_strides = strides_of(lhs.dimensions()), rhs_strides = strides_of(rhs.dimensions());
  const std::vector<int64_t> out_strides = strides_of(out.dimensions());
  const int64_t lhs_k = lhs_contracting.back(), rhs_k = rhs_contracting.back();  // the innermost: its stride
  GemmCall call;
  call.type = out.element_type();
  for (int64_t d : lhs_contracting) call.k *= lhs.dimension(d);
  call.m = lhs_free.size;
  call.n = rhs_free.size;
  // A free block's row stride is its innermost dimension's (its dimensions are side by side).
  auto block_stride = [](const FreeDimensions& free, const std::vector<int64_t>& strides) {
    return free.last < 0 ? int64_t{1} : strides[free.last];
  };
  const std::optional<StoredMatrix> a =
      stored_matrix(call.m, block_stride(lhs_free, lhs_strides), call.k, lhs_strides[lhs_k]);
  const std::optional<StoredMatrix> b =
      stored_matrix(call.k, rhs_strides[rhs_k], call.n, block_stride(rhs_free, rhs_strides));
  if (!a || !b) return refuse(dot, "an operand whose matrix has no dimension of unit stride is not planned yet");
  call.transpose_a = a->transposed;
  call.lda = a->ld;
  call.transpose_b = b->transposed;
  call.ldb = b->ld;
  call.ldc = call.n;  // the result is [batch..., m block, n block], row-major
  // Batch dimensions, in the result's order, folded where each one's strides are the next one's
  // times its extent (in A, B and C alike); the innermost group is the GEMM's batch, the others
  // are calls of their own (GemmCall::outer).
  call.stride_a = call.m * call.k;
  call.stride_b = call.k * call.n;
  call.stride_c = call.m * call.n;
  std::vector<GemmCall::Outer> groups;
  for (size_t i = 0; i < numbers.lhs_batch_dimensions.size(); ++i) {
    const int64_t extent = out.dimension(static_cast<int64_t>(i));
    if (extent == 1) continue;
    const GemmCall::Outer next{extent, lhs_strides[numbers.lhs_batch_dimensions[i]],
                               rhs_strides[numbers.rhs_batch_dimensions[i]], out_strides[i]};
    if (!groups.empty()) {
      GemmCall::Outer& group = groups.back();
      if (group.stride_a == next.stride_a * extent && group.stride_b == next.stride_b * extent &&
          group.stride_c == next.stride_c * extent) {
        group = {group.count * extent, next.stride_a, next.stride_b, next.stride_c};
        continue;
      }
    }
    groups.push_back(next);
  }
  if (!groups.empty()) {
    call.batch = groups.back().count;
    call.stride_a = groups.back().stride_a;
    call.stride_b = groups.back().stride_b;
    call.stride_c = groups.back().stride_c;
    groups.pop_back();
    call.outer = std::move(groups);
  }
  return call;
}

std::vector<GemmOffsets> gemm_offsets(const GemmCall& call) {
  std::vector<GemmOffsets> offsets = {GemmOffsets{}};
  for (const GemmCall::Outer& outer : call.outer) {
    std::vector<GemmOffsets> next;
    for (const GemmOffsets& base : offsets)
      for (int64_t i = 0; i < outer.count; ++i)
        next.push_back({base.a + i * outer.stride_a, base.b + i * outer.stride_b, base.c + i * outer.stride_c});
    offsets = std::move(next);
  }
  return offsets;
}

CublasGemm cublas_gemm(const GemmCall& g) {
  CublasGemm c;
  c.transpose_first = g.transpose_b;  // B stored k x n row-major is B^T column-major: no op
  c.transpose_second = g.transpose_a;
  c.m = g.n;
  c.n = g.m;
  c.k = g.k;
  c.ld_first = g.ldb;
  c.ld_second = g.lda;
  c.ld_out = g.ldc;
  c.stride_first = g.stride_b;
  c.stride_second = g.stride_a;
  c.stride_out = g.stride_c;
  c.batch = g.batch;
  return c;
}

std::optional<CublasGemv> cublas_gemv(const GemmCall& call) {
  const CublasGemm g = cublas_gemm(call);
  if (g.n != 1) return std::nullopt;
  CublasGemv v;
  // op(first) is m x k: stored m x k (no transpose) or k x m (transposed), ld_first apart.
  v.transpose = g.transpose_first;
  v.rows = g.transpose_first ? g.k : g.m;
  v.cols = g.transpose_first ? g.m : g.k;
  v.ld = g.ld_first;
  // op(second) is the k x 1 column: stored as a column (consecutive) or as a row, ld_second apart.
  v.incx = g.transpose_second ? g.ld_second : 1;
  v.stride_matrix = g.stride_first;
  v.stride_x = g.stride_second;
  v.stride_y = g.stride_out;
  v.batch = g.batch;
  return v;
}

namespace {

// The elements of a kernel's output: of each array of a tuple (a multi-output fusion's, a
// variadic reduce's: one shape's dimensions), or of the array.
int64_t output_elements(const Shape& shape) {
  return shape.is_tuple() ? (shape.tuple_size() > 0 ? shape.tuple_shape(0).element_count() : 0) : shape.element_count();
}

// A custom-call's step: the registered kernel's CUDA body behind a generated wrapper.
Status plan_custom_call(const Instruction& call, const CustomCallTable& table, const std::string& name, DeviceStep& step,
                        DevicePlan& plan) {
  const CustomCallTarget* target = table.find(call.custom_call.target);
  if (target == nullptr || !target->grid_layout)
    return refuse(call, str_cat("custom_call_target \"", call.custom_call.target,
                                "\" is not a registered kernel (kernel/registry.h) with a CUDA body"));
  std::vector<const Shape*> operands, outputs;
  for (const Instruction* operand : call.operands()) operands.push_back(&operand->shape());
  const Shape& result = call.shape();
  for (int64_t o = 0; o < (result.is_tuple() ? result.tuple_size() : 1); ++o)
    outputs.push_back(result.is_tuple() ? &result.tuple_shape(o) : &result);
  INSITU_ASSIGN_OR_RETURN(KernelGridLayout grid, target->grid_layout(call, operands, outputs));
  // The call's aliases must be the kernel's (a pair the call does not alias is copied in).
  step.output_operand.assign(outputs.size(), -1);
  step.copy_in.assign(outputs.size(), false);
  for (const auto& [i, o] : grid.input_output_aliases) {
    step.output_operand[static_cast<size_t>(o)] = i;
    step.copy_in[static_cast<size_t>(o)] = true;
  }
  for (const OutputOperandAlias& alias : call.custom_call.output_to_operand_aliasing) {
    const int64_t o = alias.output_index.empty() ? 0 : alias.output_index[0];
    if (!alias.operand_index.empty() || o < 0 || o >= static_cast<int64_t>(outputs.size()) ||
        step.output_operand[static_cast<size_t>(o)] != alias.operand_number)
      return refuse(call, str_cat("the call aliases output ", o, " to operand ", alias.operand_number,
                                  ", which the kernel does not update in place"));
    step.copy_in[static_cast<size_t>(o)] = false;
  }
  INSITU_ASSIGN_OR_RETURN(CustomKernelLaunch launch, generate_custom_kernel(call, grid, name));
  if (std::find(plan.custom_bodies.begin(), plan.custom_bodies.end(), grid.cuda_function) == plan.custom_bodies.end()) {
    plan.custom_bodies.push_back(grid.cuda_function);
    plan.source += grid.cuda_source;
    if (!grid.cuda_source.empty() && grid.cuda_source.back() != '\n') plan.source += "\n";
  }
  step.kind = StepKind::kKernel;
  step.kernel = launch.kernel.name;
  step.threads = launch.threads;
  step.grid_table = std::move(launch.table);
  plan.source += launch.kernel.source;
  ++plan.kernels;
  return ok_status();
}

// The entry's elementwise kernels that may write their output over an operand, by instruction:
// an output the module aliases to a parameter (input_output_alias: the caller donates it)
// whose producer is a single-output fusion or elementwise op that reads that parameter, of the
// output's dimensions and byte size, at each element's own index, and is its only reader. Then
// no copy and no new block: the donated memory is the result, as on the CPU.
std::unordered_map<const Instruction*, int64_t> entry_writes_in_place(const Computation& entry) {
  std::unordered_map<const Instruction*, int64_t> written;
  if (entry.parent() == nullptr) return written;
  const Instruction* root = entry.root();
  for (const InputOutputAlias& alias : entry.parent()->config().input_output_alias) {
    if (!alias.parameter_index.empty() || alias.output_index.size() > 1) continue;
    const Instruction* producer = root;
    if (root->shape().is_tuple()) {
      if (root->opcode() != Opcode::kTuple || alias.output_index.size() != 1) continue;
      producer = root->operand(alias.output_index[0]);
    } else if (!alias.output_index.empty()) {
      continue;
    }
    const Instruction* parameter = entry.parameter(alias.parameter_number);
    const Shape& out = producer->shape();
    if (parameter == nullptr || !out.is_array() || parameter->users().size() != 1 || parameter->users()[0] != producer)
      continue;
    if (producer->opcode() != Opcode::kFusion && !is_op_kernel_opcode(producer->opcode())) continue;
    if (producer->opcode() == Opcode::kFusion) {
      const Computation* fused = producer->to_apply();
      if (fused == nullptr || fused->root()->shape().is_tuple()) continue;
    }
    const Shape& read = parameter->shape();
    if (!read.is_array() || read.dimensions() != out.dimensions() || read.byte_size() != out.byte_size()) continue;
    for (int64_t k = 0; k < producer->operand_count(); ++k)
      if (producer->operand(k) == parameter) written[producer] = k;
  }
  return written;
}

// The steps of one computation; kernels go into `plan`'s shared source. `in_place`: the
// entry's (entry_writes_in_place), else null.
StatusOr<std::vector<DeviceStep>> plan_steps(const Computation& computation, const CustomCallTable& custom_calls,
                                             DevicePlan& plan,
                                             const std::unordered_map<const Instruction*, int64_t>* in_place = nullptr) {
  std::vector<DeviceStep> steps;
  for (const Instruction* instruction : computation.instructions()) {
    DeviceStep step;
    step.instruction = instruction;
    const std::string name = str_cat("k", plan.kernels);
    auto written_operand = [&](const Instruction* producer) -> int64_t {
      if (in_place == nullptr) return -1;
      auto found = in_place->find(producer);
      return found == in_place->end() ? -1 : found->second;
    };
    StatusOr<GeneratedKernel> kernel = GeneratedKernel{};
    auto add_kernel = [&](int64_t threads) {
      step.kind = StepKind::kKernel;
      step.kernel = kernel->name;
      step.threads = threads;
      plan.source += kernel->source;
      ++plan.kernels;
    };
    switch (instruction->opcode()) {
      case Opcode::kParameter:
      case Opcode::kConstant:  // uploaded when the executable is made
      case Opcode::kTuple:
      case Opcode::kGetTupleElement:
        break;
      case Opcode::kReshape:  // logical row-major in and out: the same bytes
      case Opcode::kOptimizationBarrier:  // its operand, unchanged (a scheduling fence only)
        break;
      case Opcode::kBitcast:  // the same bytes where it is a reshape of the logical order
        if (!is_row_major_reshape(*instruction) && !(instruction->operand(0)->shape() == instruction->shape()))
          return refuse(*instruction, "a bitcast that is not a reshape of the logical row-major order (a transpose, or "
                                      "element types of different widths) moves bytes: not planned");
        break;
      case Opcode::kCopy:  // a layout is metadata: a copy of the bytes, whatever its layouts
        step.kind = StepKind::kCopy;
        ++plan.copies;
        break;
      case Opcode::kDot: {
        StatusOr<GemmCall> call = plan_gemm(*instruction);
        if (!call.ok()) {  // no GEMM form: a kernel summing each output element
          kernel = generate_dot_kernel(*instruction, name);
          if (!kernel.ok()) return call.status();
          add_kernel(instruction->shape().element_count());
          break;
        }
        step.gemm = *call;
        // Runs as a generated kernel (step.kernel) until cuBLAS is wired in.
        const GeneratedKernel gemm = generate_gemm_kernel(step.gemm, str_cat("g", plan.gemms++));
        step.kind = StepKind::kGemm;
        step.kernel = gemm.name;
        step.threads = instruction->shape().element_count();
        plan.source += gemm.source;
        break;
      }
      case Opcode::kWhile:
      case Opcode::kConditional: {
        step.kind = instruction->opcode() == Opcode::kWhile ? StepKind::kWhile : StepKind::kConditional;
        for (const Computation* called : instruction->called_computations()) {
          INSITU_ASSIGN_OR_RETURN(std::vector<DeviceStep> nested, plan_steps(*called, custom_calls, plan));
          step.nested.push_back(std::move(nested));
        }
        break;
      }
      case Opcode::kCustomCall:
        INSITU_RETURN_IF_ERROR(plan_custom_call(*instruction, custom_calls, name, step, plan));
        break;
      case Opcode::kFusion:
        step.write_over = written_operand(instruction);
        kernel = generate_elementwise_kernel(*instruction, name, step.write_over);
        if (!kernel.ok()) return kernel.status();
        add_kernel(output_elements(instruction->shape()));
        break;
      case Opcode::kReduce: {
        INSITU_ASSIGN_OR_RETURN(std::optional<SplitReduce> split, generate_split_reduce(*instruction, name));
        if (split) {  // long rows: partials in scratch, then folded
          kernel = split->partial;
          add_kernel(output_elements(instruction->shape()) * split->partials);
          plan.source += split->finish.source;
          step.finish = split->finish.name;
          step.finish_threads = output_elements(instruction->shape());
          step.scratch_bytes = split->scratch_bytes;
          break;
        }
        kernel = generate_reduce_kernel(*instruction, name);
        if (!kernel.ok()) return kernel.status();
        add_kernel(output_elements(instruction->shape()));
        break;
      }
      case Opcode::kDynamicUpdateSlice:
        kernel = generate_dynamic_update_slice_kernel(*instruction, name);
        if (!kernel.ok()) return kernel.status();
        add_kernel(instruction->operand(1)->shape().element_count());
        break;
      case Opcode::kSort: {
        INSITU_ASSIGN_OR_RETURN(std::optional<StagedSort> staged, generate_staged_sort(*instruction, name));
        if (staged) {  // long rows: a network of compare-exchange stages over a permutation
          kernel = staged->setup;
          add_kernel(staged->rows * staged->padded);
          plan.source += staged->stage.source + staged->finish.source;
          step.stage = staged->stage.name;
          step.stage_threads = staged->rows * staged->padded / 2;
          step.stages = staged->stages;
          step.finish = staged->finish.name;
          step.finish_threads = staged->rows * staged->length;
          step.scratch_bytes = staged->scratch_bytes;
          break;
        }
        kernel = generate_sort_kernel(*instruction, name);
        if (!kernel.ok()) return kernel.status();
        const Shape& keys = instruction->operand(0)->shape();  // one thread per row
        const int64_t length = keys.dimension(instruction->dimensions.at(0));
        add_kernel(length == 0 ? 0 : keys.element_count() / length);
        break;
      }
      case Opcode::kTopk: {
        kernel = generate_topk_kernel(*instruction, name);
        if (!kernel.ok()) return kernel.status();
        const Shape& input = instruction->operand(0)->shape();  // one thread per row
        const int64_t length = input.dimensions().back();
        add_kernel(length == 0 ? 0 : input.element_count() / length);
        break;
      }
      case Opcode::kSelectAndScatter:
        kernel = generate_select_and_scatter_kernel(*instruction, name);
        if (!kernel.ok()) return kernel.status();
        add_kernel(instruction->shape().element_count());
        break;
      case Opcode::kConvolution: {
        INSITU_ASSIGN_OR_RETURN(std::optional<ConvolutionGemm> as_gemm, generate_convolution_gemm(*instruction, name));
        if (as_gemm) {  // the input's patches and the kernel packed into scratch, then one GEMM
          step.kind = StepKind::kGemm;
          step.gemm = as_gemm->gemm;
          step.packs = {{as_gemm->patches.name, as_gemm->gemm.m * as_gemm->gemm.k, as_gemm->patch_bytes},
                        {as_gemm->weights.name, as_gemm->gemm.k * as_gemm->gemm.n, as_gemm->weight_bytes}};
          const GeneratedKernel gemm = generate_gemm_kernel(step.gemm, str_cat("g", plan.gemms++));
          step.kernel = gemm.name;
          step.threads = instruction->shape().element_count();
          plan.source += as_gemm->patches.source + as_gemm->weights.source + gemm.source;
          plan.kernels += 2;
          if (!as_gemm->border.name.empty()) {  // the outputs whose window touches padding, again
            step.finish = as_gemm->border.name;
            step.finish_threads = instruction->shape().element_count();
            plan.source += as_gemm->border.source;
            ++plan.kernels;
          }
          break;
        }
        kernel = generate_convolution_kernel(*instruction, name);
        if (!kernel.ok()) return kernel.status();
        add_kernel(instruction->shape().element_count());
        break;
      }
      case Opcode::kPad:
        kernel = generate_pad_kernel(*instruction, name);
        if (!kernel.ok()) return kernel.status();
        add_kernel(instruction->shape().element_count());
        break;
      case Opcode::kReduceWindow:
        kernel = generate_reduce_window_kernel(*instruction, name);
        if (!kernel.ok()) return kernel.status();
        add_kernel(instruction->shape().element_count());
        break;
      case Opcode::kGather:
        kernel = generate_gather_kernel(*instruction, name);
        if (!kernel.ok()) return kernel.status();
        add_kernel(instruction->shape().element_count());
        break;
      case Opcode::kScatter: {
        kernel = generate_scatter_kernel(*instruction, name);
        if (!kernel.ok()) return kernel.status();
        int64_t window = 1;  // one thread per window element
        for (int64_t d : instruction->scatter_dimension_numbers.update_window_dims)
          window *= instruction->operand(2)->shape().dimension(d);
        add_kernel(window);
        break;
      }
      case Opcode::kSlice:
      case Opcode::kDynamicSlice:
      case Opcode::kTranspose:
      case Opcode::kReverse:
      case Opcode::kConcatenate:
        kernel = generate_data_movement_kernel(*instruction, name);
        if (!kernel.ok()) return kernel.status();
        add_kernel(instruction->shape().element_count());
        break;
      default:
        step.write_over = written_operand(instruction);
        kernel = generate_op_kernel(*instruction, name, step.write_over);
        if (!kernel.ok() && is_op_kernel_opcode(instruction->opcode())) return kernel.status();  // why, for this op
        if (!kernel.ok())
          return refuse(*instruction, "no CUDA form for this op yet (the plan covers loop fusions, elementwise ops, "
                                      "broadcasts, iotas, reduces, reduce-windows, select-and-scatters, pads, sorts, topks, convolutions, "
                                      "data movement, "
                                      "dynamic-update-slices, "
                                      "gathers, scatters, "
                                      "dots, "
                                      "copies, "
                                      "views, while loops and conditionals)");
        add_kernel(instruction->shape().element_count());
    }
    steps.push_back(std::move(step));
  }
  std::unordered_map<const Instruction*, size_t> position;
  for (size_t s = 0; s < steps.size(); ++s) position.emplace(steps[s].instruction, s);
  for (size_t s = 0; s < steps.size(); ++s) {
    const Instruction* value = steps[s].instruction;
    if (value == computation.root()) continue;
    size_t last = s;
    for (const Instruction* user : value->users())
      if (auto found = position.find(user); found != position.end()) last = std::max(last, found->second);
    steps[last].last_read.push_back(value);
  }
  return steps;
}

void describe_steps(const std::vector<DeviceStep>& steps, const std::string& indent, std::string& text) {
  for (const DeviceStep& step : steps) {
    const std::string name = str_cat(indent, "%", step.instruction->name(), ": ");
    switch (step.kind) {
      case StepKind::kNone: break;
      case StepKind::kKernel:
        text += str_cat(name, "kernel ", step.kernel, ", ", step.threads, " threads");
        if (step.write_over >= 0) text += str_cat(", in place over operand ", step.write_over);
        if (!step.stage.empty())
          text += str_cat(", then ", step.stage, " ", step.stages.size(), " times, ", step.stage_threads,
                          " threads each");
        if (!step.finish.empty())
          text += str_cat(", then ", step.finish, ", ", step.finish_threads, " threads (", step.scratch_bytes,
                          step.stage.empty() ? " bytes of partials)" : " bytes of scratch)");
        text += "\n";
        break;
      case StepKind::kCopy:
        text += str_cat(name, "device copy, ", step.instruction->shape().byte_size(), " bytes\n");
        break;
      case StepKind::kGemm: {
        const GemmCall& g = step.gemm;
        const size_t calls = gemm_offsets(g).size();
        text += str_cat(name, "gemm ", primitive_type_name(g.type), " batch ", g.batch, " m ", g.m, " n ", g.n, " k ",
                        g.k, g.transpose_a ? " A^T" : "", g.transpose_b ? " B^T" : "",
                        calls > 1 ? str_cat(", ", calls, " calls") : "");
        for (const DeviceStep::Pack& pack : step.packs)
          text += str_cat(pack.kernel == step.packs.front().kernel ? ", after " : " and ", pack.kernel, " (",
                          pack.threads, " threads, ", pack.bytes, " bytes)");
        if (!step.finish.empty()) text += str_cat(", then ", step.finish, " (", step.finish_threads, " threads)");
        text += "\n";
        break;
      }
      case StepKind::kWhile:
      case StepKind::kConditional: {
        const bool loop = step.kind == StepKind::kWhile;
        text += str_cat(name, loop ? "while, driven by the host (reads the condition's pred back)\n"
                                   : "conditional, driven by the host (reads the branch index back)\n");
        for (size_t k = 0; k < step.nested.size(); ++k) {
          text += str_cat(indent, "  ", loop ? (k == 0 ? "condition" : "body") : str_cat("branch ", k), ":\n");
          describe_steps(step.nested[k], indent + "    ", text);
        }
        break;
      }
    }
  }
}

}  // namespace

StatusOr<DevicePlan> plan_for_cuda(const Computation& entry, const CustomCallTable* custom_calls) {
  DevicePlan plan;
  plan.source = kernel_prelude();
  const std::unordered_map<const Instruction*, int64_t> in_place = entry_writes_in_place(entry);
  INSITU_ASSIGN_OR_RETURN(plan.steps, plan_steps(entry, custom_calls != nullptr ? *custom_calls : CustomCallTable::global(),
                                                 plan, &in_place));
  return plan;
}

std::string describe(const DevicePlan& plan) {
  std::string text;
  describe_steps(plan.steps, "", text);
  return text;
}

}  // namespace insitu::cuda
