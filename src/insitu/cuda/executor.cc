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
  std::unordered_map<DevicePointer, int64_t> in_use;  // the pool blocks this run holds: their bytes
  std::unordered_map<DevicePointer, int64_t> holders;  // per pointer: the live values holding it
  int64_t held_bytes = 0;

  ~Run() {  // whatever the run still holds goes back to the pool, however it ends
    for (const auto& [block, bytes] : in_use) executable.give_back_block(block, bytes);
  }

  StatusOr<DevicePointer> allocate(int64_t bytes) {
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
  void hold(const Leaves& value) {
    for (DevicePointer pointer : value) ++holders[pointer];
  }
  // A value is dead: a block no live value holds goes back to the pool (a parameter's or a
  // constant's memory is not the run's, and stays).
  void drop(const Leaves& value) {
    for (DevicePointer pointer : value) {
      auto holder = holders.find(pointer);
      if (holder == holders.end() || --holder->second > 0) continue;
      holders.erase(holder);
      give_back(pointer);
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

  // Runs `steps` (a computation's) with `parameters` bound (held by the caller); returns the
  // root's leaves, held once for the caller (who drops them when done).
  StatusOr<Leaves> run(const Computation& computation, const std::vector<DeviceStep>& steps,
                       const std::vector<Leaves>& parameters) {
    std::unordered_map<const Instruction*, Leaves> values;
    struct Release {  // on failure too: the values still live are dropped
      Run& run;
      std::unordered_map<const Instruction*, Leaves>& values;
      ~Release() {
        for (const auto& [instruction, value] : values) run.drop(value);
      }
    } release{*this, values};
    auto leaves = [&](const Instruction* instruction) -> const Leaves& { return values.at(instruction); };
    for (const DeviceStep& step : steps) {
      const Instruction& instruction = *step.instruction;
      Leaves result;
      bool held = false;  // a nested run's result comes held already
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
            if (step.write_over >= 0) {  // the donated operand's memory (entry_writes_in_place)
              pointers.push_back(pointers.at(static_cast<size_t>(step.write_over)));
              result.push_back(pointers.back());
            }
            for (int64_t k = 0; k < (step.write_over >= 0 ? 0 : shape.is_tuple() ? shape.tuple_size() : 1); ++k) {
              INSITU_ASSIGN_OR_RETURN(DevicePointer out,
                                      allocate((shape.is_tuple() ? shape.tuple_shape(k) : shape).byte_size()));
              pointers.push_back(out);
              result.push_back(out);
            }
          }
          if (step.kind == StepKind::kGemm) {
            INSITU_RETURN_IF_ERROR(run_gemm(step, pointers));
            break;
          }
          if (!step.stage.empty()) {
            INSITU_RETURN_IF_ERROR(launch_staged(step, pointers));
            break;
          }
          if (!step.finish.empty()) {
            INSITU_RETURN_IF_ERROR(launch_split(step, pointers));
            break;
          }
          INSITU_RETURN_IF_ERROR(launch(step.kernel, step.threads, std::move(pointers)));
          break;
        }
        case StepKind::kWhile: {
          Leaves state = leaves(instruction.operand(0));
          hold(state);  // the loop's own hold on its state, iteration after iteration
          struct Holding {
            Run& run;
            Leaves& value;
            bool owned = true;
            ~Holding() {
              if (owned) run.drop(value);
            }
          } holding{*this, state};
          const Computation& condition = *instruction.while_condition();
          const Computation& body = *instruction.while_body();
          while (true) {
            INSITU_ASSIGN_OR_RETURN(Leaves pred, run(condition, step.nested[0], {state}));
            bool more = false;
            Status fetched = executable.device_.copy_to_host(&more, pred.at(0), 1);
            drop(pred);
            INSITU_RETURN_IF_ERROR(fetched);
            stats.bytes_to_host += 1;
            if (!more) break;
            INSITU_ASSIGN_OR_RETURN(Leaves next, run(body, step.nested[1], {state}));
            drop(state);
            state = std::move(next);
          }
          holding.owned = false;
          result = std::move(state);
          held = true;
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
          held = true;
          break;
        }
      }
      if (!held) hold(result);
      values[&instruction] = std::move(result);
      for (const Instruction* dead : step.last_read) {  // queued after their last reader
        auto value = values.find(dead);
        if (value == values.end()) continue;
        drop(value->second);
        values.erase(value);
      }
    }
    Leaves root = values.at(computation.root());
    hold(root);  // the caller's; ~Release drops this run's own
    return root;
  }
};

