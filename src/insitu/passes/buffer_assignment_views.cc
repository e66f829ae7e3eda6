// Borrowed values of buffer assignment: scalar broadcasts read as their scalar, and views
// (row-major reshapes, contiguous slices) read in their operand's bytes. See
// buffer_assignment_internal.h for the rules; this is why a decode step that slices the keys
// and values out of a 1 GiB cache reads them in place instead of copying 512 MiB twice.
#include <algorithm>
#include <optional>

#include "insitu/analysis/in_place.h"
#include "insitu/passes/buffer_assignment_internal.h"

namespace insitu::buffer_assignment_internal {
namespace {

// Row-major element order, dimensions of size 1 aside (they do not move elements).
bool is_row_major(const Shape& shape) {
  std::vector<int64_t> order;
  for (int64_t d : shape.layout().minor_to_major)
    if (shape.dimension(d) != 1) order.push_back(d);
  return std::is_sorted(order.rbegin(), order.rend());
}

// Whether a window of `window`'s dimensions is one contiguous run of the row-major `stack`
// wherever it starts: sizes 1 up to one partial dimension, full sizes after it.
bool contiguous_window(const Shape& stack, const Shape& window) {
  if (!stack.is_array() || !window.is_array() || stack.rank() != window.rank() || window.byte_size() == 0 ||
      !is_row_major(stack) || !is_row_major(window))
    return false;
  int64_t partial = 0;
  while (partial < window.rank() && window.dimension(partial) == 1) ++partial;
  for (int64_t d = partial + 1; d < window.rank(); ++d)
    if (window.dimension(d) != stack.dimension(d)) return false;
  return true;
}

// A dynamic-slice whose result is one contiguous run of its row-major operand whatever the
// (clamped) starts.
bool is_contiguous_dynamic_slice(const Instruction& instruction) {
  if (instruction.opcode() != Opcode::kDynamicSlice || instruction.operand_count() < 1) return false;
  const Shape& to = instruction.shape();
  const Shape& from = instruction.operand(0)->shape();
  return to.is_array() && from.is_array() && to.element_type() == from.element_type() && contiguous_window(from, to);
}

// Byte offset of the result in the operand's bytes when the instruction moves no data: a
// reshape between row-major arrays, or a unit-stride slice whose elements are contiguous in a
// row-major operand (leading dimensions of extent 1, then one partial dimension, then full ones).
std::optional<int64_t> view_offset_bytes(const Instruction& instruction) {
  const Shape& to = instruction.shape();
  if (instruction.operand_count() != 1) return std::nullopt;
  const Shape& from = instruction.operand(0)->shape();
  if (!to.is_array() || !from.is_array() || to.element_type() != from.element_type() || to.byte_size() == 0)
    return std::nullopt;
  if (!is_row_major(from) || !is_row_major(to)) return std::nullopt;
  if (instruction.opcode() == Opcode::kReshape) return 0;
  if (instruction.opcode() != Opcode::kSlice) return std::nullopt;
  const int64_t rank = from.rank();
  int64_t partial = 0;  // the first dimension with extent > 1; all later ones must be full
  while (partial < rank && to.dimension(partial) == 1) ++partial;
  int64_t offset = 0, stride = 1;
  for (int64_t d = rank - 1; d >= 0; --d) {
    const int64_t start = instruction.slice[d].start;
    if (instruction.slice[d].stride != 1 && to.dimension(d) > 1) return std::nullopt;
    if (d > partial && to.dimension(d) != from.dimension(d)) return std::nullopt;
    offset += start * stride;
    stride *= from.dimension(d);
  }
  return offset * byte_width(to.element_type());
}

// Every reader of the value only reads it: no in-place write, no loop state, branch operand or
// call boundary, no entry result (those need a buffer of the value's own). (A get-tuple-element
// of the multi-output fusion that defines the value only names it.)
bool read_only_in_place(const Value& value) {
  for (const Position& position : value.positions) {
    const Instruction* at = position.instruction;
    const bool names_fused_output =
        at->opcode() == Opcode::kGetTupleElement && at->operand(0) == value.defining.instruction &&
        value.defining.instruction->opcode() == Opcode::kFusion;
    if (at != value.defining.instruction && at->opcode() != Opcode::kBitcast && !names_fused_output) return false;
    if (position.instruction == position.instruction->parent()->root()) return false;
  }
  for (const Use& use : value.uses) {
    const Opcode opcode = use.instruction->opcode();
    if (opcode == Opcode::kWhile || opcode == Opcode::kConditional || opcode == Opcode::kCall) return false;
    for (const InPlacePair& pair : in_place_pairs(*use.instruction))
      if (pair.operand_number == use.operand_number) return false;
  }
  return true;
}

// The last time a reader reads the borrower, from the borrower's own time.
int64_t last_read(const Value& value, const LiveRanges& live) {
  int64_t last = live.time(value.defining.instruction);
  for (const Use& use : value.uses) last = std::max(last, live.time(use.instruction));
  return last;
}

// A value of the buffer (other than `except`) is written in (from, to].
bool written_between(const BufferPlan& plan, ValueId except, int64_t from, int64_t to, const LiveRanges& live) {
  for (ValueId other : plan.values) {
    const int64_t written = live.value_range(other).start;
    if (other != except && written > from && written <= to) return true;
  }
  return false;
}

// Whether while `loop` hands state leaf `index` to its next iteration unchanged (the body's
// root holds the body parameter's value there).
bool passes_through(const Dataflow& dataflow, const Instruction& loop, const ShapeIndex& index) {
  const Computation* body = loop.while_body();
  return body->parameter_count() == 1 &&
         dataflow.value_at(body->root(), index) == dataflow.value_at(body->parameter(0), index);
}

// A value of a view's buffer that is the view carried unchanged through while loops (the view
// itself as a loop's initial state, a body or condition parameter, a loop result) or handed to a
// conditional's branch in its operand tuple (the branch parameter's element), and read there
// only in place: the view then is that loop state or branch operand too, read where it lies. A
// Pallas kernel body's inner fori_loop carries each block it reads this way, and a step under
// pl.when hands its blocks to a branch; materialized, each grid step copied its blocks out (a
// decode step's whole per-head cache).
bool carried_read_only(const Dataflow& dataflow, const Value& value, bool is_view) {
  const Instruction* defining = value.defining.instruction;
  if (!is_view && defining->opcode() != Opcode::kWhile &&
      !(defining->opcode() == Opcode::kParameter && value.defining.index.size() == 1))
    return false;  // not a loop's phi value
  for (const Position& position : value.positions) {
    const Instruction* at = position.instruction;
    if (at == defining || at->opcode() == Opcode::kBitcast || at->opcode() == Opcode::kGetTupleElement) {
      if (at == at->parent()->root()) return false;
      continue;
    }
    if (at->opcode() != Opcode::kTuple || position.index.size() != 1) return false;
    if (at == at->parent()->root()) {
      // a while body's root handing the parameter's value back unchanged
      if (defining->opcode() != Opcode::kParameter || defining->parent() != at->parent() ||
          value.defining.index != position.index)
        return false;
      continue;
    }
    // a loop's initial state, passed through; or a branch's operand (the branch's parameter
    // value is in the same buffer, and checked as one of its values)
    for (const Instruction* user : at->users())
      if (user->opcode() != Opcode::kConditional &&
          (user->opcode() != Opcode::kWhile || !passes_through(dataflow, *user, position.index)))
        return false;
  }
  for (const Use& use : value.uses) {
    const Opcode opcode = use.instruction->opcode();
    if (opcode == Opcode::kCall || (opcode == Opcode::kConditional && use.operand_number == 0)) return false;
    if (opcode == Opcode::kWhile && !passes_through(dataflow, *use.instruction, use.operand_index)) return false;
    for (const InPlacePair& pair : in_place_pairs(*use.instruction))
      if (pair.operand_number == use.operand_number) return false;
  }
  return true;
}

// The last time the view's buffer is read when the view (value `view`) may borrow its
// operand's bytes: a plain temp read only in place, or the view carried unchanged through while
// loops (carried_read_only); nullopt otherwise.
std::optional<int64_t> borrowable_until(const Dataflow& dataflow, const LiveRanges& live, const BufferPlan& plan,
                                        ValueId view) {
  if (!plan.materialized || plan.kind != AllocationKind::kTemp || !plan.outputs.empty()) return std::nullopt;
  if (plan.values.size() == 1) {
    if (!read_only_in_place(dataflow.value(view))) return std::nullopt;
    return last_read(dataflow.value(view), live);
  }
  int64_t last = 0;
  for (ValueId id : plan.values) {
    const Value& value = dataflow.value(id);
    if (!carried_read_only(dataflow, value, id == view)) return std::nullopt;
    last = std::max({last, last_read(value, live), live.value_range(id).end});
  }
  return last;
}

void borrow_views(const Dataflow& dataflow, const LiveRanges& live, bool dynamic_views, std::vector<BufferPlan>& plans) {
  for (const Instruction* instruction : live.sequence()) {
    const Opcode opcode = instruction->opcode();
    if ((opcode != Opcode::kReshape && opcode != Opcode::kSlice && opcode != Opcode::kDynamicSlice) ||
        !instruction->shape().is_array())
      continue;
    const ValueId id = dataflow.value_at(instruction);
    BufferPlan& plan = plans[live.buffer_of(id)];
    const std::optional<int64_t> until = borrowable_until(dataflow, live, plan, id);
    if (!until) continue;
    const bool dynamic = is_contiguous_dynamic_slice(*instruction);
    if (dynamic && !dynamic_views) continue;
    std::optional<int64_t> offset = dynamic ? std::optional<int64_t>(0) : view_offset_bytes(*instruction);
    if (!offset) continue;
    const ValueId source_value = dataflow.value_at(instruction->operand(0));
    BufferId source = live.buffer_of(source_value);
    // A view of a (static) view reads the first one's source; a view of a dynamic view is a
    // static view into the dynamic view's allocation, whose bytes are its source's.
    if (plans[source].view_of >= 0 && !plans[source].dynamic_view) {
      *offset += plans[source].view_offset;
      source = plans[source].view_of;
    }
    // The buffer that holds the bytes: through dynamic views of dynamic views (a block of a
    // Pallas kernel's block, its inner loop's slice of it), each based at run time on the last.
    BufferId owner = source;
    while (plans[owner].dynamic_view) owner = plans[owner].view_of;
    if (!plans[source].materialized && !plans[source].dynamic_view) continue;
    const int64_t from = live.time(instruction), to = *until;
    if (written_between(plans[owner], plans[source].dynamic_view ? ValueId{-1} : source_value, from, to, live))
      continue;
    plan.materialized = false;
    plan.view_of = source;
    plan.view_offset = *offset;
    plan.dynamic_view = dynamic;
    plans[owner].lent = true;
    for (BufferId held = source;; held = plans[held].view_of) {  // each link of the chain lives to `to`
      plans[held].range.end = std::max(plans[held].range.end, to);
      if (held == owner) break;
    }
  }
}

// An unmaterialized broadcast is read as its scalar by each of its users, so the scalar's bytes
// must hold the scalar from the broadcast until its last user, not just until the broadcast
// (where dataflow, copy insertion and liveness see the read). When something writes that buffer
// in between (a loop-state or donated scalar updated in place, at that level or inside a
// while/conditional scheduled in between: copy insertion allowed it because the scalar looked
// dead after the broadcast), the broadcast is materialized instead: it then copies the scalar at
// its own time.
void borrow_broadcast_scalars(const Dataflow& dataflow, const LiveRanges& live, std::vector<BufferPlan>& plans) {
  for (BufferPlan& plan : plans) {
    if (plan.materialized || plan.view_of >= 0 || plan.values.size() != 1) continue;
    const Value& broadcast = dataflow.value(plan.values[0]);
    const Instruction* instruction = broadcast.defining.instruction;
    if (instruction->opcode() != Opcode::kBroadcast) continue;  // a token buffer
    const int64_t from = live.time(instruction), to = last_read(broadcast, live);
    const ValueId scalar = dataflow.value_at(instruction->operand(0));
    BufferPlan& source = plans[live.buffer_of(scalar)];
    // a scalar that is itself not in memory (or only a view) is materialized first
    if (!source.materialized || written_between(source, scalar, from, to, live)) {
      plan.materialized = true;
      continue;
    }
    source.range.end = std::max(source.range.end, to);
  }
}

// Instructions whose result is a structure or lives elsewhere by construction: never computed
// into a window (a loop's or call's results are its state; a view or forward moves nothing).
bool computes_its_result(const Instruction& instruction) {
  if (!in_place_pairs(instruction).empty()) return false;
  const Opcode opcode = instruction.opcode();
  switch (opcode_kind(opcode)) {
    case OpcodeKind::kUnary: case OpcodeKind::kBinary: case OpcodeKind::kElementwise: case OpcodeKind::kComputation:
      return true;
    case OpcodeKind::kDataMovement:
      return opcode != Opcode::kGetTupleElement && opcode != Opcode::kTuple && opcode != Opcode::kBitcast &&
             opcode != Opcode::kReshape && opcode != Opcode::kSlice && opcode != Opcode::kDynamicSlice &&
             opcode != Opcode::kCopyStart && opcode != Opcode::kCopyDone;
    case OpcodeKind::kControlFlow: return opcode == Opcode::kFusion;
    default: return false;
  }
}

// Whether some value of a buffer whose bytes are `owner`'s (owner itself, or a view whose chain
// of sources reaches it) is read at a time in [from, to), other than by `allowed`.
bool owner_read_between(const Dataflow& dataflow, const LiveRanges& live, const std::vector<BufferPlan>& plans,
                        BufferId owner, int64_t from, int64_t to, const Instruction* allowed) {
  for (BufferId b = 0; b < static_cast<BufferId>(plans.size()); ++b) {
    BufferId at = b;
    while (at != owner && plans[at].view_of >= 0) at = plans[at].view_of;
    if (at != owner) continue;
    for (ValueId id : plans[b].values)
      for (const Use& use : dataflow.value(id).uses) {
        const int64_t time = live.time(use.instruction);
        if (use.instruction != allowed && time >= from && time < to) return true;
      }
  }
  return false;
}

// Whether `instruction` reads its operand `number` element by element at the positions it writes
// its output `output` (so it may write that output over the operand: the in-place contract's
// kElementwise).
bool reads_elementwise(const Instruction& instruction, int64_t number, const ShapeIndex& output) {
  for (const SharingPair& pair : operand_output_sharing(instruction))
    if (pair.sharing == Sharing::kElementwise && pair.operand_number == number && pair.output_index == output &&
        pair.operand_index.empty())
      return true;
  return false;
}

// The element offset of the window an update writes at constant starts, when the window is one
// contiguous run of the row-major stack: a dynamic-update-slice whose starts are constants
// (clamped as it clamps them), or a scatter of one window that sets (its combiner returns the
// update) at a constant index inside the stack (out of bounds, a scatter writes nothing);
// nullopt otherwise.
std::optional<int64_t> static_window(const Instruction& update) {
  const Shape& stack = update.operand(0)->shape();
  if (!stack.is_array() || !is_row_major(stack)) return std::nullopt;
  const int64_t rank = stack.rank();
  std::vector<int64_t> starts(static_cast<size_t>(rank), 0), sizes(static_cast<size_t>(rank), 1);
  if (update.opcode() == Opcode::kDynamicUpdateSlice) {
    const Shape& window = update.operand(1)->shape();
    if (window.rank() != rank || update.operand_count() != rank + 2) return std::nullopt;
    for (int64_t d = 0; d < rank; ++d) {
      const Instruction* start = update.operand(d + 2);
      if (start->opcode() != Opcode::kConstant || start->shape().rank() != 0) return std::nullopt;
      sizes[d] = window.dimension(d);
      starts[d] = std::clamp<int64_t>(start->literal.get_integer(0), 0, stack.dimension(d) - sizes[d]);
    }
  } else {
    const ScatterDimensionNumbers& numbers = update.scatter_dimension_numbers;
    const Instruction* indices = update.operand_count() == 3 ? update.operand(1) : nullptr;
    const Computation* combiner = update.called_computations().size() == 1 ? update.called_computations()[0] : nullptr;
    if (indices == nullptr || indices->opcode() != Opcode::kConstant || indices->shape().rank() > 1 ||
        combiner == nullptr || combiner->parameter_count() != 2 || combiner->root() != combiner->parameter(1) ||
        !numbers.input_batching_dims.empty() || numbers.index_vector_dim != 0)
      return std::nullopt;  // one index: a scalar, or a vector along dimension 0
    const int64_t count = indices->shape().rank() == 0 ? 1 : indices->shape().dimension(0);
    const Shape& window = update.operand(2)->shape();
    if (count != static_cast<int64_t>(numbers.scatter_dims_to_operand_dims.size()) ||
        window.rank() != static_cast<int64_t>(numbers.update_window_dims.size()) ||
        window.rank() + static_cast<int64_t>(numbers.inserted_window_dims.size()) != rank)
      return std::nullopt;
    for (int64_t j = 0; j < count; ++j) {
      const int64_t d = numbers.scatter_dims_to_operand_dims[j];
      if (d < 0 || d >= rank) return std::nullopt;
      starts[d] = indices->literal.get_integer(j);
    }
    int64_t next = 0;
    for (int64_t d = 0; d < rank; ++d)
      if (std::find(numbers.inserted_window_dims.begin(), numbers.inserted_window_dims.end(), d) ==
          numbers.inserted_window_dims.end())
        sizes[d] = window.dimension(next++);
    for (int64_t d = 0; d < rank; ++d)
      if (starts[d] < 0 || starts[d] + sizes[d] > stack.dimension(d)) return std::nullopt;
  }
  int64_t partial = 0;  // leading sizes 1, one partial dimension, full ones after it
  while (partial < rank && sizes[partial] == 1) ++partial;
  int64_t offset = 0, stride = 1;
  for (int64_t d = rank - 1; d >= 0; --d) {
    if (d > partial && sizes[d] != stack.dimension(d)) return std::nullopt;
    offset += starts[d] * stride;
    stride *= stack.dimension(d);
  }
  return offset;
}

void place_updates(const Dataflow& dataflow, const LiveRanges& live, std::vector<BufferPlan>& plans) {
  for (const Instruction* update_slice : live.sequence()) {
    const Opcode opcode = update_slice->opcode();
    if ((opcode != Opcode::kDynamicUpdateSlice && opcode != Opcode::kScatter) || update_slice->operand_count() < 2 ||
        !update_slice->shape().is_array() || (opcode == Opcode::kScatter && update_slice->operand_count() != 3))
      continue;
    const Instruction* stack = update_slice->operand(0);
    const Instruction* update_operand = update_slice->operand(opcode == Opcode::kScatter ? 2 : 1);
    const std::optional<int64_t> fixed = static_window(*update_slice);
    if (opcode == Opcode::kScatter && !fixed) continue;
    // the update and the instruction that computes it (a row-major reshape of it is a bitcast
    // by now: the same value); a view of the update would read the window after it is written
    const BufferId target = live.buffer_of(dataflow.value_at(update_operand));
    int64_t last = 0;
    bool read_in_place = true;
    for (ValueId id : plans[target].values) {
      read_in_place &= read_only_in_place(dataflow.value(id));
      last = std::max(last, last_read(dataflow.value(id), live));
    }
    BufferPlan& plan = plans[target];
    if (!plan.materialized || plan.kind != AllocationKind::kTemp || !plan.outputs.empty() || plan.values.size() != 1 ||
        plan.lent || plan.view_of >= 0 || !read_in_place)
      continue;
    const Value& update_value = dataflow.value(plan.values[0]);
    const Instruction* producer = update_value.defining.instruction;
    const Shape& update_shape = update_operand->shape();
    // the producer's result, or one output of a multi-output fusion (its root tuple's element:
    // the fusion kernel writes each output through its own address, block by block)
    const bool fused_output = update_value.defining.index.size() == 1 && producer->opcode() == Opcode::kFusion &&
                              producer->shape().is_tuple();
    const Shape* produced_shape = producer->shape().subshape(update_value.defining.index);
    // every shape on the way row-major (the update-slice writes the update in the stack's
    // order; a producer writing another layout would leave its bytes in another order), and
    // a stack of at least one dimension (a scalar's bytes are what an unmaterialized broadcast
    // reads at its users, borrow_broadcast_scalars)
    if ((!update_value.defining.index.empty() && !fused_output) || produced_shape == nullptr ||
        !computes_its_result(*producer) || !produced_shape->is_array() ||
        produced_shape->byte_size() != update_shape.byte_size() || !is_row_major(*produced_shape) ||
        !is_row_major(update_shape) || !stack->shape().is_array() || !is_row_major(stack->shape()) ||
        stack->shape().rank() == 0)
      continue;
    // the stack is updated in place: its buffer holds the result
    const BufferId owner = live.buffer_of(dataflow.value_at(stack));
    if (live.buffer_of(dataflow.value_at(update_slice)) != owner || !plans[owner].materialized) continue;
    const int64_t produced = live.time(producer), written = live.time(update_slice);
    // the stack's bytes are in place when the producer runs: nothing (a copy of the stack, a
    // loop's state) fills the buffer between the producer and the update, over the window
    if (produced >= written || written_between(plans[owner], ValueId{-1}, produced, written - 1, live)) continue;
    // where the window lies: at a fixed offset in the stack's bytes, or in the dynamic view a
    // dynamic-slice of the same stack at the same starts reads (its allocation's base, set
    // before the producer runs)
    BufferId view = -1;
    bool own_window = false;  // a dynamic view of the stack at the update-slice's starts
    const int64_t window_bytes = fixed ? *fixed * byte_width(update_shape.element_type()) : 0;
    if (!fixed) {
      const Instruction* window = nullptr;
      // (the same values: loop state is often read through a get-tuple-element per use)
      auto same_value = [&](const Instruction* a, const Instruction* b) {
        return a == b || (a->shape().is_array() && b->shape().is_array() && dataflow.value_at(a) == dataflow.value_at(b));
      };
      for (const Instruction* user : update_slice->parent()->instructions()) {
        // (the same starts index the same window only in an operand of the same dimensions: the
        // stack read through a reshape is indexed otherwise)
        if (user->opcode() != Opcode::kDynamicSlice || !same_value(user->operand(0), stack) ||
            user->operand(0)->shape().dimensions() != stack->shape().dimensions() ||
            user->operand_count() != update_slice->operand_count() - 1 ||
            user->dynamic_slice_sizes != update_shape.dimensions() ||
            user->shape().element_type() != update_shape.element_type())
          continue;
        bool same_starts = true;
        for (int64_t i = 1; i < user->operand_count(); ++i) same_starts &= same_value(user->operand(i), update_slice->operand(i + 1));
        const BufferId candidate = live.buffer_of(dataflow.value_at(user));
        if (same_starts && plans[candidate].dynamic_view && plans[candidate].view_of == owner) window = user;
      }
      if (window != nullptr) {
        if (update_shape.byte_size() != window->shape().byte_size() || live.time(window) >= produced) continue;
        view = live.buffer_of(dataflow.value_at(window));
      } else {
        // no dynamic-slice reads the window (the update does not read its old values: a KV
        // row, a Pallas output block): the update-slice's starts set a window of its own, just
        // before the producer runs, when they are known by then and the window is one
        // contiguous run of the stack whatever they are
        bool known = true;  // (a constant in read-only memory is known from the start)
        for (int64_t i = 2; i < update_slice->operand_count(); ++i) {
          const Instruction* start = update_slice->operand(i);
          known &= live.time(start) < produced ||
                   plans[live.buffer_of(dataflow.value_at(start))].kind == AllocationKind::kConstant;
        }
        if (!known || !contiguous_window(stack->shape(), update_shape)) continue;
        own_window = true;
      }
    }
    // from the producer on, the window's old bytes are read by the producer alone, element by
    // element where it writes (through the window's view, or a static view of the stack at the
    // window's offset)
    bool safe = !owner_read_between(dataflow, live, plans, owner, produced, written, producer);
    for (int64_t i = 0; safe && i < producer->operand_count(); ++i) {
      BufferId read = live.buffer_of(dataflow.value_at(producer->operand(i)));
      int64_t offset = 0;
      bool through_dynamic = false;  // a dynamic view on the way: an offset known only at run time
      while (read != view && read != owner && plans[read].view_of >= 0) {
        if (plans[read].dynamic_view) through_dynamic = true;
        else offset += plans[read].view_offset;
        read = plans[read].view_of;
      }
      const bool elementwise = reads_elementwise(*producer, i, update_value.defining.index);
      if (read == view && (offset != 0 || !elementwise)) safe = false;
      if (read == owner && (!fixed || through_dynamic || offset != window_bytes || !elementwise)) safe = false;
    }
    if (!safe) continue;
    // after the update, the window holds it until the stack is written again
    if (written_between(plans[owner], ValueId{-1}, written, last, live)) continue;
    plan.materialized = false;
    plan.view_of = fixed || own_window ? owner : view;
    plan.view_offset = window_bytes;
    plan.dynamic_view = own_window;
    plan.placed_for = update_slice;
    plans[owner].lent = true;
    plans[owner].range.end = std::max(plans[owner].range.end, last);
  }
}

}  // namespace

void borrow_buffers(const Dataflow& dataflow, const LiveRanges& live, const BufferAssignmentOptions& options,
                    std::vector<BufferPlan>& plans) {
  borrow_views(dataflow, live, options.dynamic_views, plans);
  if (options.placed_updates) place_updates(dataflow, live, plans);
  borrow_broadcast_scalars(dataflow, live, plans);
}

}  // namespace insitu::buffer_assignment_internal
