// Internal to the program generator (program_generator.cc, program_generator_views.cc): the
// values and scopes it builds programs from, the type and shape helpers, and the Generator
// class, whose methods those two files define. Not for tests to include; they use
// program_generator.h.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "insitu/support/str.h"
#include "program_generator.h"

namespace insitu::testing_generator::generator_internal {

enum class Type { kF32, kS32 };

struct Value {
  std::string name;
  Type type = Type::kF32;
  std::vector<int64_t> dims;
  std::string layout;  // "" (the default) or a non-default one such as "{0,1}"
};

inline std::string_view type_name(Type type) { return type == Type::kF32 ? "f32" : "s32"; }
inline Type other_type(Type type) { return type == Type::kF32 ? Type::kS32 : Type::kF32; }
inline std::string shape_text(Type type, const std::vector<int64_t>& dims) {
  return str_cat(type_name(type), "[", str_join(dims, ","), "]");
}
inline std::string shape_text(const Value& value) { return shape_text(value.type, value.dims) + value.layout; }
inline bool same_shape(const Value& a, Type type, const std::vector<int64_t>& dims) {
  return a.type == type && a.dims == dims;
}
// Equal shapes, layouts included (what input_output_alias needs).
inline bool same_shape(const Value& a, const Value& b) { return same_shape(a, b.type, b.dims) && a.layout == b.layout; }
inline std::string tuple_shape_text(const std::vector<Value>& values, bool with_counter) {
  std::vector<std::string> parts;
  if (with_counter) parts.push_back("s32[]");
  for (const Value& value : values) parts.push_back(shape_text(value));
  return str_cat("(", str_join(parts, ", "), ")");
}

struct Scope {
  std::vector<std::string> lines;
  std::vector<Value> values;
  std::vector<Value> parameters;  // the entry's array parameters, or a body's or branch's state slots
  std::string counter;          // the s32[] loop counter inside a while body
  std::string index_parameter;  // the s32[] entry parameter, in the entry scope
  int depth = 0;                // 0: entry; while bodies and branches nest one level at most
};

// One step of a view chain (a slice or a reshape of the previous value), kept so that the chain
// can be replayed on another value of the same shape: the operand after an in-place update.
struct ViewStep {
  std::string stem;           // vrows, vrow, vpart (contiguous slices), vcols, vstep (not), vshape,
                              // vdyn (a dynamic-slice of whole rows: a view at a run-time offset)
  std::vector<int64_t> dims;  // the step's result
  std::string attributes;     // ", slice={...}" for a slice; empty for a reshape or a dynamic-slice
  std::string indices;        // a dynamic-slice's start operands (scalars of the scope)
};
enum class StepKind { kAny, kSlice, kReshape };

// Builds one program from a seed; all randomness comes from rng_, drawn in a fixed order.
class Generator {
 public:
  explicit Generator(uint64_t seed) : rng_(seed), seed_(seed) {}
  GeneratedProgram generate();

 private:
  std::string fresh(std::string_view stem) { return str_cat(stem, ".", next_id_++); }
  Value emit(Scope& scope, std::string_view stem, Type type, std::vector<int64_t> dims,
             const std::string& expression, bool visible = true, std::string layout = {}) {
    Value value{fresh(stem), type, std::move(dims), std::move(layout)};
    scope.lines.push_back(str_cat("  ", value.name, " = ", shape_text(value), " ", expression));
    if (visible) scope.values.push_back(value);
    return value;
  }
  std::vector<int64_t> random_dims() { return shapes_[rng_.uniform(0, shapes_.size() - 1)]; }
  Value pick(const Scope& scope) {
    const int64_t size = static_cast<int64_t>(scope.values.size());
    if (rng_.chance(1, 2)) return scope.values[rng_.uniform(std::max<int64_t>(0, size - 3), size - 1)];
    return scope.values[rng_.uniform(0, size - 1)];
  }

  void emit_reductions(Scope& entry, std::vector<Value>& outputs);
  std::string constant_scalar(Scope& scope, Type type);
  Value broadcast_constant(Scope& scope, Type type, const std::vector<int64_t>& dims);
  Value value_like(Scope& scope, Type type, const std::vector<int64_t>& dims);
  std::string index_scalar(Scope& scope, int64_t dim);
  std::string index_list(Scope& scope, const std::vector<int64_t>& dims, bool counter_first);
  Value make_update(Scope& scope, Type type, const std::vector<int64_t>& dims);
  std::string combiner(Type type, bool add);
  std::pair<int64_t, int64_t> sub_range(int64_t size) {
    const int64_t start = rng_.uniform(0, size - 1);
    return {start, rng_.uniform(start + 1, size)};
  }

  void emit_random_op(Scope& scope);
  void emit_elementwise(Scope& scope, const Value* operand = nullptr);
  void emit_dynamic_slice(Scope& scope, const Value* operand = nullptr);
  Value emit_dynamic_update_slice(Scope& scope, const Value& operand, bool counter_first, std::string_view stem = "dus");
  void emit_scatter(Scope& scope);
  void emit_layout_op(Scope& scope);
  Value emit_scatter_into(Scope& scope, const Value& operand, std::string_view stem);
  Value emit_block_update(Scope& scope, const Value& operand);

  // views and view hazards: program_generator_views.cc
  ViewStep reshape_step(const std::vector<int64_t>& dims);
  ViewStep random_view_step(Scope& scope, const std::vector<int64_t>& dims, StepKind kind);
  std::vector<ViewStep> random_view_chain(Scope& scope, const std::vector<int64_t>& dims);
  Value apply_view_chain(Scope& scope, const Value& source, const std::vector<ViewStep>& chain, bool visible);
  void emit_view(Scope& scope);
  void emit_block_through_conditional(Scope& scope, const Value& source);
  Value emit_view_hazard(Scope& scope, const Value& target, bool counter_first);
  void emit_entry_view_hazard(Scope& scope);
  std::vector<std::string> state_hazard(Scope& scope, const std::vector<Value>& slots, bool counter_first);

  // loops and conditionals: program_generator.cc
  std::vector<Value> pick_state(Scope& scope);
  std::vector<std::string> finish_state(Scope& scope, const std::vector<Value>& slots,
                                        const std::vector<std::string>& fixed);
  std::vector<Value> emit_while(Scope& scope, const std::vector<Value>& state);
  // `publish` false: the results are read by nothing the generator adds later (the caller's own).
  std::vector<Value> emit_conditional(Scope& scope, const std::vector<Value>& state, bool publish = true);
  void add_computation(const std::string& name, const Scope& scope, const std::string& root);

  SplitMix64 rng_;
  uint64_t seed_;
  int next_id_ = 0;
  std::vector<std::vector<int64_t>> shapes_;
  std::vector<std::string> computations_;
  std::vector<std::string> combiners_;  // names already emitted
  std::vector<Value> structural_results_;  // entry values made by while/conditional/scatter/DUS
  std::vector<Value> entry_views_;         // entry slices and reshapes (candidate results)
  std::vector<Value> clobbered_parameters_;  // entry parameters' new values after a view hazard
};

}  // namespace insitu::testing_generator::generator_internal
