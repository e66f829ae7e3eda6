// Executable::execute: validate, consume donations, set up allocations, run, collect results.
#include <chrono>
#include <cstring>
#include <optional>
#include <unordered_map>

#include "insitu/runtime/executable.h"
#include "insitu/runtime/executor.h"
#include "insitu/runtime/kernels.h"
#include "insitu/support/str.h"

namespace insitu {

using runtime_internal::Executor;
using runtime_internal::Leaf;
using runtime_internal::Program;

namespace {

std::string argument_name(size_t i, const Executable::Argument& argument) {
  return str_cat("argument ", i, " (", argument.describe(), ")");
}

}  // namespace

namespace runtime_internal {

void LatestStats::publish(ExecutionStats stats, std::chrono::steady_clock::time_point finished) {
  // Each thread's slot number is drawn once, on its first call (the only shared write).
  static std::atomic<size_t> next_slot{0};
  thread_local const size_t slot_number = next_slot.fetch_add(1, std::memory_order_relaxed) % kSlots;
  Slot& slot = slots_[slot_number];
  std::lock_guard<std::mutex> lock(slot.mutex);
  if (!slot.finished || *slot.finished <= finished) {  // a thread sharing the slot may have finished later
    slot.finished = finished;
    slot.stats = std::move(stats);
  }
}

ExecutionStats LatestStats::read() const {
  ExecutionStats latest;
  std::optional<std::chrono::steady_clock::time_point> latest_finish;
  for (const Slot& slot : slots_) {
    std::lock_guard<std::mutex> lock(slot.mutex);
    if (slot.finished && (!latest_finish || *slot.finished > *latest_finish)) {
      latest_finish = slot.finished;
      latest = slot.stats;
    }
  }
  return latest;
}

}  // namespace runtime_internal

Status Executable::set_shared_base(const Allocation& allocation, std::span<uint8_t*> bases, ArenaLease& arena) {
  if (allocation.kind == AllocationKind::kTemp) {
    // The shared arena, or a parallel grid loop's per-worker one (the copy its steps use when
    // they run in order; its workers take their own).
    INSITU_ASSIGN_OR_RETURN(std::shared_ptr<Buffer> taken, take_arena(allocation.size));
    bases[allocation.index] = taken->data();
    arena.arenas.push_back(std::move(taken));
  } else if (allocation.kind == AllocationKind::kConstant) {
    bases[allocation.index] = constant_buffers_[allocation.index]->data();
  } else if (allocation.kind != AllocationKind::kDynamicView) {  // a dynamic view's is set by its step
    return internal_error("set_shared_base: a parameter or output allocation");
  }
  return ok_status();
}

StatusOr<std::vector<std::shared_ptr<Buffer>>> Executable::take_arguments(std::vector<BufferHandle>& arguments,
                                                                          const ExecuteOptions& options,
                                                                          Reservations& reservations) const {
  if (arguments.size() != arguments_.size()) {
    return invalid_argument(str_cat("the module takes ", arguments_.size(), " arguments (one per entry parameter leaf)",
                                    ", got ", arguments.size()));
  }
  auto donated = [&](size_t i) { return i < options.donate.size() && options.donate[i]; };
  auto passed_twice = [&](size_t i, size_t j) {
    return invalid_argument(str_cat(argument_name(i, arguments_[i]), " is the same buffer as ",
                                    argument_name(j, arguments_[j]), " and one of them is donated; pass distinct buffers"));
  };
  // What needs no argument's memory: nulls, a handle passed twice with one of them donated,
  // must-alias parameters not donated.
  // (A handle or buffer passed twice is found by look-up of its first position, not pairwise:
  // a training step passes thousands of arguments.)
  bool any_donated = false;
  for (size_t i = 0; i < arguments.size(); ++i) any_donated = any_donated || donated(i);
  std::unordered_map<const void*, size_t> first_position;
  auto passed_before = [&](size_t i, const void* key) -> std::optional<size_t> {
    if (!any_donated) return std::nullopt;
    auto [it, inserted] = first_position.emplace(key, i);
    if (!inserted && (donated(i) || donated(it->second))) return it->second;
    return std::nullopt;
  };
  for (size_t i = 0; i < arguments.size(); ++i) {
    const Argument& expected = arguments_[i];
    if (arguments[i].is_null()) return invalid_argument(argument_name(i, expected) + " is a null buffer handle");
    if (std::optional<size_t> j = passed_before(i, arguments[i].identity())) return passed_twice(i, *j);
    if (expected.must_alias && !donated(i)) {
      return invalid_argument(str_cat("parameter ", expected.parameter_number, " ",
                                      shape_index_to_string(expected.index),
                                      " is must-alias but was not donated: an input configured must-alias at "
                                      "compile time has to be donated at run time"));
    }
  }
  // Then each donated handle is taken for this call (of two calls donating one handle at once,
  // one wins) and the others' buffers held, before any is read: a buffer is read only while
  // this call holds it, never while another call may be consuming its handle.
  std::vector<std::shared_ptr<Buffer>> buffers(arguments.size());
  for (size_t i = 0; i < arguments.size(); ++i) {
    BufferHandle& handle = arguments[i];
    if (donated(i)) {
      buffers[i] = handle.reserve();
      if (buffers[i] != nullptr) reservations.handles.push_back(&handle);
    } else if (handle.is_usable()) {
      buffers[i] = handle.shared_buffer();
    }
    if (buffers[i] == nullptr) {  // consumed by an earlier call, or taken by one running now
      if (handle.is_donated()) return donated_buffer_error(argument_name(i, arguments_[i]));
      return failed_precondition(str_cat(argument_name(i, arguments_[i]),
                                         " is donated to another call running now; donate a handle to one call"));
    }
  }
  first_position.clear();
  for (size_t i = 0; i < arguments.size(); ++i) {
    const Argument& expected = arguments_[i];
    if (!buffers[i]->shape().compatible(expected.shape)) {
      return invalid_argument(str_cat(argument_name(i, expected), " has shape ", buffers[i]->shape().to_string(false),
                                      " but the parameter expects ", expected.shape.to_string(false)));
    }
    if (std::optional<size_t> j = passed_before(i, buffers[i].get())) return passed_twice(i, *j);  // two handles, one buffer
  }
  return buffers;
}

StatusOr<std::vector<BufferHandle>> Executable::execute(std::vector<BufferHandle> arguments,
                                                        const ExecuteOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  ExecutionStats stats;
  stats.peak_memory_bytes = assignment_.peak_memory_bytes();

  // 1. Take the arguments and validate everything before writing any: a failing call leaves
  //    inputs intact, and gives back the donated handles it took.
  Reservations reservations;  // donated handles
  // What each argument's memory is now (an undonated aliased one's becomes a private copy).
  INSITU_ASSIGN_OR_RETURN(std::vector<std::shared_ptr<Buffer>> parameter_buffers,
                          take_arguments(arguments, options, reservations));
  if (on_device_) return execute_on_cuda(parameter_buffers, options, reservations);
  auto donated = [&](size_t i) { return i < options.donate.size() && options.donate[i]; };

  // 2. Allocation bases. Parameters first.
  INSITU_ASSIGN_OR_RETURN(ThreadPool* pool_pointer, pool_for(options.threads));
  ThreadPool& pool = *pool_pointer;
  const std::vector<Allocation>& allocations = assignment_.allocations();
  std::vector<uint8_t*> bases(allocations.size(), nullptr);
  std::vector<bool> owned(arguments.size(), false);  // parameter_buffers[i] may be returned as a result
  for (size_t i = 0; i < arguments.size(); ++i) {
    if (donated(i)) {
      owned[i] = true;
    } else if (arguments_[i].aliased_output) {
      // may-alias, not donated: the program writes this buffer, so it gets a private copy.
      const std::string what = "the private copy of " + argument_name(i, arguments_[i]);
      INSITU_ASSIGN_OR_RETURN(std::shared_ptr<Buffer> copy, Buffer::allocate(arguments_[i].shape, false, what));
      copy_bytes_parallel(pool, copy->data(), parameter_buffers[i]->data(), copy->size_bytes());
      stats.bytes_copied += copy->size_bytes();
      parameter_buffers[i] = std::move(copy);
      owned[i] = true;
    }
  }
  ArenaLease arena{*this, {}};  // back to the idle cache however the call ends
  std::vector<std::shared_ptr<Buffer>> output_buffers(allocations.size());
  const Shape& result_shape = module_->entry()->root()->shape();
  for (const Allocation& allocation : allocations) {
    switch (allocation.kind) {
      case AllocationKind::kParameter:
        if (const int i = allocation_argument_[allocation.index]; i >= 0)
          bases[allocation.index] = parameter_buffers[i]->data();
        break;
      case AllocationKind::kOutput: {
        const Shape* leaf = result_shape.subshape(allocation.output_index);
        const Shape shape = (leaf && leaf->is_array() && leaf->byte_size() == allocation.size)
                                ? *leaf
                                : Shape::array(PrimitiveType::kU8, {allocation.size});
        // The output is named only when its allocation fails: building that text on every call
        // costs more than a small call (an ostringstream and its locale) and serializes
        // concurrent callers on the locale's shared reference count.
        StatusOr<std::shared_ptr<Buffer>> buffer = Buffer::allocate(shape, /*zero=*/false, "an output");
        if (!buffer.ok())
          buffer = Buffer::allocate(shape, /*zero=*/false,
                                    str_cat("output ", shape_index_to_string(allocation.output_index)));
        INSITU_ASSIGN_OR_RETURN(output_buffers[allocation.index], std::move(buffer));
        bases[allocation.index] = output_buffers[allocation.index]->data();
        break;
      }
      case AllocationKind::kTemp:
      case AllocationKind::kConstant:
      case AllocationKind::kDynamicView: INSITU_RETURN_IF_ERROR(set_shared_base(allocation, bases, arena)); break;
    }
  }

  // 3. Run the entry computation.
  for (const Allocation& allocation : allocations) {
    if (bases[allocation.index] == nullptr && allocation.size > 0) {
      return internal_error(str_cat("buffer assignment allocation ", allocation.index,
                                    " has no memory (a parameter allocation without an argument?)"));
    }
  }
  Executor executor(bases, pool, stats, options_.custom_calls, options.timeout_seconds, options.device);
  executor.set_owner(this);
  if (options.profile) executor.enable_profile();
  const Program& entry = *entry_program_;
  INSITU_RETURN_IF_ERROR(executor.run(entry));
  if (options.profile) stats.step_times = executor.step_times();

  // 4. Results: hand over output and donated/protected parameter buffers; copy anything else
  //    (a constant, an undonated parameter, a buffer already returned) into a fresh buffer.
  std::vector<BufferHandle> results;
  std::vector<const Buffer*> returned;
  for (const Leaf& leaf : entry.root) {
    if (!leaf.shape->is_array()) continue;
    std::shared_ptr<Buffer> buffer;
    if (leaf.allocation >= 0 && !leaf.scalar && leaf.offset == 0) {
      const Allocation& allocation = allocations[leaf.allocation];
      if (allocation.kind == AllocationKind::kOutput && output_buffers[leaf.allocation]->size_bytes() == leaf.size) {
        buffer = output_buffers[leaf.allocation];
      } else if (allocation.kind == AllocationKind::kParameter) {
        for (size_t i = 0; i < arguments_.size(); ++i)
          if (owned[i] && parameter_buffers[i]->data() == bases[leaf.allocation] &&
              parameter_buffers[i]->size_bytes() == leaf.size)
            buffer = parameter_buffers[i];
      }
    }
    for (const Buffer* seen : returned)
      if (buffer && seen == buffer.get()) buffer = nullptr;  // two results in one buffer: copy the second
    if (buffer == nullptr) {
      Literal value = executor.read_literal(*leaf.shape, {leaf});
      INSITU_ASSIGN_OR_RETURN(std::shared_ptr<Buffer> fresh, Buffer::allocate(*leaf.shape, /*zero=*/false, "a result"));
      if (fresh->size_bytes() > 0)
        std::memcpy(fresh->data(), value.untyped_data(), static_cast<size_t>(fresh->size_bytes()));
      buffer = std::move(fresh);
    } else if (!buffer->shape().compatible(*leaf.shape)) {
      // Same bytes, the result's own shape (an aliased parameter's layout may differ).
      INSITU_ASSIGN_OR_RETURN(std::shared_ptr<Buffer> reshaped, Buffer::allocate(*leaf.shape, false, "a result"));
      std::memcpy(reshaped->data(), buffer->data(), static_cast<size_t>(reshaped->size_bytes()));
      buffer = std::move(reshaped);
    }
    returned.push_back(buffer.get());
    results.emplace_back(std::move(buffer));
  }

  reservations.commit();
  finish_call(stats, options, start);
  return results;
}

void Executable::finish_call(ExecutionStats& stats, const ExecuteOptions& options,
                             std::chrono::steady_clock::time_point start) {
  const auto finished = std::chrono::steady_clock::now();
  stats.run_seconds = std::chrono::duration<double>(finished - start).count();
  if (options.stats != nullptr) *options.stats = stats;
  last_stats_.publish(std::move(stats), finished);
}

// Inline: execute_borrowed's tiny calls are what call_overhead_bench measures (a call through
// a Status cost them 7 ns of 115).
inline Status Executable::check_borrowed(size_t arguments, size_t results, const ExecuteOptions& options) const {
  if (arguments != arguments_.size())
    return invalid_argument(str_cat("the module takes ", arguments_.size(), " arguments (one per entry parameter leaf)",
                                    ", got ", arguments));
  if (results != result_count_)
    return invalid_argument(str_cat("the module returns ", result_count_, " array(s), got memory for ", results));
  auto donated = [&](size_t i) { return i < options.donate.size() && options.donate[i]; };
  for (size_t i = 0; i < arguments; ++i)
    if (arguments_[i].must_alias && !donated(i))
      return invalid_argument(str_cat("parameter ", arguments_[i].parameter_number, " ",
                                      shape_index_to_string(arguments_[i].index),
                                      " is must-alias but was not donated: an input configured must-alias at "
                                      "compile time has to be donated at run time"));
  return ok_status();
}

Status Executable::execute_borrowed(std::span<uint8_t* const> arguments, std::span<uint8_t* const> results,
                                    const ExecuteOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  ExecutionStats stats;
  stats.peak_memory_bytes = assignment_.peak_memory_bytes();
  INSITU_RETURN_IF_ERROR(check_borrowed(arguments.size(), results.size(), options));
  if (on_device_) return execute_borrowed_on_cuda(arguments, results, options);
  const Program& entry = *entry_program_;
  auto donated = [&](size_t i) { return i < options.donate.size() && options.donate[i]; };

  INSITU_ASSIGN_OR_RETURN(ThreadPool* pool, pool_for(options.threads));
  const std::vector<Allocation>& allocations = assignment_.allocations();
  // Every base on the stack for the usual few allocations: a tiny call allocates nothing.
  constexpr size_t kInlineBases = 16;
  uint8_t* inline_bases[kInlineBases];
  std::vector<uint8_t*> heap_bases;
  if (allocations.size() > kInlineBases) heap_bases.resize(allocations.size());
  std::span<uint8_t*> bases(allocations.size() > kInlineBases ? heap_bases.data() : inline_bases, allocations.size());
  std::fill(bases.begin(), bases.end(), nullptr);
  std::vector<std::shared_ptr<Buffer>> own;  // private copies and outputs not in the caller's memory
  ArenaLease arena{*this, {}};
  for (const Allocation& allocation : allocations) {
    switch (allocation.kind) {
      case AllocationKind::kParameter: {
        const int i = allocation_argument_[allocation.index];
        if (i < 0) break;  // no argument: reported below
        if (donated(i) || !arguments_[i].aliased_output) {
          bases[allocation.index] = arguments[i];  // read only, or given to be written
          break;
        }
        INSITU_ASSIGN_OR_RETURN(std::shared_ptr<Buffer> copy,
                                Buffer::allocate(arguments_[i].shape, false, "the private copy of an argument"));
        copy_bytes_parallel(*pool, copy->data(), arguments[i], copy->size_bytes());
        stats.bytes_copied += copy->size_bytes();
        bases[allocation.index] = copy->data();
        own.push_back(std::move(copy));
        break;
      }
      case AllocationKind::kOutput: {
        if (const int j = allocation_result_[allocation.index]; j >= 0) {
          bases[allocation.index] = results[j];
          break;
        }
        INSITU_ASSIGN_OR_RETURN(std::shared_ptr<Buffer> buffer,
                                Buffer::allocate(Shape::array(PrimitiveType::kU8, {allocation.size}), false, "an output"));
        bases[allocation.index] = buffer->data();
        own.push_back(std::move(buffer));
        break;
      }
      case AllocationKind::kTemp:
      case AllocationKind::kConstant:
      case AllocationKind::kDynamicView: INSITU_RETURN_IF_ERROR(set_shared_base(allocation, bases, arena)); break;
    }
  }
  for (const Allocation& allocation : allocations)
    if (bases[allocation.index] == nullptr && allocation.size > 0)
      return internal_error(str_cat("buffer assignment allocation ", allocation.index, " has no memory"));

  Executor executor(bases, *pool, stats, options_.custom_calls, options.timeout_seconds, options.device);
  executor.set_owner(this);
  if (options.profile) executor.enable_profile();
  INSITU_RETURN_IF_ERROR(executor.run(entry));
  if (options.profile) stats.step_times = executor.step_times();

  size_t j = 0;
  for (const Leaf& leaf : entry.root) {
    if (!leaf.shape->is_array()) continue;
    uint8_t* to = results[j++];
    if (leaf.allocation < 0 || leaf.size == 0) continue;
    const uint8_t* from = executor.address(leaf);
    if (leaf.scalar) {  // one element for every position
      const int64_t width = byte_width(leaf.shape->element_type());
      for (int64_t k = 0; k < leaf.shape->element_count(); ++k) std::memcpy(to + k * width, from, width);
      stats.result_bytes_copied += leaf.shape->byte_size();
    } else if (from != to) {
      std::memmove(to, from, static_cast<size_t>(leaf.size));
      stats.result_bytes_copied += leaf.size;
    }
  }
  finish_call(stats, options, start);
  return ok_status();
}

}  // namespace insitu
