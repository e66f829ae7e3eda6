// Executable::create: compiles every analyzed computation into steps whose leaves are
// resolved to buffer-assignment slices (program.h), fills constant buffers, and records how
// each argument maps to entry parameters and input_output_alias entries.
//
// Every decision about how a step runs is taken here, once: its runner (by the opcode's
// op family, opcode.def), the native kernel its family selects (kernels.h) with that
// kernel's plan, which operands it stages because they overlap its output, a custom call's
// native binding; the fallback where no kernel was selected. Calls only run what was chosen.
#include <algorithm>
#include <cstring>
#include <map>

#include "insitu/evaluator/collectives.h"
#include "insitu/runtime/executable.h"
#include "insitu/runtime/executor.h"
#include "insitu/runtime/fallback_kernels.h"
#include "insitu/runtime/program.h"
#include "insitu/runtime/reduce_combiner.h"
#include "insitu/runtime/step_writes.h"
#include "insitu/support/str.h"

namespace insitu {

using runtime_internal::Binding;
using runtime_internal::Executor;
using runtime_internal::Leaf;
using runtime_internal::Program;
using runtime_internal::Step;
using runtime_internal::bytes_written_by;
using runtime_internal::leaves_overlap;
using runtime_internal::staged_operands;

namespace {


// Buffer assignment placed the result inside its operand's bytes: nothing to move.
bool is_view_instruction(const BufferAssignment& assignment, const Instruction* instruction) {
  return assignment.dataflow().has_values(instruction) && assignment.is_view(assignment.dataflow().value_at(instruction));
}

// A native kernel for the step when every operand is one materialized array leaf (addresses
// are bound per call, so the views carry shapes and scalar flags only); nullopt otherwise.
SelectedKernel select_step_kernel(const Instruction& instruction, const Step& step) {
  std::vector<ArrayView> views;
  for (const std::vector<Leaf>& leaves : step.operands) {
    if (leaves.size() != 1 || leaves[0].allocation < 0) return std::nullopt;
    views.push_back(ArrayView{nullptr, leaves[0].shape, leaves[0].scalar});
  }
  for (const Leaf& leaf : step.outputs) {
    if (leaf.allocation < 0 || leaf.scalar) return std::nullopt;
    views.push_back(ArrayView{nullptr, leaf.shape, false});
  }
  const size_t operands = step.operands.size();
  return select_kernel(instruction, std::span<const ArrayView>(views.data(), operands),
                       std::span<const ArrayView>(views.data() + operands, views.size() - operands));
}

// A natively registered custom call runs over the step's slices when every operand and result
// leaf is a plain materialized array; anything else takes the Literal path.
bool takes_native_custom_call(const Step& step) {
  for (const std::vector<Leaf>& leaves : step.operands)
    if (leaves.size() != 1 || !leaves[0].index.empty() || leaves[0].allocation < 0 || leaves[0].scalar) return false;
  for (const Leaf& leaf : step.outputs)
    if (leaf.allocation < 0 || leaf.scalar) return false;
  return true;
}

}  // namespace

std::string Executable::Argument::describe() const {
  return str_cat("parameter ", parameter_number, " ", shape_index_to_string(index));
}

StatusOr<std::unique_ptr<Executable>> Executable::create(OptimizedModule optimized, ExecutableOptions options) {
  if (optimized.module == nullptr || !optimized.buffers)
    return invalid_argument("Executable::create needs a module through the whole pipeline (optimize_module without "
                            "OptimizeOptions::passes), with its buffer assignment");
  if (options.device == DeviceKind::kCuda) return create_on_cuda(std::move(optimized), options);
  std::shared_ptr<const Module> module(std::move(optimized.module));
  std::unique_ptr<Executable> executable(new Executable(*module, std::move(*optimized.buffers), options));
  executable->owned_module_ = std::move(module);
  INSITU_RETURN_IF_ERROR(executable->build());
  return executable;
}

namespace {

class ProgramBuilder {
 public:
  ProgramBuilder(const BufferAssignment& assignment, std::vector<std::shared_ptr<Buffer>>& constants)
      : assignment_(assignment), dataflow_(assignment.dataflow()), constants_(constants) {}

