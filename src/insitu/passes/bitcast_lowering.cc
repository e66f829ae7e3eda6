#include "insitu/passes/bitcast_lowering.h"

#include <algorithm>
#include <unordered_set>

#include "insitu/passes/name_table.h"

namespace insitu {
namespace {

// The shape's dimensions from major to minor (the order its bytes are in memory).
std::vector<int64_t> major_to_minor(const Shape& shape) {
  std::vector<int64_t> order = shape.layout().minor_to_major;
  if (static_cast<int64_t>(order.size()) != shape.rank()) order = Layout::descending(shape.rank()).minor_to_major;
  std::reverse(order.begin(), order.end());
  return order;
}

bool is_identity_permutation(const std::vector<int64_t>& permutation) {
  for (size_t i = 0; i < permutation.size(); ++i)
    if (permutation[i] != static_cast<int64_t>(i)) return false;
  return true;
}

std::vector<int64_t> permuted(const std::vector<int64_t>& dimensions, const std::vector<int64_t>& permutation) {
  std::vector<int64_t> out;
  for (int64_t d : permutation) out.push_back(dimensions[d]);
  return out;
}

class Lowering {
 public:
  explicit Lowering(Module& module) : names_(module) {}

  // Rewrites `bitcast` in `computation`; true if it changed anything.
  bool lower(Computation& computation, Instruction* bitcast) {
    Instruction* operand = bitcast->operand(0);
    const Shape& from = operand->shape();
    const Shape& to = bitcast->shape();
    if (!from.is_array() || !to.is_array()) return false;
    if (from == to) {  // identical shapes, tiled layouts included: nothing moves
      bitcast->replace_all_uses_with(operand);
      computation.remove_instruction(bitcast);
      return true;
    }
    if (is_row_major_reshape(*bitcast)) return false;
    if (!from.layout().tiles.empty() || !to.layout().tiles.empty()) return false;
    if (byte_width(from.element_type()) != byte_width(to.element_type())) return false;

    // 1. the operand's bytes in memory order, as a row-major array
    const std::vector<int64_t> from_order = major_to_minor(from);
    Instruction* bytes = operand;
    if (!is_identity_permutation(from_order))
      bytes = transpose(computation, bitcast, operand, from_order,
                        Shape::array(from.element_type(), permuted(from.dimensions(), from_order)));
    // 2. the same bytes as the result's dimensions in its memory order (a reshape), then the
    //    result's element type
    const std::vector<int64_t> to_order = major_to_minor(to);
    const std::vector<int64_t> memory_dimensions = permuted(to.dimensions(), to_order);
    Instruction* memory = bytes;
    if (bytes->shape().dimensions() != memory_dimensions)
      memory = add(computation, bitcast, Opcode::kBitcast, "bitcast", Shape::array(from.element_type(), memory_dimensions),
                   {bytes});
    if (from.element_type() != to.element_type())
      memory = add(computation, bitcast, Opcode::kBitcastConvert, "bitcast-convert",
                   Shape::array(to.element_type(), memory_dimensions), {memory});
    // 3. into the result's logical order
    Instruction* result = memory;
    if (!is_identity_permutation(to_order)) {
      std::vector<int64_t> inverse(to_order.size());
      for (size_t i = 0; i < to_order.size(); ++i) inverse[to_order[i]] = static_cast<int64_t>(i);
      result = transpose(computation, bitcast, memory, inverse, to);
    } else if (!(memory->shape() == to)) {
      result = add(computation, bitcast, Opcode::kBitcast, "bitcast", to, {memory});
    }
    if (result != operand) {
      result->metadata = bitcast->metadata;
      result->has_metadata = bitcast->has_metadata;
    }
    bitcast->replace_all_uses_with(result);
    computation.remove_instruction(bitcast);
    return true;
  }

