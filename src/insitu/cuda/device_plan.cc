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
  const KernelGridPart* grid_part = target ? target->parts.get<KernelGridPart>() : nullptr;
  if (grid_part == nullptr)
    return refuse(call, str_cat("custom_call_target \"", call.custom_call.target,
                                "\" is not a registered kernel (kernel/registry.h) with a CUDA body"));
  std::vector<const Shape*> operands, outputs;
  for (const Instruction* operand : call.operands()) operands.push_back(&operand->shape());
  const Shape& result = call.shape();
  for (int64_t o = 0; o < (result.is_tuple() ? result.tuple_size() : 1); ++o)
    outputs.push_back(result.is_tuple() ? &result.tuple_shape(o) : &result);
  INSITU_ASSIGN_OR_RETURN(KernelGridLayout grid, grid_part->plan(call, operands, outputs));
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

StatusOr<std::vector<DeviceStep>> plan_steps(const Computation& computation, const CustomCallTable& custom_calls,
                                             const Memory& memory, DevicePlan& plan);

// One instruction's step, as its op family's planner makes it (planner_of: the device's
// kernel table, keyed like the CPU's kernel_table.cc by opcode.def's fourth column).
struct StepPlanner {
  const Instruction& instruction;
  const CustomCallTable& custom_calls;
  const Memory& memory;
  DevicePlan& plan;
  DeviceStep& step;
  std::string name;  // the next generated kernel's

  Opcode opcode() const { return instruction.opcode(); }
  // `kernel` (generated) as the step, over `threads` threads.
  Status add(const StatusOr<GeneratedKernel>& kernel, int64_t threads) {
    if (!kernel.ok()) return kernel.status();
    step.kind = StepKind::kKernel;
    step.kernel = kernel->name;
    step.threads = threads;
    plan.source += kernel->source;
    ++plan.kernels;
    return ok_status();
  }
  // The pointers of a kernel that reads its operands and writes its outputs, none over another
  // (`over`: an output may be written over an operand it reads elementwise: step.written_over).
  Status take_pointers(bool over) {
    INSITU_RETURN_IF_ERROR(memory.operands(instruction, step.pointers));
    INSITU_RETURN_IF_ERROR(memory.outputs(instruction, step.pointers));
    INSITU_ASSIGN_OR_RETURN(step.written_over, memory.written_over(instruction, step.pointers));
    if (!over && !step.written_over.empty())
      return internal_error(str_cat("buffer assignment put the output of %", instruction.name(), " over operand ",
                                    step.written_over[0], ", which its CUDA kernel does not read elementwise"),
                            instruction.location());
    return ok_status();
  }
  int64_t elements() const { return instruction.shape().element_count(); }
};

// kForward: parameters, tuples and their elements, bitcasts that keep the bytes, barriers.
Status plan_forward(StepPlanner& p) {
  if (p.opcode() == Opcode::kBitcast && !is_row_major_reshape(p.instruction) &&
      !(p.instruction.operand(0)->shape() == p.instruction.shape()))
    return refuse(p.instruction, "a bitcast that is not a reshape of the logical row-major order (a transpose, or "
                                 "element types of different widths) moves bytes: not planned");
  return ok_status();
}

// kConstant: uploaded when the executable is made; copied in where it is loop state.
Status plan_constant(StepPlanner& p) {
  if (!p.instruction.shape().is_array())
    return unimplemented(str_cat("a tuple constant on the CUDA device: %", p.instruction.name()), p.instruction.location());
  INSITU_ASSIGN_OR_RETURN(DeviceSlice to, p.memory.at(p.instruction));
  if (p.plan.allocations.at(static_cast<size_t>(to.allocation)).kind == AllocationKind::kConstant) {
    p.plan.constants.emplace_back(&p.instruction, to);
    return ok_status();
  }
  p.step.kind = StepKind::kCopy;
  p.step.pointers = {DeviceSlice{}, to};
  p.step.from_constant = &p.instruction;
  p.step.bytes = p.instruction.shape().byte_size();
  return ok_status();
}

// kCopy: a layout is metadata, so a copy of the bytes, whatever its layouts.
Status plan_copy(StepPlanner& p) {
  if (!p.instruction.shape().is_array()) return refuse(p.instruction, "a copy of a tuple is not planned yet");
  return plan_same_bytes(p.instruction, p.memory, p.step, p.plan);
}

