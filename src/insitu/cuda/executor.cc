#include "insitu/cuda/executor.h"

#include <algorithm>
#include <unordered_map>

#include "insitu/support/str.h"

namespace insitu::cuda {
namespace {

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
  std::vector<DevicePointer> bases;  // per allocation of the plan: where it lies for this run
  std::unordered_map<DevicePointer, int64_t> in_use;  // the pool blocks this run holds: their bytes
  int64_t held_bytes = 0;

  ~Run() {  // whatever the run still holds goes back to the pool, however it ends
    for (const auto& [block, bytes] : in_use) executable.give_back_block(block, bytes);
  }

  StatusOr<DevicePointer> allocate(int64_t bytes) {
    bytes = std::max<int64_t>(bytes, 1);  // an empty array still has an address
    INSITU_ASSIGN_OR_RETURN(DevicePointer block, executable.take_block(bytes, stats));
    in_use.emplace(block, bytes);
    held_bytes += bytes;
    stats.peak_device_bytes = std::max(stats.peak_device_bytes, held_bytes);
    return block;
  }
  // Takes `block` out of the run: the caller owns it now (a result).
  void hand_over(DevicePointer block) {
    if (auto found = in_use.find(block); found != in_use.end()) {
      held_bytes -= found->second;
      std::lock_guard<std::mutex> lock(executable.pool_mutex_);
      executable.results_out_[block] = found->second;  // release_result may give it back
      in_use.erase(found);
    }
  }
  // `pointer` back to the pool now, when it is one of this run's blocks.
  void give_back(DevicePointer pointer) {
    if (auto block = in_use.find(pointer); block != in_use.end()) {
      held_bytes -= block->second;
      executable.give_back_block(pointer, block->second);
      in_use.erase(block);
    }
  }
  DevicePointer at(const DeviceSlice& slice) const {
    return bases.at(static_cast<size_t>(slice.allocation)) + static_cast<uint64_t>(slice.offset);
  }

  // Every allocation's base: the parameters' are the caller's leaves, the constants' uploaded at
  // create, the outputs' and the temp arena's blocks of the pool for this run.
  Status bind(std::span<const DevicePointer> argument_leaves) {
    const std::vector<DeviceAllocation>& allocations = executable.plan_.allocations;
    bases.assign(allocations.size(), 0);
    for (size_t a = 0; a < allocations.size(); ++a) {
      switch (allocations[a].kind) {
        case AllocationKind::kParameter:
          bases[a] = argument_leaves[static_cast<size_t>(allocations[a].argument_leaf)];
          break;
        case AllocationKind::kConstant: bases[a] = executable.constant_blocks_.at(a); break;
        case AllocationKind::kOutput:
        case AllocationKind::kTemp: {
          if (allocations[a].kind == AllocationKind::kTemp && allocations[a].size == 0) break;  // nothing to hold
          INSITU_ASSIGN_OR_RETURN(bases[a], allocate(allocations[a].size));
          break;
        }
        case AllocationKind::kDynamicView: break;  // not in a CUDA plan (plan_for_cuda refuses it)
      }
    }
    return ok_status();
  }

  // `kernel` over `count` threads with `pointers`, then `numbers`, then the thread count.
  Status launch(const std::string& kernel, int64_t count, std::vector<DevicePointer> pointers,
                std::vector<long long> numbers = {}) {
    long long threads = count;
    std::vector<void*> arguments;
    for (DevicePointer& pointer : pointers) arguments.push_back(&pointer);
    for (long long& number : numbers) arguments.push_back(&number);
    arguments.push_back(&threads);
    ++stats.kernels_launched;
    if (threads == 0) return ok_status();
    return executable.device_.launch(executable.kernels_, kernel, threads, arguments);
  }
  // A split reduce (DeviceStep::finish): (input, init, out) through a scratch block of partials,
  // back in the pool once both kernels are queued.
  Status launch_split(const DeviceStep& step, const std::vector<DevicePointer>& pointers) {
    INSITU_ASSIGN_OR_RETURN(DevicePointer scratch, allocate(step.scratch_bytes));
    Status status = launch(step.kernel, step.threads, {pointers.at(0), scratch});
    if (status.ok()) status = launch(step.finish, step.finish_threads, {pointers.at(1), scratch, pointers.at(2)});
    give_back(scratch);
    return status;
  }

