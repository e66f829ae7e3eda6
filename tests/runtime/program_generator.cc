// The random program generator (see program_generator.h): the ops other than views (in
// program_generator_views.cc), while loops and conditionals, and the entry with its outputs and
// aliasing. Each emit_* function appends lines to a Scope (the entry computation, a while body
// or a conditional branch) and makes its result available to later ops of that scope; called
// computations are collected in computations_.
#include "program_generator.h"

#include <algorithm>
#include <string_view>

#include "insitu/support/str.h"
#include "program_generator_internal.h"

namespace insitu::testing_generator {
namespace generator_internal {

std::string Generator::constant_scalar(Scope& scope, Type type) {
  static constexpr std::string_view kFloats[] = {"0", "1", "-1", "0.5", "-1.25", "2", "3", "-0.75"};
  const std::string literal = type == Type::kF32 ? std::string(kFloats[rng_.uniform(0, 7)])
                                                 : std::to_string(rng_.uniform(-2, 5));
  return emit(scope, "c", type, {}, str_cat("constant(", literal, ")"), false).name;
}

Value Generator::broadcast_constant(Scope& scope, Type type, const std::vector<int64_t>& dims) {
  const std::string scalar = constant_scalar(scope, type);
  if (dims.empty()) return Value{scalar, type, dims};
  return emit(scope, "b", type, dims, str_cat("broadcast(", scalar, "), dimensions={}"), false);
}

// A value of the given shape: an existing one, a convert of one of the other type, a broadcast
// of a rank-1 value into rank 2, or a broadcast constant.
Value Generator::value_like(Scope& scope, Type type, const std::vector<int64_t>& dims) {
  std::vector<Value> same, converted, rows;
  for (const Value& value : scope.values) {
    if (same_shape(value, type, dims)) same.push_back(value);
    if (same_shape(value, other_type(type), dims)) converted.push_back(value);
    if (dims.size() == 2 && value.type == type && value.dims.size() == 1 && value.dims[0] == dims[1]) rows.push_back(value);
  }
  const int64_t choice = rng_.uniform(0, 9);
  if (!same.empty() && choice < 6) return same[rng_.uniform(0, same.size() - 1)];
  if (!converted.empty() && choice < 8)
    return emit(scope, "cvt", type, dims, str_cat("convert(", converted[rng_.uniform(0, converted.size() - 1)].name, ")"));
  if (!rows.empty() && choice < 9)
    return emit(scope, "rows", type, dims, str_cat("broadcast(", rows[rng_.uniform(0, rows.size() - 1)].name, "), dimensions={1}"));
  return broadcast_constant(scope, type, dims);
}

// An s32[] start index for a dimension of size `dim`: a constant (sometimes out of range), the
// loop counter, the entry's index parameter, or one element read out of an s32 array value.
std::string Generator::index_scalar(Scope& scope, int64_t dim) {
  const int64_t choice = rng_.uniform(0, 9);
  if (choice < 6 && !scope.counter.empty()) {
    if (rng_.chance(1, 2)) return scope.counter;
    const std::string offset = constant_scalar(scope, Type::kS32);
    return emit(scope, "at", Type::kS32, {}, str_cat("add(", scope.counter, ", ", offset, ")"), false).name;
  }
  if (choice < 7 && !scope.index_parameter.empty()) return scope.index_parameter;
  if (choice >= 7) {
    std::vector<Value> integers;
    for (const Value& value : scope.values)
      if (value.type == Type::kS32) integers.push_back(value);
    if (!integers.empty()) {
      const Value source = integers[rng_.uniform(0, integers.size() - 1)];
      if (source.dims.empty()) return source.name;
      std::vector<std::string> ranges;
      std::vector<int64_t> ones;
      for (int64_t size : source.dims) {
        const int64_t start = rng_.uniform(0, size - 1);
        ranges.push_back(str_cat("[", start, ":", start + 1, "]"));
        ones.push_back(1);
      }
      const Value element = emit(scope, "elt", Type::kS32, ones,
                                 str_cat("slice(", source.name, "), slice={", str_join(ranges, ", "), "}"), false);
      return emit(scope, "idx", Type::kS32, {}, str_cat("reshape(", element.name, ")"), false).name;
    }
  }
  return emit(scope, "c", Type::kS32, {}, str_cat("constant(", rng_.uniform(-2, dim + 1), ")"), false).name;
}

std::string Generator::index_list(Scope& scope, const std::vector<int64_t>& dims, bool counter_first) {
  std::vector<std::string> indices;
  for (size_t i = 0; i < dims.size(); ++i)
    indices.push_back(i == 0 && counter_first && !scope.counter.empty() ? scope.counter : index_scalar(scope, dims[i]));
  return str_join(indices, ", ");
}

// An update of the given shape: a window read (by dynamic-slice) out of a same-type value that
// is large enough, the operand itself included, sometimes negated; or any value of that shape.
Value Generator::make_update(Scope& scope, Type type, const std::vector<int64_t>& dims) {
  std::vector<Value> sources;
  for (const Value& value : scope.values) {
    if (value.type != type || value.dims.size() != dims.size()) continue;
    bool fits = true;
    for (size_t i = 0; i < dims.size(); ++i) fits = fits && value.dims[i] >= dims[i];
    if (fits) sources.push_back(value);
  }
  if (sources.empty() || rng_.chance(1, 3)) return value_like(scope, type, dims);
  const Value source = sources[rng_.uniform(0, sources.size() - 1)];
  const std::string indices = index_list(scope, source.dims, false);
  Value window = emit(scope, "win", type, dims,
                      str_cat("dynamic-slice(", source.name, ", ", indices, "), dynamic_slice_sizes={", str_join(dims, ","), "}"),
                      false);
  if (rng_.chance(1, 2)) return window;
  return emit(scope, "neg", type, dims, str_cat("negate(", window.name, ")"), false);
}

std::string Generator::combiner(Type type, bool add) {
  const std::string name = str_cat(add ? "scatter_add_" : "scatter_overwrite_", type_name(type));
  for (const std::string& existing : combiners_)
    if (existing == name) return name;
  combiners_.push_back(name);
  const std::string scalar(str_cat(type_name(type), "[]"));
  const std::string lhs = fresh("lhs"), rhs = fresh("rhs");
  std::string text = str_cat(name, " {\n  ", lhs, " = ", scalar, " parameter(0)\n  ");
  if (add) {
    text += str_cat(rhs, " = ", scalar, " parameter(1)\n  ROOT ", fresh("sum"), " = ", scalar, " add(", lhs, ", ", rhs, ")\n}\n");
  } else {
    text += str_cat("ROOT ", rhs, " = ", scalar, " parameter(1)\n}\n");
  }
  computations_.push_back(text);
  return name;
}

// Sometimes a view (a slice/reshape chain and a reader, or a hazard around it) first, on top
// of the other ops' mix rather than instead of part of it.
void Generator::emit_random_op(Scope& scope) {
  if (rng_.chance(1, 4)) {
    if (scope.depth == 0 && rng_.chance(2, 5)) emit_entry_view_hazard(scope);
    else emit_view(scope);
  }
  const int64_t choice = rng_.uniform(0, 11);
  const bool may_nest = scope.depth < 2;
  if (choice < 5) return emit_elementwise(scope);
  if (choice < 6) return emit_dynamic_slice(scope);
  if (choice < 8) {
    const Value operand = pick(scope);
    if (operand.dims.empty()) return emit_elementwise(scope);
    const Value result = operand.layout.empty() && rng_.chance(1, 3) ? emit_block_update(scope, operand)
                                                                     : emit_dynamic_update_slice(scope, operand, false);
    if (scope.depth == 0) structural_results_.push_back(result);
    return;
  }
  if (choice < 9) return rng_.chance(1, 2) ? emit_scatter(scope) : emit_layout_op(scope);
  if (choice < 10 && may_nest) {
    emit_while(scope, pick_state(scope));
    return;
  }
  if (choice < 11 && may_nest) {
    emit_conditional(scope, pick_state(scope));
    return;
  }
  emit_elementwise(scope);
}

// An elementwise op of `operand` (or of a picked value) and values of its shape.
void Generator::emit_elementwise(Scope& scope, const Value* operand) {
  const Value a = operand != nullptr ? *operand : pick(scope);
  const int64_t kind = rng_.uniform(0, 9);
  if (kind == 4) {
    emit(scope, "un", a.type, a.dims, str_cat(rng_.chance(1, 2) ? "negate(" : "abs(", a.name, ")"));
  } else if (kind == 5) {
    emit(scope, "cvt", other_type(a.type), a.dims, str_cat("convert(", a.name, ")"));
  } else if (kind == 6 || kind == 7) {
    static constexpr std::string_view kDirections[] = {"LT", "GT", "LE", "GE", "EQ", "NE"};
    const Value b = value_like(scope, a.type, a.dims);
    const std::string predicate = fresh("cmp");
    scope.lines.push_back(str_cat("  ", predicate, " = pred[", str_join(a.dims, ","), "] compare(", a.name, ", ", b.name,
                                  "), direction=", kDirections[rng_.uniform(0, 5)]));
    const Value c = value_like(scope, a.type, a.dims);
    const bool swap = rng_.chance(1, 2);
    emit(scope, "sel", a.type, a.dims, str_cat("select(", predicate, ", ", swap ? c.name : a.name, ", ", swap ? a.name : c.name, ")"));
  } else {
    static constexpr std::string_view kBinary[] = {"add", "subtract", "multiply", "maximum", "minimum",
                                                   "add", "subtract", "maximum", "divide",  "remainder"};
    const int64_t op = rng_.uniform(0, 9);
    // divide and remainder rarely: x/0 and INT_MIN/-1 follow XLA's rules in both executors
    const std::string_view name = op >= 8 && !rng_.chance(1, 3) ? kBinary[op - 8] : kBinary[op];
    const Value b = value_like(scope, a.type, a.dims);
    const bool swap = rng_.chance(1, 2);
    emit(scope, "ew", a.type, a.dims, str_cat(name, "(", swap ? b.name : a.name, ", ", swap ? a.name : b.name, ")"));
  }
}

// Layouts as XLA:CPU's optimized modules use them: a transpose into a non-default layout, a
// copy between layouts, an elementwise op producing one, and bitcasts that read the bytes a
// layout puts in memory (so a layout ignored anywhere changes the values).
void Generator::emit_layout_op(Scope& scope) {
  const Value a = pick(scope);
  if (a.dims.size() != 2) return emit_elementwise(scope, &a);
  const int64_t m = a.dims[0], n = a.dims[1];
  const std::string column_major = "{0,1}";
  switch (rng_.uniform(0, 3)) {
    case 0: {  // transpose into {0,1}: the bytes are a's; read them back with a bitcast
      const Value t = emit(scope, "lt", a.type, {n, m}, str_cat("transpose(", a.name, "), dimensions={1,0}"), true,
                           column_major);
      if (rng_.chance(2, 3)) {
        const bool flat = rng_.chance(1, 2);
        emit(scope, "lb", a.type, flat ? std::vector<int64_t>{m * n} : std::vector<int64_t>{m, n},
             str_cat("bitcast(", t.name, ")"));
      }
      return;
    }
    case 1: {  // copy into {0,1}, then a bitcast of that to row-major [n,m]: a transpose
      const Value c = emit(scope, "lc", a.type, {m, n}, str_cat("copy(", a.name, ")"), true, column_major);
      if (rng_.chance(2, 3)) emit(scope, "lb", a.type, {n, m}, str_cat("bitcast(", c.name, ")"));
      return;
    }
    case 2: {  // an elementwise op writing {0,1}, copied out to the default layout
      const Value b = value_like(scope, a.type, a.dims);
      const Value e = emit(scope, "le", a.type, {m, n}, str_cat("add(", a.name, ", ", b.name, ")"), true, column_major);
      if (rng_.chance(1, 2)) emit(scope, "lo", a.type, {m, n}, str_cat("copy(", e.name, ")"));
      return;
    }
    default: {  // a bitcast of a value in whatever layout it has
      emit(scope, "lb", a.type, {m * n}, str_cat("bitcast(", a.name, ")"));
      return;
    }
  }
}

void Generator::emit_dynamic_slice(Scope& scope, const Value* picked) {
  const Value operand = picked != nullptr ? *picked : pick(scope);
  if (operand.dims.empty()) return emit_elementwise(scope, picked);
  std::vector<int64_t> sizes;
  for (int64_t size : operand.dims) sizes.push_back(rng_.uniform(1, size));
  const std::string indices = index_list(scope, operand.dims, false);
  emit(scope, "ds", operand.type, sizes,
       str_cat("dynamic-slice(", operand.name, ", ", indices, "), dynamic_slice_sizes={", str_join(sizes, ","), "}"));
}

Value Generator::emit_dynamic_update_slice(Scope& scope, const Value& operand, bool counter_first, std::string_view stem) {
  std::vector<int64_t> sizes;
  for (int64_t size : operand.dims) sizes.push_back(rng_.uniform(1, size));
  const Value update = make_update(scope, operand.type, sizes);
  const std::string indices = index_list(scope, operand.dims, counter_first);
  return emit(scope, stem, operand.type, operand.dims,
              str_cat("dynamic-update-slice(", operand.name, ", ", update.name, ", ", indices, ")"));
}

// scatter into dimension 0 of a rank-1 or rank-2 operand; indices s32[K,1] with duplicates and
// an occasional out-of-bounds row (skipped, as XLA does).
void Generator::emit_scatter(Scope& scope) {
  std::vector<Value> operands;
  for (const Value& value : scope.values)
    if (!value.dims.empty()) operands.push_back(value);
  if (operands.empty()) return emit_elementwise(scope);
  const Value result = emit_scatter_into(scope, operands[rng_.uniform(0, operands.size() - 1)], "sc");
  if (scope.depth == 0) structural_results_.push_back(result);
}

Value Generator::emit_scatter_into(Scope& scope, const Value& operand, std::string_view stem) {
  const int64_t rows = operand.dims[0];
  const int64_t count = rng_.chance(2, 3) ? rows : rng_.uniform(1, 4);
  std::vector<int64_t> update_dims = operand.dims;
  update_dims[0] = count;
  const Value updates = value_like(scope, operand.type, update_dims);
  std::vector<int64_t> indices;
  for (int64_t i = 0; i < count; ++i)
    indices.push_back(rng_.chance(1, 8) ? (rng_.chance(1, 2) ? -1 : rows) : rng_.uniform(0, rows - 1));
  if (count >= 2 && rng_.chance(1, 2)) indices.back() = indices.front();  // a duplicate
  const std::string index_text =
      str_cat("{ ", str_join(indices, ", ", [](int64_t index) { return str_cat("{", index, "}"); }), " }");
  const Value index_value =
      emit(scope, "sidx", Type::kS32, {count, 1}, str_cat("constant(", index_text, ")"), false);
  const std::string to_apply = combiner(operand.type, rng_.chance(1, 2));
  return emit(scope, stem, operand.type, operand.dims,
              str_cat("scatter(", operand.name, ", ", index_value.name, ", ", updates.name, "), update_window_dims={",
                      operand.dims.size() == 2 ? "1" : "", "}, inserted_window_dims={0}, "
                      "scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=", to_apply));
}

// A block of `operand` read out by dynamic-slice (one row reshaped to a vector, or several
// rows), updated by a dynamic-update-slice or by a scatter of one window (at an index that may
// be out of range, so the window is dropped), and written back at the same start
// (slice-update-folding's shape). Sometimes the updated block is read too, and sometimes the
// old block after the write-back.
Value Generator::emit_block_update(Scope& scope, const Value& operand) {
  const bool matrix = operand.dims.size() == 2;
  const int64_t rows = operand.dims[0];
  const bool one_row = matrix && rng_.chance(1, 2);
  std::vector<int64_t> sizes = operand.dims;
  sizes[0] = one_row ? 1 : rng_.uniform(1, rows);
  const std::string row_index = index_scalar(scope, rows);
  std::string starts = row_index;
  if (matrix) starts += ", " + emit(scope, "c", Type::kS32, {}, "constant(0)", false).name;
  const Value block =
      emit(scope, "blk", operand.type, sizes,
           str_cat("dynamic-slice(", operand.name, ", ", starts, "), dynamic_slice_sizes={", str_join(sizes, ","), "}"),
           false);
  Value inner = block;
  if (one_row) inner = emit(scope, "row", operand.type, {sizes[1]}, str_cat("reshape(", block.name, ")"), false);
  // the update's window: any size along each dimension of the (reshaped) block
  std::vector<int64_t> window;
  for (int64_t size : inner.dims) window.push_back(rng_.uniform(1, size));
  const Value update = make_update(scope, operand.type, window);
  std::string updated_text;
  if (rng_.chance(1, 2)) {
    updated_text = str_cat("dynamic-update-slice(", inner.name, ", ", update.name, ", ", index_list(scope, inner.dims, false), ")");
  } else {
    // one index, along the last dimension (all of the operand's when it is a matrix: the fold's
    // case) or the first (part of it unless the block has every row: the fold must refuse)
    const int64_t indexed = rng_.chance(2, 3) ? static_cast<int64_t>(inner.dims.size()) - 1 : 0;
    const std::string at = emit(scope, "at", Type::kS32, {1},
                                str_cat("reshape(", index_scalar(scope, inner.dims[indexed]), ")"), false).name;
    std::vector<int64_t> all;
    for (size_t d = 0; d < inner.dims.size(); ++d) all.push_back(static_cast<int64_t>(d));
    updated_text = str_cat("scatter(", inner.name, ", ", at, ", ", update.name, "), update_window_dims={",
                           str_join(all, ","), "}, inserted_window_dims={}, scatter_dims_to_operand_dims={", indexed,
                           "}, index_vector_dim=0, to_apply=", combiner(operand.type, rng_.chance(1, 3)));
  }
  const Value updated = emit(scope, "upd", operand.type, inner.dims, updated_text, rng_.chance(1, 3));
  Value back = updated;
  if (one_row) back = emit(scope, "back", operand.type, sizes, str_cat("reshape(", updated.name, ")"), false);
  const Value result = emit(scope, "wb", operand.type, operand.dims,
                            str_cat("dynamic-update-slice(", operand.name, ", ", back.name, ", ", starts, ")"));
  if (rng_.chance(1, 4)) emit(scope, "old", operand.type, block.dims, str_cat("negate(", block.name, ")"));
  return result;
}

// One to three values (sometimes one of them twice) carried by a loop or a conditional.
std::vector<Value> Generator::pick_state(Scope& scope) {
  std::vector<Value> state;
  const int64_t count = rng_.uniform(1, 3);
  for (int64_t i = 0; i < count; ++i) state.push_back(pick(scope));
  if (rng_.chance(1, 6)) state.push_back(state.front());
  return state;
}

// The new value of each slot of a loop state or branch result: unchanged, updated in place by a
// dynamic-update-slice (at the loop counter inside a loop), or any value of the same shape
// (sometimes through a reshape round trip).
// A non-empty fixed[i] is slot i's new value already (a view hazard's).
std::vector<std::string> Generator::finish_state(Scope& scope, const std::vector<Value>& slots,
                                                 const std::vector<std::string>& fixed) {
  std::vector<std::string> results;
  for (size_t i = 0; i < slots.size(); ++i) {
    const Value& slot = slots[i];
    if (!fixed[i].empty()) {
      results.push_back(fixed[i]);
      continue;
    }
    const int64_t choice = rng_.uniform(0, 3);
    if (choice == 0) {
      results.push_back(slot.name);
    } else if (choice == 1 && !slot.dims.empty()) {
      results.push_back(emit_dynamic_update_slice(scope, slot, rng_.chance(2, 3)).name);
    } else {
      std::vector<Value> same;
      for (const Value& value : scope.values)
        if (same_shape(value, slot.type, slot.dims)) same.push_back(value);
      const Value chosen = rng_.chance(1, 2) ? same.back() : same[rng_.uniform(0, same.size() - 1)];
      if (slot.dims.empty() || !rng_.chance(1, 4)) {
        results.push_back(chosen.name);
        continue;
      }
      // a reshape round trip: views as the new value (a computation's result, so materialized)
      const std::vector<ViewStep> chain = {reshape_step(slot.dims), {"vshape", slot.dims, ""}};
      results.push_back(apply_view_chain(scope, chosen, chain, false).name);
    }
  }
  return results;
}

void Generator::add_computation(const std::string& name, const Scope& scope, const std::string& root) {
  computations_.push_back(str_cat(name, " {\n", str_join(scope.lines, "\n"), "\n  ROOT ", root, "\n}\n"));
}

std::vector<Value> Generator::emit_while(Scope& scope, const std::vector<Value>& state) {
  const std::string state_shape = tuple_shape_text(state, true);
  const std::string body_name = fresh("body"), condition_name = fresh("cond");

  Scope body;
  body.depth = scope.depth + 1;
  const std::string parameter = fresh("state");
  body.lines.push_back(str_cat("  ", parameter, " = ", state_shape, " parameter(0)"));
  body.counter = emit(body, "i", Type::kS32, {}, str_cat("get-tuple-element(", parameter, "), index=0"), false).name;
  std::vector<Value> slots;
  for (size_t i = 0; i < state.size(); ++i)
    slots.push_back(emit(body, "s", state[i].type, state[i].dims, str_cat("get-tuple-element(", parameter, "), index=", i + 1)));
  body.parameters = slots;
  for (int64_t ops = rng_.uniform(1, 4); ops > 0; --ops) emit_random_op(body);
  const std::vector<std::string> fixed =
      rng_.chance(1, 2) ? state_hazard(body, slots, true) : std::vector<std::string>(slots.size());
  const std::vector<std::string> results = finish_state(body, slots, fixed);
  const std::string one = emit(body, "one", Type::kS32, {}, "constant(1)", false).name;
  const std::string next = emit(body, "next", Type::kS32, {}, str_cat("add(", body.counter, ", ", one, ")"), false).name;
  add_computation(body_name, body, str_cat(fresh("out"), " = ", state_shape, " tuple(", next, ", ", str_join(results, ", "), ")"));

  Scope condition;
  const std::string condition_parameter = fresh("state");
  condition.lines.push_back(str_cat("  ", condition_parameter, " = ", state_shape, " parameter(0)"));
  const std::string counter =
      emit(condition, "i", Type::kS32, {}, str_cat("get-tuple-element(", condition_parameter, "), index=0"), false).name;
  const std::string limit = emit(condition, "trips", Type::kS32, {}, str_cat("constant(", rng_.uniform(0, 4), ")"), false).name;
  add_computation(condition_name, condition,
                  str_cat(fresh("more"), " = pred[] compare(", counter, ", ", limit, "), direction=LT"));

  const std::string zero = emit(scope, "zero", Type::kS32, {}, "constant(0)", false).name;
  std::vector<std::string> operands = {zero};
  for (const Value& value : state) operands.push_back(value.name);
  const std::string init = fresh("init");
  scope.lines.push_back(str_cat("  ", init, " = ", state_shape, " tuple(", str_join(operands, ", "), ")"));
  const std::string loop = fresh("loop");
  scope.lines.push_back(str_cat("  ", loop, " = ", state_shape, " while(", init, "), condition=", condition_name, ", body=", body_name));
  std::vector<Value> loop_results;
  for (size_t i = 0; i < state.size(); ++i) {
    loop_results.push_back(emit(scope, "w", state[i].type, state[i].dims, str_cat("get-tuple-element(", loop, "), index=", i + 1)));
    if (scope.depth == 0) structural_results_.push_back(loop_results.back());
  }
  return loop_results;
}

std::vector<Value> Generator::emit_conditional(Scope& scope, const std::vector<Value>& state, bool publish) {
  const std::string state_shape = tuple_shape_text(state, false);
  std::vector<std::string> names;
  for (const Value& value : state) names.push_back(value.name);
  const std::string operand = fresh("args");
  scope.lines.push_back(str_cat("  ", operand, " = ", state_shape, " tuple(", str_join(names, ", "), ")"));

  const bool by_predicate = rng_.chance(1, 2);
  const int64_t branch_count = by_predicate ? 2 : rng_.uniform(2, 3);
  std::string selector;
  if (by_predicate) {
    const std::string index = index_scalar(scope, 3);
    const std::string bound = constant_scalar(scope, Type::kS32);
    selector = fresh("p");
    scope.lines.push_back(str_cat("  ", selector, " = pred[] compare(", index, ", ", bound, "), direction=LT"));
  } else {
    selector = index_scalar(scope, branch_count);  // out of range selects the last branch
  }

  std::vector<std::string> branches;
  for (int64_t b = 0; b < branch_count; ++b) {
    const std::string name = fresh("branch");
    branches.push_back(name);
    Scope branch;
    branch.depth = scope.depth + 1;
    const std::string parameter = fresh("arg");
    if (rng_.chance(1, 8)) {  // the whole state passes through
      computations_.push_back(str_cat(name, " {\n  ROOT ", parameter, " = ", state_shape, " parameter(0)\n}\n"));
      continue;
    }
    branch.lines.push_back(str_cat("  ", parameter, " = ", state_shape, " parameter(0)"));
    std::vector<Value> slots;
    for (size_t i = 0; i < state.size(); ++i)
      slots.push_back(emit(branch, "s", state[i].type, state[i].dims, str_cat("get-tuple-element(", parameter, "), index=", i)));
    branch.parameters = slots;
    for (int64_t ops = rng_.uniform(0, 3); ops > 0; --ops) emit_random_op(branch);
    const std::vector<std::string> fixed =
        rng_.chance(1, 3) ? state_hazard(branch, slots, false) : std::vector<std::string>(slots.size());
    const std::vector<std::string> results = finish_state(branch, slots, fixed);
    add_computation(name, branch, str_cat(fresh("out"), " = ", state_shape, " tuple(", str_join(results, ", "), ")"));
  }

  const std::string result = fresh("cond");
  std::vector<std::string> operands(branch_count, operand);
  std::string expression = str_cat(state_shape, " conditional(", selector, ", ", str_join(operands, ", "), "), ");
  expression += by_predicate ? str_cat("true_computation=", branches[0], ", false_computation=", branches[1])
                             : str_cat("branch_computations={", str_join(branches, ", "), "}");
  scope.lines.push_back(str_cat("  ", result, " = ", expression));
  std::vector<Value> results;
  for (size_t i = 0; i < state.size(); ++i) {
    results.push_back(emit(scope, "r", state[i].type, state[i].dims, str_cat("get-tuple-element(", result, "), index=", i),
                           publish));
    if (scope.depth == 0 && publish) structural_results_.push_back(results.back());
  }
  return results;
}

GeneratedProgram Generator::generate() {
  for (int64_t count = rng_.uniform(2, 3); count > 0; --count) {
    if (rng_.chance(1, 2)) shapes_.push_back({rng_.uniform(1, 6)});
    else shapes_.push_back({rng_.uniform(1, 4), rng_.uniform(1, 5)});
  }
  Scope entry;
  std::vector<Value> parameters;
  const int64_t array_count = rng_.uniform(1, 4);
  const bool with_index = rng_.chance(1, 3);
  for (int64_t p = 0; p < array_count + (with_index ? 1 : 0); ++p) {
    const bool is_index = p == array_count;
    const Type type = is_index || rng_.chance(1, 3) ? Type::kS32 : Type::kF32;
    std::vector<int64_t> dims = is_index ? std::vector<int64_t>{} : random_dims();
    const std::string layout = dims.size() == 2 && rng_.chance(1, 4) ? "{0,1}" : "";
    parameters.push_back(emit(entry, is_index ? "index" : "p", type, std::move(dims), str_cat("parameter(", p, ")"),
                              true, layout));
    if (is_index) entry.index_parameter = parameters.back().name;
    else entry.parameters.push_back(parameters.back());
  }
  for (int64_t ops = rng_.uniform(3, 9); ops > 0; --ops) emit_random_op(entry);

  // Outputs: the newest values, some loop/conditional/scatter/DUS results, sometimes a
  // parameter unchanged and sometimes one value twice.
  std::vector<Value> outputs;
  const int64_t size = static_cast<int64_t>(entry.values.size());
  for (int64_t i = std::max<int64_t>(0, size - rng_.uniform(1, 2)); i < size; ++i) outputs.push_back(entry.values[i]);
  for (int64_t extra = std::min<int64_t>(rng_.uniform(0, 2), structural_results_.size()); extra > 0; --extra)
    outputs.push_back(structural_results_[rng_.uniform(0, structural_results_.size() - 1)]);
  if (!clobbered_parameters_.empty() && rng_.chance(2, 3))
    outputs.push_back(clobbered_parameters_[rng_.uniform(0, clobbered_parameters_.size() - 1)]);
  if (!entry_views_.empty() && rng_.chance(1, 4)) outputs.push_back(entry_views_[rng_.uniform(0, entry_views_.size() - 1)]);
  // views and their readers have new shapes; keep outputs that parameters can alias as common
  if (rng_.chance(3, 4)) {
    for (size_t i = entry.values.size(); i-- > parameters.size();) {
      const Value& value = entry.values[i];
      const auto same_as = [&](const Value& parameter) { return same_shape(value, parameter.type, parameter.dims); };
      if (std::any_of(parameters.begin(), parameters.end(), same_as)) {
        outputs.push_back(value);
        break;
      }
    }
  }
  if (rng_.chance(1, 3)) outputs.push_back(parameters[rng_.uniform(0, parameters.size() - 1)]);
  if (rng_.chance(1, 4)) outputs.push_back(outputs[rng_.uniform(0, outputs.size() - 1)]);

  // Aliasing: a parameter is aliased to an equal-shape output, declared a donor, or neither.
  GeneratedProgram program;
  std::vector<std::string> aliases, donors;
  std::vector<bool> output_aliased(outputs.size(), false);
  for (size_t p = 0; p < parameters.size(); ++p) {
    std::vector<size_t> candidates;
    for (size_t o = 0; o < outputs.size(); ++o)
      if (!output_aliased[o] && same_shape(outputs[o], parameters[p])) candidates.push_back(o);
    bool donate = rng_.chance(1, 4);
    if (!candidates.empty() && rng_.chance(1, 2)) {
      const size_t o = candidates[rng_.uniform(0, candidates.size() - 1)];
      output_aliased[o] = true;
      const bool must = rng_.chance(1, 4);
      aliases.push_back(str_cat("{", o, "}: (", p, ", {}, ", must ? "must-alias" : "may-alias", ")"));
      donate = must || rng_.chance(2, 3);
    } else if (rng_.chance(1, 3)) {
      donors.push_back(str_cat("(", p, ", {})"));
      donate = rng_.chance(2, 3);
    }
    program.donate.push_back(donate);
  }

  emit_reductions(entry, outputs);

  std::string header = str_cat("HloModule generated_", seed_);
  if (!aliases.empty()) header += str_cat(", input_output_alias={ ", str_join(aliases, ", "), " }");
  if (!donors.empty()) header += str_cat(", buffer_donor={ ", str_join(donors, ", "), " }");
  std::vector<std::string> names;
  for (const Value& value : outputs) names.push_back(value.name);
  program.text = str_cat(header, "\n\n", str_join(computations_, "\n"), computations_.empty() ? "" : "\n",
                         "ENTRY main {\n", str_join(entry.lines, "\n"), "\n  ROOT result = ",
                         tuple_shape_text(outputs, false), " tuple(", str_join(names, ", "), ")\n}\n");
  return program;
}

}  // namespace generator_internal

GeneratedProgram generate_program(uint64_t seed) { return generator_internal::Generator(seed).generate(); }

std::vector<Literal> make_generated_arguments(const Module& module, uint64_t seed) {
  SplitMix64 rng(seed ^ 0x5DEECE66Dull);
  std::vector<Literal> arguments;
  for (const Instruction* parameter : module.entry()->parameters()) {
    Literal argument(parameter->shape());
    if (parameter->shape().element_type() == PrimitiveType::kF32) {
      for (float& value : argument.data<float>()) value = static_cast<float>(rng.uniform(-32, 32)) / 8.0f;
    } else if (parameter->shape().element_type() == PrimitiveType::kS32) {
      for (int32_t& value : argument.data<int32_t>()) value = static_cast<int32_t>(rng.uniform(-3, 6));
    }
    arguments.push_back(std::move(argument));
  }
  return arguments;
}

}  // namespace insitu::testing_generator