// kWhile and kConditional: each called computation planned in turn, driven by the host.
Status plan_control_flow(StepPlanner& p) {
  const Instruction& instruction = p.instruction;
  const bool loop = p.opcode() == Opcode::kWhile;
  p.step.kind = loop ? StepKind::kWhile : StepKind::kConditional;
  for (const Computation* called : instruction.called_computations()) {
    INSITU_ASSIGN_OR_RETURN(std::vector<DeviceStep> nested, plan_steps(*called, p.custom_calls, p.memory, p.plan));
    p.step.nested.push_back(std::move(nested));
    if (!loop || called == instruction.while_body())
      INSITU_RETURN_IF_ERROR(check_shared(instruction, *called->root(), p.memory));
  }
  if (loop) {
    INSITU_RETURN_IF_ERROR(check_shared(instruction, *instruction.while_body()->parameter(0), p.memory));
    INSITU_RETURN_IF_ERROR(check_shared(instruction, *instruction.while_condition()->parameter(0), p.memory));
  }
  INSITU_ASSIGN_OR_RETURN(DeviceSlice read_back,
                          p.memory.at(loop ? *instruction.while_condition()->root() : *instruction.operand(0)));
  p.step.pointers = {read_back};
  return ok_status();
}

Status plan_custom(StepPlanner& p) {
  return plan_custom_call(p.instruction, p.custom_calls, p.memory, p.name, p.step, p.plan);
}

// kElementwise: one thread per element, its output possibly over an operand it reads there.
Status plan_elementwise(StepPlanner& p) {
  INSITU_RETURN_IF_ERROR(p.take_pointers(true));
  return p.add(generate_op_kernel(p.instruction, p.name, p.step.written_over), p.elements());
}

// kFusion: a loop fusion, elementwise over its output (the others were inlined for the device).
Status plan_fusion(StepPlanner& p) {
  INSITU_RETURN_IF_ERROR(p.take_pointers(true));
  return p.add(generate_elementwise_kernel(p.instruction, p.name, p.step.written_over),
               output_elements(p.instruction.shape()));
}

// kDataMovement: reshapes keep the bytes, a slice may be a view; broadcasts and iotas are
// elementwise kernels; the rest move data a thread per output element.
Status plan_data_movement(StepPlanner& p) {
  switch (p.opcode()) {
    case Opcode::kReshape: return plan_same_bytes(p.instruction, p.memory, p.step, p.plan);
    case Opcode::kBroadcast:
    case Opcode::kIota: return plan_elementwise(p);
    case Opcode::kPad:
      INSITU_RETURN_IF_ERROR(p.take_pointers(false));
      return p.add(generate_pad_kernel(p.instruction, p.name), p.elements());
    case Opcode::kSlice:
      if (p.memory.is_view(p.instruction)) return ok_status();  // its bytes in its operand's
      [[fallthrough]];
    default:
      INSITU_RETURN_IF_ERROR(p.take_pointers(false));
      return p.add(generate_data_movement_kernel(p.instruction, p.name), p.elements());
  }
}

// An in-place update (dynamic-update-slice, scatter): the result is operand 0's memory, the
// kernel's first pointer; the kernel takes the operands only.
Status take_in_place_pointers(StepPlanner& p) {
  INSITU_RETURN_IF_ERROR(p.memory.operands(p.instruction, p.step.pointers));
  INSITU_ASSIGN_OR_RETURN(DeviceSlice result, p.memory.at(p.instruction));
  if (!p.instruction.shape().is_array() || !(result == p.step.pointers.at(0)))
    return internal_error(str_cat("buffer assignment did not put %", p.instruction.name(),
                                  " in its operand 0's memory, which it updates in place"),
                          p.instruction.location());
  return ok_status();
}

// kDynamicSlice: a dynamic-slice moves its window; a dynamic-update-slice writes its update in
// place, a thread per update element.
Status plan_dynamic_slice(StepPlanner& p) {
  if (p.opcode() == Opcode::kDynamicSlice) {
    INSITU_RETURN_IF_ERROR(p.take_pointers(false));
    return p.add(generate_data_movement_kernel(p.instruction, p.name), p.elements());
  }
  INSITU_RETURN_IF_ERROR(take_in_place_pointers(p));
  return p.add(generate_dynamic_update_slice_kernel(p.instruction, p.name),
               p.instruction.operand(1)->shape().element_count());
}