  // A GEMM step (a, b, c): one call per index of its outer batch dimensions, each on the
  // device's GEMM library, else as the plan's kernel over that call's outputs.
  Status run_gemm(const DeviceStep& step, std::vector<DevicePointer> pointers) {
    const GemmCall& g = step.gemm;
    const std::vector<DevicePointer> operands = pointers;
    // A convolution's A and B, back in the pool once the GEMM is queued (on a failure, with the
    // rest of the run's blocks).
    std::vector<DevicePointer> packed;
    for (size_t p = 0; p < step.packs.size(); ++p) {
      INSITU_ASSIGN_OR_RETURN(DevicePointer block, allocate(step.packs[p].bytes));
      packed.push_back(block);
      INSITU_RETURN_IF_ERROR(launch(step.packs[p].kernel, step.packs[p].threads, {pointers.at(p), block}));
      pointers.at(p) = block;
    }
    const uint64_t bytes = static_cast<uint64_t>(byte_width(g.type));
    for (const GemmOffsets& offset : gemm_offsets(g)) {
      const DevicePointer a = pointers.at(0) + static_cast<uint64_t>(offset.a) * bytes;
      const DevicePointer b = pointers.at(1) + static_cast<uint64_t>(offset.b) * bytes;
      const DevicePointer c = pointers.at(2) + static_cast<uint64_t>(offset.c) * bytes;
      Status library = executable.device_.gemm(g, a, b, c);
      if (library.ok()) {
        ++stats.gemms_on_library;
        continue;
      }
      if (library.code() != StatusCode::kUnimplemented) return library;
      INSITU_RETURN_IF_ERROR(launch(step.kernel, g.batch * g.m * g.n, {a, b, c}));
    }
    for (DevicePointer block : packed) give_back(block);
    if (!step.finish.empty()) return launch(step.finish, step.finish_threads, operands);
    return ok_status();
  }

  // A staged sort (DeviceStep::stage): (in0, ..., out0, ...) through a scratch block holding
  // each row's permutation, back in the pool once every launch is queued.
  Status launch_staged(const DeviceStep& step, const std::vector<DevicePointer>& pointers) {
    const size_t operands = pointers.size() / 2;
    INSITU_ASSIGN_OR_RETURN(DevicePointer order, allocate(step.scratch_bytes));
    std::vector<DevicePointer> inputs(pointers.begin(), pointers.begin() + static_cast<int64_t>(operands));
    inputs.push_back(order);
    Status status = launch(step.kernel, step.threads, {order});
    for (const auto& [half, block] : step.stages)
      if (status.ok()) status = launch(step.stage, step.stage_threads, inputs, {half, block});
    std::vector<DevicePointer> gather = inputs;
    gather.insert(gather.end(), pointers.begin() + static_cast<int64_t>(operands), pointers.end());
    if (status.ok()) status = launch(step.finish, step.finish_threads, std::move(gather));
    give_back(order);
    return status;
  }

