// Tracer and Tensor: tracing a C++ function over symbolic values into an insitu Module, the way
// jax.jit traces a Python function into a jaxpr and then HLO.
//
//   Tracer tracer("f");                      // or trace_function(fn, shapes, options)
//   Tensor x = tracer.add_parameter(Shape::array(PrimitiveType::kF32, {4}), "x");
//   Tensor y = exp(x) + 1.0;                 // ops append HLO instructions (ops.h)
//   StatusOr<TracedFunction> traced = tracer.finish({y});
//
// A Tensor is a *reference* to a variable slot holding an SSA value, as a torch tensor refers
// to storage: copying a Tensor shares the slot, so a mutation (call_kernel_mutating, assign)
// made through one copy is seen through every copy. Mutation is functionalized while tracing:
// the mutating op produces a new SSA value and the slot is rebound to it. `clone()` takes a
// snapshot (a new slot on the same SSA value, no instruction): reading a snapshot after the
// original was mutated is what forces copy insertion to keep the old value
// (live-after-in-place-write). When a parameter's slot ends the trace on a different value, the
// function mutated its argument: finish() appends that value as an extra output with an
// input_output_alias to the parameter (the write-back), so the caller sees the mutation and,
// when nothing else reads the old value, the write happens in the caller's buffer.
//
// Errors (shape mismatches, tensors used outside their computation) do not stop tracing: the
// first one is recorded and returned by finish(), as a Status naming the op.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "insitu/evaluator/custom_call_table.h"
#include "insitu/ir/module.h"
#include "insitu/passes/name_table.h"

namespace insitu {

class Tracer;

class Tensor {
 public:
  Tensor() = default;

  bool valid() const { return slot_ != nullptr && slot_->value != nullptr; }
  // The current SSA value (the instruction computing it).
  Instruction* value() const;
  const Shape& shape() const { return value()->shape(); }
  PrimitiveType dtype() const { return shape().element_type(); }
  const std::vector<int64_t>& dimensions() const { return shape().dimensions(); }
  int64_t rank() const { return shape().rank(); }
  Tracer* tracer() const { return slot_ ? slot_->tracer : nullptr; }

  // A snapshot: a new slot holding the current value (no instruction is emitted).
  Tensor clone() const;
  // In-place update with a value of the same shape and type (torch's x.copy_(v)).
  void assign(const Tensor& new_value);
  // Runs the registered in-place kernel `kernel` on this tensor (its input 0 aliased to an
  // output): call_kernel_mutating(kernel, {*this}).
  void mutate_with(std::string_view kernel);

  // Whether two Tensors refer to the same slot.
  bool same_slot(const Tensor& other) const { return slot_ == other.slot_; }

  // Internal: the frontend's ops build Tensors from instructions and rebind slots.
  static Tensor from_instruction(Tracer* tracer, Instruction* value, int64_t parameter = -1);
  void rebind(Instruction* new_value) const;
  int64_t parameter_number() const { return slot_ ? slot_->parameter : -1; }

 private:
  struct Slot {
    Tracer* tracer = nullptr;
    Instruction* value = nullptr;
    int64_t parameter = -1;  // the entry parameter this slot started as; -1 otherwise
  };
  std::shared_ptr<Slot> slot_;
};

// The traced module plus how its outputs map back to the function.
struct TracedFunction {
  std::unique_ptr<Module> module;
  // Entry result is always a tuple: first the function's outputs, then one write-back per
  // mutated parameter (in parameter order), each aliased to its parameter.
  int64_t output_count = 0;
  std::vector<int64_t> mutated_parameters;
};

class Tracer {
 public:
  // call_kernel finds its targets' signatures in `custom_calls`.
  explicit Tracer(std::string function_name, const CustomCallTable* custom_calls = &CustomCallTable::global());
  ~Tracer();
  Tracer(const Tracer&) = delete;
  Tracer& operator=(const Tracer&) = delete;

  // The tracer whose function is being traced on this thread (the innermost live one).
  static Tracer* active();

  Tensor add_parameter(const Shape& shape, std::string name = "");

  // Appends `instruction` to the computation being built. With `infer`, its shape becomes the
  // shape inferred from its operands and attributes (a failure is recorded). Every operand
  // must belong to that computation. Sets metadata op_name="jit(NAME)/SCOPE/opcode".
  Instruction* emit(std::unique_ptr<Instruction> instruction, bool infer = true);
  // A fresh name: `base` when unused, else "stem.N" (never one given before, whoever chose it).
  std::string unique_name(std::string_view base);

  // Nested computations (while bodies, branches, reducers): emit() goes to the innermost one.
  Computation* begin_computation(std::string_view base_name, std::string_view scope);
  Computation* end_computation(Instruction* root);
  Computation* current_computation() const { return stack_.back().computation; }
  // A scalar (T, T) -> T computation applying `opcode`, for reduce and scatter.
  Computation* scalar_reducer(Opcode opcode, PrimitiveType type);

  // Records the first error; later ones are dropped (they usually follow from it).
  void record_error(Status status);
  const Status& status() const { return status_; }

  // Builds the module: root = tuple(outputs..., write-backs of mutated parameters...),
  // input_output_alias for each write-back, verify_module on the result.
  StatusOr<TracedFunction> finish(const std::vector<Tensor>& outputs);

  const std::string& function_name() const { return function_name_; }
  const CustomCallTable* custom_calls() const { return custom_calls_; }

 private:
  struct Frame {
    Computation* computation;
    std::string scope;
  };
  std::string function_name_;
  const CustomCallTable* custom_calls_;
  std::unique_ptr<Module> module_;
  std::vector<std::unique_ptr<Computation>> pending_;  // computations under construction
  std::vector<Frame> stack_;
  std::vector<Tensor> parameters_;
  NameTable names_;  // every name given so far (parameters' own names included)
  std::vector<std::pair<std::pair<Opcode, PrimitiveType>, Computation*>> reducers_;
  Status status_;
  Tracer* previous_active_ = nullptr;
};

}  // namespace insitu
