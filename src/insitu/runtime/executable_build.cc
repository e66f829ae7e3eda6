// Executable::create: compiles every analyzed computation into steps whose leaves are
// resolved to buffer-assignment slices (program.h), fills constant buffers, and records how
// each argument maps to entry parameters and input_output_alias entries.
#include <algorithm>
#include <cstring>

#include "insitu/passes/bitcast_lowering.h"
#include "insitu/runtime/executable.h"
#include "insitu/runtime/fallback_kernels.h"
#include "insitu/runtime/program.h"
#include "insitu/support/str.h"

namespace insitu {

using runtime_internal::Leaf;
using runtime_internal::Program;
using runtime_internal::Step;
using runtime_internal::StepKind;

namespace {

bool is_forwarder_or_free(Opcode opcode) {
  switch (opcode) {
    case Opcode::kParameter:
    case Opcode::kTuple:
    case Opcode::kGetTupleElement:
    case Opcode::kBitcast:
    case Opcode::kOptimizationBarrier:
    case Opcode::kCopyDone:
    case Opcode::kAfterAll:
    case Opcode::kAddDependency: return true;
    default: return false;
  }
}

bool is_kernel_opcode(Opcode opcode) {
  if (is_elementwise(opcode) && opcode != Opcode::kMap) return true;
  switch (opcode) {
    case Opcode::kBitcastConvert:  // of one width (run_elementwise_kernel declines others)
    case Opcode::kSelectAndScatter:
    case Opcode::kIota:
    case Opcode::kBroadcast:
    case Opcode::kReshape:
    case Opcode::kTranspose:
    case Opcode::kSlice:
    case Opcode::kDynamicSlice:
    case Opcode::kDynamicUpdateSlice:
    case Opcode::kConcatenate:
    case Opcode::kReverse:
    case Opcode::kPad:
    case Opcode::kScatter:
    case Opcode::kReduce:
    case Opcode::kReduceWindow:
    case Opcode::kGather:
    case Opcode::kTopk:
    case Opcode::kDot: return true;
    default: return false;
  }
}

// A fusion the native loop-fusion kernel may run: one array result, nothing updated in place
// (in-place fusions go to the evaluator directly, without staging their aliased operand).
bool is_native_fusion_candidate(const Instruction& instruction) {
  return instruction.opcode() == Opcode::kFusion && instruction.shape().is_array() &&
         instruction.fusion_output_to_operand_aliasing.empty();
}

// Buffer assignment placed the result inside its operand's bytes: nothing to move.
bool is_view_instruction(const BufferAssignment& assignment, const Instruction* instruction) {
  return assignment.dataflow().has_values(instruction) && assignment.is_view(assignment.dataflow().value_at(instruction));
}

// What a kernel can work out once for this step: a fusion's loop plan (typed registers for a
// scalar chain), a sort's comparator or a reduce's combiner as a scalar program, a dot's index
// tables. nullptr when there is nothing to plan or no native path.
KernelPlanPtr plan_step(const Instruction& instruction, const Step& step) {
  const Opcode opcode = instruction.opcode();
  const bool single_leaves = std::all_of(step.operands.begin(), step.operands.end(),
                                         [](const std::vector<Leaf>& leaves) { return leaves.size() == 1; });
  if (is_native_fusion_candidate(instruction)) {
    if (step.outputs.size() != 1 || step.outputs[0].scalar || !single_leaves) return nullptr;
    // a scalar chain (a loop counter's update, an index clamp): typed registers
    if (instruction.shape().rank() == 0)
      if (KernelPlanPtr registers = plan_register_program(*instruction.called_computations()[0])) return registers;
    // planned on the leaves' shapes and scalar flags; addresses are bound per run
    std::vector<ArrayView> operands;
    for (const std::vector<Leaf>& leaves : step.operands)
      operands.push_back(ArrayView{nullptr, leaves[0].shape, leaves[0].scalar});
    return plan_loop_fusion(instruction, operands, ArrayView{nullptr, step.outputs[0].shape, false});
  }
  if (opcode == Opcode::kSort || opcode == Opcode::kReduce || opcode == Opcode::kReduceWindow)
    return instruction.called_computations().size() == 1 ? plan_scalar_program(*instruction.called_computations()[0])
                                                          : nullptr;
  if (opcode == Opcode::kDot && step.operands.size() == 2 && single_leaves && step.outputs.size() == 1)
    return plan_dot(instruction, *step.operands[0][0].shape, *step.operands[1][0].shape, *step.outputs[0].shape);
  return nullptr;
}

}  // namespace

std::string Executable::Argument::describe() const {
  return str_cat("parameter ", parameter_number, " ", shape_index_to_string(index));
}

Executable::Executable(const Module& module, BufferAssignment assignment, ExecutableOptions options)
    : module_(&module), assignment_(std::move(assignment)), options_(options) {}

Executable::~Executable() = default;

StatusOr<std::unique_ptr<Executable>> Executable::create(const Module& module, BufferAssignment assignment,
                                                         ExecutableOptions options) {
  std::unique_ptr<Executable> executable(new Executable(module, std::move(assignment), options));
  INSITU_RETURN_IF_ERROR(executable->build());
  return executable;
}

StatusOr<std::unique_ptr<Executable>> Executable::create(std::shared_ptr<const Module> module,
                                                         BufferAssignment assignment, ExecutableOptions options) {
  std::unique_ptr<Executable> executable(new Executable(*module, std::move(assignment), options));
  executable->owned_module_ = std::move(module);
  INSITU_RETURN_IF_ERROR(executable->build());
  return executable;
}

namespace {

class ProgramBuilder {
 public:
  ProgramBuilder(const BufferAssignment& assignment, std::vector<std::unique_ptr<Buffer>>& constants)
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
  std::vector<std::unique_ptr<Buffer>>& constants_;
};

}  // namespace

Status Executable::build() {
  const Computation* entry = module_->entry();
  if (entry == nullptr) return invalid_argument("module " + module_->name() + " has no ENTRY computation");

  // Constant allocations are filled once here.
  constant_buffers_.resize(assignment_.allocations().size());
  for (const Allocation& allocation : assignment_.allocations())
    if (allocation.kind == AllocationKind::kConstant)
      constant_buffers_[allocation.index] =
          std::make_unique<Buffer>(Shape::array(PrimitiveType::kU8, {std::max<int64_t>(allocation.size, 0)}));

  // Arguments: entry parameter leaves in order, with their input_output_alias entries.
  for (const Instruction* parameter : entry->parameters()) {
    parameter->shape().for_each_leaf([&](const Shape& leaf, const ShapeIndex& index) {
      if (!leaf.is_array()) return;
      Argument argument;
      argument.parameter_number = parameter->parameter_number;
      argument.index = index;
      argument.shape = leaf;
      for (const InputOutputAlias& alias : module_->config().input_output_alias) {
        if (alias.parameter_number == parameter->parameter_number && alias.parameter_index == index) {
          argument.aliased_output = alias.output_index;
          argument.must_alias = alias.kind == AliasKind::kMustAlias;
        }
      }
      arguments_.push_back(std::move(argument));
    });
  }

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
      Step step;
      step.instruction = instruction;
      const Opcode opcode = instruction->opcode();
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
      const bool unmaterialized = step.outputs.size() == 1 && step.outputs[0].scalar;  // read as its scalar
      const bool view = instruction->shape().is_array() && is_view_instruction(assignment_, instruction);
      if (is_forwarder_or_free(opcode) || unmaterialized || view) {
        step.kind = StepKind::kNothing;
      } else if (opcode == Opcode::kConstant) {
        step.kind = builder.place_constant(*instruction, step.outputs) ? StepKind::kNothing : StepKind::kConstant;
      } else if (opcode == Opcode::kCopy) {
        step.kind = StepKind::kCopy;
      } else if (opcode == Opcode::kCopyStart) {
        step.kind = StepKind::kCopyStart;
      } else if (opcode == Opcode::kWhile || opcode == Opcode::kConditional || opcode == Opcode::kCall) {
        step.kind = opcode == Opcode::kWhile ? StepKind::kWhile
                    : opcode == Opcode::kCall ? StepKind::kCall
                                              : StepKind::kConditional;
        for (const Computation* callee : instruction->called_computations()) {
          auto it = programs_.find(callee);
          if (it == programs_.end())
            return internal_error(str_cat("%", instruction->name(), " calls ", callee->name(),
                                          ", which dataflow did not analyze"),
                                  instruction->location());
          step.callees.push_back(it->second.get());
        }
      } else if (opcode == Opcode::kCustomCall) {
        step.kind = StepKind::kCustomCall;
      } else if (KernelPlanPtr plan = plan_step(*instruction, step); plan != nullptr) {
        step.kind = StepKind::kKernel;
        step.plan = std::move(plan);
      } else if (is_kernel_opcode(opcode)) {
        step.kind = StepKind::kKernel;  // kernels that need no plan (or decline per call)
      } else if (has_fallback(opcode)) {
        step.kind = StepKind::kFallback;
        fallback_instructions_.push_back(instruction);
      } else {
        return unimplemented(str_cat("the CPU runtime cannot run '", opcode_name(opcode), "' (%", instruction->name(),
                                     "); run it with the reference evaluator (--reference)"),
                             instruction->location());
      }
      program.steps.push_back(std::move(step));
    }
  }
  return ok_status();
}

ThreadPool& Executable::pool_for(int threads) {
  const int wanted = threads <= 0 ? ThreadPool::hardware_threads() : threads;
  if (pool_ == nullptr || pool_->thread_count() != wanted) pool_ = std::make_unique<ThreadPool>(wanted);
  return *pool_;
}

}  // namespace insitu
