#include "insitu/cuda/device_plan.h"

#include <algorithm>
#include <optional>
#include <unordered_map>

#include "insitu/cuda/codegen.h"
#include "insitu/cuda/codegen_internal.h"
#include "insitu/support/str.h"

namespace insitu::cuda {
namespace {

using detail::refuse;

// The elements of a kernel's output: of each array of a tuple (a multi-output fusion's, a
// variadic reduce's: one shape's dimensions), or of the array.
int64_t output_elements(const Shape& shape) {
  return shape.is_tuple() ? (shape.tuple_size() > 0 ? shape.tuple_shape(0).element_count() : 0) : shape.element_count();
}

// Where the buffer assignment put each value a step reads or writes, and what a kernel may
// take: the one memory plan (passes/buffer_assignment.h), read, never decided again here.
class Memory {
 public:
  explicit Memory(const BufferAssignment& buffers) : buffers_(buffers) {}

  StatusOr<DeviceSlice> at(const Instruction& instruction, const ShapeIndex& index = {}) const {
    const std::optional<BufferSlice> slice = buffers_.slice_at(&instruction, index);
    if (!slice)
      return internal_error(str_cat("buffer assignment gave %", instruction.name(), shape_index_to_string(index),
                                    " no memory the CUDA device can point at"),
                            instruction.location());
    return DeviceSlice{slice->allocation, slice->offset};
  }
  bool is_view(const Instruction& instruction) const {
    return buffers_.is_view(buffers_.dataflow().value_at(&instruction));
  }
  // The operands' slices (each an array), then the outputs' (the array, or each array of a tuple).
  Status operands(const Instruction& instruction, std::vector<DeviceSlice>& pointers) const {
    for (const Instruction* operand : instruction.operands()) {
      if (!operand->shape().is_array())
        return refuse(instruction, str_cat("operand %", operand->name(), " is not an array: not planned"));
      INSITU_ASSIGN_OR_RETURN(DeviceSlice slice, at(*operand));
      pointers.push_back(slice);
    }
    return ok_status();
  }
  Status outputs(const Instruction& instruction, std::vector<DeviceSlice>& pointers) const {
    const Shape& shape = instruction.shape();
    for (int64_t k = 0; k < (shape.is_tuple() ? shape.tuple_size() : 1); ++k) {
      INSITU_ASSIGN_OR_RETURN(DeviceSlice slice, at(instruction, shape.is_tuple() ? ShapeIndex{k} : ShapeIndex{}));
      pointers.push_back(slice);
    }
    return ok_status();
  }
  // The operands an output of `instruction` is written over (the same memory, start and size),
  // given its pointers (operands, then outputs). Any other overlap of an output with an operand
  // is an error: no kernel here reads an operand that its output partly covers.
  StatusOr<std::vector<int64_t>> written_over(const Instruction& instruction,
                                              const std::vector<DeviceSlice>& pointers) const {
    std::vector<int64_t> written;
    const Shape& shape = instruction.shape();
    const size_t operand_count = static_cast<size_t>(instruction.operand_count());
    for (size_t o = operand_count; o < pointers.size(); ++o) {
      const Shape& out = shape.is_tuple() ? shape.tuple_shape(static_cast<int64_t>(o - operand_count)) : shape;
      for (size_t k = 0; k < operand_count; ++k) {
        const int64_t bytes = instruction.operand(static_cast<int64_t>(k))->shape().byte_size();
        const DeviceSlice& a = pointers[k];
        const DeviceSlice& b = pointers[o];
        if (a.allocation != b.allocation || a.offset + bytes <= b.offset || b.offset + out.byte_size() <= a.offset)
          continue;
        if (a.offset != b.offset || bytes != out.byte_size())
          return internal_error(str_cat("buffer assignment put an output of %", instruction.name(), " over part of operand ",
                                        k, ": no CUDA kernel reads that"),
                                instruction.location());
        if (std::find(written.begin(), written.end(), static_cast<int64_t>(k)) == written.end())
          written.push_back(static_cast<int64_t>(k));
      }
    }
    return written;
  }

