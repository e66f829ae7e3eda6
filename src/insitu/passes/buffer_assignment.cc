// Buffer assignment: classify buffers (values tied by must-share links), let elementwise ops
// write into a dying operand, pack temps into one arena by liveness, and measure the peak.
// The dumps are in buffer_assignment_dump.cc.
#include "insitu/passes/buffer_assignment.h"

#include <algorithm>
#include <map>
#include <set>
#include <unordered_set>
#include <variant>

#include "insitu/analysis/buffer_facts.h"
#include "insitu/analysis/in_place.h"
#include "insitu/analysis/parallel_grid.h"
#include "insitu/ir/grid_loop.h"
#include "insitu/passes/buffer_assignment_internal.h"
#include "insitu/support/str.h"

namespace insitu {
namespace {

using buffer_assignment_internal::BufferPlan;

// Offsets in the temp arena are multiples of this (enough for any element type, SIMD loads).
constexpr int64_t kTempAlignment = 16;

int64_t align_up(int64_t bytes, int64_t alignment) { return (bytes + alignment - 1) / alignment * alignment; }

// Instructions whose value at a leaf is a new name for bytes that already exist (callee
// parameters, control-flow results) or read-only data: they never write a buffer.
bool writes_buffer(const Instruction& instruction) {
  switch (instruction.opcode()) {
    case Opcode::kParameter:
    case Opcode::kWhile:
    case Opcode::kConditional:
    case Opcode::kCall:
    case Opcode::kConstant:
      return false;
    default:
      return true;
  }
}

bool is_entry_parameter(const Value& value, const Computation* entry) {
  return value.defining.instruction->opcode() == Opcode::kParameter && value.computation() == entry;
}


bool same_layout_and_size(const Shape& a, const Shape& b) {
  return a.dimensions() == b.dimensions() && a.layout().minor_to_major == b.layout().minor_to_major &&
         a.byte_size() == b.byte_size();
}

std::string leaf_name(const Instruction* instruction, const ShapeIndex& index) {
  return "%" + instruction->name() + (index.empty() ? "" : shape_index_to_string(index));
}

bool is_aliased(const Module& module, const Value& parameter, const ShapeIndex& output) {
  const InputOutputAlias* alias =
      module.config().find_parameter_alias(parameter.defining.instruction->parameter_number, parameter.defining.index);
  return alias != nullptr && alias->output_index == output;
}

// Decides the kind of a buffer; an error when the module still needs copy insertion.
Status classify(const Module& module, const Dataflow& dataflow, BufferPlan& plan) {
  const Computation* entry = module.entry();
  const Value* writer = nullptr;
  for (ValueId id : plan.values) {
    const Value& value = dataflow.value(id);
    if (is_entry_parameter(value, entry)) {
      if (plan.parameter != nullptr)
        return failed_precondition(
            str_cat("entry parameter leaves ", leaf_name(plan.parameter->defining.instruction, plan.parameter->defining.index),
                    " and ", leaf_name(value.defining.instruction, value.defining.index),
                    " must share one buffer; run copy-insertion before buffer-assignment"),
            value.defining.instruction->location());
      plan.parameter = &value;
    } else if (value.defining.instruction->opcode() == Opcode::kConstant && !is_loop_initializer_constant(value)) {
      if (plan.constant != nullptr)
        return failed_precondition(str_cat("constants %", plan.constant->defining.instruction->name(), " and %",
                                           value.defining.instruction->name(),
                                           " must share one buffer; run copy-insertion before buffer-assignment"),
                                   value.defining.instruction->location());
      plan.constant = &value;
    } else if (writer == nullptr && writes_buffer(*value.defining.instruction)) {
      writer = &value;
    }
    for (const Position& position : value.positions)
      if (position.instruction == entry->root()) plan.outputs.push_back(position.index);
  }
  std::sort(plan.outputs.begin(), plan.outputs.end());
  plan.outputs.erase(std::unique(plan.outputs.begin(), plan.outputs.end()), plan.outputs.end());
  const SourceLocation root_location = entry->root()->location();
  if (plan.outputs.size() > 1)
    return failed_precondition(str_cat("entry result leaves ", shape_index_to_string(plan.outputs[0]), " and ",
                                       shape_index_to_string(plan.outputs[1]),
                                       " hold one buffer; run copy-insertion so each output is distinct"),
                               root_location);

  if (plan.parameter != nullptr) {
    const Instruction* parameter = plan.parameter->defining.instruction;
    if (plan.constant != nullptr)
      return failed_precondition(str_cat("parameter ", leaf_name(parameter, plan.parameter->defining.index),
                                         " and constant %", plan.constant->defining.instruction->name(),
                                         " must share one buffer; run copy-insertion before buffer-assignment"),
                                 parameter->location());
    const bool aliased = !plan.outputs.empty() && is_aliased(module, *plan.parameter, plan.outputs[0]);
    if (!plan.outputs.empty() && !aliased)
      return failed_precondition(
          str_cat("entry result leaf ", shape_index_to_string(plan.outputs[0]), " is parameter ",
                  leaf_name(parameter, plan.parameter->defining.index),
                  "'s buffer, which the caller owns; add an input_output_alias or run copy-insertion"),
          root_location);
    if (writer != nullptr && !aliased)
      return failed_precondition(
          str_cat("%", writer->defining.instruction->name(), " writes into parameter ",
                  leaf_name(parameter, plan.parameter->defining.index),
                  ", which the caller still owns (not aliased to an output); donate it or run copy-insertion"),
          writer->defining.instruction->location());
    plan.kind = AllocationKind::kParameter;
    return ok_status();
  }
  if (plan.constant != nullptr) {
    if (writer != nullptr || !plan.outputs.empty())
      return failed_precondition(
          str_cat("constant %", plan.constant->defining.instruction->name(),
                  writer != nullptr ? str_cat(" is overwritten by %", writer->defining.instruction->name())
                                    : std::string(" is an entry result"),
                  " but constants are read-only; run copy-insertion before buffer-assignment"),
          plan.constant->defining.instruction->location());
    plan.kind = AllocationKind::kConstant;
    return ok_status();
  }
  plan.kind = plan.outputs.empty() ? AllocationKind::kTemp : AllocationKind::kOutput;
  return ok_status();
}

// Lowest-waste gap among the occupied [offset, offset+size) ranges of buffers that are live at
// the same time; the end of the arena when no gap fits.
int64_t find_offset(std::vector<std::pair<int64_t, int64_t>> occupied, int64_t size) {
  std::sort(occupied.begin(), occupied.end());
  int64_t best = -1;
  int64_t best_waste = 0;
  int64_t cursor = 0;
  for (const auto& [offset, bytes] : occupied) {
    if (offset >= cursor + size) {
      const int64_t waste = offset - cursor - size;
      if (best < 0 || waste < best_waste) {
        best = cursor;
        best_waste = waste;
      }
    }
    cursor = std::max(cursor, align_up(offset + bytes, kTempAlignment));
  }
  return best >= 0 ? best : cursor;
}


// Every grid loop whose steps may run on threads (analysis/parallel_grid.h) and is not inside
// another such loop, in module order.
std::vector<std::pair<const Instruction*, ParallelGrid>> parallel_grid_loops(const Module& module) {
  std::vector<std::pair<const Instruction*, ParallelGrid>> loops;
  std::unordered_set<const Computation*> inside;  // computations some found loop runs
  for (const Computation* computation : module.computations())
    for (const Instruction* instruction : computation->instructions()) {
      if (instruction->opcode() != Opcode::kWhile || !grid_loop_info(*instruction)) continue;
      auto grid = parallel_grid(*instruction);
      if (std::holds_alternative<ParallelGrid>(grid)) loops.emplace_back(instruction, std::get<ParallelGrid>(grid));
    }
  // drop a loop inside another's body (its steps then run on one worker of the outer loop)
  for (const auto& [loop, grid] : loops) inside.merge(computations_run_by(*loop));
  std::erase_if(loops, [&](const auto& entry) { return inside.count(entry.first->parent()) > 0; });
  return loops;
}

// The temp buffers only `loop` uses: every value of each is defined in a computation the loop
// runs, or the buffer holds one of the loop's private state elements. Empty when a private
// state element is not a plain temp (the loop then runs in order).
std::vector<BufferId> loop_private_buffers(const Instruction& loop, const ParallelGrid& grid, const Dataflow& dataflow,
                                           const LiveRanges& live, const std::vector<BufferPlan>& plans,
                                           const std::vector<BufferId>& temps) {
  const std::unordered_set<const Computation*> inside = computations_run_by(loop);
  auto resolve = [&](BufferId b) {
    while (plans[b].merged_into >= 0) b = plans[b].merged_into;
    return b;
  };
  std::set<BufferId> state;
  for (int64_t element : grid.private_state) {
    const BufferId b = resolve(live.buffer_of(dataflow.value_at(loop.while_body()->parameter(0), {element})));
    if (std::find(temps.begin(), temps.end(), b) == temps.end()) return {};
    state.insert(b);
  }
  std::vector<BufferId> own;
  for (BufferId b : temps) {
    const bool all_inside = std::all_of(plans[b].values.begin(), plans[b].values.end(),
                                        [&](ValueId id) { return inside.count(dataflow.value(id).computation()) > 0; });
    if (all_inside || state.count(b) > 0) own.push_back(b);
  }
  return own;
}

}  // namespace

std::optional<BufferSlice> BufferAssignment::slice(ValueId value) const {
  if (value < 0 || value >= static_cast<ValueId>(slices_.size())) return std::nullopt;
  return slices_[value];
}

std::optional<BufferSlice> BufferAssignment::slice_at(const Instruction* instruction, const ShapeIndex& index) const {
  return slice(dataflow_.value_at(instruction, index));
}

int64_t BufferAssignment::temp_bytes() const {
  int64_t bytes = 0;
  for (const Allocation& allocation : allocations_)
    if (allocation.kind == AllocationKind::kTemp) bytes += allocation.size;
  return bytes;
}

namespace {

// The buffer a merged buffer's bytes are in (elementwise reuse chains).
BufferId resolved(const std::vector<BufferPlan>& plans, BufferId b) {
  while (plans[b].merged_into >= 0) b = plans[b].merged_into;
  return b;
}

// Phase 1: every buffer of the live ranges, classified (parameter, constant, output, temp; tokens
// and, where the device reads them in place, scalar broadcasts unmaterialized); an error when the
// module still needs copy insertion.
StatusOr<std::vector<BufferPlan>> classify_buffers(const Module& module, const Dataflow& dataflow,
                                                   const LiveRanges& live, const BufferAssignmentOptions& options) {
  std::vector<BufferPlan> plans(live.buffer_count());
  for (BufferId b = 0; b < live.buffer_count(); ++b) {
    BufferPlan& plan = plans[b];
    plan.values = live.buffer_values(b);
    plan.range = live.buffer_range(b);
    for (ValueId id : plan.values) plan.size = std::max(plan.size, dataflow.value(id).shape.byte_size());
    const bool all_tokens = std::all_of(plan.values.begin(), plan.values.end(),
                                        [&](ValueId id) { return dataflow.value(id).shape.is_token(); });
    if (all_tokens) {  // tokens order side effects; they hold no bytes
      plan.materialized = false;
      continue;
    }
    INSITU_RETURN_IF_ERROR(classify(module, dataflow, plan));
    if (options.scalar_broadcasts_read_in_place && plan.kind == AllocationKind::kTemp && plan.values.size() == 1 &&
        is_unmaterialized_scalar_broadcast(dataflow.value(plan.values[0])))
      plan.materialized = false;
  }
  return plans;
}

// Phase 3, elementwise reuse: the result takes the bytes of an operand buffer that dies right
// there (same size and layout, so every element is read before it is overwritten). When the
// result is an entry output, the dying temp moves into the output's buffer instead (the last
// fusion of a softmax writes over the exponentials it reads, in the caller's buffer). A sort's
// result i may take its operand i the same way (the runtime permutes each slice through a
// copy), where the device allows it. What may share memory is the in-place contract's
// (analysis/in_place.h): each output leaf takes the first operand, in operand order, that it may
// be written over and that dies there.
void merge_elementwise(const Dataflow& dataflow, const LiveRanges& live, const BufferAssignmentOptions& options,
                       std::vector<BufferPlan>& plans) {
  auto is_plain_temp = [&](BufferId b) {
    return plans[b].materialized && plans[b].kind == AllocationKind::kTemp && plans[b].merged_into < 0;
  };
  auto try_merge = [&](BufferId result, const Shape& result_shape, const Instruction* operand, int64_t now) {
    const bool into_output = plans[result].materialized && plans[result].kind == AllocationKind::kOutput &&
                             plans[result].merged_into < 0;
    if ((!is_plain_temp(result) && !into_output) || plans[result].range.start != now) return false;
    if (!operand->shape().is_array() || !same_layout_and_size(operand->shape(), result_shape)) return false;
    const BufferId source = resolved(plans, live.buffer_of(dataflow.value_at(operand)));
    if (source == result || !is_plain_temp(source) || plans[source].range.end != now) return false;
    if (plans[source].lent) return false;  // a view may still read it at other offsets
    if (plans[source].size != plans[result].size) return false;
    const BufferId into = into_output ? result : source, from = into_output ? source : result;
    plans[from].merged_into = into;  // one buffer now holds the operand, then the result
    plans[into].range.start = std::min(plans[into].range.start, plans[from].range.start);
    plans[into].range.end = std::max(plans[into].range.end, plans[from].range.end);
    for (ValueId id : plans[from].values) plans[into].values.push_back(id);
    return true;
  };
  for (const Instruction* instruction : live.sequence()) {
    const int64_t now = live.time(instruction);
    std::vector<ShapeIndex> merged;
    for (const SharingPair& pair : operand_output_sharing(*instruction)) {
      if (pair.sharing == Sharing::kMust || !pair.operand_index.empty()) continue;
      if (pair.sharing == Sharing::kSameSlot && !options.sort_in_place) continue;
      if (std::find(merged.begin(), merged.end(), pair.output_index) != merged.end()) continue;
      const BufferId result = live.buffer_of(dataflow.value_at(instruction, pair.output_index));
      if (try_merge(result, *instruction->shape().subshape(pair.output_index), instruction->operand(pair.operand_number),
                    now))
        merged.push_back(pair.output_index);
    }
  }
}

// The buffers that hold bytes of their own, in allocation order: parameters (by number),
// constants, outputs (by index), then temps.
std::vector<BufferId> materialized_order(const std::vector<BufferPlan>& plans) {
  std::vector<BufferId> order;
  for (BufferId b = 0; b < static_cast<BufferId>(plans.size()); ++b)
    if (plans[b].materialized && plans[b].merged_into < 0) order.push_back(b);
  auto rank = [&](BufferId b) {
    const BufferPlan& plan = plans[b];
    switch (plan.kind) {
      case AllocationKind::kParameter:
        return std::make_tuple(0, plan.parameter->defining.instruction->parameter_number, plan.parameter->defining.index);
      case AllocationKind::kConstant: return std::make_tuple(1, b, ShapeIndex{});
      case AllocationKind::kOutput: return std::make_tuple(2, int64_t{0}, plan.outputs[0]);
      case AllocationKind::kTemp: return std::make_tuple(3, b, ShapeIndex{});
      case AllocationKind::kDynamicView: break;  // not materialized: never in `order`
    }
    return std::make_tuple(4, b, ShapeIndex{});
  };
  std::stable_sort(order.begin(), order.end(), [&](BufferId a, BufferId b) { return rank(a) < rank(b); });
  return order;
}

// Phase 4, allocations: one per parameter leaf, constant and output buffer; the temps packed into
// one arena, each parallel grid loop's private buffers into an arena of the loop's own (each
// worker holds its own copy: analysis/parallel_grid.h) where the device has them; a dynamic
// view an allocation each (no bytes: the runtime sets its base). Sets each plan's allocation
// and offset; `per_worker` gets (loop, its arena).
std::vector<Allocation> allocate(const Module& module, const Dataflow& dataflow, const LiveRanges& live,
                                 const BufferAssignmentOptions& options, const std::vector<BufferId>& order,
                                 std::vector<BufferPlan>& plans,
                                 std::vector<std::pair<const Instruction*, int64_t>>& per_worker) {
  std::vector<Allocation> allocations;
  std::vector<BufferId> temps;
  for (BufferId b : order) {
    BufferPlan& plan = plans[b];
    if (plan.kind == AllocationKind::kTemp) {
      temps.push_back(b);
      continue;
    }
    Allocation allocation;
    allocation.index = static_cast<int64_t>(allocations.size());
    allocation.kind = plan.kind;
    allocation.size = plan.size;
    if (plan.kind == AllocationKind::kParameter) {
      allocation.parameter_number = plan.parameter->defining.instruction->parameter_number;
      allocation.parameter_index = plan.parameter->defining.index;
    }
    if (!plan.outputs.empty()) {
      allocation.output_index = plan.outputs[0];
      allocation.maybe_live_out = true;
    }
    plan.allocation = allocation.index;
    allocations.push_back(std::move(allocation));
  }
  std::vector<std::vector<BufferId>> arenas(1);
  std::vector<const Instruction*> arena_loop(1, nullptr);
  for (const auto& [loop, grid] : parallel_grid_loops(module)) {
    if (!options.per_worker_arenas) break;
    std::vector<BufferId> own = loop_private_buffers(*loop, grid, dataflow, live, plans, temps);
    if (own.empty()) continue;
    for (BufferId b : own) temps.erase(std::find(temps.begin(), temps.end(), b));
    arenas.push_back(std::move(own));
    arena_loop.push_back(loop);
  }
  arenas[0] = temps;
  for (size_t n = 0; n < arenas.size(); ++n) {
    if (arenas[n].empty()) continue;
    // Greedy by size: biggest first, each at the best-fitting gap among buffers live with it.
    std::vector<BufferId> by_size = arenas[n];
    std::stable_sort(by_size.begin(), by_size.end(), [&](BufferId a, BufferId b) {
      if (plans[a].size != plans[b].size) return plans[a].size > plans[b].size;
      return plans[a].range.start < plans[b].range.start;
    });
    Allocation arena;
    arena.index = static_cast<int64_t>(allocations.size());
    arena.kind = AllocationKind::kTemp;
    arena.per_worker_of = arena_loop[n];
    std::vector<BufferId> placed;
    for (BufferId b : by_size) {
      std::vector<std::pair<int64_t, int64_t>> occupied;
      for (BufferId other : placed)
        if (plans[other].range.overlaps(plans[b].range)) occupied.emplace_back(plans[other].offset, plans[other].size);
      plans[b].offset = find_offset(std::move(occupied), plans[b].size);
      plans[b].allocation = arena.index;
      arena.size = std::max(arena.size, plans[b].offset + plans[b].size);
      placed.push_back(b);
    }
    if (arena_loop[n] != nullptr) per_worker.emplace_back(arena_loop[n], arena.index);
    allocations.push_back(std::move(arena));
  }
  for (BufferPlan& plan : plans) {
    if (!plan.dynamic_view) continue;
    Allocation allocation;
    allocation.index = static_cast<int64_t>(allocations.size());
    allocation.kind = AllocationKind::kDynamicView;
    allocation.size = 0;  // its bytes are its source's
    plan.allocation = allocation.index;
    plan.offset = 0;
    allocations.push_back(std::move(allocation));
  }
  return allocations;
}

// Phase 5: every value's slice. A materialized buffer's values at its offset; a view's (and a
// placed update's) a range of its resolved source's bytes, through sources that are views or
// placed values themselves, up to a materialized buffer or a dynamic view's allocation.
struct Slices {
  std::vector<std::optional<BufferSlice>> slices;
  std::vector<bool> views, own_window;
  std::vector<const Instruction*> placed_for;
};
Slices record_slices(const Dataflow& dataflow, const std::vector<BufferId>& order, const std::vector<BufferPlan>& plans,
                     std::vector<Allocation>& allocations) {
  const size_t values = dataflow.values().size();
  Slices out{std::vector<std::optional<BufferSlice>>(values), std::vector<bool>(values, false),
             std::vector<bool>(values, false), std::vector<const Instruction*>(values, nullptr)};
  for (BufferId b : order) {
    const BufferPlan& plan = plans[b];
    for (ValueId id : plan.values) {
      const Shape& shape = dataflow.value(id).shape;
      if (!shape.is_array()) continue;
      out.slices[id] = BufferSlice{plan.allocation, plan.offset, shape.byte_size()};
      allocations[plan.allocation].values.push_back(id);
    }
  }
  for (Allocation& allocation : allocations) std::sort(allocation.values.begin(), allocation.values.end());
  for (const BufferPlan& plan : plans) {
    if (plan.view_of < 0) continue;
    BufferId from = plan.view_of;
    int64_t within = plan.view_offset;
    while (!plan.dynamic_view && plans[from].view_of >= 0 && !plans[from].dynamic_view) {
      within += plans[from].view_offset;
      from = plans[from].view_of;
    }
    const BufferPlan& source = plan.dynamic_view ? plan : plans[resolved(plans, from)];
    const int64_t offset = plan.dynamic_view ? 0 : source.offset + within;
    for (ValueId id : plan.values) {
      out.slices[id] = BufferSlice{source.allocation, offset, dataflow.value(id).shape.byte_size()};
      out.views[id] = plan.placed_for == nullptr;
      out.placed_for[id] = plan.placed_for;
      out.own_window[id] = plan.placed_for != nullptr && plan.dynamic_view;
    }
  }
  return out;
}

// Phase 6, the peak: parameters and constants live for the whole program, everything else over
// its range; the time of the first peak and the buffers live then (each once: its first value,
// its bytes).
struct Peak {
  int64_t bytes = 0, time = 0;
  std::vector<std::pair<ValueId, int64_t>> buffers;
};
Peak peak_of(const LiveRanges& live, const std::vector<BufferId>& order, const std::vector<BufferPlan>& plans) {
  auto whole_program = [](const BufferPlan& plan) {
    return plan.kind == AllocationKind::kParameter || plan.kind == AllocationKind::kConstant;
  };
  std::map<int64_t, int64_t> deltas;  // time -> change in live bytes
  for (BufferId b : order) {
    const BufferPlan& plan = plans[b];
    const TimeInterval range = whole_program(plan) ? TimeInterval{0, live.schedule_end_time()} : plan.range;
    deltas[range.start] += plan.size;
    deltas[range.end + 1] -= plan.size;
  }
  Peak peak;
  int64_t live_bytes = 0;
  for (const auto& [time, delta] : deltas) {
    live_bytes += delta;
    if (live_bytes > peak.bytes) {
      peak.bytes = live_bytes;
      peak.time = time;
    }
  }
  for (BufferId b : order) {
    const BufferPlan& plan = plans[b];
    if (whole_program(plan) || (plan.range.start <= peak.time && peak.time <= plan.range.end))
      peak.buffers.emplace_back(
          plan.parameter != nullptr ? plan.parameter->id : *std::min_element(plan.values.begin(), plan.values.end()),
          plan.size);
  }
  std::sort(peak.buffers.begin(), peak.buffers.end());
  return peak;
}

}  // namespace

// The phases, in order: classify, borrow (views, placed updates, scalar broadcasts:
// buffer_assignment_views.cc), merge elementwise, allocate and pack, record slices, peak.
StatusOr<BufferAssignment> assign_buffers(const Module& module, const BufferAssignmentOptions& options) {
  if (module.entry() == nullptr || module.entry()->root() == nullptr)
    return invalid_argument("buffer assignment needs a module with an entry computation", module.location());
  BufferAssignment assignment(Dataflow::compute(module));
  const Dataflow& dataflow = assignment.dataflow_;
  assignment.live_ranges_ = LiveRanges::compute(module, dataflow);
  const LiveRanges& live = assignment.live_ranges_;
  INSITU_ASSIGN_OR_RETURN(std::vector<BufferPlan> plans, classify_buffers(module, dataflow, live, options));
  buffer_assignment_internal::borrow_buffers(dataflow, live, options, plans);
  merge_elementwise(dataflow, live, options, plans);
  const std::vector<BufferId> order = materialized_order(plans);
  assignment.allocations_ = allocate(module, dataflow, live, options, order, plans, assignment.per_worker_);
  Slices slices = record_slices(dataflow, order, plans, assignment.allocations_);
  assignment.slices_ = std::move(slices.slices);
  assignment.views_ = std::move(slices.views);
  assignment.placed_for_ = std::move(slices.placed_for);
  assignment.own_window_ = std::move(slices.own_window);
  Peak peak = peak_of(live, order, plans);
  assignment.peak_memory_bytes_ = peak.bytes;
  assignment.peak_time_ = peak.time;
  assignment.peak_buffers_ = std::move(peak.buffers);
  return assignment;
}

}  // namespace insitu