  // Runs `steps` (a computation's): every value is where the plan's buffer assignment put it,
  // so a step is its kind and its pointers; loops and conditionals read a few bytes back.
  Status run(const std::vector<DeviceStep>& steps) {
    for (const DeviceStep& step : steps) {
      switch (step.kind) {
        case StepKind::kNone: break;
        case StepKind::kCopy: {
          const DevicePointer from = step.from_constant != nullptr ? executable.constant_copies_.at(step.from_constant)
                                                                  : at(step.pointers.at(0));
          INSITU_RETURN_IF_ERROR(executable.device_.copy_on_device(at(step.pointers.at(1)), from, step.bytes));
          if (step.counted) stats.bytes_copied_on_device += step.bytes;
          break;
        }
        case StepKind::kKernel:
        case StepKind::kGemm: {
          for (const DeviceStep::CopyIn& copy : step.copy_in) {  // a custom kernel's output starts as its operand
            INSITU_RETURN_IF_ERROR(executable.device_.copy_on_device(at(copy.to), at(copy.from), copy.bytes));
            stats.bytes_copied_on_device += copy.bytes;
          }
          std::vector<DevicePointer> pointers;
          if (!step.grid_table.empty()) pointers.push_back(executable.grid_tables_.at(step.instruction));
          for (const DeviceSlice& slice : step.pointers) pointers.push_back(at(slice));
          if (step.kind == StepKind::kGemm) {
            INSITU_RETURN_IF_ERROR(run_gemm(step, std::move(pointers)));
          } else if (!step.stage.empty()) {
            INSITU_RETURN_IF_ERROR(launch_staged(step, pointers));
          } else if (!step.finish.empty()) {
            INSITU_RETURN_IF_ERROR(launch_split(step, pointers));
          } else {
            INSITU_RETURN_IF_ERROR(launch(step.kernel, step.threads, std::move(pointers)));
          }
          break;
        }
        case StepKind::kWhile:
          while (true) {
            INSITU_RETURN_IF_ERROR(run(step.nested[0]));
            bool more = false;
            INSITU_RETURN_IF_ERROR(executable.device_.copy_to_host(&more, at(step.pointers.at(0)), 1));
            stats.bytes_to_host += 1;
            if (!more) break;
            INSITU_RETURN_IF_ERROR(run(step.nested[1]));
          }
          break;
        case StepKind::kConditional: {
          const Shape& selector = step.instruction->operand(0)->shape();
          int64_t branch = 0;
          if (selector.element_type() == PrimitiveType::kPred) {
            bool value = false;
            INSITU_RETURN_IF_ERROR(executable.device_.copy_to_host(&value, at(step.pointers.at(0)), 1));
            branch = value ? 0 : 1;  // true_computation first
          } else {
            int32_t value = 0;
            INSITU_RETURN_IF_ERROR(executable.device_.copy_to_host(&value, at(step.pointers.at(0)), 4));
            const int64_t branches = static_cast<int64_t>(step.nested.size());
            branch = value < 0 || value >= branches ? branches - 1 : value;  // XLA: out of range is the last
          }
          stats.bytes_to_host += selector.byte_size();
          INSITU_RETURN_IF_ERROR(run(step.nested.at(static_cast<size_t>(branch))));
          break;
        }
      }
    }
    return ok_status();
  }
};

StatusOr<std::unique_ptr<CudaExecutable>> CudaExecutable::create(std::unique_ptr<Module> module, Device& device,
                                                                 const CustomCallTable* custom_calls,
                                                                 const BufferAssignment* buffers) {
  std::unique_ptr<CudaExecutable> executable(new CudaExecutable(std::move(module), device));
  const Computation& entry = *executable->module_->entry();
  if (buffers == nullptr) {
    INSITU_ASSIGN_OR_RETURN(BufferAssignment own, assign_buffers(*executable->module_, BufferAssignmentOptions::for_cuda()));
    executable->buffers_ = std::make_unique<BufferAssignment>(std::move(own));
    buffers = executable->buffers_.get();
  }
  INSITU_ASSIGN_OR_RETURN(executable->plan_, plan_for_cuda(*executable->module_, *buffers, custom_calls));
  Status leaves;
  auto array_leaves = [&](const Instruction& instruction, std::vector<Shape>& out) {
    instruction.shape().for_each_leaf([&](const Shape& leaf, const ShapeIndex&) {
      if (!leaf.is_array() && leaves.ok())
        leaves = unimplemented(str_cat("a token in %", instruction.name(), " on the CUDA device"), instruction.location());
      out.push_back(leaf);
    });
  };
  for (const Instruction* parameter : entry.parameters()) array_leaves(*parameter, executable->parameter_leaves_);
  array_leaves(*entry.root(), executable->result_leaves_);
  INSITU_RETURN_IF_ERROR(leaves);
  INSITU_ASSIGN_OR_RETURN(executable->kernels_, device.load(executable->plan_.source));
  // The constant allocations, filled once; a constant the assignment put in a buffer of its own
  // (a loop's initial state, written by the loop) is uploaded apart and copied there per run.
  const DevicePlan& plan = executable->plan_;
  for (size_t a = 0; a < plan.allocations.size(); ++a) {
    if (plan.allocations[a].kind != AllocationKind::kConstant) continue;
    INSITU_ASSIGN_OR_RETURN(DevicePointer block, device.allocate(std::max<int64_t>(plan.allocations[a].size, 1)));
    executable->constant_blocks_.emplace(a, block);
  }
  auto check_written = [](const Instruction& constant) -> Status {
    if (constant.constant_value != ConstantValue::kWritten)
      return invalid_argument(str_cat("constant %", constant.name(), " has no value in the text"), constant.location());
    return ok_status();
  };
  for (const auto& [constant, slice] : plan.constants) {
    INSITU_RETURN_IF_ERROR(check_written(*constant));
    const DevicePointer to = executable->constant_blocks_.at(static_cast<size_t>(slice.allocation)) +
                             static_cast<uint64_t>(slice.offset);
    INSITU_RETURN_IF_ERROR(device.copy_to_device(to, constant->literal.untyped_data(), constant->literal.size_bytes()));
  }
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
      if (step.from_constant == nullptr) continue;
      INSITU_RETURN_IF_ERROR(check_written(*step.from_constant));
      const int64_t bytes = step.from_constant->literal.size_bytes();
      INSITU_ASSIGN_OR_RETURN(DevicePointer pointer, device.allocate(std::max<int64_t>(bytes, 1)));
      executable->constant_copies_.emplace(step.from_constant, pointer);
      INSITU_RETURN_IF_ERROR(device.copy_to_device(pointer, step.from_constant->literal.untyped_data(), bytes));
    }
  }
  return executable;
}