 private:
  const BufferAssignment& buffers_;
};

// A custom-call's step: the registered kernel's CUDA body behind a generated wrapper.
Status plan_custom_call(const Instruction& call, const CustomCallTable& table, const Memory& memory,
                        const std::string& name, DeviceStep& step, DevicePlan& plan) {
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
  // The call's aliases must be the kernel's; a pair the kernel updates that the call does not
  // alias starts as a copy of the operand in the output's memory.
  std::vector<int64_t> output_operand(outputs.size(), -1);
  std::vector<bool> aliased(outputs.size(), false);
  for (const auto& [i, o] : grid.input_output_aliases) output_operand[static_cast<size_t>(o)] = i;
  for (const OutputOperandAlias& alias : call.custom_call.output_to_operand_aliasing) {
    const int64_t o = alias.output_index.empty() ? 0 : alias.output_index[0];
    if (!alias.operand_index.empty() || o < 0 || o >= static_cast<int64_t>(outputs.size()) ||
        output_operand[static_cast<size_t>(o)] != alias.operand_number)
      return refuse(call, str_cat("the call aliases output ", o, " to operand ", alias.operand_number,
                                  ", which the kernel does not update in place"));
    aliased[static_cast<size_t>(o)] = true;
  }
  INSITU_RETURN_IF_ERROR(memory.operands(call, step.pointers));
  INSITU_RETURN_IF_ERROR(memory.outputs(call, step.pointers));
  for (size_t o = 0; o < outputs.size(); ++o) {
    const int64_t i = output_operand[o];
    DeviceSlice& out = step.pointers[call.operands().size() + o];
    if (i < 0) continue;
    DeviceSlice& in = step.pointers[static_cast<size_t>(i)];
    if (aliased[o] && !(in == out))
      return internal_error(str_cat("buffer assignment did not put output ", o, " of %", call.name(), " in operand ", i,
                                    ", which the call aliases"),
                            call.location());
    if (!aliased[o]) {
      step.copy_in.push_back({in, out, outputs[o]->byte_size()});
      in = out;  // the kernel reads and writes one buffer
    }
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

// A step whose value is another's memory, or a copy into its own: a view (the same bytes in its
// operand's memory, or the same memory) runs nothing; else the bytes are copied.
Status plan_same_bytes(const Instruction& instruction, const Memory& memory, DeviceStep& step, DevicePlan& plan) {
  INSITU_ASSIGN_OR_RETURN(DeviceSlice from, memory.at(*instruction.operand(0)));
  INSITU_ASSIGN_OR_RETURN(DeviceSlice to, memory.at(instruction));
  if (from == to || memory.is_view(instruction)) return ok_status();
  step.kind = StepKind::kCopy;
  step.pointers = {from, to};
  step.bytes = instruction.shape().byte_size();
  step.counted = instruction.opcode() == Opcode::kCopy;
  plan.copies += step.counted;
  return ok_status();
}

// That the nested computation's `at` leaves are where the buffer assignment put `outer`'s (a
// loop's state, a branch's result: dataflow's must-share links), as the host-driven steps need.
Status check_shared(const Instruction& outer, const Instruction& at, const Memory& memory) {
  Status status;
  outer.shape().for_each_leaf([&](const Shape& leaf, const ShapeIndex& index) {
    if (!status.ok() || !leaf.is_array()) return;
    StatusOr<DeviceSlice> a = memory.at(outer, index), b = memory.at(at, index);
    if (!a.ok()) status = a.status();
    else if (!b.ok()) status = b.status();
    else if (!(*a == *b))
      status = internal_error(str_cat("buffer assignment put %", at.name(), shape_index_to_string(index),
                                      " elsewhere than %", outer.name(), "'s, which it must share"),
                              outer.location());
  });
  return status;
}

// The steps of one computation; kernels go into `plan`'s shared source.
StatusOr<std::vector<DeviceStep>> plan_steps(const Computation& computation, const CustomCallTable& custom_calls,
                                             const Memory& memory, DevicePlan& plan) {
  std::vector<DeviceStep> steps;
  for (const Instruction* instruction : computation.instructions()) {
    DeviceStep step;
    step.instruction = instruction;
    const std::string name = str_cat("k", plan.kernels);
    StatusOr<GeneratedKernel> kernel = GeneratedKernel{};
    auto add_kernel = [&](int64_t threads) {
      step.kind = StepKind::kKernel;
      step.kernel = kernel->name;
      step.threads = threads;
      plan.source += kernel->source;
      ++plan.kernels;
    };
    // The pointers of a kernel that reads its operands and writes its outputs, none over another
    // (`over`: an output may be written over an operand it reads elementwise: step.written_over).
    auto take_pointers = [&](bool over) -> Status {
      INSITU_RETURN_IF_ERROR(memory.operands(*instruction, step.pointers));
      INSITU_RETURN_IF_ERROR(memory.outputs(*instruction, step.pointers));
      INSITU_ASSIGN_OR_RETURN(step.written_over, memory.written_over(*instruction, step.pointers));
      if (!over && !step.written_over.empty())
        return internal_error(str_cat("buffer assignment put the output of %", instruction->name(), " over operand ",
                                      step.written_over[0], ", which its CUDA kernel does not read elementwise"),
                              instruction->location());
      return ok_status();
    };
    switch (instruction->opcode()) {
      case Opcode::kParameter:
      case Opcode::kTuple:
      case Opcode::kGetTupleElement:
      case Opcode::kOptimizationBarrier:  // its operand, unchanged (a scheduling fence only)
        break;
      case Opcode::kConstant: {  // uploaded when the executable is made; copied where it is loop state
        if (!instruction->shape().is_array())
          return unimplemented(str_cat("a tuple constant on the CUDA device: %", instruction->name()),
                               instruction->location());
        INSITU_ASSIGN_OR_RETURN(DeviceSlice to, memory.at(*instruction));
        if (plan.allocations.at(static_cast<size_t>(to.allocation)).kind == AllocationKind::kConstant) {
          plan.constants.emplace_back(instruction, to);
          break;
        }
        step.kind = StepKind::kCopy;
        step.pointers = {DeviceSlice{}, to};
        step.from_constant = instruction;
        step.bytes = instruction->shape().byte_size();
        break;
      }
      case Opcode::kBitcast:  // the same bytes where it is a reshape of the logical order
        if (!is_row_major_reshape(*instruction) && !(instruction->operand(0)->shape() == instruction->shape()))
          return refuse(*instruction, "a bitcast that is not a reshape of the logical row-major order (a transpose, or "
                                      "element types of different widths) moves bytes: not planned");
        break;
      case Opcode::kReshape:  // logical row-major in and out: the same bytes
        INSITU_RETURN_IF_ERROR(plan_same_bytes(*instruction, memory, step, plan));
        break;
      case Opcode::kCopy:  // a layout is metadata: a copy of the bytes, whatever its layouts
        if (!instruction->shape().is_array())
          return refuse(*instruction, "a copy of a tuple is not planned yet");
        INSITU_RETURN_IF_ERROR(plan_same_bytes(*instruction, memory, step, plan));
        break;
      case Opcode::kDot: {
        INSITU_RETURN_IF_ERROR(take_pointers(false));
        StatusOr<GemmCall> call = plan_gemm(*instruction);
        if (!call.ok()) {  // no GEMM form: a kernel summing each output element
          kernel = generate_dot_kernel(*instruction, name);
          if (!kernel.ok()) return call.status();
          add_kernel(instruction->shape().element_count());
          break;
        }
        step.gemm = *call;
        // Runs as a generated kernel (step.kernel) where the device has no GEMM library.
        const GeneratedKernel gemm = generate_gemm_kernel(step.gemm, str_cat("g", plan.gemms++));
        step.kind = StepKind::kGemm;
        step.kernel = gemm.name;
        step.threads = instruction->shape().element_count();
        plan.source += gemm.source;
        break;
      }
      case Opcode::kWhile:
      case Opcode::kConditional: {
        const bool loop = instruction->opcode() == Opcode::kWhile;
        step.kind = loop ? StepKind::kWhile : StepKind::kConditional;
        for (const Computation* called : instruction->called_computations()) {
          INSITU_ASSIGN_OR_RETURN(std::vector<DeviceStep> nested, plan_steps(*called, custom_calls, memory, plan));
          step.nested.push_back(std::move(nested));
          if (!loop || called == instruction->while_body())
            INSITU_RETURN_IF_ERROR(check_shared(*instruction, *called->root(), memory));
        }
        if (loop) {
          INSITU_RETURN_IF_ERROR(check_shared(*instruction, *instruction->while_body()->parameter(0), memory));
          INSITU_RETURN_IF_ERROR(check_shared(*instruction, *instruction->while_condition()->parameter(0), memory));
        }
        INSITU_ASSIGN_OR_RETURN(DeviceSlice read_back, memory.at(loop ? *instruction->while_condition()->root()
                                                                      : *instruction->operand(0)));
        step.pointers = {read_back};
        break;
      }
      case Opcode::kCustomCall:
        INSITU_RETURN_IF_ERROR(plan_custom_call(*instruction, custom_calls, memory, name, step, plan));
        break;
      case Opcode::kFusion:
        INSITU_RETURN_IF_ERROR(take_pointers(true));
        kernel = generate_elementwise_kernel(*instruction, name, step.written_over);
        if (!kernel.ok()) return kernel.status();
        add_kernel(output_elements(instruction->shape()));
        break;
      case Opcode::kReduce: {
        INSITU_RETURN_IF_ERROR(take_pointers(false));
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
      case Opcode::kScatter: {  // in place: the result is operand 0's memory (the kernel's first pointer)
        INSITU_RETURN_IF_ERROR(memory.operands(*instruction, step.pointers));
        INSITU_ASSIGN_OR_RETURN(DeviceSlice result, memory.at(*instruction));
        if (!instruction->shape().is_array() || !(result == step.pointers.at(0)))
          return internal_error(str_cat("buffer assignment did not put %", instruction->name(),
                                        " in its operand 0's memory, which it updates in place"),
                                instruction->location());
        if (instruction->opcode() == Opcode::kDynamicUpdateSlice) {
          kernel = generate_dynamic_update_slice_kernel(*instruction, name);
          if (!kernel.ok()) return kernel.status();
          add_kernel(instruction->operand(1)->shape().element_count());
          break;
        }
        kernel = generate_scatter_kernel(*instruction, name);
        if (!kernel.ok()) return kernel.status();
        int64_t window = 1;  // one thread per window element
        for (int64_t d : instruction->scatter_dimension_numbers.update_window_dims)
          window *= instruction->operand(2)->shape().dimension(d);
        add_kernel(window);
        break;
      }
      case Opcode::kSort: {
        INSITU_RETURN_IF_ERROR(take_pointers(false));
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
        INSITU_RETURN_IF_ERROR(take_pointers(false));
        kernel = generate_topk_kernel(*instruction, name);
        if (!kernel.ok()) return kernel.status();
        const Shape& input = instruction->operand(0)->shape();  // one thread per row
        const int64_t length = input.dimensions().back();
        add_kernel(length == 0 ? 0 : input.element_count() / length);
        break;
      }
      case Opcode::kSelectAndScatter:
        INSITU_RETURN_IF_ERROR(take_pointers(false));
        kernel = generate_select_and_scatter_kernel(*instruction, name);
        if (!kernel.ok()) return kernel.status();
        add_kernel(instruction->shape().element_count());
        break;
      case Opcode::kConvolution: {
        INSITU_RETURN_IF_ERROR(take_pointers(false));
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
        INSITU_RETURN_IF_ERROR(take_pointers(false));
        kernel = generate_pad_kernel(*instruction, name);
        if (!kernel.ok()) return kernel.status();
        add_kernel(instruction->shape().element_count());
        break;
      case Opcode::kReduceWindow:
        INSITU_RETURN_IF_ERROR(take_pointers(false));
        kernel = generate_reduce_window_kernel(*instruction, name);
        if (!kernel.ok()) return kernel.status();
        add_kernel(instruction->shape().element_count());
        break;
      case Opcode::kGather:
        INSITU_RETURN_IF_ERROR(take_pointers(false));
        kernel = generate_gather_kernel(*instruction, name);
        if (!kernel.ok()) return kernel.status();
        add_kernel(instruction->shape().element_count());
        break;
      case Opcode::kSlice:
        if (memory.is_view(*instruction)) break;  // its bytes in its operand's
        [[fallthrough]];
      case Opcode::kDynamicSlice:
      case Opcode::kTranspose:
      case Opcode::kReverse:
      case Opcode::kConcatenate:
        INSITU_RETURN_IF_ERROR(take_pointers(false));
        kernel = generate_data_movement_kernel(*instruction, name);
        if (!kernel.ok()) return kernel.status();
        add_kernel(instruction->shape().element_count());
        break;
      default:
        if (!is_op_kernel_opcode(instruction->opcode()))
          return refuse(*instruction, "no CUDA form for this op yet (the plan covers loop fusions, elementwise ops, "
                                      "broadcasts, iotas, reduces, reduce-windows, select-and-scatters, pads, sorts, "
                                      "topks, convolutions, data movement, dynamic-update-slices, gathers, scatters, "
                                      "dots, copies, views, while loops and conditionals)");
        INSITU_RETURN_IF_ERROR(take_pointers(true));
        kernel = generate_op_kernel(*instruction, name, step.written_over);
        if (!kernel.ok()) return kernel.status();
        add_kernel(instruction->shape().element_count());
    }
    steps.push_back(std::move(step));
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
        for (int64_t k : step.written_over) text += str_cat(", in place over operand ", k);
        if (!step.stage.empty())
          text += str_cat(", then ", step.stage, " ", step.stages.size(), " times, ", step.stage_threads,
                          " threads each");
        if (!step.finish.empty())
          text += str_cat(", then ", step.finish, ", ", step.finish_threads, " threads (", step.scratch_bytes,
                          step.stage.empty() ? " bytes of partials)" : " bytes of scratch)");
        text += "\n";
        break;
      case StepKind::kCopy:
        text += str_cat(name, step.counted ? "device copy, " : step.from_constant ? "constant written, " : "bytes moved, ",
                        step.bytes, " bytes\n");
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

StatusOr<DevicePlan> plan_for_cuda(const Module& module, const BufferAssignment& buffers,
                                   const CustomCallTable* custom_calls) {
  const Computation& entry = *module.entry();
  DevicePlan plan;
  plan.source = kernel_prelude();
  plan.planned_peak_bytes = buffers.peak_memory_bytes();
  // Parameter leaves in the order the caller passes them: depth-first over the parameters.
  std::vector<std::pair<int64_t, ShapeIndex>> argument_leaves;
  for (const Instruction* parameter : entry.parameters())
    parameter->shape().for_each_leaf([&](const Shape&, const ShapeIndex& index) {
      argument_leaves.emplace_back(parameter->parameter_number, index);
    });
  for (const Allocation& allocation : buffers.allocations()) {
    DeviceAllocation& held = plan.allocations.emplace_back();
    held.kind = allocation.kind;
    held.size = allocation.size;
    if (allocation.kind == AllocationKind::kParameter) {
      const auto leaf = std::find(argument_leaves.begin(), argument_leaves.end(),
                                  std::make_pair(allocation.parameter_number, allocation.parameter_index));
      held.argument_leaf = leaf - argument_leaves.begin();
    } else if (allocation.kind == AllocationKind::kDynamicView ||
               (allocation.kind == AllocationKind::kTemp && allocation.per_worker_of != nullptr)) {
      return internal_error("a buffer assignment the CUDA device cannot hold (dynamic views or per-worker arenas: "
                            "assign with BufferAssignmentOptions::for_cuda)",
                            module.location());
    }
  }
  const Memory memory(buffers);
  INSITU_ASSIGN_OR_RETURN(plan.steps, plan_steps(entry, custom_calls != nullptr ? *custom_calls : CustomCallTable::global(),
                                                 memory, plan));
  Status results;
  entry.root()->shape().for_each_leaf([&](const Shape& leaf, const ShapeIndex& index) {
    if (!results.ok()) return;
    if (!leaf.is_array()) {
      results = unimplemented(str_cat("a token in %", entry.root()->name(), " on the CUDA device"), entry.root()->location());
      return;
    }
    StatusOr<DeviceSlice> slice = memory.at(*entry.root(), index);
    if (!slice.ok()) {
      results = slice.status();
    } else if (plan.allocations.at(static_cast<size_t>(slice->allocation)).kind == AllocationKind::kOutput &&
               slice->offset != 0) {  // the caller receives the output's block itself
      results = internal_error(str_cat("result leaf ", shape_index_to_string(index), " is not at the start of its output "
                                       "allocation"),
                               entry.root()->location());
    } else {
      plan.results.push_back(*slice);
    }
  });
  INSITU_RETURN_IF_ERROR(results);
  return plan;
}

StatusOr<DevicePlan> plan_for_cuda(const Module& module, const CustomCallTable* custom_calls) {
  INSITU_ASSIGN_OR_RETURN(BufferAssignment buffers, assign_buffers(module, BufferAssignmentOptions::for_cuda()));
  return plan_for_cuda(module, buffers, custom_calls);
}

std::string describe(const DevicePlan& plan) {
  std::string text;
  describe_steps(plan.steps, "", text);
  return text;
}

}  // namespace insitu::cuda
