// CustomCallTable: one entry per custom-call target, everything insitu knows about it.
//
// `custom-call(...), custom_call_target="NAME"` resolves through the entry named NAME:
//   signature  its outputs and input/output aliases, so tracing can emit a call (frontend
//              call_kernel) without running it;
//   evaluate   how the reference evaluator runs it over Literals (the oracle);
//   origin     where it came from ("builtin", a plugin's path), named when two entries clash;
//   parts      what the layers above run, each typed by the layer that owns it: the runtime's
//              native kernel, prepared once per call site at Executable::create (without it the
//              runtime runs `evaluate` on copies), and the CUDA device's grid layout.
// Every part but the name is optional: a target the frontend only traces has a signature
// alone; a test kernel has only `evaluate`. The kernel layer fills them all from a KernelSpec
// (kernel/registry.h). The process-wide table (global()) holds builtin kernels and plugins; a
// test or a caller with kernels of its own builds a table and passes it (EvaluatorOptions,
// ExecutableOptions).
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <typeindex>
#include <typeinfo>
#include <utility>
#include <vector>

#include "insitu/ir/instruction.h"

namespace insitu {

// What tracing needs to emit a call.
struct CustomCallSignature {
  std::vector<Shape> out_shapes;  // empty: each output takes the shape of the input aliased to it
  std::vector<std::pair<int64_t, int64_t>> input_output_aliases;  // (input, output)
  int64_t output_count = 1;       // used when out_shapes is empty
};

// Runs the call over its operand values and fills in `result`. For every output aliased to an
// operand (output_to_operand_aliasing) `result` already holds that operand's value, so an
// in-place kernel updates it directly: the aliased input and output are one buffer, as on a
// device.
using EvaluateCustomCall =
    std::function<Status(const Instruction& call, std::span<const Literal* const> operands, Literal& result)>;

// The parts of an entry that layers above this one define: the runtime's native kernel
// (runtime/native_custom_call.h), the CUDA device's grid layout (cuda/kernel_grid.h). Each layer
// defines its part as a struct and reads it back by that type, so this layer stores them without
// naming a type of theirs (one table, review 2; no layer reaching up, review 3). At most one part
// per type; set before the entry is added to a table, read-only after.
class CustomCallParts {
 public:
  template <class Part>
  void set(Part part) {
    parts_[std::type_index(typeid(Part))] = std::make_shared<const Part>(std::move(part));
  }
  // The part of type Part, or null when the entry has none.
  template <class Part>
  const Part* get() const {
    auto it = parts_.find(std::type_index(typeid(Part)));
    return it == parts_.end() ? nullptr : static_cast<const Part*>(it->second.get());
  }

 private:
  std::map<std::type_index, std::shared_ptr<const void>> parts_;
};

struct CustomCallTarget {
  std::string name;
  std::optional<CustomCallSignature> signature;
  EvaluateCustomCall evaluate;
  std::string origin = "builtin";
  CustomCallParts parts;  // what the runtime and devices run (see CustomCallParts)
};

class CustomCallTable {
 public:
  // Adds `target`; a name already present is an error naming both origins.
  Status add(CustomCallTarget target);
  // The entry for `name`, or null. Entries are never removed, so the pointer stays valid for
  // the table's life.
  const CustomCallTarget* find(std::string_view name) const;

  // The process-wide table (builtin kernels and plugins).
  static CustomCallTable& global();

 private:
  mutable std::mutex mutex_;
  std::map<std::string, CustomCallTarget, std::less<>> targets_;
};

// The located error for a custom-call whose target `table_entry` (null: absent) cannot run:
// one message for the evaluator and the runtime's create.
Status unregistered_custom_call(const Instruction& call, const CustomCallTarget* table_entry);

// Runs a custom-call through `table`'s `evaluate`: aliased outputs start as their operand's
// value, the kernel fills in the result. Shared by the reference evaluator and the runtime's
// fallback. A target with no `evaluate` is a located error naming it.
StatusOr<Literal> run_custom_call_kernel(const Instruction& call, std::span<const Literal* const> operands,
                                         const CustomCallTable* table);

}  // namespace insitu