StatusOr<std::unique_ptr<CudaExecutable>> CudaExecutable::create(std::unique_ptr<Module> module, Device& device,
                                                                 const CustomCallTable* custom_calls) {
  std::unique_ptr<CudaExecutable> executable(new CudaExecutable(std::move(module), device));
  const Computation& entry = *executable->module_->entry();
  INSITU_ASSIGN_OR_RETURN(executable->plan_, plan_for_cuda(entry, custom_calls));
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
  const Computation& entry = *module_->entry();
  std::vector<Leaves> parameters;
  size_t next = 0;
  for (int64_t p = 0; p < entry.parameter_count(); ++p) {
    const int64_t count = entry.parameter(p)->shape().leaf_count();
    if (next + static_cast<size_t>(count) > argument_leaves.size())
      return invalid_argument(str_cat("the module's parameters have more leaves than the ", argument_leaves.size(),
                                      " given"));
    parameters.emplace_back(argument_leaves.begin() + static_cast<int64_t>(next),
                            argument_leaves.begin() + static_cast<int64_t>(next + static_cast<size_t>(count)));
    next += static_cast<size_t>(count);
  }
  if (next != argument_leaves.size())
    return invalid_argument(str_cat("the module's parameters have ", next, " leaves, got ", argument_leaves.size()));
  return run.run(entry, plan_.steps, parameters);
}

StatusOr<std::vector<DevicePointer>> CudaExecutable::run_on_device(std::span<const DevicePointer> argument_leaves,
                                                                   CudaStats* stats) {
  CudaStats local;
  CudaStats& counted = stats != nullptr ? *stats : local;
  const Computation& entry = *module_->entry();
  Run run{*this, counted};
  INSITU_ASSIGN_OR_RETURN(Leaves result, run_entry(run, argument_leaves));
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
  // A donated parameter is its aliased output's memory, as the caller was promised: where the
  // plan computed that output elsewhere (the parameter was read after its producer, say), it is
  // copied over, counted.
  const Shape& root = entry.root()->shape();
  for (const InputOutputAlias& alias : module_->config().input_output_alias) {
    if (!alias.parameter_index.empty() || alias.output_index.size() > 1 ||
        entry.parameter(alias.parameter_number)->shape().leaf_count() != 1)
      continue;
    size_t out = 0, argument = 0;
    if (!alias.output_index.empty()) {
      if (!root.is_tuple()) continue;
      for (int64_t k = 0; k < alias.output_index[0]; ++k) out += static_cast<size_t>(root.tuple_shape(k).leaf_count());
      if (!root.tuple_shape(alias.output_index[0]).is_array()) continue;
    } else if (!root.is_array()) {
      continue;
    }
    for (int64_t p = 0; p < alias.parameter_number; ++p)
      argument += static_cast<size_t>(entry.parameter(p)->shape().leaf_count());
    if (out >= result.size() || result[out] == argument_leaves[argument]) continue;
    const int64_t bytes = entry.parameter(alias.parameter_number)->shape().byte_size();
    INSITU_RETURN_IF_ERROR(device_.copy_on_device(argument_leaves[argument], result[out], bytes));
    counted.bytes_copied_on_device += bytes;
    result[out] = argument_leaves[argument];
  }
  for (DevicePointer leaf : result) run.hand_over(leaf);  // not back to the pool with the run's temps
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
  Leaves argument_leaves;
  for (size_t i = 0; i < arguments.size(); ++i) {
    const int64_t bytes = parameter_leaves_[i].byte_size();
    INSITU_ASSIGN_OR_RETURN(DevicePointer pointer, run.allocate(bytes));
    INSITU_RETURN_IF_ERROR(device_.copy_to_device(pointer, arguments[i], bytes));
    counted.bytes_to_device += bytes;
    argument_leaves.push_back(pointer);
  }
  // The argument blocks are this run's own copies: an aliased output needs no copy over its
  // parameter's block, it is read back from wherever it was computed.
  INSITU_ASSIGN_OR_RETURN(Leaves result, run_entry(run, argument_leaves));
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
