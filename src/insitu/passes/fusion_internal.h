// Internal to the fusion pass (fusion.cc groups and outlines; fusion_copies.cc gives readers
// their own copies of values before grouping): what both need.
#pragma once

#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "insitu/ir/module.h"
#include "insitu/passes/name_table.h"

namespace insitu::fusion_internal {

// An elementwise op with a native kernel (unary, binary, select, convert, is-finite) of an array result,
// without a side effect: what a loop fusion computes.
bool is_fusible_elementwise(const Instruction& instruction);

// A reduce its input's elementwise producers may join (a kInput fusion): see fusion.cc.
bool is_fusible_reduce(const Instruction& reduce);

// The pre-steps of grouping, each true when it changed the computation (fusion.h says why):
// far readers of a big elementwise value compute it again; a scalar broadcast gets one copy per
// elementwise reader; a cheap value every close reader fuses gets one copy per reader (a reduce
// counts as fusing its input only with `reduces`).
bool recompute_far_values(Computation& computation, NameTable& names);
bool split_shared_scalar_broadcasts(Computation& computation, NameTable& names);
bool duplicate_cheap_values(Computation& computation, NameTable& names, bool reduces);

// A fusion: its instructions (the root first, then producers as they joined) and the producers
// it also returns (multi-output), in the order they joined. A root that is a
// dynamic-update-slice of an array from outside updates it in place: the fusion aliases its
// output to that operand (output_to_operand_aliasing).
struct Group {
  std::vector<Instruction*> members;
  std::vector<Instruction*> extra_outputs;
  bool joint = false;  // grown with sibling outputs (returned_siblings)
};

// Groups of an f32 dot with what the runtime's sliced dot reads where it lies (fusion.h's
// "Sliced dots"): its strided dynamic-slice operands, and the accumulation of its result into a
// window of an array (the window's read, the add, the optional select of it against zero and
// the write-back), each member then in `taken`. fusion_dots.cc.
std::vector<Group> sliced_dot_groups(Computation& computation, std::unordered_set<const Instruction*>& taken);

// Replaces the group (in `computation`) by one fusion instruction placed at its root (group
// members first), calling a new computation into which the members move (not copied: an
// outlined 100,000-op chain built and freed as many instructions); extra outputs make the
// fusion a tuple whose readers outside read get-tuple-elements. Scalar constants the group
// reads are copied in and listed in `copied_constants` (the caller removes the unread ones).
// `position`: program order before any group was outlined. `kind`: the fusion kind, or empty
// for the root's (kInput for a reduce, kCustom for a dot or a dynamic-update-slice, else kLoop).
void outline(Module& module, Computation& computation, const Group& fused_group, NameTable& names,
             NameTable& computation_names, const std::unordered_map<const Instruction*, size_t>& position,
             std::vector<Instruction*>& copied_constants, std::string_view kind = {});

// Removes the scalar constants outline copied into fused bodies (`copied_constants`, in any
// order, repeats allowed) that nothing in `computation` reads any more.
void remove_unread_constants(Computation& computation, std::vector<Instruction*>& copied_constants);

// The entry and every computation reached from it through while/conditional/call: where
// fusions are made.
std::vector<Computation*> control_flow_computations(Module& module);

}  // namespace insitu::fusion_internal
