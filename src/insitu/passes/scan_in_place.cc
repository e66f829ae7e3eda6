// scan-in-place (scan_in_place.h).
#include "insitu/passes/scan_in_place.h"

#include <optional>
#include <vector>

#include "insitu/passes/name_table.h"

namespace insitu {
namespace {

// Whether `instruction` reads element `index` of the loop state `state`.
bool reads_state(const Instruction* instruction, const Instruction* state, int64_t index) {
  return instruction->opcode() == Opcode::kGetTupleElement && instruction->operand(0) == state &&
         instruction->tuple_index == index;
}

// Whether `instruction` is the counter's value in every step of a loop over rows first .. N-1:
// the state element itself, a copy of it (XLA's optimized loops copy it), or it clamped to a
// range that holds 0 .. N-1.
bool is_counter(const Instruction* instruction, const Instruction* state, int64_t counter, int64_t rows, int depth = 0) {
  if (reads_state(instruction, state, counter)) return true;
  if (depth > 4) return false;
  if (instruction->opcode() == Opcode::kCopy) return is_counter(instruction->operand(0), state, counter, rows, depth + 1);
  if (instruction->opcode() != Opcode::kClamp || instruction->operand(0)->opcode() != Opcode::kConstant ||
      instruction->operand(2)->opcode() != Opcode::kConstant)
    return false;
  return instruction->operand(0)->literal.get_integer(0) <= 0 &&
         instruction->operand(2)->literal.get_integer(0) >= rows - 1 &&
         is_counter(instruction->operand(1), state, counter, rows, depth + 1);
}

// An integer computed from constants alone (loop-peeling leaves the counter's start as
// add(0, 1)); nullopt otherwise.
std::optional<int64_t> constant_value(const Instruction* instruction, int depth = 0) {
  if (instruction->opcode() == Opcode::kConstant && instruction->shape().is_array() &&
      instruction->shape().rank() == 0 && is_integral(instruction->shape().element_type()))
    return instruction->literal.get_integer(0);
  if (instruction->opcode() == Opcode::kCopy && depth <= 4) return constant_value(instruction->operand(0), depth + 1);
  if (instruction->opcode() != Opcode::kAdd || depth > 4) return std::nullopt;
  std::optional<int64_t> a = constant_value(instruction->operand(0), depth + 1);
  std::optional<int64_t> b = constant_value(instruction->operand(1), depth + 1);
  if (!a || !b) return std::nullopt;
  return *a + *b;
}

// (first, N) when state element `counter` of `loop` starts at a constant `first` >= 0, grows by
// 1 per step and the condition is counter < N; nullopt otherwise.
std::optional<std::pair<int64_t, int64_t>> counted_range(const Instruction* loop, int64_t counter) {
  const Computation* body = loop->called_computations()[1];
  const Computation* condition = loop->called_computations()[0];
  const Instruction* next = body->root()->operand(counter);
  std::optional<int64_t> first = constant_value(loop->operand(0)->operand(counter));
  if (!first || *first < 0 || next->opcode() != Opcode::kAdd) return std::nullopt;
  const Instruction* state = body->parameter(0);
  const Instruction* test = condition->root();
  if (test->opcode() != Opcode::kCompare || test->comparison_direction != ComparisonDirection::kLt) return std::nullopt;
  std::optional<int64_t> bound = constant_value(test->operand(1));
  if (!bound || !is_counter(test->operand(0), condition->parameter(0), counter, *bound)) return std::nullopt;
  const bool by_one =
      (is_counter(next->operand(0), state, counter, *bound) && is_integer_constant(*next->operand(1), 1)) ||
      (is_counter(next->operand(1), state, counter, *bound) && is_integer_constant(*next->operand(0), 1));
  if (!by_one) return std::nullopt;
  return std::pair(*first, *bound);
}

// The stack's initial value when the loop starts at row `first`: rows 0 .. first-1 written by
// a chain of one-row updates at constant rows (loop-peeling's first iterations) over a base
// whose values no one reads. Returns the update whose operand 0 is that base (nullptr: the
// initial value itself is the base, first == 0), or false in `ok` when it is not so.
Instruction* peeled_rows(Instruction* initial, int64_t first, const Shape& shape, bool& ok) {
  ok = true;
  if (first == 0) return nullptr;
  std::vector<bool> written(static_cast<size_t>(first), false);
  Instruction* last = nullptr;
  for (Instruction* value = initial; value->opcode() == Opcode::kDynamicUpdateSlice; value = value->operand(0)) {
    const Shape& update = value->operand(1)->shape();
    if (value->operand_count() != 2 + shape.rank() || update.rank() != shape.rank() || update.dimension(0) != 1 ||
        value->users().size() != 1 || value->has_control_edges()) {
      ok = false;
      return nullptr;
    }
    std::optional<int64_t> row = constant_value(value->operand(2));
    for (int64_t d = 1; d < shape.rank(); ++d)
      ok &= is_integer_constant(*value->operand(2 + d), 0) && update.dimension(d) == shape.dimension(d);
    if (!ok || !row || *row < 0 || *row >= first) {
      ok = false;
      return nullptr;
    }
    written[static_cast<size_t>(*row)] = true;
    last = value;
  }
  for (bool row : written) ok &= row;
  return ok ? last : nullptr;
}

// Whether `update` writes one whole row of `shape` at the counter: starts (counter, 0, 0, ...)
// from operand 2 and an update of one row.
bool writes_row_at_counter(const Instruction* update, const Instruction* state, int64_t counter, const Shape& shape) {
  const Shape& row = update->operand(1)->shape();
  if (update->operand_count() != 2 + shape.rank() || row.rank() != shape.rank() || row.dimension(0) != 1 ||
      update->has_control_edges() || !is_counter(update->operand(2), state, counter, shape.dimension(0)))
    return false;
  for (int64_t d = 1; d < shape.rank(); ++d)
    if (!is_integer_constant(*update->operand(2 + d), 0) || row.dimension(d) != shape.dimension(d)) return false;
  return true;
}

// Whether `read` reads within the counter's row of `shape` only: a dynamic-slice one row high
// whose first start is the counter (anywhere along the other dimensions).
bool reads_row_at_counter(const Instruction* read, const Instruction* state, int64_t counter, const Shape& shape) {
  return read->opcode() == Opcode::kDynamicSlice && read->operand_count() == 1 + shape.rank() &&
         read->dynamic_slice_sizes.size() == static_cast<size_t>(shape.rank()) && read->dynamic_slice_sizes[0] == 1 &&
         !read->has_control_edges() && is_counter(read->operand(1), state, counter, shape.dimension(0));
}

struct Scan {
  const Instruction* loop = nullptr;
  int64_t xs = -1, ys = -1;
  std::vector<Instruction*> reads;  // the dynamic-slices of xs's rows
  Instruction* peeled = nullptr;    // the peeled rows' last update (its base becomes xs), if any
};

// Whether `initial` is an entry parameter that the caller gives the program (donated, or aliased
// to an output).
bool given_parameter(const Module& module, const Instruction* initial) {
  if (initial->opcode() != Opcode::kParameter || initial->parent() != module.entry()) return false;
  for (const BufferDonor& donor : module.config().buffer_donors)
    if (donor.parameter_number == initial->parameter_number) return true;
  for (const InputOutputAlias& alias : module.config().input_output_alias)
    if (alias.parameter_number == initial->parameter_number) return true;
  return false;
}

// How well xs's buffer suits ys (lower is better): 0 when xs starts as the entry parameter
// that the caller lets ys's result be written into (aliased to the output ys's result becomes),
// 1 for any other value the program owns (a temporary, a donated or aliased parameter, loop
// state), 2 for an entry parameter the caller still owns (it would be copied for the loop).
int pairing_rank(const Module& module, const Instruction* loop, int64_t xs, int64_t ys) {
  const Instruction* initial = loop->operand(0)->operand(xs);
  if (initial->opcode() != Opcode::kParameter || initial->parent() != module.entry()) return 1;
  const ModuleConfig& config = module.config();
  bool given = false;
  for (const BufferDonor& donor : config.buffer_donors) given |= donor.parameter_number == initial->parameter_number;
  const Instruction* root = module.entry()->root();
  for (const InputOutputAlias& alias : config.input_output_alias) {
    if (alias.parameter_number != initial->parameter_number) continue;
    given = true;
    // the output ys's result becomes: the entry root's tuple operand that is that result
    const Instruction* output = alias.output_index.empty() ? root : nullptr;
    if (root->opcode() == Opcode::kTuple && alias.output_index.size() == 1 && alias.output_index[0] >= 0 &&
        alias.output_index[0] < root->operand_count())
      output = root->operand(alias.output_index[0]);
    if (output == nullptr) continue;
    if (output->opcode() == Opcode::kGetTupleElement && output->operand(0) == loop && output->tuple_index == ys) return 0;
  }
  return given ? 1 : 2;
}

// The (xs, ys) pair of `loop` this pass rewrites, or nullopt: of the arrays that could hold a
// ys, the one pairing_rank prefers (the first of those in state order).
std::optional<Scan> match_scan(const Module& module, const Instruction* loop) {
  if (loop->opcode() != Opcode::kWhile || loop->operand_count() != 1 || loop->has_control_edges() ||
      loop->operand(0)->opcode() != Opcode::kTuple || !loop->shape().is_tuple())
    return std::nullopt;
  const Computation* body = loop->called_computations()[1];
  const Computation* condition = loop->called_computations()[0];
  const Instruction* state = body->parameter(0);
  const Instruction* root = body->root();
  if (root->opcode() != Opcode::kTuple || root->operand_count() != loop->shape().tuple_size()) return std::nullopt;
  for (const Instruction* user : loop->users())
    if (user->opcode() != Opcode::kGetTupleElement) return std::nullopt;
  const int64_t size = root->operand_count();
  for (int64_t counter = 0; counter < size; ++counter) {
    if (!loop->shape().tuple_shape(counter).is_array() || loop->shape().tuple_shape(counter).rank() != 0) continue;
    std::optional<std::pair<int64_t, int64_t>> range = counted_range(loop, counter);
    if (!range) continue;
    const int64_t rows = range->second;
    for (int64_t ys = 0; ys < size; ++ys) {
      const Instruction* update = root->operand(ys);
      const Shape& shape = loop->shape().tuple_shape(ys);
      if (!shape.is_array() || shape.rank() == 0 || shape.dimension(0) != rows ||
          update->opcode() != Opcode::kDynamicUpdateSlice || !reads_state(update->operand(0), state, ys) ||
          !writes_row_at_counter(update, state, counter, shape))
        continue;
      bool stack_read_elsewhere = false;  // ys is read by its own update only
      for (const Instruction* instruction : body->instructions())
        if (reads_state(instruction, state, ys))
          for (const Instruction* user : instruction->users()) stack_read_elsewhere |= user != update;
      if (stack_read_elsewhere) continue;
      bool peeled_ok = false;
      Instruction* peeled = peeled_rows(loop->operand(0)->operand(ys), range->first, shape, peeled_ok);
      if (!peeled_ok) continue;
      std::optional<Scan> best;
      int best_rank = 3;
      for (int64_t xs = 0; xs < size; ++xs) {
        if (xs == ys || xs == counter || !(loop->shape().tuple_shape(xs) == shape) ||
            !reads_state(root->operand(xs), state, xs))
          continue;
        Scan scan{loop, xs, ys, {}, peeled};
        bool rows_only = true;  // every read of xs is one row at the counter
        for (Instruction* instruction : body->instructions()) {
          if (!reads_state(instruction, state, xs)) continue;
          for (Instruction* user : instruction->users()) {
            if (user == root) continue;  // the passthrough
            if (user->operand(0) != instruction || !reads_row_at_counter(user, state, counter, shape)) {
              rows_only = false;
              break;
            }
            scan.reads.push_back(user);
          }
          if (!rows_only) break;
        }
        for (int64_t k = 0; k < root->operand_count(); ++k) rows_only &= k == xs || root->operand(k) != root->operand(xs);
        if (!rows_only) continue;
        bool condition_reads = false;  // the condition reads the counter only
        for (const Instruction* instruction : condition->instructions())
          condition_reads |= (reads_state(instruction, condition->parameter(0), xs) ||
                              reads_state(instruction, condition->parameter(0), ys)) &&
                             !instruction->users().empty();
        bool result_read = false;  // xs's loop result is unused after the loop
        for (const Instruction* user : loop->users()) result_read |= user->tuple_index == xs && !user->users().empty();
        if (condition_reads || result_read) continue;
        const int rank = pairing_rank(module, loop, xs, ys);
        if (rank < best_rank) best = std::move(scan), best_rank = rank;
      }
      // an xs the caller still owns would be copied for the loop: not when ys starts in a
      // parameter the caller gives, which takes the stack with no copy (explain called that copy
      // a loop-carried one of the xs's parameter)
      if (best && best_rank == 2 && given_parameter(module, loop->operand(0)->operand(ys))) continue;
      if (best) return best;
    }
  }
  return std::nullopt;
}

// Every get-tuple-element of `state` past `removed` reads one element lower; the ones of
// `removed` (unused by now) go.
void drop_state_element(Computation& computation, Instruction* state, int64_t removed, const Shape& shape) {
  std::vector<Instruction*> gone;
  for (Instruction* instruction : computation.instructions()) {
    if (instruction->opcode() != Opcode::kGetTupleElement || instruction->operand(0) != state) continue;
    if (instruction->tuple_index == removed) gone.push_back(instruction);
    else if (instruction->tuple_index > removed) --instruction->tuple_index;
  }
  for (Instruction* instruction : gone) computation.remove_instruction(instruction);
  state->set_shape(shape);
}

// A tuple like `tuple` without operand `removed` (and `replaced` taking `with` first).
Instruction* tuple_without(Computation& computation, Instruction* tuple, int64_t removed, int64_t replaced,
                           Instruction* with, NameTable& names, const Shape& shape) {
  std::vector<Instruction*> operands;
  for (int64_t k = 0; k < tuple->operand_count(); ++k)
    if (k != removed) operands.push_back(k == replaced ? with : tuple->operand(k));
  return insert_new_instruction(computation, tuple, names, Opcode::kTuple, tuple->name(), shape, operands);
}

void rewrite(Computation& computation, const Scan& scan, NameTable& names) {
  auto* loop = const_cast<Instruction*>(scan.loop);
  Computation* condition = loop->called_computations()[0];
  Computation* body = loop->called_computations()[1];
  Instruction* state = body->parameter(0);
  const Shape& rows_shape = loop->shape().tuple_shape(scan.ys);
  // 1. the rows are read out of the stack, which holds them until the step that writes them
  for (Instruction* read : scan.reads) {
    Instruction* stack = insert_new_instruction(*body, read, names, Opcode::kGetTupleElement, "scan_rows", rows_shape,
                                                {state});
    stack->tuple_index = scan.ys;
    read->replace_operand(0, stack);
  }
  // 2. xs leaves the state; the stack starts as xs
  std::vector<Shape> elements;
  for (int64_t k = 0; k < loop->shape().tuple_size(); ++k)
    if (k != scan.xs) elements.push_back(loop->shape().tuple_shape(k));
  const Shape state_shape = Shape::tuple(elements);
  Instruction* init = loop->operand(0);
  Instruction* new_init;
  if (scan.peeled != nullptr) {  // the peeled rows are written into xs; the loop goes on from there
    scan.peeled->replace_operand(0, init->operand(scan.xs));
    new_init = tuple_without(computation, init, scan.xs, -1, nullptr, names, state_shape);
  } else {
    new_init = tuple_without(computation, init, scan.xs, scan.ys, init->operand(scan.xs), names, state_shape);
  }
  loop->replace_operand(0, new_init);
  if (init->users().empty()) computation.remove_instruction(init);
  Instruction* root = body->root();
  Instruction* new_root = tuple_without(*body, root, scan.xs, -1, nullptr, names, state_shape);
  body->set_root(new_root);
  body->remove_instruction(root);
  drop_state_element(*body, state, scan.xs, state_shape);
  drop_state_element(*condition, condition->parameter(0), scan.xs, state_shape);
  std::vector<Instruction*> results(loop->users().begin(), loop->users().end());
  loop->set_shape(state_shape);
  for (Instruction* result : results) {
    if (result->tuple_index == scan.xs) computation.remove_instruction(result);  // unused (match_scan)
    else if (result->tuple_index > scan.xs) --result->tuple_index;
  }
}

}  // namespace

StatusOr<bool> update_scans_in_place(Module& module) {
  NameTable names(module);
  bool changed = false;
  for (Computation* computation : module.computations()) {
    for (bool found = true; found;) {
      found = false;
      for (Instruction* instruction : computation->instructions()) {
        std::optional<Scan> scan = match_scan(module, instruction);
        if (!scan) continue;
        rewrite(*computation, *scan, names);
        changed = found = true;
        break;  // the instruction list changed: look again
      }
    }
  }
  return changed;
}

}  // namespace insitu
