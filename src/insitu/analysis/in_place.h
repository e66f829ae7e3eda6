// The one in-place contract: which output leaves of an instruction may, or must, share memory
// with which of its operand leaves. Every pass and runtime that asks "may this output be
// written over this operand?" asks here (dataflow's must-share links, the schedule's write
// events, copy insertion, donor matching, buffer assignment's merges, the CPU runtime's overlap
// staging), the way IREE's tied operands answer it in one op interface: a new in-place op is
// one case in in_place.cc.
//
//   kMust         the output is the operand's buffer: dynamic-update-slice (operand 0),
//                 scatter (its operands), all-reduce (reduced in place), custom-call and fusion
//                 output_to_operand_aliasing. Dataflow links them; copy insertion protects an
//                 operand still read afterwards; the kernel updates in place.
//   kElementwise  the output may be written over the operand: every element is read at the
//                 position it is written (elementwise ops; a kLoop fusion whose parameters of an
//                 output's size are read only by elementwise ops). Buffer assignment may put
//                 the result in a dying operand's buffer; kernels allow that exact overlap.
//   kSameSlot     sort: result i may be written over operand i (the kernel permutes in place).
//
// The CUDA plan asks through buffer assignment: it runs the assignment's slices
// (cuda/device_plan.h) and checks that every output it finds over an operand is a pair its
// kernel takes.
#pragma once

#include <cstdint>
#include <vector>

#include "insitu/ir/instruction.h"

namespace insitu {

enum class Sharing : uint8_t { kMust, kElementwise, kSameSlot };

// An operand leaf and an output leaf that share memory as `sharing` says.
struct SharingPair {
  int64_t operand_number = 0;
  ShapeIndex operand_index;
  ShapeIndex output_index;
  Sharing sharing = Sharing::kMust;
  bool operator==(const SharingPair&) const = default;
};

// Every pair of `instruction`, kMust ones first. kElementwise pairs name each array operand
// whose byte size is the output leaf's, in operand order; kSameSlot pairs each sort operand i
// with result leaf i (or {} for one operand).
std::vector<SharingPair> operand_output_sharing(const Instruction& instruction);

// An operand leaf that an instruction overwrites with one of its outputs (a kMust pair).
struct InPlacePair {
  int64_t operand_number = 0;
  ShapeIndex operand_index;
  ShapeIndex output_index;
  bool operator==(const InPlacePair&) const = default;
};
// The kMust pairs: dynamic-update-slice: operand 0 -> {}; scatter: operands 0..N-1 -> {} or
// {i}; all-reduce: operand i -> {} or {i}; custom-call and fusion: their
// output_to_operand_aliasing. Empty for every other opcode.
std::vector<InPlacePair> in_place_pairs(const Instruction& instruction);

// Whether the instruction has kElementwise pairs: it reads every operand of its result's size
// element by element at the position it writes (an elementwise op, or a kLoop fusion whose
// parameters of that size are read only by elementwise ops and whose root comes last; a
// multi-output fusion's results are a tuple of arrays of one shape's dimensions, and the
// runtime holds back an output written over an operand until the ops after it have read that
// operand), so its result may be written over such an operand.
bool writes_elementwise(const Instruction& instruction);

// Whether output leaf `output_index` is written so (kElementwise pairs name it): every output of
// an instruction that writes_elementwise, and a reduce fusion's second output, its input (the
// root the tuple (reduce, input), the input an elementwise op, the fusion's parameters of its
// size read only by elementwise ops: computed block by block where it is written, and folded
// from there).
bool writes_elementwise_at(const Instruction& instruction, const ShapeIndex& output_index);

}  // namespace insitu
