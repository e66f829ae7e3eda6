#include "insitu/cuda/executor.h"

#include <algorithm>
#include <functional>
#include <unordered_map>

#include "insitu/support/str.h"

namespace insitu::cuda {
namespace {

// A value on the device: one pointer per leaf of its shape, depth-first.
using Leaves = std::vector<DevicePointer>;

// The range of `tuple`'s leaves that element `index` holds.
std::pair<size_t, size_t> element_leaves(const Shape& tuple, int64_t index) {
  size_t first = 0;
  for (int64_t i = 0; i < index; ++i) first += static_cast<size_t>(tuple.tuple_shape(i).leaf_count());
  return {first, first + static_cast<size_t>(tuple.tuple_shape(index).leaf_count())};
}

void literal_leaves(const Literal& literal, std::vector<const Literal*>& leaves) {
  if (!literal.shape().is_tuple()) {
    leaves.push_back(&literal);
    return;
  }
  for (int64_t i = 0; i < literal.shape().tuple_size(); ++i) literal_leaves(literal.element(i), leaves);
}

}  // namespace

struct CudaExecutable::Run {
  CudaExecutable& executable;
  CudaStats& stats;
  std::vector<DevicePointer> allocated;

  ~Run() {
    for (DevicePointer pointer : allocated) (void)executable.device_.free(pointer);
  }

  StatusOr<DevicePointer> allocate(int64_t bytes) {
    INSITU_ASSIGN_OR_RETURN(DevicePointer pointer, executable.device_.allocate(bytes));
    allocated.push_back(pointer);
    return pointer;
  }

  Status launch(const DeviceStep& step, std::vector<DevicePointer> pointers) {
    long long threads = step.threads;
    std::vector<void*> arguments;
    for (DevicePointer& pointer : pointers) arguments.push_back(&pointer);
    arguments.push_back(&threads);
    ++stats.kernels_launched;
    if (threads == 0) return ok_status();
    return executable.device_.launch(step.kernel, threads, arguments);
  }