  // The memory of one array/token leaf.
  StatusOr<Leaf> resolve(const Instruction* instruction, const ShapeIndex& index) {
    const Shape* shape = instruction->shape().subshape(index);
    INSITU_CHECK(shape != nullptr) << "bad leaf index " << shape_index_to_string(index);
    Leaf leaf;
    leaf.index = index;
    leaf.shape = shape;
    if (shape->is_token()) return leaf;
    if (!dataflow_.has_values(instruction)) {
      return internal_error(str_cat("%", instruction->name(), " has no dataflow values"), instruction->location());
    }
    const ValueId value = dataflow_.value_at(instruction, index);
    if (std::optional<BufferSlice> slice = assignment_.slice(value)) {
      leaf.allocation = slice->allocation;
      leaf.offset = slice->offset;
      leaf.size = slice->size;
      return leaf;
    }
    // Not materialized: a scalar broadcast read as its scalar.
    const Instruction* defining = dataflow_.value(value).defining.instruction;
    if (defining->opcode() == Opcode::kBroadcast && defining->operand(0)->shape().is_array() &&
        defining->operand(0)->shape().rank() == 0) {
      INSITU_ASSIGN_OR_RETURN(Leaf scalar, resolve(defining->operand(0), {}));
      scalar.index = index;
      scalar.shape = shape;
      scalar.scalar = true;
      return scalar;
    }
    return internal_error(str_cat("buffer assignment gave no slice to ", dataflow_.value(value).to_string(),
                                  " (at %", instruction->name(), shape_index_to_string(index), ")"),
                          instruction->location());
  }

  StatusOr<std::vector<Leaf>> resolve_leaves(const Instruction* instruction) {
    std::vector<Leaf> leaves;
    Status status;
    instruction->shape().for_each_leaf([&](const Shape&, const ShapeIndex& index) {
      if (!status.ok()) return;
      StatusOr<Leaf> leaf = resolve(instruction, index);
      if (!leaf.ok()) status = leaf.status();
      else leaves.push_back(std::move(leaf).value());
    });
    if (!status.ok()) return status;
    return leaves;
  }

  // Writes a constant's literal into its constant allocation; false if it lives elsewhere.
  bool place_constant(const Instruction& constant, const std::vector<Leaf>& leaves) {
    bool all_constant = true;
    for (const Leaf& leaf : leaves) {
      if (leaf.allocation < 0) continue;
      if (assignment_.allocations()[leaf.allocation].kind != AllocationKind::kConstant || leaf.scalar) {
        all_constant = false;
        continue;
      }
      const Literal* value = constant.literal.subliteral(leaf.index);
      INSITU_CHECK(value != nullptr && value->size_bytes() == leaf.size) << "constant %" << constant.name();
      if (leaf.size > 0)
        std::memcpy(constants_[leaf.allocation]->data() + leaf.offset, value->untyped_data(), leaf.size);
    }
    return all_constant;
  }