// kScatter: in place, a thread per update window element.
Status plan_scatter(StepPlanner& p) {
  INSITU_RETURN_IF_ERROR(take_in_place_pointers(p));
  int64_t window = 1;
  for (int64_t d : p.instruction.scatter_dimension_numbers.update_window_dims)
    window *= p.instruction.operand(2)->shape().dimension(d);
  return p.add(generate_scatter_kernel(p.instruction, p.name), window);
}

// kDot: a GEMM where the dot maps to one (cuBLAS, else the generated GEMM kernel), else a
// kernel summing each output element.
Status plan_dot(StepPlanner& p) {
  INSITU_RETURN_IF_ERROR(p.take_pointers(false));
  StatusOr<GemmCall> call = plan_gemm(p.instruction);
  if (!call.ok()) {
    StatusOr<GeneratedKernel> kernel = generate_dot_kernel(p.instruction, p.name);
    if (!kernel.ok()) return call.status();
    return p.add(kernel, p.elements());
  }
  p.step.gemm = *call;
  const GeneratedKernel gemm = generate_gemm_kernel(p.step.gemm, str_cat("g", p.plan.gemms++));
  p.step.kind = StepKind::kGemm;
  p.step.kernel = gemm.name;
  p.step.threads = p.elements();
  p.plan.source += gemm.source;
  return ok_status();
}

// kReduce: a thread per output element, or long rows split into partials folded after.
Status plan_reduce(StepPlanner& p) {
  INSITU_RETURN_IF_ERROR(p.take_pointers(false));
  const int64_t outputs = output_elements(p.instruction.shape());
  INSITU_ASSIGN_OR_RETURN(std::optional<SplitReduce> split, generate_split_reduce(p.instruction, p.name));
  if (!split) return p.add(generate_reduce_kernel(p.instruction, p.name), outputs);
  INSITU_RETURN_IF_ERROR(p.add(split->partial, outputs * split->partials));
  p.plan.source += split->finish.source;
  p.step.finish = split->finish.name;
  p.step.finish_threads = outputs;
  p.step.scratch_bytes = split->scratch_bytes;
  return ok_status();
}

Status plan_reduce_window(StepPlanner& p) {
  INSITU_RETURN_IF_ERROR(p.take_pointers(false));
  return p.add(generate_reduce_window_kernel(p.instruction, p.name), p.elements());
}

Status plan_select_and_scatter(StepPlanner& p) {
  INSITU_RETURN_IF_ERROR(p.take_pointers(false));
  return p.add(generate_select_and_scatter_kernel(p.instruction, p.name), p.elements());
}

Status plan_gather(StepPlanner& p) {
  INSITU_RETURN_IF_ERROR(p.take_pointers(false));
  return p.add(generate_gather_kernel(p.instruction, p.name), p.elements());
}

// kSort: a thread per row, or long rows through a network of compare-exchange stages over a
// permutation in scratch.
Status plan_sort(StepPlanner& p) {
  INSITU_RETURN_IF_ERROR(p.take_pointers(false));
  INSITU_ASSIGN_OR_RETURN(std::optional<StagedSort> staged, generate_staged_sort(p.instruction, p.name));
  if (!staged) {
    const Shape& keys = p.instruction.operand(0)->shape();
    const int64_t length = keys.dimension(p.instruction.dimensions.at(0));
    return p.add(generate_sort_kernel(p.instruction, p.name), length == 0 ? 0 : keys.element_count() / length);
  }
  INSITU_RETURN_IF_ERROR(p.add(staged->setup, staged->rows * staged->padded));
  p.plan.source += staged->stage.source + staged->finish.source;
  p.step.stage = staged->stage.name;
  p.step.stage_threads = staged->rows * staged->padded / 2;
  p.step.stages = staged->stages;
  p.step.finish = staged->finish.name;
  p.step.finish_threads = staged->rows * staged->length;
  p.step.scratch_bytes = staged->scratch_bytes;
  return ok_status();
}

// kTopk: a thread per row.
Status plan_topk(StepPlanner& p) {
  INSITU_RETURN_IF_ERROR(p.take_pointers(false));
  const Shape& input = p.instruction.operand(0)->shape();
  const int64_t length = input.dimensions().back();
  return p.add(generate_topk_kernel(p.instruction, p.name), length == 0 ? 0 : input.element_count() / length);
}

