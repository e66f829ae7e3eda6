#include "insitu/ir/attribute_table.h"

#include <algorithm>

namespace insitu {
namespace {

using enum Opcode;
using enum AttributeUse;

// Collectives: their attributes are kept verbatim and read by evaluator/collectives.cc, which
// refuses any it does not honour (constrain_layout only pins layouts: values are logical).
const std::vector<Opcode> kCollectives = {kAllGather, kAllGatherStart, kAllReduce, kAllReduceStart, kReduceScatter,
                                          kAllToAll, kRaggedAllToAll, kCollectiveBroadcast, kCollectivePermute,
                                          kCollectivePermuteStart};

const std::vector<AttributeRule>& rules() {
  static const auto* table = new std::vector<AttributeRule>{
      // --- on every instruction ---
      {"metadata", kMetadataOnly, {}, "source locations and op names for people and profilers"},
      {"frontend_attributes", kMetadataOnly, {},
       "annotations for the frontend; insitu keeps its copy reasons here (copy_reason.h)"},
      {"backend_config", kMetadataOnly, {},
       "XLA backend hints (known_trip_count, thread partitioning); a custom-call's is its kernel's input"},
      {"sharding", kMetadataOnly, {}, "placement over devices; insitu runs one device"},
      {"statistics", kMetadataOnly, {}, "numbers for visualization"},
      {"origin", kMetadataOnly, {}, "where the value came from before XLA's rewrites"},
      {"control-predecessors", kModelled, {}, "ordering edges: the scheduler and copy insertion honour them"},
      {"parameter_replication", kMetadataOnly, {kParameter}, "replication over replicas; insitu runs one"},
      // --- modelled: read into Instruction fields ---
      {"index", kModelled, {kGetTupleElement}, "tuple_index"},
      {"iota_dimension", kModelled, {kIota}, "iota_dimension"},
      {"dimensions", kModelled, {kBroadcast, kTranspose, kReduce, kReverse, kConcatenate, kMap, kSort}, "dimensions"},
      {"dynamic_slice_sizes", kModelled, {kDynamicSlice}, "dynamic_slice_sizes"},
      {"slice_sizes", kModelled, {kGather}, "dynamic_slice_sizes (gather's slice sizes)"},
      {"lhs_batch_dims", kModelled, {kDot}, "dot_dimension_numbers"},
      {"lhs_contracting_dims", kModelled, {kDot}, "dot_dimension_numbers"},
      {"rhs_batch_dims", kModelled, {kDot}, "dot_dimension_numbers"},
      {"rhs_contracting_dims", kModelled, {kDot}, "dot_dimension_numbers"},
      {"operand_precision", kMetadataOnly, {kDot, kConvolution},
       "a lower bound on precision; the CPU computes every dot at its operands' full precision (as XLA:CPU)"},
      {"convolution_kind", kMetadataOnly, {kConvolution},
       "the role (fprop, dgrad, wgrad) a convolution plays for cuDNN; its math is its window and dimension numbers"},
      {"algorithm", kModelled, {kDot}, "checked by the parser; computed by evaluator/dot.cc (the runtime falls back to it)"},
      {"offset_dims", kModelled, {kGather}, "gather_dimension_numbers"},
      {"collapsed_slice_dims", kModelled, {kGather}, "gather_dimension_numbers"},
      {"start_index_map", kModelled, {kGather}, "gather_dimension_numbers"},
      {"operand_batching_dims", kModelled, {kGather}, "gather_dimension_numbers"},
      {"start_indices_batching_dims", kModelled, {kGather}, "gather_dimension_numbers"},
      {"index_vector_dim", kModelled, {kGather, kScatter}, "gather/scatter_dimension_numbers"},
      {"update_window_dims", kModelled, {kScatter}, "scatter_dimension_numbers"},
      {"inserted_window_dims", kModelled, {kScatter}, "scatter_dimension_numbers"},
      {"scatter_dims_to_operand_dims", kModelled, {kScatter}, "scatter_dimension_numbers"},
      {"input_batching_dims", kModelled, {kScatter}, "scatter_dimension_numbers"},
      {"scatter_indices_batching_dims", kModelled, {kScatter}, "scatter_dimension_numbers"},
      {"indices_are_sorted", kMetadataOnly, {kGather, kScatter},
       "a promise about the indices that only allows faster code; results do not depend on it"},
      {"unique_indices", kMetadataOnly, {kScatter},
       "a promise that only allows faster code; insitu applies duplicates in order either way"},
      {"is_stable", kModelled, {kSort}, "is_stable"},
      {"is_stable", kOwn, {kTopk}, "checked by topk.cc; insitu's topk is always stable (ties: lower index first)"},
      {"exponent_bits", kModelled, {kReducePrecision}, "exponent_bits"},
      {"mantissa_bits", kModelled, {kReducePrecision}, "mantissa_bits"},
      {"kind", kMetadataOnly, {kFusion}, "how XLA would emit the fusion; a fusion means its computation"},
      {"direction", kModelled, {kCompare}, "comparison_direction"},
      {"type", kModelled, {kCompare}, "comparison_type"},
      {"order", kModelled, {kCompare}, "comparison_type (TOTAL: total order for floats)"},
      {"slice", kModelled, {kSlice}, "slice"},
      {"padding", kModelled, {kPad}, "padding"},
      {"window", kModelled, {kReduceWindow, kSelectAndScatter, kConvolution}, "window"},
      {"select", kModelled, {kSelectAndScatter}, "called computation"},
      {"scatter", kModelled, {kSelectAndScatter}, "called computation"},
      {"to_apply", kModelled, {kReduce, kReduceWindow, kMap, kSort, kCall, kScatter}, "called computation"},
      {"calls", kModelled, {kFusion}, "called computation"},
      {"condition", kModelled, {kWhile}, "called computation"},
      {"body", kModelled, {kWhile}, "called computation"},
      {"true_computation", kModelled, {kConditional}, "called computation"},
      {"false_computation", kModelled, {kConditional}, "called computation"},
      {"branch_computations", kModelled, {kConditional}, "called computations"},
      {"output_to_operand_aliasing", kModelled, {kFusion, kCustomCall}, "aliasing: copy insertion honours it"},
      {"k", kOwn, {kTopk}, "read by topk.cc (evaluator and runtime)"},
      {"largest", kOwn, {kTopk}, "read by topk.cc (evaluator and runtime)"},
      {"inferred_dimension", kMetadataOnly, {kReshape}, "which dimension a frontend inferred; the shape is written"},
      {"is_composite", kMetadataOnly, {kCall}, "marks a call as a named composite; the callee is the meaning"},
      {"cross_program_prefetch_index", kMetadataOnly, {kCopyStart}, "a TPU prefetch hint"},
      {"result_accuracy", kMetadataOnly,
       {kAcos, kAcosh, kAsin, kAsinh, kAtanh, kExpm1, kLog, kLog1p, kLogistic, kSqrt, kCbrt, kRsqrt, kTanh, kErf, kSin,
        kSinh, kCos, kCosh, kTan, kExp},
       "a requested accuracy; insitu's functions are its own and the same in evaluator and runtime"},
      // --- custom-call: for the kernel its target names ---
      {"custom_call_target", kModelled, {kCustomCall}, "the kernel"},
      {"api_version", kKernelInput, {kCustomCall}, "the kernel's calling convention"},
      {"schedule", kMetadataOnly, {kCustomCall}, "a scheduling hint"},
      {"custom_call_has_side_effect", kModelled, {kCustomCall}, "dead-code elimination keeps such calls"},
      {"operand_layout_constraints", kModelled, {kCustomCall}, "layout assignment honours them"},
      {"called_computations", kKernelInput, {kCustomCall}, "computations the kernel may call"},
      {"literal", kKernelInput, {kCustomCall}, ""},
      {"window", kKernelInput, {kCustomCall}, ""},
      {"dim_labels", kKernelInput, {kCustomCall}, ""},
      {"feature_group_count", kKernelInput, {kCustomCall}, ""},
      {"batch_group_count", kKernelInput, {kCustomCall}, ""},
      {"padding_type", kKernelInput, {kCustomCall}, ""},
      {"operand_precision", kKernelInput, {kCustomCall}, ""},
      {"to_apply", kKernelInput, {kCustomCall}, ""},
      // --- kept verbatim for the opcode's own functions: read there where the opcode runs
      // (topk above, linalg.h's cholesky and triangular-solve), else the opcode is refused ---
      {"replica_groups", kOwn, kCollectives, ""},
      {"channel_id", kOwn,
       {kAllGather, kAllGatherStart, kAllReduce, kAllReduceStart, kReduceScatter, kAllToAll, kRaggedAllToAll,
        kCollectiveBroadcast, kCollectivePermute, kCollectivePermuteStart, kSend, kRecv, kSendDone, kRecvDone},
       ""},
      {"use_global_device_ids", kOwn, {kAllGather, kAllGatherStart, kAllReduce, kAllReduceStart, kReduceScatter},
       ""},
      {"constrain_layout", kOwn,
       {kAllGather, kAllGatherStart, kAllReduce, kAllReduceStart, kReduceScatter, kAllToAll}, ""},
      {"dimensions", kOwn,
       {kAllGather, kAllGatherStart, kReduceScatter, kAllToAll, kRaggedAllToAll, kGetDimensionSize, kSetDimensionSize,
        kScan},
       ""},
      {"to_apply", kOwn, {kAllReduce, kAllReduceStart, kReduceScatter, kScan}, ""},
      {"mode", kOwn, {kAllReduce, kAllReduceStart, kReduceScatter}, ""},
      {"source_target_pairs", kOwn, {kCollectivePermute, kCollectivePermuteStart}, ""},
      {"slice_sizes", kOwn, {kCollectivePermute, kCollectivePermuteStart}, ""},
      {"calls", kOwn, {kAsyncStart, kAsyncUpdate, kAsyncDone}, ""},
      {"async_execution_thread", kOwn, {kAsyncStart, kAsyncUpdate, kAsyncDone}, ""},
      {"output_to_operand_aliasing", kOwn, {kAsyncStart}, ""},
      {"is_host_transfer", kOwn, {kSend, kRecv, kSendDone, kRecvDone}, ""},
      {"infeed_config", kOwn, {kInfeed}, ""},
      {"outfeed_config", kOwn, {kOutfeed}, ""},
      {"outfeed_shape", kOwn, {kOutfeed}, ""},
      {"dim_labels", kOwn, {kConvolution}, "read by evaluator/convolution.cc (evaluator and runtime)"},
      {"feature_group_count", kOwn, {kConvolution}, "read by evaluator/convolution.cc (evaluator and runtime)"},
      {"batch_group_count", kOwn, {kConvolution}, "read by evaluator/convolution.cc (evaluator and runtime)"},
      {"conv_kind", kOwn, {kConvolution}, "refused by evaluator/convolution.cc (a backend rewrite's marker)"},
      {"sparsity_config", kOwn, {kConvolution}, "refused by evaluator/convolution.cc (sparse operands)"},
      {"has_dynamic_root", kOwn, {kCollectiveBroadcast}, "read by evaluator/collectives.cc: true is refused"},
      {"operand_precision", kOwn, {kRaggedDot, kScaledDot}, ""},
      {"fft_type", kOwn, {kFft}, "read by evaluator/fft.cc (evaluator and runtime)"},
      {"fft_length", kOwn, {kFft}, "read by evaluator/fft.cc (evaluator and runtime)"},
      {"distribution", kOwn, {kRng}, ""},
      {"delta", kOwn, {kRngGetAndUpdateState}, ""},
      {"algorithm", kOwn, {kRngBitGenerator}, "read by evaluator/rng_bit_generator.cc (evaluator and runtime)"},
      {"algorithm", kOwn, {kScaledDot}, ""},
      {"epsilon", kOwn, {kBatchNormTraining, kBatchNormInference, kBatchNormGrad}, ""},
      {"feature_index", kOwn, {kBatchNormTraining, kBatchNormInference, kBatchNormGrad}, ""},
      {"lower", kOwn, {kCholesky, kTriangularSolve}, "read by evaluator/linalg.cc (evaluator and runtime)"},
      {"left_side", kOwn, {kTriangularSolve}, "read by evaluator/linalg.cc (evaluator and runtime)"},
      {"unit_diagonal", kOwn, {kTriangularSolve}, "read by evaluator/linalg.cc (evaluator and runtime)"},
      {"transpose_a", kOwn, {kTriangularSolve}, "read by evaluator/linalg.cc (evaluator and runtime)"},
      {"domain", kOwn, {kDomain}, ""},
      {"num_carries", kOwn, {kScan}, "read by evaluator/scan.cc (the runtime falls back to it)"},
      {"is_reverse", kOwn, {kScan}, "read by evaluator/scan.cc"},
      {"is_associative", kOwn, {kScan}, "checked by evaluator/scan.cc; allows reordering, which it does not take"},
      {"lhs_batch_dims", kOwn, {kRaggedDot, kScaledDot}, ""},
      {"lhs_contracting_dims", kOwn, {kRaggedDot, kScaledDot}, ""},
      {"rhs_batch_dims", kOwn, {kRaggedDot, kScaledDot}, ""},
      {"rhs_contracting_dims", kOwn, {kRaggedDot, kScaledDot}, ""},
      {"lhs_ragged_dims", kOwn, {kRaggedDot}, ""},
      {"rhs_group_dims", kOwn, {kRaggedDot}, ""},
  };
  return *table;
}

bool applies(const AttributeRule& rule, Opcode opcode) {
  return rule.opcodes.empty() || std::find(rule.opcodes.begin(), rule.opcodes.end(), opcode) != rule.opcodes.end();
}

}  // namespace

std::span<const AttributeRule> attribute_rules() { return rules(); }

const AttributeRule* find_attribute_rule(Opcode opcode, std::string_view name) {
  for (const AttributeRule& rule : rules())
    if (rule.name == name && applies(rule, opcode)) return &rule;
  return nullptr;
}

std::vector<Opcode> opcodes_taking_attribute(std::string_view name) {
  std::vector<Opcode> opcodes;
  for (const AttributeRule& rule : rules())
    if (rule.name == name)
      for (Opcode opcode : rule.opcodes)
        if (std::find(opcodes.begin(), opcodes.end(), opcode) == opcodes.end()) opcodes.push_back(opcode);
  return opcodes;
}


}  // namespace insitu
