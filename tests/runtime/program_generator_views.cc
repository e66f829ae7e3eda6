// The view part of the program generator (see program_generator.h): chains of slices and
// reshapes (random_view_chain), replayed on another value of the same shape (apply_view_chain),
// a view with one reader (emit_view), and the view hazards: a view of X, then X written, then a
// reader of the view (emit_view_hazard, on an entry array or a body's or branch's state slot).
#include <vector>

#include "program_generator_internal.h"

namespace insitu::testing_generator::generator_internal {
namespace {

std::string range_text(int64_t start, int64_t limit, int64_t stride = 1) {
  return stride == 1 ? str_cat("[", start, ":", limit, "]") : str_cat("[", start, ":", limit, ":", stride, "]");
}
bool fits_inside(const std::vector<int64_t>& inner, const std::vector<int64_t>& outer) {
  if (inner.size() != outer.size() || inner.empty()) return false;
  for (size_t i = 0; i < inner.size(); ++i)
    if (inner[i] > outer[i]) return false;
  return true;
}

}  // namespace

// A reshape to another factorization of the element count: flat [N], [1,N], [N,1], [K,N/K]
// (so [4,3] -> [12] -> [2,6] and [1,N] <-> [N] happen), or a scalar for one element.
ViewStep Generator::reshape_step(const std::vector<int64_t>& dims) {
  int64_t count = 1;
  for (int64_t size : dims) count *= size;
  std::vector<std::vector<int64_t>> targets = {{count}};
  for (int64_t rows = 1; rows <= count; ++rows)
    if (count % rows == 0) targets.push_back({rows, count / rows});
  if (count == 1) targets.push_back({});
  std::erase(targets, dims);  // never empty: one of {N}, {1,N}, {N,1} differs from dims
  return {"vshape", targets[rng_.uniform(0, targets.size() - 1)], ""};
}

// A slice (vpart: a range of a 1-D array; vrows: rows of a 2-D one; vrow: part of one row;
// vcols: a column range, contiguous only on one row; vstep: strided), a dynamic-slice of whole
// rows or of a 1-D range at indices of the scope (vdyn: clamped, often out of range), or a
// reshape.
ViewStep Generator::random_view_step(Scope& scope, const std::vector<int64_t>& dims, StepKind kind) {
  if (kind == StepKind::kReshape || dims.empty() || (kind == StepKind::kAny && rng_.chance(1, 3))) return reshape_step(dims);
  if (rng_.chance(1, 4)) {
    std::vector<int64_t> sizes = dims;
    sizes[0] = rng_.uniform(1, dims[0]);
    return {"vdyn", sizes, "", index_list(scope, dims, false)};
  }
  if (dims.size() == 1) {
    const int64_t size = dims[0];
    if (size >= 2 && rng_.chance(1, 4)) {  // strided: a view only when it keeps one element
      const int64_t stride = rng_.uniform(2, 3), start = rng_.uniform(0, size - 2), limit = rng_.uniform(start + 1, size);
      return {"vstep", {(limit - start + stride - 1) / stride}, str_cat(", slice={", range_text(start, limit, stride), "}")};
    }
    const auto [start, limit] = sub_range(size);
    return {"vpart", {limit - start}, str_cat(", slice={", range_text(start, limit), "}")};
  }
  const int64_t rows = dims[0], columns = dims[1];
  const int64_t choice = rng_.uniform(0, 9);
  if (choice < 5) {
    const auto [start, limit] = sub_range(rows);
    return {"vrows", {limit - start, columns}, str_cat(", slice={", range_text(start, limit), ", ", range_text(0, columns), "}")};
  }
  if (choice < 7) {
    const int64_t row = rng_.uniform(0, rows - 1);
    const auto [start, limit] = sub_range(columns);
    return {"vrow", {1, limit - start}, str_cat(", slice={", range_text(row, row + 1), ", ", range_text(start, limit), "}")};
  }
  if (choice < 9 || (rows < 2 && columns < 2)) {
    const auto [row_start, row_limit] = sub_range(rows);
    const auto [start, limit] = sub_range(columns);
    return {"vcols", {row_limit - row_start, limit - start},
            str_cat(", slice={", range_text(row_start, row_limit), ", ", range_text(start, limit), "}")};
  }
  const bool by_rows = rows >= 2 && (columns < 2 || rng_.chance(1, 2));
  const int64_t size = by_rows ? rows : columns;
  const int64_t start = rng_.uniform(0, size - 2), limit = rng_.uniform(start + 1, size);
  const std::string strided = range_text(start, limit, 2);
  const int64_t count = (limit - start + 1) / 2;
  if (by_rows) return {"vstep", {count, columns}, str_cat(", slice={", strided, ", ", range_text(0, columns), "}")};
  return {"vstep", {rows, count}, str_cat(", slice={", range_text(0, rows), ", ", strided, "}")};
}

// One or two steps, or slice -> reshape -> slice, or reshape -> reshape.
std::vector<ViewStep> Generator::random_view_chain(Scope& scope, const std::vector<int64_t>& dims) {
  std::vector<StepKind> kinds;
  const int64_t choice = rng_.uniform(0, 5);
  if (choice < 2) kinds = {StepKind::kSlice, StepKind::kReshape, StepKind::kSlice};
  else if (choice < 3) kinds = {StepKind::kReshape, StepKind::kReshape};
  else if (choice < 5) kinds = {StepKind::kAny};
  else kinds = {StepKind::kAny, StepKind::kAny};
  std::vector<ViewStep> chain;
  std::vector<int64_t> current = dims;
  for (StepKind kind : kinds) {
    chain.push_back(random_view_step(scope, current, kind));
    current = chain.back().dims;
  }
  return chain;
}

Value Generator::apply_view_chain(Scope& scope, const Value& source, const std::vector<ViewStep>& chain, bool visible) {
  Value value = source;
  for (size_t i = 0; i < chain.size(); ++i) {
    const ViewStep& step = chain[i];
    const std::string expression =
        !step.indices.empty()
            ? str_cat("dynamic-slice(", value.name, ", ", step.indices, "), dynamic_slice_sizes={", str_join(step.dims, ","), "}")
            : str_cat(step.attributes.empty() ? "reshape(" : "slice(", value.name, ")", step.attributes);
    value = emit(scope, step.stem, source.type, step.dims, expression, visible && (i + 1 == chain.size() || rng_.chance(1, 2)));
  }
  return value;
}

// A view chain of a picked value and one reader of it: an elementwise op, a dynamic-slice, the
// update of a dynamic-update-slice (into its own source at times), loop state or a branch
// operand (which must not be views); or none yet: later ops and the entry result may read it.
void Generator::emit_view(Scope& scope) {
  const Value source = pick(scope);
  const Value view = apply_view_chain(scope, source, random_view_chain(scope, source.dims), true);
  if (scope.depth == 0) entry_views_.push_back(view);
  const int64_t choice = rng_.uniform(0, 9);
  if (choice < 3) return emit_elementwise(scope, &view);
  if (choice < 5) return emit_dynamic_slice(scope, &view);
  if (choice < 7) {
    std::vector<Value> targets;
    for (const Value& value : scope.values)
      if (value.type == view.type && fits_inside(view.dims, value.dims)) targets.push_back(value);
    if (targets.empty()) return emit_elementwise(scope, &view);
    const bool into_source = fits_inside(view.dims, source.dims) && source.type == view.type && rng_.chance(1, 2);
    const Value target = into_source ? source : targets[rng_.uniform(0, targets.size() - 1)];
    const Value result = emit(scope, "dus", view.type, target.dims,
                              str_cat("dynamic-update-slice(", target.name, ", ", view.name, ", ",
                                      index_list(scope, target.dims, false), ")"));
    if (scope.depth == 0) structural_results_.push_back(result);
    return;
  }
  if (choice < 8 && scope.depth < 2 && !source.dims.empty() && rng_.chance(2, 3))
    return emit_block_through_conditional(scope, source);
  if (choice < 8 && scope.depth < 2) {
    std::vector<Value> state = {view};
    if (rng_.chance(1, 2)) state.push_back(pick(scope));
    if (rng_.chance(1, 2)) emit_while(scope, state);
    else emit_conditional(scope, state);
  }
}

// A block of `source` read by a dynamic-slice (sometimes reshaped), handed to a conditional (its
// state's first element) and written back at the same indices: a Pallas output block under
// pl.when (slice-update-folding's form 3 moves the read and the write-back into the branches).
void Generator::emit_block_through_conditional(Scope& scope, const Value& source) {
  std::vector<int64_t> sizes = source.dims;
  sizes[0] = rng_.uniform(1, sizes[0]);
  const std::string indices = index_list(scope, source.dims, false);
  const bool visible = rng_.chance(1, 4);  // read by later ops too at times (then not folded)
  Value handed = emit(scope, "blk", source.type, sizes,
                      str_cat("dynamic-slice(", source.name, ", ", indices, "), dynamic_slice_sizes={", str_join(sizes, ","), "}"),
                      visible);
  if (rng_.chance(1, 2))
    handed = emit(scope, "blkshape", source.type, reshape_step(sizes).dims, str_cat("reshape(", handed.name, ")"), visible);
  std::vector<Value> state = {handed};
  if (rng_.chance(1, 2)) state.push_back(pick(scope));
  Value back = emit_conditional(scope, state, /*publish=*/false)[0];
  if (back.dims != sizes) back = emit(scope, "back", source.type, sizes, str_cat("reshape(", back.name, ")"), false);
  const Value written = emit(scope, "written_back", source.type, source.dims,
                             str_cat("dynamic-update-slice(", source.name, ", ", back.name, ", ", indices, ")"));
  if (scope.depth == 0) structural_results_.push_back(written);
}

// A view of `target`, then something that may write target's bytes in place (a
// dynamic-update-slice, a scatter, one whose update is the view itself, an elementwise op that
// may reuse the buffer, or a loop or conditional carrying target), then a reader of the view
// that must run after it (it also reads the same view of the new value), and sometimes that
// reader written back by a dynamic-update-slice. Returns target's new value.
Value Generator::emit_view_hazard(Scope& scope, const Value& target, bool counter_first) {
  const std::vector<ViewStep> chain = random_view_chain(scope, target.dims);
  const Value view = apply_view_chain(scope, target, chain, true);
  if (scope.depth == 0) entry_views_.push_back(view);
  Value updated;
  const int64_t choice = rng_.uniform(0, 9);
  if (choice < 2 && fits_inside(view.dims, target.dims)) {
    updated = emit(scope, "clobber_self", target.type, target.dims,
                   str_cat("dynamic-update-slice(", target.name, ", ", view.name, ", ",
                           index_list(scope, target.dims, counter_first), ")"));
  } else if (choice < 5) {
    updated = emit_dynamic_update_slice(scope, target, counter_first, "clobber_dus");
  } else if (choice < 7) {
    updated = emit_scatter_into(scope, target, "clobber_scatter");
  } else if (choice < 8 || scope.depth >= 2) {
    const Value other = value_like(scope, target.type, target.dims);
    updated = emit(scope, "clobber_ew", target.type, target.dims, str_cat("add(", target.name, ", ", other.name, ")"));
  } else {
    std::vector<Value> state = {target};
    if (rng_.chance(1, 2)) state.push_back(pick(scope));
    updated = choice < 9 ? emit_while(scope, state)[0] : emit_conditional(scope, state)[0];
  }
  const Value replayed = apply_view_chain(scope, updated, chain, false);
  static constexpr std::string_view kReaders[] = {"add", "subtract", "maximum", "multiply"};
  const Value late = emit(scope, "late", view.type, view.dims,
                          str_cat(kReaders[rng_.uniform(0, 3)], "(", view.name, ", ", replayed.name, ")"));
  if (!fits_inside(late.dims, target.dims) || rng_.chance(1, 2)) return updated;
  return emit(scope, "dus", target.type, target.dims,
              str_cat("dynamic-update-slice(", updated.name, ", ", late.name, ", ",
                      index_list(scope, target.dims, counter_first), ")"));
}

// A view hazard on an entry array: a parameter (donated or not; its new value often becomes an
// output, so it can be aliased and updated in place) or a picked value.
void Generator::emit_entry_view_hazard(Scope& scope) {
  std::vector<Value> arrays;
  for (const Value& value : scope.values)
    if (!value.dims.empty()) arrays.push_back(value);
  if (arrays.empty()) return emit_view(scope);
  const bool of_parameter = !scope.parameters.empty() && rng_.chance(1, 2);
  const Value target = of_parameter ? scope.parameters[rng_.uniform(0, scope.parameters.size() - 1)]
                                    : arrays[rng_.uniform(0, arrays.size() - 1)];
  const Value updated = emit_view_hazard(scope, target, false);
  structural_results_.push_back(updated);
  if (of_parameter) clobbered_parameters_.push_back(updated);
}

// Inside a body or branch: a view hazard on one array state slot, whose new value becomes the
// slot's result (so the slot is updated in place and a reader of the old view follows the update).
std::vector<std::string> Generator::state_hazard(Scope& scope, const std::vector<Value>& slots, bool counter_first) {
  std::vector<std::string> fixed(slots.size());
  std::vector<size_t> arrays;
  for (size_t i = 0; i < slots.size(); ++i)
    if (!slots[i].dims.empty()) arrays.push_back(i);
  if (arrays.empty()) return fixed;
  const size_t slot = arrays[rng_.uniform(0, arrays.size() - 1)];
  fixed[slot] = emit_view_hazard(scope, slots[slot], counter_first).name;
  return fixed;
}

}  // namespace insitu::testing_generator::generator_internal