  // Runs `steps` (a computation's) with `parameters` bound; returns the root's leaves.
  StatusOr<Leaves> run(const Computation& computation, const std::vector<DeviceStep>& steps,
                       const std::vector<Leaves>& parameters) {
    std::unordered_map<const Instruction*, Leaves> values;
    auto leaves = [&](const Instruction* instruction) -> const Leaves& { return values.at(instruction); };
    for (const DeviceStep& step : steps) {
      const Instruction& instruction = *step.instruction;
      Leaves result;
      switch (instruction.opcode()) {
        case Opcode::kParameter: result = parameters.at(static_cast<size_t>(instruction.parameter_number)); break;
        case Opcode::kConstant: result = {executable.constants_.at(&instruction)}; break;
        case Opcode::kTuple:
          for (const Instruction* operand : instruction.operands()) {
            const Leaves& part = leaves(operand);
            result.insert(result.end(), part.begin(), part.end());
          }
          break;
        case Opcode::kGetTupleElement: {
          const auto [first, last] = element_leaves(instruction.operand(0)->shape(), instruction.tuple_index);
          const Leaves& whole = leaves(instruction.operand(0));
          result.assign(whole.begin() + static_cast<int64_t>(first), whole.begin() + static_cast<int64_t>(last));
          break;
        }
        case Opcode::kBitcast:
        case Opcode::kReshape:
        case Opcode::kOptimizationBarrier: result = leaves(instruction.operand(0)); break;
        default: break;
      }
      switch (step.kind) {
        case StepKind::kNone: break;
        case StepKind::kCopy: {
          const int64_t bytes = instruction.shape().byte_size();
          INSITU_ASSIGN_OR_RETURN(DevicePointer to, allocate(bytes));
          INSITU_RETURN_IF_ERROR(executable.device_.copy_on_device(to, leaves(instruction.operand(0)).at(0), bytes));
          stats.bytes_copied_on_device += bytes;
          result = {to};
          break;
        }
        case StepKind::kKernel:
        case StepKind::kGemm: {
          std::vector<DevicePointer> pointers;
          if (instruction.opcode() == Opcode::kDynamicUpdateSlice || instruction.opcode() == Opcode::kScatter) {
            for (const Instruction* operand : instruction.operands()) pointers.push_back(leaves(operand).at(0));
            result = {pointers[0]};  // in place: the operand's memory
          } else if (instruction.opcode() == Opcode::kCustomCall) {
            pointers.push_back(executable.grid_tables_.at(&instruction));
            for (const Instruction* operand : instruction.operands()) pointers.push_back(leaves(operand).at(0));
            const Shape& shape = instruction.shape();
            for (size_t o = 0; o < step.output_operand.size(); ++o) {
              const Shape& leaf = shape.is_tuple() ? shape.tuple_shape(static_cast<int64_t>(o)) : shape;
              const int64_t operand = step.output_operand[o];
              DevicePointer out = operand >= 0 ? pointers[1 + static_cast<size_t>(operand)] : 0;
              if (operand < 0 || step.copy_in[o]) {  // a fresh output; an updated one starts as its operand
                INSITU_ASSIGN_OR_RETURN(out, allocate(leaf.byte_size()));
                if (operand >= 0) {
                  INSITU_RETURN_IF_ERROR(
                      executable.device_.copy_on_device(out, pointers[1 + static_cast<size_t>(operand)], leaf.byte_size()));
                  stats.bytes_copied_on_device += leaf.byte_size();
                  pointers[1 + static_cast<size_t>(operand)] = out;  // the kernel reads and writes one buffer
                }
              }
              pointers.push_back(out);
              result.push_back(out);
            }
          } else {
            for (const Instruction* operand : instruction.operands()) pointers.push_back(leaves(operand).at(0));
            const Shape& shape = instruction.shape();  // a multi-output fusion: one array per output
            for (int64_t k = 0; k < (shape.is_tuple() ? shape.tuple_size() : 1); ++k) {
              INSITU_ASSIGN_OR_RETURN(DevicePointer out,
                                      allocate((shape.is_tuple() ? shape.tuple_shape(k) : shape).byte_size()));
              pointers.push_back(out);
              result.push_back(out);
            }
          }
          if (step.kind == StepKind::kGemm) {  // the device's GEMM library, else the plan's kernel
            Status library = executable.device_.gemm(step.gemm, pointers[0], pointers[1], pointers[2]);
            if (library.ok()) {
              ++stats.gemms_on_library;
              break;
            }
            if (library.code() != StatusCode::kUnimplemented) return library;
          }
          INSITU_RETURN_IF_ERROR(launch(step, std::move(pointers)));
          break;
        }
        case StepKind::kWhile: {
          Leaves state = leaves(instruction.operand(0));
          const Computation& condition = *instruction.while_condition();
          const Computation& body = *instruction.while_body();
          while (true) {
            INSITU_ASSIGN_OR_RETURN(Leaves pred, run(condition, step.nested[0], {state}));
            bool more = false;
            INSITU_RETURN_IF_ERROR(executable.device_.copy_to_host(&more, pred.at(0), 1));
            stats.bytes_to_host += 1;
            if (!more) break;
            INSITU_ASSIGN_OR_RETURN(state, run(body, step.nested[1], {state}));
          }
          result = state;
          break;
        }
        case StepKind::kConditional: {
          const Instruction& selector = *instruction.operand(0);
          int64_t branch = 0;
          if (selector.shape().element_type() == PrimitiveType::kPred) {
            bool value = false;
            INSITU_RETURN_IF_ERROR(executable.device_.copy_to_host(&value, leaves(&selector).at(0), 1));
            branch = value ? 0 : 1;  // true_computation first
          } else {
            int32_t value = 0;
            INSITU_RETURN_IF_ERROR(executable.device_.copy_to_host(&value, leaves(&selector).at(0), 4));
            const int64_t branches = static_cast<int64_t>(step.nested.size());
            branch = value < 0 || value >= branches ? branches - 1 : value;  // XLA: out of range is the last
          }
          stats.bytes_to_host += selector.shape().byte_size();
          const Computation& called = *instruction.called_computations().at(static_cast<size_t>(branch));
          INSITU_ASSIGN_OR_RETURN(result, run(called, step.nested[static_cast<size_t>(branch)],
                                              {leaves(instruction.operand(1 + branch))}));
          break;
        }
      }
      values[&instruction] = std::move(result);
    }
    return values.at(computation.root());
  }
};

StatusOr<std::unique_ptr<CudaExecutable>> CudaExecutable::create(std::unique_ptr<Module> module, Device& device,
                                                                 const CustomCallTable* custom_calls) {
  std::unique_ptr<CudaExecutable> executable(new CudaExecutable(std::move(module), device));
  INSITU_ASSIGN_OR_RETURN(executable->plan_, plan_for_cuda(*executable->module_->entry(), custom_calls));
  INSITU_RETURN_IF_ERROR(device.load(executable->plan_.source));
  // The constants the plan's steps read (a fusion's are literals in its kernel).
  std::vector<const std::vector<DeviceStep>*> pending = {&executable->plan_.steps};
  while (!pending.empty()) {
    const std::vector<DeviceStep>& steps = *pending.back();
    pending.pop_back();
    for (const DeviceStep& step : steps) {
      for (const std::vector<DeviceStep>& nested : step.nested) pending.push_back(&nested);
      const Instruction* instruction = step.instruction;
      if (!step.grid_table.empty()) {
        const int64_t bytes = static_cast<int64_t>(step.grid_table.size() * sizeof(int64_t));
        INSITU_ASSIGN_OR_RETURN(DevicePointer pointer, device.allocate(bytes));
        executable->grid_tables_.emplace(instruction, pointer);
        INSITU_RETURN_IF_ERROR(device.copy_to_device(pointer, step.grid_table.data(), bytes));
      }
      if (instruction->opcode() != Opcode::kConstant) continue;
      if (!instruction->shape().is_array())
        return unimplemented(str_cat("a tuple constant on the CUDA device: %", instruction->name()), instruction->location());
      if (instruction->constant_value != ConstantValue::kWritten)
        return invalid_argument(str_cat("constant %", instruction->name(), " has no value in the text"),
                                instruction->location());
      INSITU_ASSIGN_OR_RETURN(DevicePointer pointer, device.allocate(instruction->literal.size_bytes()));
      executable->constants_.emplace(instruction, pointer);
      INSITU_RETURN_IF_ERROR(
          device.copy_to_device(pointer, instruction->literal.untyped_data(), instruction->literal.size_bytes()));
    }
  }
  return executable;
}

CudaExecutable::~CudaExecutable() {
  for (const auto& [instruction, pointer] : constants_) (void)device_.free(pointer);
  for (const auto& [instruction, pointer] : grid_tables_) (void)device_.free(pointer);
}

StatusOr<std::vector<DevicePointer>> CudaExecutable::run_on_device(std::span<const DevicePointer> argument_leaves,
                                                                   CudaStats* stats) {
  CudaStats local;
  CudaStats& counted = stats != nullptr ? *stats : local;
  const Computation& entry = *module_->entry();
  std::vector<Leaves> parameters;
  size_t next = 0;
  for (int64_t p = 0; p < entry.parameter_count(); ++p) {
    const int64_t count = entry.parameter(p)->shape().leaf_count();
    if (next + static_cast<size_t>(count) > argument_leaves.size())
      return invalid_argument(str_cat("the module's parameters have more leaves than the ", argument_leaves.size(),
                                      " device pointers given"));
    parameters.emplace_back(argument_leaves.begin() + static_cast<int64_t>(next),
                            argument_leaves.begin() + static_cast<int64_t>(next + static_cast<size_t>(count)));
    next += static_cast<size_t>(count);
  }
  if (next != argument_leaves.size())
    return invalid_argument(str_cat("the module's parameters have ", next, " leaves, got ", argument_leaves.size(),
                                    " device pointers"));
  Run run{*this, counted, {}};
  INSITU_ASSIGN_OR_RETURN(Leaves result, run.run(entry, plan_.steps, parameters));
  // Result leaves the run allocated become the caller's; a constant's (the executable keeps it)
  // is copied out so every pointer returned is the caller's to free or already the caller's.
  for (DevicePointer& leaf : result) {
    const auto constant = std::find_if(constants_.begin(), constants_.end(),
                                       [&](const auto& entry) { return entry.second == leaf; });
    if (constant == constants_.end()) continue;
    const int64_t bytes = constant->first->literal.size_bytes();
    INSITU_ASSIGN_OR_RETURN(DevicePointer copy, run.allocate(bytes));
    INSITU_RETURN_IF_ERROR(device_.copy_on_device(copy, leaf, bytes));
    counted.bytes_copied_on_device += bytes;
    leaf = copy;
  }
  for (DevicePointer leaf : result) {
    auto it = std::find(run.allocated.begin(), run.allocated.end(), leaf);
    if (it != run.allocated.end()) run.allocated.erase(it);  // not freed with the run's temps
  }
  return result;
}

StatusOr<Literal> CudaExecutable::run(std::span<const Literal> arguments, CudaStats* stats) {
  CudaStats local;
  CudaStats& counted = stats != nullptr ? *stats : local;
  const Computation& entry = *module_->entry();
  if (static_cast<int64_t>(arguments.size()) != entry.parameter_count())
    return invalid_argument(str_cat("the module takes ", entry.parameter_count(), " arguments, got ", arguments.size()));
  Run run{*this, counted, {}};
  std::vector<Leaves> parameters;
  for (const Literal& argument : arguments) {
    std::vector<const Literal*> literal_parts;
    literal_leaves(argument, literal_parts);
    Leaves leaves;
    for (const Literal* part : literal_parts) {
      INSITU_ASSIGN_OR_RETURN(DevicePointer pointer, run.allocate(part->size_bytes()));
      INSITU_RETURN_IF_ERROR(device_.copy_to_device(pointer, part->untyped_data(), part->size_bytes()));
      counted.bytes_to_device += part->size_bytes();
      leaves.push_back(pointer);
    }
    parameters.push_back(std::move(leaves));
  }
  INSITU_ASSIGN_OR_RETURN(Leaves result, run.run(entry, plan_.steps, parameters));
  // The result, leaf by leaf, into a literal of the root's shape.
  const Shape& shape = entry.root()->shape();
  size_t next = 0;
  std::function<StatusOr<Literal>(const Shape&)> fetch = [&](const Shape& part) -> StatusOr<Literal> {
    if (part.is_tuple()) {
      std::vector<Literal> elements;
      for (int64_t i = 0; i < part.tuple_size(); ++i) {
        INSITU_ASSIGN_OR_RETURN(Literal element, fetch(part.tuple_shape(i)));
        elements.push_back(std::move(element));
      }
      return Literal::tuple(std::move(elements));
    }
    Literal literal(part);
    INSITU_RETURN_IF_ERROR(device_.copy_to_host(literal.untyped_data(), result.at(next++), literal.size_bytes()));
    counted.bytes_to_host += literal.size_bytes();
    return literal;
  };
  return fetch(shape);
}

}  // namespace insitu::cuda
