// What a step writes and which operands it stages (step_writes.h).
#include "insitu/runtime/step_writes.h"

#include "insitu/analysis/in_place.h"
#include "insitu/runtime/executor.h"

namespace insitu::runtime_internal {

// The bytes a leaf reads (a scalar leaf reads one element).
int64_t leaf_bytes(const Leaf& leaf) {
  return leaf.scalar ? byte_width(leaf.shape->element_type()) : leaf.size;
}

bool leaves_overlap(const Leaf& a, const Leaf& b) {
  if (a.allocation < 0 || a.allocation != b.allocation) return false;  // allocations never share memory
  const int64_t a_bytes = leaf_bytes(a), b_bytes = leaf_bytes(b);
  return a_bytes > 0 && b_bytes > 0 && a.offset < b.offset + b_bytes && b.offset < a.offset + a_bytes;
}

namespace {

// Whether the kernel handles operand `i` overlapping output leaf `output` (kernels.h): where the
// in-place contract (analysis/in_place.h) pairs them, a kMust pair at the same start (a
// dynamic-update-slice or scatter into its operand), a kElementwise one at the same start and
// element width (one output, or a multi-output fusion, which holds an output back until the ops
// after it have read the operand), a kSameSlot one in the same memory (a sort's output i in its
// operand i); and a builtin custom call's operand in the same memory as an output.
bool kernel_takes_overlap(const Instruction& instruction, size_t i, const Leaf& operand, const Leaf& output,
                          size_t output_count) {
  if (instruction.opcode() == Opcode::kCustomCall && operand.same_memory(output)) return true;  // select_builtin_custom_call
  const bool same_start = operand.offset == output.offset && !operand.scalar;
  const bool multi_output_fusion = instruction.opcode() == Opcode::kFusion && instruction.shape().is_tuple();
  for (const SharingPair& pair : operand_output_sharing(instruction)) {
    if (pair.operand_number != static_cast<int64_t>(i) || pair.output_index != output.index) continue;
    switch (pair.sharing) {
      case Sharing::kMust:
        if (same_start) return true;
        break;
      case Sharing::kElementwise:
        if (same_start && (output_count == 1 || multi_output_fusion) &&
            byte_width(operand.shape->element_type()) == byte_width(output.shape->element_type()))
          return true;
        break;
      case Sharing::kSameSlot:
        if (operand.same_memory(output)) return true;
        break;
    }
  }
  return false;
}

}  // namespace

int64_t bytes_written_by(const Step& step) {
  const Opcode opcode = step.instruction->opcode();
  if (opcode == Opcode::kWhile || opcode == Opcode::kCall || opcode == Opcode::kConditional ||
      step.run == &Executor::run_dynamic_view ||
      (opcode == Opcode::kCustomCall && step.instruction->custom_call.target == kUnreadMemoryTarget))
    return 0;
  auto size_of = [](const std::vector<Leaf>& leaves) {
    int64_t bytes = 0;
    for (const Leaf& leaf : leaves)
      if (leaf.allocation >= 0 && !leaf.scalar) bytes += leaf.size;
    return bytes;
  };
  const bool in_place = step.outputs.size() == 1 && !step.operands.empty() && step.operands[0].size() == 1 &&
                        step.outputs[0].same_memory(step.operands[0][0]);
  if (in_place && opcode == Opcode::kDynamicUpdateSlice) return size_of(step.operands[1]);
  if (in_place && opcode == Opcode::kScatter && step.operands.size() == 3) return size_of(step.operands[2]);
  if (opcode == Opcode::kFusion && step.outputs.size() == 1) {  // a window of its aliased operand (passes/fusion.h)
    const Instruction& root = *step.instruction->called_computations()[0]->root();
    const std::vector<OutputOperandAlias>& aliasing = step.instruction->fusion_output_to_operand_aliasing;
    if (root.opcode() == Opcode::kDynamicUpdateSlice && aliasing.size() == 1 &&
        step.operands[aliasing[0].operand_number].size() == 1 &&
        step.outputs[0].same_memory(step.operands[aliasing[0].operand_number][0]))
      return root.operand(1)->shape().byte_size();
  }
  int64_t bytes = 0;
  for (size_t i = 0; i < step.outputs.size(); ++i) {  // a copy onto itself writes nothing
    const Leaf& output = step.outputs[i];
    if (opcode == Opcode::kCopy && i < step.operands[0].size() && output.same_memory(step.operands[0][i])) continue;
    if (output.allocation >= 0 && !output.scalar) bytes += output.size;
  }
  return bytes;
}

std::vector<int> staged_operands(const Instruction& instruction, const Step& step) {
  std::vector<int> staged;
  for (size_t i = 0; i < step.operands.size(); ++i) {
    const Leaf& operand = step.operands[i][0];
    for (size_t k = 0; k < step.outputs.size(); ++k) {
      const Leaf& output = step.outputs[k];
      if (leaves_overlap(operand, output) &&
          !kernel_takes_overlap(instruction, i, operand, output, step.outputs.size())) {
        staged.push_back(static_cast<int>(i));
        break;
      }
    }
  }
  return staged;
}

}  // namespace insitu::runtime_internal