// kConvolution: the input's patches and the kernel packed into scratch, then one GEMM (the
// outputs whose window touches padding computed again after it), else a direct kernel.
Status plan_convolution(StepPlanner& p) {
  INSITU_RETURN_IF_ERROR(p.take_pointers(false));
  INSITU_ASSIGN_OR_RETURN(std::optional<ConvolutionGemm> as_gemm, generate_convolution_gemm(p.instruction, p.name));
  if (!as_gemm) return p.add(generate_convolution_kernel(p.instruction, p.name), p.elements());
  DeviceStep& step = p.step;
  step.kind = StepKind::kGemm;
  step.gemm = as_gemm->gemm;
  step.packs = {{as_gemm->patches.name, as_gemm->gemm.m * as_gemm->gemm.k, as_gemm->patch_bytes},
                {as_gemm->weights.name, as_gemm->gemm.k * as_gemm->gemm.n, as_gemm->weight_bytes}};
  const GeneratedKernel gemm = generate_gemm_kernel(step.gemm, str_cat("g", p.plan.gemms++));
  step.kernel = gemm.name;
  step.threads = p.elements();
  p.plan.source += as_gemm->patches.source + as_gemm->weights.source + gemm.source;
  p.plan.kernels += 2;
  if (!as_gemm->border.name.empty()) {
    step.finish = as_gemm->border.name;
    step.finish_threads = p.elements();
    p.plan.source += as_gemm->border.source;
    ++p.plan.kernels;
  }
  return ok_status();
}

using FamilyPlanner = Status (*)(StepPlanner&);

// The device's kernel table: a planner per op family (opcode.def's fourth column); null
// where the device has no form for the family yet. A new opcode of a family is a case in that
// family's planner (or none, when the family's kernels take it as they are).
FamilyPlanner planner_of(OpFamily family) {
  switch (family) {
    case OpFamily::kForward: return &plan_forward;
    case OpFamily::kConstant: return &plan_constant;
    case OpFamily::kCopy: return &plan_copy;
    case OpFamily::kWhile:
    case OpFamily::kConditional: return &plan_control_flow;
    case OpFamily::kCustomCall: return &plan_custom;
    case OpFamily::kElementwise: return &plan_elementwise;
    case OpFamily::kDataMovement: return &plan_data_movement;
    case OpFamily::kDynamicSlice: return &plan_dynamic_slice;
    case OpFamily::kDot: return &plan_dot;
    case OpFamily::kReduce: return &plan_reduce;
    case OpFamily::kReduceWindow: return &plan_reduce_window;
    case OpFamily::kSelectAndScatter: return &plan_select_and_scatter;
    case OpFamily::kFusion: return &plan_fusion;
    case OpFamily::kSort: return &plan_sort;
    case OpFamily::kTopk: return &plan_topk;
    case OpFamily::kGather: return &plan_gather;
    case OpFamily::kScatter: return &plan_scatter;
    case OpFamily::kConvolution: return &plan_convolution;
    default: return nullptr;  // kCall (flattened before), kCopyStart, kLinalg, kFft, kRngBitGenerator, kNone
  }
}

// The steps of one computation; kernels go into `plan`'s shared source.
StatusOr<std::vector<DeviceStep>> plan_steps(const Computation& computation, const CustomCallTable& custom_calls,
                                             const Memory& memory, DevicePlan& plan) {
  std::vector<DeviceStep> steps;
  for (const Instruction* instruction : computation.instructions()) {
    DeviceStep step;
    step.instruction = instruction;
    const FamilyPlanner planner = planner_of(op_family(instruction->opcode()));
    if (planner == nullptr)
      return refuse(*instruction, "no CUDA form for this op yet (the plan covers loop fusions, elementwise ops, "
                                  "broadcasts, iotas, reduces, reduce-windows, select-and-scatters, pads, sorts, "
                                  "topks, convolutions, data movement, dynamic-update-slices, gathers, scatters, "
                                  "dots, copies, views, while loops and conditionals)");
    StepPlanner planning{*instruction, custom_calls, memory, plan, step, str_cat("k", plan.kernels)};
    INSITU_RETURN_IF_ERROR(planner(planning));
    steps.push_back(std::move(step));
  }
  return steps;
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

}  // namespace insitu::cuda