CudaExecutable::~CudaExecutable() {
  for (const auto& [allocation, pointer] : constant_blocks_) (void)device_.free(pointer);
  for (const auto& [instruction, pointer] : constant_copies_) (void)device_.free(pointer);
  for (const auto& [instruction, pointer] : grid_tables_) (void)device_.free(pointer);
  for (const auto& [bytes, blocks] : free_blocks_)
    for (DevicePointer block : blocks) (void)device_.free(block);
  // (Results still out are the caller's: it frees them with the device.)
  if (kernels_ != 0) device_.unload(kernels_);
}

StatusOr<DevicePointer> CudaExecutable::take_block(int64_t bytes, CudaStats& stats) {
  {
    std::lock_guard<std::mutex> lock(pool_mutex_);
    if (auto found = free_blocks_.find(bytes); found != free_blocks_.end() && !found->second.empty()) {
      const DevicePointer block = found->second.back();
      found->second.pop_back();
      return block;
    }
  }
  INSITU_ASSIGN_OR_RETURN(DevicePointer block, device_.allocate(bytes));
  stats.device_bytes_allocated += bytes;
  return block;
}

Status CudaExecutable::release_result(DevicePointer result) {
  std::lock_guard<std::mutex> lock(pool_mutex_);
  auto found = results_out_.find(result);
  if (found == results_out_.end())
    return invalid_argument(str_cat("device pointer ", result, " is not a result of this executable's run_on_device ",
                                    "that is still out (an argument, a pointer given back already, or another's)"));
  free_blocks_[found->second].push_back(result);
  results_out_.erase(found);
  return ok_status();
}

void CudaExecutable::give_back_block(DevicePointer block, int64_t bytes) {
  std::lock_guard<std::mutex> lock(pool_mutex_);
  free_blocks_[bytes].push_back(block);
}

StatusOr<std::vector<DevicePointer>> CudaExecutable::run_entry(Run& run,
                                                               std::span<const DevicePointer> argument_leaves) {
  if (argument_leaves.size() != parameter_leaves_.size())
    return invalid_argument(str_cat("the module's parameters have ", parameter_leaves_.size(), " leaves, got ",
                                    argument_leaves.size()));
  INSITU_RETURN_IF_ERROR(run.bind(argument_leaves));
  INSITU_RETURN_IF_ERROR(run.run(plan_.steps));
  std::vector<DevicePointer> result;
  for (const DeviceSlice& slice : plan_.results) result.push_back(run.at(slice));
  return result;
}