 private:
  Instruction* add(Computation& computation, Instruction* before, Opcode opcode, const std::string& base, Shape shape,
                   const std::vector<Instruction*>& operands) {
    return insert_new_instruction(computation, before, names_, opcode, base, std::move(shape), operands);
  }

  Instruction* transpose(Computation& computation, Instruction* before, Instruction* operand,
                         std::vector<int64_t> permutation, Shape shape) {
    Instruction* transpose = add(computation, before, Opcode::kTranspose, "transpose", std::move(shape), {operand});
    transpose->dimensions = std::move(permutation);
    return transpose;
  }

  NameTable names_;
};

}  // namespace

namespace {

// The computations fusions call: they run as one unit, layouts and reshapes inside them too.
std::unordered_set<const Computation*> fused_computations(const Module& module) {
  std::unordered_set<const Computation*> fused;
  for (const Computation* computation : module.computations())
    for (const Instruction* instruction : computation->instructions())
      if (instruction->opcode() == Opcode::kFusion)
        for (const Computation* callee : instruction->called_computations()) fused.insert(callee);
  return fused;
}

}  // namespace

StatusOr<bool> lower_bitcasts(Module& module) {
  const std::unordered_set<const Computation*> fused = fused_computations(module);
  Lowering lowering(module);
  bool changed = false;
  for (Computation* computation : module.computations()) {
    if (fused.count(computation) != 0) continue;
    for (Instruction* instruction : computation->instructions())
      if (instruction->opcode() == Opcode::kBitcast && instruction->operand_count() == 1 &&
          instruction->control_predecessors().empty() && instruction->control_successors().empty())
        changed |= lowering.lower(*computation, instruction);
  }
  return changed;
}

StatusOr<bool> reshapes_to_bitcasts(Module& module) {
  const std::unordered_set<const Computation*> fused = fused_computations(module);
  NameTable names(module);
  bool changed = false;
  for (Computation* computation : module.computations()) {
    if (fused.count(computation) != 0) continue;  // a fusion computes its reshapes in registers
    for (Instruction* reshape : computation->instructions()) {
      if (reshape->opcode() != Opcode::kReshape || reshape->operand_count() != 1 || !reshape->shape().is_array() ||
          !reshape->operand(0)->shape().is_array() || !is_row_major_reshape(*reshape) || reshape->has_control_edges())
        continue;
      // Only over a value its operand defines: one forwarded (a get-tuple-element, a bitcast)
      // may carry another layout where it is defined (a loop state in {0,1} read as {1,0}), and
      // copy insertion copies a value where it is defined: the bitcast would then read bytes
      // in a layout that is not row-major. A multi-output loop fusion's output is the exception:
      // the fusion defines it, row-major (the get-tuple-element only names it).
      const Instruction* operand = reshape->operand(0);
      const Opcode source = operand->opcode();
      const bool fusion_output = source == Opcode::kGetTupleElement &&
                                 operand->operand(0)->opcode() == Opcode::kFusion &&
                                 operand->operand(0)->fusion_kind == "kLoop";
      if ((source == Opcode::kGetTupleElement && !fusion_output) || source == Opcode::kBitcast ||
          source == Opcode::kOptimizationBarrier || source == Opcode::kCopyDone || source == Opcode::kAddDependency)
        continue;
      const std::string name = reshape->name();
      Instruction* bitcast = insert_new_instruction(*computation, reshape, names, Opcode::kBitcast, name,
                                                    reshape->shape(), {reshape->operand(0)});
      bitcast->metadata = reshape->metadata;
      bitcast->has_metadata = reshape->has_metadata;
      bitcast->set_location(reshape->location());
      reshape->replace_all_uses_with(bitcast);
      if (computation->root() == reshape) computation->set_root(bitcast);
      computation->remove_instruction(reshape);
      bitcast->set_name(name);  // the same value under the same name (explain, profiles)
      changed = true;
    }
  }
  return changed;
}

}  // namespace insitu
