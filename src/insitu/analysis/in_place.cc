// The in-place contract (in_place.h).
#include "insitu/analysis/in_place.h"

#include <algorithm>

#include "insitu/ir/computation.h"

namespace insitu {

std::vector<InPlacePair> in_place_pairs(const Instruction& instruction) {
  std::vector<InPlacePair> pairs;
  switch (instruction.opcode()) {
    case Opcode::kDynamicUpdateSlice:
      pairs.push_back({0, {}, {}});
      break;
    case Opcode::kScatter: {
      const int64_t count = (instruction.operand_count() - 1) / 2;
      if (count == 1) {
        pairs.push_back({0, {}, {}});
      } else {
        for (int64_t i = 0; i < count; ++i) pairs.push_back({i, {}, {i}});
      }
      break;
    }
    case Opcode::kAllReduce:
    case Opcode::kAllReduceStart:
      // Reduced in place, as XLA's all-reduce-start (MPI_IN_PLACE): the result is its operand's
      // buffer; copy insertion protects an operand that is still read afterwards.
      if (instruction.operand_count() == 1 && instruction.shape().is_array()) {
        pairs.push_back({0, {}, {}});
      } else if (instruction.shape().is_tuple() && instruction.shape().tuple_size() == instruction.operand_count()) {
        // A combined all-reduce (XLA's all-reduce combiner): each array operand is reduced into
        // its own result; an operand written twice keeps its first pair only.
        for (int64_t i = 0; i < instruction.operand_count(); ++i) {
          bool repeated = false;
          for (int64_t j = 0; j < i; ++j) repeated = repeated || instruction.operand(j) == instruction.operand(i);
          if (instruction.operand(i)->shape().is_array() && !repeated) pairs.push_back({i, {}, {i}});
        }
      }
      break;
    case Opcode::kCustomCall:
      for (const OutputOperandAlias& alias : instruction.custom_call.output_to_operand_aliasing)
        pairs.push_back({alias.operand_number, alias.operand_index, alias.output_index});
      break;
    case Opcode::kFusion:
      for (const OutputOperandAlias& alias : instruction.fusion_output_to_operand_aliasing)
        pairs.push_back({alias.operand_number, alias.operand_index, alias.output_index});
      break;
    default:
      break;
  }
  return pairs;
}

bool writes_elementwise(const Instruction& instruction) {
  if (is_elementwise(instruction.opcode())) return true;
  if (instruction.opcode() != Opcode::kFusion || instruction.fusion_kind != "kLoop" ||
      !instruction.fusion_output_to_operand_aliasing.empty() || instruction.called_computations().size() != 1)
    return false;
  // the result's sizes: one array, or a multi-output fusion's tuple of arrays of one shape's
  // dimensions (its ops computed elementwise, each output written at the positions it reads)
  std::vector<int64_t> bytes;
  if (instruction.shape().is_array()) {
    bytes.push_back(instruction.shape().byte_size());
  } else {
    if (!instruction.shape().is_tuple() || instruction.shape().tuple_size() == 0) return false;
    const Shape& first = instruction.shape().tuple_shape(0);
    for (int64_t i = 0; i < instruction.shape().tuple_size(); ++i) {
      const Shape& leaf = instruction.shape().tuple_shape(i);
      if (!leaf.is_array() || !first.is_array() || leaf.dimensions() != first.dimensions()) return false;
      bytes.push_back(leaf.byte_size());
    }
  }
  const Computation& body = *instruction.called_computations()[0];
  const std::vector<Instruction*> order = body.instructions();
  if (order.empty() || order.back() != body.root()) return false;
  for (const Instruction* parameter : body.parameters()) {
    if (parameter == nullptr ||
        std::find(bytes.begin(), bytes.end(), parameter->shape().byte_size()) == bytes.end())
      continue;
    for (const Instruction* user : parameter->users())
      if (!is_elementwise(user->opcode()) && user != body.root()) return false;
  }
  return true;
}

bool writes_elementwise_at(const Instruction& instruction, const ShapeIndex& output_index) {
  if (writes_elementwise(instruction)) return true;
  // a reduce fusion's second output: its input, computed elementwise (the reduce reads it there)
  if (instruction.opcode() != Opcode::kFusion || instruction.fusion_kind != "kInput" ||
      !instruction.fusion_output_to_operand_aliasing.empty() || instruction.called_computations().size() != 1 ||
      output_index != ShapeIndex{1} || !instruction.shape().is_tuple() || instruction.shape().tuple_size() != 2)
    return false;
  const Computation& body = *instruction.called_computations()[0];
  const Instruction* root = body.root();
  if (root == nullptr || root->opcode() != Opcode::kTuple || root->operand_count() != 2 ||
      root->operand(0)->opcode() != Opcode::kReduce || root->operand(0)->operand(0) != root->operand(1) ||
      !is_elementwise(root->operand(1)->opcode()))
    return false;
  const int64_t bytes = root->operand(1)->shape().byte_size();
  for (const Instruction* parameter : body.parameters()) {
    if (parameter == nullptr || parameter->shape().byte_size() != bytes) continue;
    for (const Instruction* user : parameter->users())
      if (!is_elementwise(user->opcode())) return false;
  }
  return true;
}

std::vector<SharingPair> operand_output_sharing(const Instruction& instruction) {
  std::vector<SharingPair> pairs;
  for (InPlacePair& pair : in_place_pairs(instruction))
    pairs.push_back({pair.operand_number, std::move(pair.operand_index), std::move(pair.output_index), Sharing::kMust});
  const Shape& shape = instruction.shape();
  if (instruction.opcode() == Opcode::kSort) {
    const bool tuple = shape.is_tuple();
    for (int64_t i = 0; i < instruction.operand_count(); ++i) {
      const ShapeIndex index = tuple ? ShapeIndex{i} : ShapeIndex{};
      const Shape* leaf = shape.subshape(index);
      if (leaf != nullptr && leaf->is_array()) pairs.push_back({i, {}, index, Sharing::kSameSlot});
    }
    return pairs;
  }
  const bool tuple = shape.is_tuple();  // a multi-output fusion: each output
  for (int64_t k = 0; k < (tuple ? shape.tuple_size() : 1); ++k) {
    const ShapeIndex index = tuple ? ShapeIndex{k} : ShapeIndex{};
    if (!writes_elementwise_at(instruction, index)) continue;
    const int64_t bytes = shape.subshape(index)->byte_size();
    for (int64_t i = 0; i < instruction.operand_count(); ++i) {
      const Shape& operand = instruction.operand(i)->shape();
      if (operand.is_array() && operand.byte_size() == bytes) pairs.push_back({i, {}, index, Sharing::kElementwise});
    }
  }
  return pairs;
}

}  // namespace insitu