StatusOr<std::vector<DevicePointer>> CudaExecutable::run_on_device(std::span<const DevicePointer> argument_leaves,
                                                                   CudaStats* stats) {
  CudaStats local;
  CudaStats& counted = stats != nullptr ? *stats : local;
  Run run{*this, counted};
  INSITU_ASSIGN_OR_RETURN(std::vector<DevicePointer> result, run_entry(run, argument_leaves));
  // An output allocation becomes the caller's (an aliased output is the donated argument's own
  // memory already); a constant's (the executable keeps it) is copied out, so every pointer
  // returned is the caller's to free or already the caller's.
  for (size_t j = 0; j < result.size(); ++j) {
    const DeviceAllocation& allocation = plan_.allocations.at(static_cast<size_t>(plan_.results[j].allocation));
    if (allocation.kind == AllocationKind::kOutput) {
      run.hand_over(result[j]);
    } else if (allocation.kind == AllocationKind::kConstant) {
      const int64_t bytes = result_leaves_[j].byte_size();
      INSITU_ASSIGN_OR_RETURN(DevicePointer copy, run.allocate(bytes));
      INSITU_RETURN_IF_ERROR(device_.copy_on_device(copy, result[j], bytes));
      counted.bytes_copied_on_device += bytes;
      run.hand_over(copy);
      result[j] = copy;
    }
  }
  // Every queued kernel has finished (a failure is this call's) when the pointers are returned.
  INSITU_RETURN_IF_ERROR(device_.synchronize());
  return result;
}

Status CudaExecutable::run_host(std::span<const uint8_t* const> arguments, std::span<uint8_t* const> results,
                                CudaStats* stats) {
  CudaStats local;
  CudaStats& counted = stats != nullptr ? *stats : local;
  if (arguments.size() != parameter_leaves_.size())
    return invalid_argument(str_cat("the module's parameters have ", parameter_leaves_.size(), " leaves, got ",
                                    arguments.size(), " arguments"));
  if (results.size() != result_leaves_.size())
    return invalid_argument(str_cat("the module's result has ", result_leaves_.size(), " leaves, got memory for ",
                                    results.size()));
  Run run{*this, counted};  // every block it takes, arguments included, goes back to the pool at the end
  std::vector<DevicePointer> argument_leaves;
  for (size_t i = 0; i < arguments.size(); ++i) {
    const int64_t bytes = parameter_leaves_[i].byte_size();
    INSITU_ASSIGN_OR_RETURN(DevicePointer pointer, run.allocate(bytes));
    INSITU_RETURN_IF_ERROR(device_.copy_to_device(pointer, arguments[i], bytes));
    counted.bytes_to_device += bytes;
    argument_leaves.push_back(pointer);
  }
  // The argument blocks are this run's own copies: an aliased output is read back from its
  // parameter's block, where it was computed.
  INSITU_ASSIGN_OR_RETURN(std::vector<DevicePointer> result, run_entry(run, argument_leaves));
  for (size_t j = 0; j < results.size(); ++j) {
    const int64_t bytes = result_leaves_[j].byte_size();
    INSITU_RETURN_IF_ERROR(device_.copy_to_host(results[j], result.at(j), bytes));  // waits for the queue
    counted.bytes_to_host += bytes;
  }
  return device_.synchronize();  // no result leaf: the queued work's failure is still this call's
}

StatusOr<Literal> CudaExecutable::run(std::span<const Literal> arguments, CudaStats* stats) {
  const Computation& entry = *module_->entry();
  if (static_cast<int64_t>(arguments.size()) != entry.parameter_count())
    return invalid_argument(str_cat("the module takes ", entry.parameter_count(), " arguments, got ", arguments.size()));
  std::vector<const Literal*> argument_parts;
  for (const Literal& argument : arguments) literal_leaves(argument, argument_parts);
  std::vector<const uint8_t*> argument_bytes;
  for (size_t i = 0; i < argument_parts.size(); ++i) {
    if (i < parameter_leaves_.size() && !argument_parts[i]->shape().compatible(parameter_leaves_[i]))
      return invalid_argument(str_cat("argument leaf ", i, " has shape ", argument_parts[i]->shape().to_string(false),
                                      " but the parameter expects ", parameter_leaves_[i].to_string(false)));
    argument_bytes.push_back(static_cast<const uint8_t*>(argument_parts[i]->untyped_data()));
  }
  Literal result(entry.root()->shape());
  std::vector<uint8_t*> result_bytes;
  entry.root()->shape().for_each_leaf([&](const Shape& leaf, const ShapeIndex& index) {
    if (leaf.is_array()) result_bytes.push_back(static_cast<uint8_t*>(result.mutable_subliteral(index)->untyped_data()));
  });
  INSITU_RETURN_IF_ERROR(run_host(argument_bytes, result_bytes, stats));
  return result;
}

}  // namespace insitu::cuda