 private:
  const BufferAssignment& assignment_;
  const Dataflow& dataflow_;
  std::vector<std::shared_ptr<Buffer>>& constants_;
};

}  // namespace

// The memory budget, checked before anything is allocated: the error names the largest
// buffers live at the peak, at the biggest one's instruction.
Status check_memory_budget(const BufferAssignment& assignment, int64_t budget) {
  if (assignment.peak_memory_bytes() <= budget) return ok_status();
  std::vector<std::pair<ValueId, int64_t>> largest = assignment.peak_buffers();
  std::stable_sort(largest.begin(), largest.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  if (largest.size() > 3) largest.resize(3);
  std::string names;
  SourceLocation location;
  for (const auto& [value, bytes] : largest) {
    const Value& v = assignment.dataflow().value(value);
    if (!location.valid()) location = v.defining.instruction->location();
    names += str_cat(names.empty() ? "" : ", ", v.to_string(), " ", v.shape.to_string(false), " (", bytes, " bytes)");
  }
  return resource_exhausted(str_cat("the module needs ", assignment.peak_memory_bytes(), " bytes at its peak, more than the ",
                                    budget, "-byte memory budget (largest buffers live then: ", names,
                                    "); shrink those, or raise the budget (--max-memory, "
                                    "ExecutableOptions::max_memory_bytes)"),
                            location);
}

namespace {

// An all-reduce the runtime reduces natively, in place (Executor::run_all_reduce): arrays (one, or
// a combined all-reduce's tuple of them) of types and a combiner the communicator reduces itself
// (Communicator::supports_all_reduce). Each result is its operand's memory (dataflow's in-place
// pair) or memory no operand uses.
bool native_all_reduce(const Instruction& instruction, const runtime_internal::Step& step) {
  const int64_t count = instruction.operand_count();
  if (count == 0 || instruction.called_computations().empty() || step.operands.size() != static_cast<size_t>(count) ||
      step.outputs.size() != static_cast<size_t>(count) ||
      !(instruction.shape().is_array() ? count == 1 : instruction.shape().tuple_size() == count))
    return false;
  const std::optional<kernels::Combiner> combiner = kernels::simple_combiner(*instruction.to_apply());
  if (!combiner) return false;
  for (int64_t i = 0; i < count; ++i) {
    const Shape& operand = instruction.operand(i)->shape();
    const std::vector<runtime_internal::Leaf>& in = step.operands[i];
    const runtime_internal::Leaf& out = step.outputs[i];
    if (!operand.is_array() || in.size() != 1 || in[0].scalar || out.scalar ||
        !Communicator::supports_all_reduce(operand.element_type(), combiner->opcode))
      return false;
    if (in[0].same_memory(out)) continue;
    for (const std::vector<runtime_internal::Leaf>& other : step.operands)
      if (leaves_overlap(other[0], out)) return false;
  }
  return true;
}

// The leaves of a step's operands and results are each one plain array (no scalars read in
// registers, no tuples inside), and no operand's memory overlaps a result's: what the
// communicator's byte-range collectives read and write.
bool plain_disjoint_leaves(const runtime_internal::Step& step) {
  std::vector<const runtime_internal::Leaf*> inputs;
  for (const std::vector<runtime_internal::Leaf>& leaves : step.operands) {
    if (leaves.size() != 1 || leaves[0].scalar) return false;
    inputs.push_back(&leaves[0]);
  }
  for (const runtime_internal::Leaf& out : step.outputs) {
    if (out.scalar) return false;
    for (const runtime_internal::Leaf* in : inputs)
      if (leaves_overlap(*in, out)) return false;  // overlapping memory: the evaluator's path copies first
  }
  return !step.outputs.empty() && !inputs.empty();
}

// An array collective's pieces along dimensions={d} are byte ranges: only size-1 dimensions
// before d (data is logical row-major in the runtime).
bool pieces_are_byte_ranges(const Instruction& instruction) {
  const Shape& operand = instruction.operand(0)->shape();
  StatusOr<int64_t> dimension = collective_dimension(instruction, operand);
  if (!dimension.ok()) return false;
  for (int64_t d = 0; d < *dimension; ++d)
    if (operand.dimension(d) != 1) return false;
  return true;
}

// The collectives the runtime moves natively (Executor::run_all_gather and the rest); any other
// form runs through the evaluator (correct, and slower).
runtime_internal::StepRunner native_collective(const Instruction& instruction, const runtime_internal::Step& step) {
  using runtime_internal::Executor;
  const bool one_array = instruction.operand_count() == 1 && instruction.shape().is_array() &&
                         step.outputs.size() == 1 && plain_disjoint_leaves(step);
  auto reduces_natively = [&] {
    if (instruction.called_computations().empty()) return false;
    const std::optional<kernels::Combiner> combiner = kernels::simple_combiner(*instruction.to_apply());
    return combiner && Communicator::supports_all_reduce(instruction.shape().element_type(), combiner->opcode);
  };
  switch (instruction.opcode()) {
    case Opcode::kAllGather:
      return one_array && pieces_are_byte_ranges(instruction) ? &Executor::run_all_gather : nullptr;
    case Opcode::kReduceScatter:
      return one_array && pieces_are_byte_ranges(instruction) && reduces_natively() ? &Executor::run_reduce_scatter
                                                                                    : nullptr;
    case Opcode::kCollectivePermute:  // one array, or a combined permute's tuple of them
      return plain_disjoint_leaves(step) && step.outputs.size() == step.operands.size() &&
                     static_cast<int64_t>(step.operands.size()) == instruction.operand_count()
                 ? &Executor::run_collective_permute
                 : nullptr;
    case Opcode::kCollectiveBroadcast:  // operands copied into the results, then broadcast there
      return plain_disjoint_leaves(step) && step.outputs.size() == step.operands.size() &&
                     static_cast<int64_t>(step.operands.size()) == instruction.operand_count()
                 ? &Executor::run_collective_broadcast
                 : nullptr;
    case Opcode::kReplicaId:
    case Opcode::kPartitionId:
      return step.outputs.size() == 1 && !step.outputs[0].scalar && step.outputs[0].size == 4 ? &Executor::run_device_id
                                                                                               : nullptr;
    case Opcode::kAllToAll: {
      if (one_array) return pieces_are_byte_ranges(instruction) ? &Executor::run_all_to_all : nullptr;
      // The tuple form: operand j and result j are arrays of one size.
      if (!instruction.shape().is_tuple() || !plain_disjoint_leaves(step) ||
          step.outputs.size() != step.operands.size())
        return nullptr;
      for (size_t j = 0; j < step.operands.size(); ++j)
        if (step.operands[j][0].size != step.operands[0][0].size || step.outputs[j].size != step.operands[0][0].size)
          return nullptr;
      return &Executor::run_all_to_all;
    }
    default: return nullptr;
  }
}

}  // namespace

// Arguments: entry parameter leaves in order, with their input_output_alias entries.
void Executable::describe_arguments() {
  const Computation* entry = module_->entry();
  for (const Instruction* parameter : entry->parameters()) {
    parameter->shape().for_each_leaf([&](const Shape& leaf, const ShapeIndex& index) {
      if (!leaf.is_array()) return;
      Argument argument;
      argument.parameter_number = parameter->parameter_number;
      argument.index = index;
      argument.shape = leaf;
      if (const InputOutputAlias* alias = module_->config().find_parameter_alias(parameter->parameter_number, index)) {
        argument.aliased_output = alias->output_index;
        argument.must_alias = alias->kind == AliasKind::kMustAlias;
      }
      arguments_.push_back(std::move(argument));
    });
  }
}

Status Executable::build() {
  const Computation* entry = module_->entry();
  if (entry == nullptr) return invalid_argument("module " + module_->name() + " has no ENTRY computation");
  const int64_t budget = options_.max_memory_bytes > 0 ? options_.max_memory_bytes : machine_memory_bytes();
  INSITU_RETURN_IF_ERROR(check_memory_budget(assignment_, budget));

  // Constant allocations are filled once here.
  constant_buffers_.resize(assignment_.allocations().size());
  for (const Allocation& allocation : assignment_.allocations())
    if (allocation.kind == AllocationKind::kConstant)
    {
      const Shape shape = Shape::array(PrimitiveType::kU8, {std::max<int64_t>(allocation.size, 0)});
      INSITU_ASSIGN_OR_RETURN(std::shared_ptr<Buffer> buffer, Buffer::allocate(shape, /*zero=*/true, "constants"));
      constant_buffers_[allocation.index] = std::move(buffer);
    }

  describe_arguments();

  ProgramBuilder builder(assignment_, constant_buffers_);
  for (const Computation* computation : assignment_.dataflow().analyzed_computations()) {
    auto program = std::make_unique<Program>();
    program->computation = computation;
    programs_[computation] = std::move(program);  // filled below, once every callee has one
  }
  for (const Computation* computation : assignment_.dataflow().analyzed_computations()) {
    Program& program = *programs_.at(computation);
    for (const Instruction* parameter : computation->parameters()) {
      INSITU_ASSIGN_OR_RETURN(std::vector<Leaf> leaves, builder.resolve_leaves(parameter));
      program.parameters.push_back(std::move(leaves));
    }
    INSITU_ASSIGN_OR_RETURN(program.root, builder.resolve_leaves(computation->root()));
    for (const Instruction* instruction : computation->instructions()) {
      const Opcode opcode = instruction->opcode();
      // Moves no data and needs no memory resolved (a get-tuple-element of a tuple of thousands
      // of leaves would resolve them all, once per element: cubic in the tuple's size).
      if (op_family(opcode) == OpFamily::kForward && opcode != Opcode::kBitcast) continue;
      Step step;
      step.instruction = instruction;
      INSITU_ASSIGN_OR_RETURN(step.outputs, builder.resolve_leaves(instruction));
      for (const Instruction* operand : instruction->operands()) {
        INSITU_ASSIGN_OR_RETURN(std::vector<Leaf> leaves, builder.resolve_leaves(operand));
        step.operands.push_back(std::move(leaves));
      }
      // A bitcast moves no data here; bitcast-lowering left only reshapes of row-major data,
      // except the kinds it cannot lower.
      if (opcode == Opcode::kBitcast && !is_row_major_reshape(*instruction) &&
          !(instruction->operand(0)->shape() == instruction->shape())) {
        return unimplemented(str_cat("bitcast %", instruction->name(), " from ",
                                     instruction->operand(0)->shape().to_string(), " to ",
                                     instruction->shape().to_string(),
                                     " cannot run: the CPU runtime keeps data row-major, and a bitcast between "
                                     "element types of different widths or between different tiled layouts has no "
                                     "lowering (write a bitcast-convert or a transpose)"),
                             instruction->location());
      }
      // An update placed in a window of its own (buffer assignment's sets_own_window): the
      // window's base, at its update-slice's starts, is set just before the update is computed
      // (for a multi-output fusion, each output's that is placed so).
      const Shape& produced = instruction->shape();
      const bool flat_tuple = produced.is_tuple() && std::all_of(produced.tuple_shapes().begin(),
                                                                  produced.tuple_shapes().end(),
                                                                  [](const Shape& leaf) { return leaf.is_array(); });
      for (int64_t k = 0; k < (produced.is_array() ? 1 : flat_tuple ? produced.tuple_size() : 0); ++k) {
        const ValueId placed =
            assignment_.dataflow().value_at(instruction, produced.is_array() ? ShapeIndex{} : ShapeIndex{k});
        if (!assignment_.sets_own_window(placed)) continue;
        const Instruction* update = assignment_.placed_for(placed);
        Step window;
        window.instruction = update;
        window.run = &Executor::run_dynamic_view;
        window.outputs = {step.outputs.at(static_cast<size_t>(k))};
        for (int64_t i = 0; i < update->operand_count(); ++i) {
          if (i == 1) continue;  // the update itself
          INSITU_ASSIGN_OR_RETURN(std::vector<Leaf> leaves, builder.resolve_leaves(update->operand(i)));
          window.operands.push_back(std::move(leaves));
        }
        program.steps.push_back(std::move(window));
      }
      const bool unmaterialized = step.outputs.size() == 1 && step.outputs[0].scalar;  // read as its scalar
      const bool view = instruction->shape().is_array() && is_view_instruction(assignment_, instruction);
      if (view && opcode == Opcode::kDynamicSlice &&
          assignment_.allocations()[step.outputs[0].allocation].kind == AllocationKind::kDynamicView) {
        // Moves no data either; sets the base its readers read at, per call.
        if (!select_step_kernel(*instruction, step))  // the dynamic-slice kernel's checks: starts it can read
          return internal_error(str_cat("buffer assignment made dynamic-slice %", instruction->name(),
                                        " a view, and the runtime cannot compute its offset"),
                                instruction->location());
        step.run = &Executor::run_dynamic_view;
        program.steps.push_back(std::move(step));
        continue;
      }
      const OpFamily family = op_family(opcode);
      if (family == OpFamily::kForward || unmaterialized || view) continue;  // moves no data
      // An update computed straight into the window this dynamic-update-slice writes (buffer
      // assignment's placed values): the stack already holds it.
      if ((opcode == Opcode::kDynamicUpdateSlice || (opcode == Opcode::kScatter && instruction->operand_count() == 3)) &&
          assignment_.placed_for(assignment_.dataflow().value_at(instruction->operand(opcode == Opcode::kScatter ? 2 : 1))) ==
              instruction)
        continue;
      if (family == OpFamily::kCollective) {  // natively where it can, else the evaluator's (default below)
        const bool all_reduce = opcode == Opcode::kAllReduce || opcode == Opcode::kAllReduceStart;
        if (all_reduce && native_all_reduce(*instruction, step)) {
          step.run = &Executor::run_all_reduce;
          program.steps.push_back(std::move(step));
          continue;
        }
        if (const runtime_internal::StepRunner runner = native_collective(*instruction, step)) {
          step.run = runner;
          program.steps.push_back(std::move(step));
          continue;
        }
      }
      switch (family) {
        case OpFamily::kConstant:
          if (builder.place_constant(*instruction, step.outputs)) continue;  // filled once, above
          step.run = &Executor::run_constant;
          break;
        case OpFamily::kCopy: step.run = &Executor::run_copy; break;
        case OpFamily::kCopyStart: step.run = &Executor::run_copy_start; break;
        case OpFamily::kWhile:
        case OpFamily::kConditional:
        case OpFamily::kCall:
          step.run = family == OpFamily::kWhile  ? &Executor::run_while
                     : family == OpFamily::kCall ? &Executor::run_call
                                                      : &Executor::run_conditional;
          if (family == OpFamily::kWhile) step.grid_loop = grid_loop_info(*instruction);
          for (const Computation* callee : instruction->called_computations()) {
            auto it = programs_.find(callee);
            if (it == programs_.end())
              return internal_error(str_cat("%", instruction->name(), " calls ", callee->name(),
                                            ", which dataflow did not analyze"),
                                    instruction->location());
            step.callees.push_back(it->second.get());
          }
          if (step.grid_loop) plan_parallel_grid(*instruction, assignment_, step);
          break;
        case OpFamily::kCustomCall: {
          const std::string& name = instruction->custom_call.target;
          const CustomCallTarget* target = options_.custom_calls ? options_.custom_calls->find(name) : nullptr;
          const NativeCustomCallPart* native = target ? target->parts.get<NativeCustomCallPart>() : nullptr;
          if (native != nullptr && takes_native_custom_call(step)) {
            std::vector<const Shape*> operand_shapes, output_shapes;
            for (const std::vector<Leaf>& leaves : step.operands) operand_shapes.push_back(leaves[0].shape);
            for (const Leaf& leaf : step.outputs) output_shapes.push_back(leaf.shape);
            StatusOr<PreparedCustomCall> prepared = native->prepare(*instruction, operand_shapes, output_shapes);
            if (!prepared.ok()) return prepared.status().with_location(instruction->location());
            step.native_custom_call = std::move(prepared).value();
            step.run = &Executor::run_native_custom_call;
          } else if (SelectedKernel builtin = target == nullptr ? select_step_kernel(*instruction, step) : std::nullopt) {
            step.kernel = std::move(*builtin);
            step.staged = staged_operands(*instruction, step);
            step.run = &Executor::run_native;
          } else if ((target != nullptr && target->evaluate) || has_builtin_custom_call(name)) {
            step.run = &Executor::run_custom_call;
          } else {
            // Known now, not at the first call: a call that cannot run fails create.
            return unregistered_custom_call(*instruction, target);
          }
          break;
        }
        default:
          if (SelectedKernel kernel = select_step_kernel(*instruction, step)) {
            step.kernel = std::move(*kernel);
            step.staged = staged_operands(*instruction, step);
            step.run = &Executor::run_native;
          } else if (has_fallback(opcode)) {
            step.run = &Executor::run_fallback;
            fallback_instructions_.push_back(instruction);
          } else {
            // (the fallback is the reference evaluator: it cannot run this opcode either)
            return unimplemented(str_cat("insitu cannot run '", opcode_name(opcode), "' (%", instruction->name(),
                                         "): neither the CPU runtime nor the reference evaluator implements it"),
                                 instruction->location());
          }
      }
      program.steps.push_back(std::move(step));
    }
    for (Step& step : program.steps) {
      step.bytes_written = bytes_written_by(step);
      const Opcode sliced = step.instruction->opcode();
      if (sliced == Opcode::kDynamicSlice || sliced == Opcode::kSlice) step.bytes_staged = step.bytes_written;
      auto bind = [](const Leaf& leaf) { return Binding{leaf.shape, leaf.allocation, leaf.offset, leaf.scalar}; };
      for (const std::vector<Leaf>& operand : step.operands)
        step.bindings.push_back(operand.empty() ? Binding{} : bind(operand[0]));
      for (const Leaf& output : step.outputs) step.bindings.push_back(bind(output));
    }
  }

  // The calls' plan (execute_borrowed; execute's parameters too).
  entry_program_ = programs_.at(entry).get();
  const std::vector<Allocation>& allocations = assignment_.allocations();
  allocation_argument_.assign(allocations.size(), -1);
  allocation_result_.assign(allocations.size(), -1);
  // Each parameter allocation's argument and each output allocation's first result leaf that
  // is exactly it, by look-up (a training step has thousands of both).
  std::map<std::pair<int64_t, ShapeIndex>, int> argument_of;
  for (size_t i = 0; i < arguments_.size(); ++i)
    argument_of.emplace(std::pair(arguments_[i].parameter_number, arguments_[i].index), static_cast<int>(i));
  int j = 0;
  for (const Leaf& leaf : entry_program_->root) {
    if (!leaf.shape->is_array()) continue;
    if (leaf.allocation >= 0 && allocations[leaf.allocation].kind == AllocationKind::kOutput && leaf.offset == 0 &&
        !leaf.scalar && leaf.size == allocations[leaf.allocation].size && allocation_result_[leaf.allocation] < 0)
      allocation_result_[leaf.allocation] = j;
    ++j;
  }
  for (const Allocation& allocation : allocations) {
    if (allocation.kind != AllocationKind::kParameter) continue;
    auto found = argument_of.find(std::pair(allocation.parameter_number, allocation.parameter_index));
    if (found != argument_of.end()) allocation_argument_[allocation.index] = found->second;
  }
  for (const Leaf& leaf : entry_program_->root) result_count_ += leaf.shape->is_array() ? 1 : 0;
  return ok_status();
}

StatusOr<ThreadPool*> Executable::pool_for(int threads) {
  const int wanted = threads <= 0 ? ThreadPool::hardware_threads() : threads;
  // The common case, a caller asking for the thread count the last call used, reads one atomic
  // and takes no lock (a lock per call bounces its cache line between concurrent callers).
  if (ThreadPool* last = last_pool_.load(std::memory_order_acquire); last && last->thread_count() == wanted)
    return last;
  std::lock_guard<std::mutex> lock(pools_mutex_);
  ThreadPool* found = nullptr;
  for (const std::unique_ptr<ThreadPool>& pool : pools_)
    if (pool->thread_count() == wanted) found = pool.get();
  if (found == nullptr) {
    // Bounded: ThreadPool::start refuses more than kMaxThreads, so at most that many pools.
    INSITU_ASSIGN_OR_RETURN(std::unique_ptr<ThreadPool> pool, ThreadPool::start(wanted));
    pools_.push_back(std::move(pool));
    found = pools_.back().get();
  }
  last_pool_.store(found, std::memory_order_release);  // pools live as long as the executable
  return found;
}

StatusOr<std::shared_ptr<Buffer>> Executable::take_arena(int64_t bytes) {
  {
    std::lock_guard<std::mutex> lock(pools_mutex_);
    size_t best = idle_arenas_.size();
    for (size_t i = 0; i < idle_arenas_.size(); ++i)
      if (idle_arenas_[i]->size_bytes() >= bytes &&
          (best == idle_arenas_.size() || idle_arenas_[i]->size_bytes() < idle_arenas_[best]->size_bytes()))
        best = i;
    if (best < idle_arenas_.size()) {
      std::shared_ptr<Buffer> arena = std::move(idle_arenas_[best]);
      idle_arenas_.erase(idle_arenas_.begin() + static_cast<std::ptrdiff_t>(best));
      return arena;
    }
  }
  return Buffer::allocate(Shape::array(PrimitiveType::kU8, {bytes}), /*zero=*/true, "the temporaries");
}

void Executable::return_arena(std::shared_ptr<Buffer> arena) {
  if (arena == nullptr) return;
  std::lock_guard<std::mutex> lock(pools_mutex_);
  idle_arenas_.push_back(std::move(arena));
}

}  // namespace insitu
