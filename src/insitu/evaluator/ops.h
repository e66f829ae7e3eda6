// Internal to the evaluator: one function per family of opcodes, each in its own file.
// The dispatcher (evaluator.cc) evaluates operands, then calls these with the instruction and
// its operand values. Each returns the result value or a located error.
#pragma once

#include <optional>
#include <span>
#include <string_view>

#include "insitu/evaluator/custom_call_table.h"
#include "insitu/ir/instruction.h"

namespace insitu::eval {

using Operands = std::span<const Literal* const>;

// Evaluates a called computation on arguments (to_apply of reduce/scatter/sort/map, ...).
class ComputationRunner {
 public:
  virtual ~ComputationRunner() = default;
  virtual StatusOr<Literal> run(const Computation& computation, Operands arguments) = 0;
};

// Runs a comparator (sort, TopK) on scalar arguments: "a goes before b". An error when it fails
// or does not return one pred.
StatusOr<bool> run_comparator(ComputationRunner& runner, const Computation& comparator, Operands arguments,
                              const Instruction& instruction);

// elementwise.cc: every unary and binary elementwise op (abs ... xor, atan2, power, remainder,
// shifts, compare), select, clamp, convert, bitcast-convert, complex, real, imag, is-finite,
// reduce-precision.
StatusOr<Literal> evaluate_elementwise(const Instruction& instruction, Operands operands);
// elementwise.cc: map (applies to_apply per element).
StatusOr<Literal> evaluate_map(const Instruction& instruction, Operands operands, ComputationRunner& runner);

// data_movement.cc: iota, broadcast, reshape, bitcast (same element count), transpose, slice,
// dynamic-slice, dynamic-update-slice, concatenate, pad, reverse.
StatusOr<Literal> evaluate_data_movement(const Instruction& instruction, Operands operands);

// reduce.cc: reduce (variadic), reduce-window (variadic).
StatusOr<Literal> evaluate_reduce(const Instruction& instruction, Operands operands, ComputationRunner& runner);
StatusOr<Literal> evaluate_reduce_window(const Instruction& instruction, Operands operands,
                                         ComputationRunner& runner);
// select-and-scatter: select= picks one element per window, scatter= combines the source into it.
StatusOr<Literal> evaluate_select_and_scatter(const Instruction& instruction, Operands operands,
                                              ComputationRunner& runner);
// dot.cc: dot with general dimension numbers.
StatusOr<Literal> evaluate_dot(const Instruction& instruction, Operands operands);
// dot.cc: an array converted element by element as XLA's convert does.
Literal convert_literal(const Literal& source, PrimitiveType type);
// dot.cc: a dot's or convolution's two operands in the result's element type (XLA's evaluator
// converts them first): `inputs` point at the operands themselves or at converted copies.
struct OperandsAs {
  Literal converted[2];
  const Literal* inputs[2] = {nullptr, nullptr};
};
void convert_operands(Operands operands, PrimitiveType type, OperandsAs& into);
// rng_bit_generator.cc: rng-bit-generator (rng_bit_generator.h).
StatusOr<Literal> evaluate_rng_bit_generator(const Instruction& instruction, Operands operands);
// fft.cc: fft (fft.h).
StatusOr<Literal> evaluate_fft(const Instruction& instruction, Operands operands);
// convolution.cc: convolution (convolution.h).
StatusOr<Literal> evaluate_convolution(const Instruction& instruction, Operands operands);
// gather_scatter.cc: gather; scatter (variadic, updates applied in index order).
StatusOr<Literal> evaluate_gather(const Instruction& instruction, Operands operands);
StatusOr<Literal> evaluate_scatter(const Instruction& instruction, Operands operands, ComputationRunner& runner);
// sort.cc: sort (variadic, comparator to_apply, is_stable).
StatusOr<Literal> evaluate_sort(const Instruction& instruction, Operands operands, ComputationRunner& runner);
StatusOr<Literal> evaluate_scan(const Instruction& instruction, Operands operands, ComputationRunner& runner);  // scan.cc
StatusOr<Literal> evaluate_get_dimension_size(const Instruction& instruction, Operands operands);  // scan.cc
StatusOr<Literal> evaluate_set_dimension_size(const Instruction& instruction, Operands operands);  // scan.cc
// topk.cc: the `topk` opcode (k=, largest=) and XLA:CPU's "TopK" custom call (its comparator).
StatusOr<Literal> evaluate_topk(const Instruction& instruction, Operands operands);
// topk's k= and largest= (default true) for rows of `length`; a located error when missing or
// invalid (is_stable= is checked too).
struct TopkAttributes {
  int64_t k = 0;
  bool largest = true;
};
StatusOr<TopkAttributes> topk_attributes(const Instruction& instruction, int64_t length);
StatusOr<Literal> evaluate_topk_custom_call(const Instruction& instruction, Operands operands,
                                            ComputationRunner& runner);
// linalg.cc: cholesky and triangular-solve (linalg.h).
StatusOr<Literal> evaluate_linalg(const Instruction& instruction, Operands operands);
// batch_norm.cc: batch-norm-training, -inference and -grad.
StatusOr<Literal> evaluate_batch_norm(const Instruction& instruction, Operands operands);
// Custom-call targets the evaluator itself implements (when no kernel is registered for them).
// TopK (topk.cc), the LAPACK targets (lapack.h) and the placement annotations
// (is_placement_annotation: their operand).
bool is_builtin_custom_call_target(std::string_view target);
// lapack.cc: a LAPACK target's call over Literals.
StatusOr<Literal> evaluate_lapack_custom_call(const Instruction& instruction, Operands operands);

// ---- The per-op table (op_table.cc) ----
// Every opcode whose value is a function of its operands and of the computations it applies
// (run through `runner`) has one function above; evaluate_op is the one place that maps
// opcodes to them. The evaluator runs it for every such instruction; the runtime's fallback
// runs it for any step without a native kernel. False for what the evaluator handles itself
// (parameter, constant, tuple, while, conditional, custom-call, copies, tokens).
bool has_op_function(Opcode opcode);
StatusOr<Literal> evaluate_op(const Instruction& instruction, Operands operands, ComputationRunner& runner);
// A custom call: the `evaluate` of its target's entry in `table`, else a target the evaluator
// implements itself, else a located error naming the target.
StatusOr<Literal> evaluate_custom_call(const Instruction& instruction, Operands operands,
                                       const CustomCallTable* table, ComputationRunner& runner);

}  // namespace insitu::eval
