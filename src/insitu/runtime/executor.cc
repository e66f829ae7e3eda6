// The executor: runs compiled programs (program.h) over the allocations of one call.
// Executable::execute (executable.cc) validates arguments and sets up the allocation bases.
#include "insitu/runtime/executor.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <memory>

#include "insitu/evaluator/collectives.h"
#include "insitu/ir/computation.h"
#include "insitu/ir/module.h"
#include "insitu/runtime/fallback_kernels.h"
#include "insitu/runtime/kernels.h"
#include "insitu/runtime/reduce_combiner.h"
#include "insitu/support/str.h"

namespace insitu::runtime_internal {

Literal Executor::read_literal(const Shape& shape, const std::vector<Leaf>& leaves) const {
  Literal literal(shape);
  for (const Leaf& leaf : leaves) {
    if (leaf.allocation < 0) continue;
    Literal* target = literal.mutable_subliteral(leaf.index);
    INSITU_CHECK(target != nullptr) << "leaf " << shape_index_to_string(leaf.index) << " of " << shape.to_string();
    const uint8_t* from = address(leaf);
    if (leaf.scalar) {
      const int64_t width = byte_width(leaf.shape->element_type());
      for (int64_t i = 0; i < target->element_count(); ++i)
        std::memcpy(target->untyped_data() + i * width, from, static_cast<size_t>(width));
    } else if (target->size_bytes() > 0) {
      std::memcpy(target->untyped_data(), from, static_cast<size_t>(target->size_bytes()));
    }
  }
  return literal;
}

void Executor::write_literal(const Literal& literal, const std::vector<Leaf>& leaves) {
  for (const Leaf& leaf : leaves) {
    if (leaf.allocation < 0) continue;
    const Literal* source = literal.subliteral(leaf.index);
    INSITU_CHECK(source != nullptr && source->size_bytes() == leaf.size && !leaf.scalar)
        << "result leaf " << shape_index_to_string(leaf.index) << " does not fit its slice";
    copy_bytes_parallel(pool_, address(leaf), source->untyped_data(), leaf.size);
  }
}

void Executor::move_leaves(const std::vector<Leaf>& from, const std::vector<Leaf>& to) {
  INSITU_CHECK(from.size() == to.size()) << "leaf counts differ across a call boundary";
  for (size_t i = 0; i < from.size(); ++i) {
    if (from[i].allocation < 0 || from[i].same_memory(to[i])) continue;
    if (from[i].scalar) {
      const int64_t width = byte_width(from[i].shape->element_type());
      for (int64_t k = 0; k < to[i].size / width; ++k) std::memcpy(address(to[i]) + k * width, address(from[i]), width);
    } else {
      std::memmove(address(to[i]), address(from[i]), static_cast<size_t>(to[i].size));
    }
    stats_.bytes_copied += to[i].size;  // a boundary copy buffer assignment did not avoid
  }
}

Status Executor::check_deadline(const Instruction& where) const {
  if (!deadline_ || std::chrono::steady_clock::now() < *deadline_) return ok_status();
  return resource_exhausted(str_cat("the call ran past its ", timeout_seconds_, " s deadline (at %", where.name(),
                                    "); raise the timeout or check that the loop ends"),
                            where.location());
}

Status Executor::run(const Program& program) {
  for (const Step& step : program.steps) {
    if (deadline_) INSITU_RETURN_IF_ERROR(check_deadline(*step.instruction));
    const std::chrono::steady_clock::time_point start =
        profile_ ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point();
    Status status = (this->*step.run)(step);
    stats_.bytes_written += step.bytes_written;
    stats_.bytes_staged += step.bytes_staged;
    if (profile_) {
      std::pair<int64_t, double>& time = profile_times_[step.instruction];
      ++time.first;
      time.second += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    }
    if (!status.ok()) return status.with_location(step.instruction->location());
  }
  return ok_status();
}

std::vector<ExecutionStats::StepTime> Executor::step_times() const {
  std::vector<ExecutionStats::StepTime> times;
  for (const auto& [instruction, time] : profile_times_)
    times.push_back({instruction->name(), std::string(opcode_name(instruction->opcode())), time.first, time.second});
  std::sort(times.begin(), times.end(), [](const auto& a, const auto& b) { return a.seconds > b.seconds; });
  return times;
}

Status Executor::run_constant(const Step& step) {
  write_literal(step.instruction->literal, step.outputs);
  return ok_status();
}

Status Executor::run_copy(const Step& step) {
  // A tuple-shaped copy copies every leaf (operand and result leaves are in one order).
  ++stats_.copies_executed;
  for (size_t i = 0; i < step.outputs.size(); ++i) {
    const Leaf& from = step.operands[0][i];
    const Leaf& to = step.outputs[i];
    if (from.same_memory(to)) continue;
    if (from.scalar) {
      move_leaves({from}, {to});
      continue;
    }
    stats_.bytes_copied += to.size;
    copy_bytes_parallel(pool_, address(to), address(from), to.size);
  }
  return ok_status();
}

Status Executor::run_copy_start(const Step& step) {
  // (destination, source, context): the copy happens here; copy-done forwards {0}.
  const Leaf& from = step.operands[0][0];
  for (const Leaf& to : step.outputs) {
    if (to.index.size() == 1 && to.index[0] == 0 && !from.same_memory(to)) {
      ++stats_.copies_executed;
      stats_.bytes_copied += to.size;
      copy_bytes_parallel(pool_, address(to), address(from), to.size);
    }
  }
  return ok_status();
}

// The selected kernel over views of this call's memory; staged operands read a copy.
Status Executor::run_native(const Step& step) {
  ArrayView inline_views[kInlineViews];
  std::vector<ArrayView> heap_views;
  const size_t operand_count = step.operands.size(), output_count = step.outputs.size();
  ArrayView* views = bind_views(step, /*with_outputs=*/true, inline_views, heap_views);
  std::vector<std::unique_ptr<uint64_t[]>> staged;
  for (int i : step.staged) {
    ArrayView& operand = views[i];
    const int64_t bytes = operand.byte_size();
    staged.push_back(std::make_unique<uint64_t[]>(static_cast<size_t>((bytes + 7) / 8)));
    std::memcpy(staged.back().get(), operand.data, static_cast<size_t>(bytes));
    operand.data = reinterpret_cast<uint8_t*>(staged.back().get());
  }
  return step.kernel.run(KernelCall{*step.instruction, step.kernel.plan.get(),
                                    std::span<const ArrayView>(views, operand_count),
                                    std::span<const ArrayView>(views + operand_count, output_count), pool_});
}

Status Executor::run_dynamic_view(const Step& step) {
  ArrayView inline_views[kInlineViews];
  std::vector<ArrayView> heap_views;
  ArrayView* views = bind_views(step, /*with_outputs=*/false, inline_views, heap_views);
  bases_[step.outputs[0].allocation] =
      views[0].data + dynamic_view_offset(*step.instruction, std::span<const ArrayView>(views, step.operands.size()));
  return ok_status();
}

ArrayView* Executor::bind_views(const Step& step, bool with_outputs, ArrayView (&inline_views)[kInlineViews],
                                std::vector<ArrayView>& heap_views) const {
  const size_t operand_count = step.operands.size(), count = operand_count + (with_outputs ? step.outputs.size() : 0);
  ArrayView* views = inline_views;
  if (count > kInlineViews) {
    heap_views.resize(count);
    views = heap_views.data();
  }
  const Binding* bindings = step.bindings.data();
  const int64_t allocations = static_cast<int64_t>(bases_.size());
  for (size_t i = 0; i < count; ++i) {
    const Binding& binding = bindings[i];
    INSITU_CHECK(binding.allocation >= 0 && binding.allocation < allocations) << "operand or output without memory";
    views[i] = ArrayView{bases_[binding.allocation] + binding.offset, binding.shape, binding.scalar};
  }
  return views;
}

std::vector<Literal> Executor::read_operands(const Step& step) const {
  std::vector<Literal> values;
  values.reserve(step.operands.size());
  for (size_t i = 0; i < step.operands.size(); ++i)
    values.push_back(read_literal(step.instruction->operand(i)->shape(), step.operands[i]));
  return values;
}

Status Executor::run_fallback(const Step& step) {
  ++stats_.fallback_ops_executed;
  const std::vector<Literal> values = read_operands(step);
  std::vector<const Literal*> pointers;
  for (const Literal& value : values) pointers.push_back(&value);
  EvaluatorOptions options;
  options.custom_calls = custom_calls_;
  options.device = device_;
  INSITU_ASSIGN_OR_RETURN(Literal result, insitu::run_fallback(*step.instruction, pointers, options));
  write_literal(result, step.outputs);
  return ok_status();
}

StatusOr<std::vector<int64_t>> Executor::collective_group(const Instruction& instruction) const {
  const std::string what = str_cat(opcode_name(instruction.opcode()), " %", instruction.name());
  if (device_ == nullptr) {  // one device, unless the module says more
    const DeviceGrid grid = device_grid(*instruction.parent()->parent());
    if (grid.devices() > 1)
      return invalid_argument(str_cat(what, ": the module runs on ", grid.devices(),
                                      " devices: run every device (insitu run does) for its collectives"),
                              instruction.location());
    return std::vector<int64_t>{0};
  }
  INSITU_ASSIGN_OR_RETURN(std::vector<std::vector<int64_t>> groups, collective_device_groups(instruction, device_->grid));
  for (std::vector<int64_t>& group : groups)
    if (std::find(group.begin(), group.end(), device_->device) != group.end()) return std::move(group);
  return invalid_argument(str_cat(what, ": device ", device_->device, " is in none of its replica_groups"),
                          instruction.location());
}

namespace {

// The error for a collective whose written result does not fit its group's size.
Status group_size_error(const Instruction& instruction, int64_t members, int64_t want_bytes, int64_t have_bytes,
                        const DeviceContext* device) {
  const DeviceGrid grid = device != nullptr ? device->grid : DeviceGrid{};
  return invalid_argument(str_cat(opcode_name(instruction.opcode()), " %", instruction.name(), ": over a group of ",
                                  members, " device(s) the result holds ", want_bytes, " bytes, not the written ",
                                  have_bytes, "; the module runs ", grid.replicas, " replica(s) x ", grid.partitions,
                                  " partition(s): make replica_groups or the shape agree"),
                          instruction.location());
}

std::string collective_name(const Instruction& instruction) {
  return str_cat(opcode_name(instruction.opcode()), " %", instruction.name());
}

}  // namespace

Status Executor::run_all_reduce(const Step& step) {
  const Instruction& instruction = *step.instruction;
  // In place when buffer assignment gave a result its operand's buffer (the in-place pair of
  // dataflow.cc); otherwise the operand is its starting value.
  for (size_t i = 0; i < step.outputs.size(); ++i) {
    const Leaf& from = step.operands[i][0];
    const Leaf& to = step.outputs[i];
    if (!from.same_memory(to)) copy_bytes_parallel(pool_, address(to), address(from), to.size);
  }
  INSITU_ASSIGN_OR_RETURN(std::vector<int64_t> group, collective_group(instruction));
  if (group.size() == 1) return ok_status();  // the sum of one array is itself
  const std::optional<kernels::Combiner> combiner = kernels::simple_combiner(*instruction.to_apply());
  for (size_t i = 0; i < step.outputs.size(); ++i) {  // a combined all-reduce: each array on its own
    const Leaf& to = step.outputs[i];
    const PrimitiveType type = instruction.operand(i)->shape().element_type();
    INSITU_RETURN_IF_ERROR(device_->communicator
                               ->all_reduce_in_place(device_->device, group, type, combiner->opcode, address(to),
                                                     to.size / byte_width(type), collective_name(instruction))
                               .with_location(instruction.location()));
  }
  return ok_status();
}

Status Executor::run_all_gather(const Step& step) {
  const Instruction& instruction = *step.instruction;
  const Leaf& from = step.operands[0][0];
  const Leaf& to = step.outputs[0];
  INSITU_ASSIGN_OR_RETURN(std::vector<int64_t> group, collective_group(instruction));
  // The result holds one piece per member: a shape written for another group size is refused
  // (all-gather of f32[4] to f32[16] in a one-replica module), never read past the operand.
  const int64_t members = static_cast<int64_t>(group.size());
  if (to.size != from.size * members) return group_size_error(instruction, members, from.size * members, to.size, device_);
  if (members == 1) {
    copy_bytes_parallel(pool_, address(to), address(from), to.size);
    return ok_status();
  }
  return device_->communicator
      ->all_gather(device_->device, group, address(from), from.size, address(to), collective_name(instruction))
      .with_location(instruction.location());
}

Status Executor::run_reduce_scatter(const Step& step) {
  const Instruction& instruction = *step.instruction;
  const Leaf& from = step.operands[0][0];
  const Leaf& to = step.outputs[0];
  INSITU_ASSIGN_OR_RETURN(std::vector<int64_t> group, collective_group(instruction));
  const int64_t members = static_cast<int64_t>(group.size());
  if (from.size != to.size * members) return group_size_error(instruction, members, from.size / members, to.size, device_);
  if (members == 1) {
    copy_bytes_parallel(pool_, address(to), address(from), to.size);
    return ok_status();
  }
  const std::optional<kernels::Combiner> combiner = kernels::simple_combiner(*instruction.to_apply());
  const PrimitiveType type = instruction.shape().element_type();
  return device_->communicator
      ->reduce_scatter(device_->device, group, type, combiner->opcode, address(from), address(to),
                       to.size / byte_width(type), collective_name(instruction))
      .with_location(instruction.location());
}

Status Executor::run_all_to_all(const Step& step) {
  const Instruction& instruction = *step.instruction;
  INSITU_ASSIGN_OR_RETURN(std::vector<int64_t> group, collective_group(instruction));
  const int64_t members = static_cast<int64_t>(group.size());
  std::vector<const uint8_t*> send;
  std::vector<uint8_t*> receive;
  int64_t bytes = 0;
  if (instruction.shape().is_array()) {  // one array split along a dimension with only 1s before it
    const Leaf& from = step.operands[0][0];
    const Leaf& to = step.outputs[0];
    if (from.size % members != 0 || to.size != from.size)
      return group_size_error(instruction, members, from.size, to.size, device_);
    bytes = from.size / members;
    for (int64_t j = 0; j < members; ++j) {
      send.push_back(address(from) + j * bytes);
      receive.push_back(address(to) + j * bytes);
    }
  } else {  // operand j goes to member j; result k comes from member k
    if (static_cast<int64_t>(step.operands.size()) != members || static_cast<int64_t>(step.outputs.size()) != members)
      return invalid_argument(str_cat(collective_name(instruction), ": has ", step.operands.size(),
                                      " operands and results for a group of ", members),
                              instruction.location());
    bytes = step.operands[0][0].size;
    for (int64_t j = 0; j < members; ++j) {
      send.push_back(address(step.operands[j][0]));
      receive.push_back(address(step.outputs[j]));
    }
  }
  if (members == 1) {
    std::memcpy(receive[0], send[0], static_cast<size_t>(bytes));
    return ok_status();
  }
  return device_->communicator->all_to_all(device_->device, group, send, receive, bytes, collective_name(instruction))
      .with_location(instruction.location());
}

Status Executor::run_collective_broadcast(const Step& step) {
  const Instruction& instruction = *step.instruction;
  INSITU_ASSIGN_OR_RETURN(std::vector<int64_t> group, collective_group(instruction));
  for (size_t i = 0; i < step.outputs.size(); ++i) {  // each array from the group's first member
    const Leaf& from = step.operands[i][0];
    const Leaf& to = step.outputs[i];
    if (!from.same_memory(to)) copy_bytes_parallel(pool_, address(to), address(from), to.size);
    if (group.size() == 1) continue;
    INSITU_RETURN_IF_ERROR(device_->communicator
                               ->broadcast(device_->device, group, address(to), to.size, collective_name(instruction))
                               .with_location(instruction.location()));
  }
  return ok_status();
}

Status Executor::run_device_id(const Step& step) {
  const uint32_t id = device_ == nullptr ? 0
                      : step.instruction->opcode() == Opcode::kReplicaId ? static_cast<uint32_t>(device_->replica())
                                                                          : static_cast<uint32_t>(device_->partition());
  std::memcpy(address(step.outputs[0]), &id, sizeof id);
  return ok_status();
}

Status Executor::run_collective_permute(const Step& step) {
  const Instruction& instruction = *step.instruction;
  if (device_ == nullptr) INSITU_RETURN_IF_ERROR(collective_group(instruction).status());  // one device, or an error
  const DeviceContext alone;  // one device: its own source or none
  INSITU_ASSIGN_OR_RETURN(PermuteRoute route, collective_permute_route(instruction, device_ != nullptr ? *device_ : alone));
  for (size_t i = 0; i < step.outputs.size(); ++i) {  // a combined permute: each array by the same pairs
    const Leaf& from = step.operands[i][0];
    const Leaf& to = step.outputs[i];
    if (route.source < 0) std::memset(address(to), 0, static_cast<size_t>(to.size));  // XLA: no source, zeros
    if (device_ == nullptr) {
      if (route.source == 0) copy_bytes_parallel(pool_, address(to), address(from), to.size);
      continue;
    }
    INSITU_RETURN_IF_ERROR(device_->communicator
                               ->permute(device_->device, route, address(from), address(to), to.size,
                                         collective_name(instruction))
                               .with_location(instruction.location()));
  }
  return ok_status();
}

void Executor::record_kernel_run(const Step& step, std::chrono::steady_clock::time_point start) {
  const auto now = std::chrono::steady_clock::now();
  stats_.kernel_runs.push_back({step.instruction->custom_call.target,
                                std::chrono::duration<double>(start - started_).count(),
                                std::chrono::duration<double>(now - start).count()});
}

// A natively registered custom-call over the step's slices, without Literal copies (create
// chose this path: every operand and result leaf is a plain materialized array).
Status Executor::run_native_custom_call(const Step& step) {
  const auto start = std::chrono::steady_clock::now();
  std::vector<ArrayView> operands, outputs;
  for (const std::vector<Leaf>& leaves : step.operands) operands.push_back(view(leaves[0]));
  for (const Leaf& leaf : step.outputs) outputs.push_back(view(leaf));
  INSITU_RETURN_IF_ERROR(step.native_custom_call(*step.instruction, operands, outputs, pool_, stats_));
  record_kernel_run(step, start);
  return ok_status();
}

Status Executor::run_custom_call(const Step& step) {
  const auto start = std::chrono::steady_clock::now();
  const std::vector<Literal> values = read_operands(step);
  std::vector<const Literal*> pointers;
  for (const Literal& value : values) pointers.push_back(&value);
  INSITU_ASSIGN_OR_RETURN(Literal result, insitu::run_custom_call(*step.instruction, pointers, custom_calls_));
  write_literal(result, step.outputs);
  record_kernel_run(step, start);
  return ok_status();
}

Status Executor::run_while(const Step& step) {
  const Program& condition = *step.callees[0];
  const Program& body = *step.callees[1];
  const int64_t copied_before = stats_.bytes_copied, staged_before = stats_.bytes_staged;
  if (step.parallel_grid) {
    bool ran = false;
    INSITU_RETURN_IF_ERROR(run_parallel_grid(step, ran));
    if (ran) {
      const ParallelGridPlan& plan = *step.parallel_grid;
      record_grid_loop(step, plan.outer * plan.inner, stats_.bytes_copied - copied_before,
                       stats_.bytes_staged - staged_before, plan.parallel_axes, "");
      return ok_status();
    }
  }
  int64_t iterations = 0;
  move_leaves(step.operands[0], body.parameters[0]);
  move_leaves(step.operands[0], condition.parameters[0]);
  while (true) {
    INSITU_RETURN_IF_ERROR(run(condition));
    if (address(condition.root[0])[0] == 0) break;
    INSITU_RETURN_IF_ERROR(run(body));
    ++iterations;
    if (deadline_) INSITU_RETURN_IF_ERROR(check_deadline(*step.instruction));  // the back-edge
    move_leaves(body.root, body.parameters[0]);
    move_leaves(body.root, condition.parameters[0]);
  }
  move_leaves(body.parameters[0], step.outputs);
  if (step.grid_loop)
    record_grid_loop(step, iterations, stats_.bytes_copied - copied_before, stats_.bytes_staged - staged_before, 0,
                     step.parallel_grid ? "it ran on one thread" : step.in_order_because);
  return ok_status();
}

namespace {

// Adds what a worker counted to the call's stats.
void merge_stats(ExecutionStats& into, const ExecutionStats& from) {
  into.copies_executed += from.copies_executed;
  into.bytes_copied += from.bytes_copied;
  into.bytes_written += from.bytes_written;
  into.bytes_staged += from.bytes_staged;
  into.fallback_ops_executed += from.fallback_ops_executed;
  into.kernel_runs.insert(into.kernel_runs.end(), from.kernel_runs.begin(), from.kernel_runs.end());
}

}  // namespace

Status Executor::run_parallel_grid(const Step& step, bool& ran) {
  const ParallelGridPlan& plan = *step.parallel_grid;
  const int64_t chunks = pool_.chunk_count(plan.outer);
  if (chunks < 2 || owner_ == nullptr) return ok_status();
  ran = true;
  const Program& body = *step.callees[1];
  move_leaves(step.operands[0], body.parameters[0]);  // the initial state (shared, and the private copy's source)
  std::vector<Status> statuses(chunks);
  std::vector<ExecutionStats> chunk_stats(chunks);
  pool_.parallel_for(plan.outer, [&](int64_t begin, int64_t end) {
    int64_t chunk = 0;  // the whole range when the pool ran it inline
    for (int64_t c = 0; c < chunks; ++c)
      if (ThreadPool::chunk_range(plan.outer, chunks, c) == std::pair(begin, end)) chunk = c;
    statuses[chunk] = run_grid_chunk(step, begin * plan.inner, end * plan.inner, chunk_stats[chunk]);
  });
  for (int64_t c = 0; c < chunks; ++c) {
    merge_stats(stats_, chunk_stats[c]);
    INSITU_RETURN_IF_ERROR(statuses[c]);
  }
  move_leaves(body.parameters[0], step.outputs);  // shared leaves: the private ones are read by no one
  return ok_status();
}

Status Executor::run_grid_chunk(const Step& step, int64_t first, int64_t last, ExecutionStats& stats) {
  const ParallelGridPlan& plan = *step.parallel_grid;
  const Program& body = *step.callees[1];
  INSITU_ASSIGN_OR_RETURN(std::shared_ptr<Buffer> memory, owner_->take_arena(plan.allocation_size));
  struct Lease {
    Executable* owner;
    std::shared_ptr<Buffer>& memory;
    ~Lease() { owner->return_arena(std::move(memory)); }
  } lease{owner_, memory};
  std::vector<uint8_t*> bases(bases_.begin(), bases_.end());
  bases[plan.allocation] = memory->data();
  for (const Leaf& leaf : plan.private_state) std::memcpy(bases[leaf.allocation] + leaf.offset, address(leaf), leaf.size);
  // The worker's kernels run on its thread alone: planned for one thread, a GEMM is one call,
  // where split for the whole pool (and run inline, the pool busy with the grid) it was several
  // smaller ones, 1.5x the time of insitu's own dot for a 128-block Pallas matmul on 2 threads.
  static ThreadPool one_thread(1);  // runs everything on its caller: concurrent callers share nothing
  Executor worker(bases, one_thread, stats, custom_calls_, 0, device_);
  worker.deadline_ = deadline_;
  worker.timeout_seconds_ = timeout_seconds_;
  worker.owner_ = owner_;
  uint8_t* counter = worker.address(plan.counter);
  const bool wide = plan.counter.shape->element_type() == PrimitiveType::kS64;
  auto set_counter = [&](int64_t value) {
    if (wide) std::memcpy(counter, &value, sizeof(value));
    else {
      const int32_t narrow = static_cast<int32_t>(value);
      std::memcpy(counter, &narrow, sizeof(narrow));
    }
  };
  auto counter_value = [&]() -> int64_t {
    if (wide) {
      int64_t value;
      std::memcpy(&value, counter, sizeof(value));
      return value;
    }
    int32_t value;
    std::memcpy(&value, counter, sizeof(value));
    return value;
  };
  set_counter(first);
  for (int64_t i = first; i < last; ++i) {
    INSITU_RETURN_IF_ERROR(worker.run(body));
    if (deadline_) INSITU_RETURN_IF_ERROR(worker.check_deadline(*step.instruction));
    worker.move_leaves(body.root, body.parameters[0]);
  }
  if (counter_value() != last)
    return internal_error(str_cat("the grid loop %", step.instruction->name(), " ran steps ", first, "..", last,
                                  " on a worker but its counter reads ", counter_value()));
  return ok_status();
}

void Executor::record_grid_loop(const Step& step, int64_t steps, int64_t bytes_copied, int64_t bytes_staged,
                                int64_t parallel_axes, std::string_view in_order_because) {
  const GridLoopInfo& loop = *step.grid_loop;
  ExecutionStats::KernelGrid* entry = nullptr;
  for (ExecutionStats::KernelGrid& grid : stats_.kernel_grids)
    if (grid.kernel == loop.kernel && grid.grid == loop.grid && grid.aliases == loop.aliases) entry = &grid;
  if (entry == nullptr) {
    entry = &stats_.kernel_grids.emplace_back();
    entry->kernel = loop.kernel;
    entry->grid = loop.grid;
    entry->aliases = loop.aliases;
  }
  ++entry->runs;
  entry->steps += steps;
  entry->bytes_copied += bytes_copied;
  entry->bytes_staged += bytes_staged;
  entry->parallel_axes = parallel_axes;
  entry->in_order_because = std::string(in_order_because);
}

Status Executor::run_conditional(const Step& step) {
  const Leaf& selector = step.operands[0][0];
  const int64_t branches = static_cast<int64_t>(step.callees.size());
  int64_t branch;
  const uint8_t* data = address(selector);
  if (selector.shape->element_type() == PrimitiveType::kPred) {
    branch = data[0] != 0 ? 0 : 1;
  } else {
    int32_t index;
    std::memcpy(&index, data, sizeof(index));
    branch = (index < 0 || index >= branches) ? branches - 1 : index;  // XLA: out of range -> last
  }
  const Program& callee = *step.callees[branch];
  move_leaves(step.operands[1 + branch], callee.parameters[0]);
  INSITU_RETURN_IF_ERROR(run(callee));
  move_leaves(callee.root, step.outputs);
  return ok_status();
}

Status Executor::run_call(const Step& step) {
  const Program& callee = *step.callees[0];
  for (size_t i = 0; i < step.operands.size(); ++i) move_leaves(step.operands[i], callee.parameters[i]);
  INSITU_RETURN_IF_ERROR(run(callee));
  move_leaves(callee.root, step.outputs);
  return ok_status();
}

}  // namespace insitu::runtime_internal
