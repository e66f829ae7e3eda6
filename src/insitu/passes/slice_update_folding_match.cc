// slice-update-folding's matchers (slice_update_folding_internal.h): the shapes of a block
// update in the IR, and whether its inner update can be written into the whole array.
#include <algorithm>
#include <optional>

#include "insitu/passes/slice_update_folding_internal.h"
#include "insitu/passes/simplify.h"

namespace insitu::slice_update_folding_internal {

std::vector<int64_t> non_unit_dimensions(std::span<const int64_t> dimensions) {
  std::vector<int64_t> kept;
  for (int64_t size : dimensions)
    if (size != 1) kept.push_back(size);
  return kept;
}

bool is_row_major(const Shape& shape) {
  return shape.is_array() && shape.layout().tiles.empty() &&
         std::is_sorted(shape.layout().minor_to_major.rbegin(), shape.layout().minor_to_major.rend());
}

// Whether `instruction` is a reshape that only adds or drops dimensions of size 1 (of row-major
// arrays).
bool is_unit_reshape(const Instruction* instruction) {
  if (instruction->opcode() != Opcode::kReshape || instruction->operand_count() != 1) return false;
  const Shape& to = instruction->shape();
  const Shape& from = instruction->operand(0)->shape();
  return is_row_major(to) && is_row_major(from) && to.element_type() == from.element_type() &&
         non_unit_dimensions(to.dimensions()) == non_unit_dimensions(from.dimensions());
}

// Through a chain of such reshapes: the first value that is not one.
Instruction* through_unit_reshape(Instruction* instruction) {
  while (is_unit_reshape(instruction)) instruction = instruction->operand(0);
  return instruction;
}

// Whether two instructions are the same array: the same instruction, or two get-tuple-elements
// of one index of one tuple (scan-in-place reads the stack through a get-tuple-element of its
// own beside the body's).
bool same_array(const Instruction* a, const Instruction* b) {
  return a == b || (a->opcode() == Opcode::kGetTupleElement && b->opcode() == Opcode::kGetTupleElement &&
                    a->tuple_index == b->tuple_index && a->operand(0) == b->operand(0) &&
                    !a->has_control_edges() && !b->has_control_edges());
}

// Where `read` lies in `array` when it is a block of it read out by unit-stride slices and unit
// reshapes (torch's select(select(cache, 0, l), 0, 0)): its starts and sizes in the array's
// rank; nullopt otherwise.
struct StaticBlock {
  std::vector<int64_t> starts, sizes;
};
std::optional<StaticBlock> static_block(const Instruction* read, const Instruction* array, int depth = 0) {
  if (same_array(read, array)) {
    if (!is_row_major(array->shape())) return std::nullopt;
    const std::vector<int64_t>& dims = array->shape().dimensions();
    return StaticBlock{std::vector<int64_t>(dims.size(), 0), dims};
  }
  if (depth > 16 || read->operand_count() != 1 || read->has_control_edges()) return std::nullopt;
  if (read->opcode() != Opcode::kSlice && !is_unit_reshape(read)) return std::nullopt;
  std::optional<StaticBlock> block = static_block(read->operand(0), array, depth + 1);
  if (!block || read->opcode() != Opcode::kSlice) return block;  // a unit reshape moves nothing
  // The array dimension each of the slice operand's dimensions is: its non-unit dimensions are
  // the block's non-unit ones in order; a unit dimension has nothing to move.
  const Shape& operand = read->operand(0)->shape();
  if (!is_row_major(operand) || static_cast<int64_t>(read->slice.size()) != operand.rank()) return std::nullopt;
  std::vector<int64_t> array_dims;
  for (size_t d = 0; d < block->sizes.size(); ++d)
    if (block->sizes[d] != 1) array_dims.push_back(static_cast<int64_t>(d));
  for (int64_t i = 0, next = 0; i < operand.rank(); ++i) {
    const SliceDimension& range = read->slice[i];
    if (range.stride != 1) return std::nullopt;
    if (operand.dimension(i) == 1) continue;
    const int64_t d = array_dims[next++];
    block->starts[d] += range.start;
    block->sizes[d] = range.limit - range.start;
  }
  return block;
}

// Whether two scalar instructions compute the same value: the same instruction, or the same
// opcode, shape and attributes (metadata aside) over operands that compute the same values.
bool same_value(const Instruction* a, const Instruction* b, int depth = 0) {
  if (a == b) return true;
  if (depth > 8 || a->opcode() != b->opcode() || !(a->shape() == b->shape()) || !a->shape().is_array() ||
      a->shape().rank() != 0 || a->operand_count() != b->operand_count() || a->opcode() == Opcode::kParameter ||
      !a->called_computations().empty() || !b->called_computations().empty() || has_side_effect(*a) ||
      a->has_control_edges() || b->has_control_edges())
    return false;
  InstructionAttributes left = a->attributes(), right = b->attributes();
  for (InstructionAttributes* attributes : {&left, &right}) {
    attributes->metadata.clear();
    attributes->has_metadata = false;
    attributes->frontend_attributes.clear();
  }
  if (!(left == right)) return false;
  for (int64_t i = 0; i < a->operand_count(); ++i)
    if (!same_value(a->operand(i), b->operand(i), depth + 1)) return false;
  return true;
}

// Whether `instruction` may be a block's inner update (update_index_type says whether it folds).
bool is_block_update(const Instruction* instruction) {
  return (instruction->opcode() == Opcode::kDynamicUpdateSlice || instruction->opcode() == Opcode::kScatter) &&
         instruction->operand_count() >= 2;
}

// The window a scatter writes when it writes exactly one (the single-window scatter that JAX
// writes for x.at[:, i].set(row) and for a dynamic_update_slice under vmap): one operand, one
// index vector (a scalar, or a vector along dimension 0), every update dimension a window
// dimension, no batching. Its extent per operand dimension; nullopt for any other scatter.
std::optional<std::vector<int64_t>> single_window(const Instruction* scatter) {
  if (scatter->opcode() != Opcode::kScatter || scatter->operand_count() != 3 || scatter->has_control_edges() ||
      scatter->called_computations().size() != 1 || !is_row_major(scatter->shape()) ||
      !is_row_major(scatter->operand(2)->shape()))
    return std::nullopt;
  const ScatterDimensionNumbers& numbers = scatter->scatter_dimension_numbers;
  const Shape& indices = scatter->operand(1)->shape();
  const Shape& updates = scatter->operand(2)->shape();
  const int64_t rank = scatter->shape().rank();
  const int64_t components = indices.rank() == 0 ? 1 : indices.rank() == 1 ? indices.dimension(0) : -1;
  if (!indices.is_array() || numbers.index_vector_dim != 0 || components < 0 ||
      static_cast<int64_t>(numbers.scatter_dims_to_operand_dims.size()) != components ||
      !numbers.input_batching_dims.empty() || !numbers.scatter_indices_batching_dims.empty() ||
      static_cast<int64_t>(numbers.update_window_dims.size()) != updates.rank() ||
      updates.rank() + static_cast<int64_t>(numbers.inserted_window_dims.size()) != rank)
    return std::nullopt;
  for (int64_t d = 0; d < updates.rank(); ++d)
    if (numbers.update_window_dims[d] != d) return std::nullopt;
  std::vector<int64_t> window(static_cast<size_t>(rank), 1);
  for (int64_t d = 0, next = 0; d < rank; ++d) {
    if (std::find(numbers.inserted_window_dims.begin(), numbers.inserted_window_dims.end(), d) !=
        numbers.inserted_window_dims.end())
      continue;
    if (next >= updates.rank()) return std::nullopt;
    window[d] = updates.dimension(next++);
    if (window[d] > scatter->shape().dimension(d)) return std::nullopt;
  }
  for (int64_t d : numbers.scatter_dims_to_operand_dims)
    if (d < 0 || d >= rank) return std::nullopt;
  return window;
}

// The index type of a block's inner update: a dynamic-update-slice with one start per
// dimension, all of one type, or a single-window scatter (its indices' type); nullopt when it
// cannot be folded. `fallback` for an update without starts (a rank-0 block).
std::optional<PrimitiveType> update_index_type(const Instruction* updated, PrimitiveType fallback) {
  PrimitiveType type = fallback;
  if (updated->opcode() == Opcode::kScatter) {
    if (!single_window(updated)) return std::nullopt;
    type = updated->operand(1)->shape().element_type();
  } else {
    if (updated->opcode() != Opcode::kDynamicUpdateSlice || updated->has_control_edges() ||
        updated->operand_count() != 2 + updated->shape().rank() || !is_row_major(updated->shape()))
      return std::nullopt;
    if (updated->operand_count() > 2) type = updated->operand(2)->shape().element_type();
    for (int64_t i = 2; i < updated->operand_count(); ++i)
      if (updated->operand(i)->shape().element_type() != type) return std::nullopt;
  }
  // The folded starts are offsets into the whole array, in this type: an s8 or s16 index (let
  // alone an s4) need not hold them.
  if (!is_integral(type) || bit_width(type) < 32) return std::nullopt;
  return type;
}

// Which dimension of the updated block %y each array dimension is: the block's dimensions of
// extent > 1 are %y's in order; -1 for a dimension the block holds once.
std::vector<int64_t> inner_dimensions(std::span<const int64_t> sizes, const Shape& updated) {
  std::vector<int64_t> inner_of(sizes.size(), -1), inner_dims;
  for (int64_t e = 0; e < updated.rank(); ++e)
    if (updated.dimension(e) != 1) inner_dims.push_back(e);
  for (size_t d = 0, next = 0; d < sizes.size(); ++d)
    if (sizes[d] != 1 && next < inner_dims.size()) inner_of[d] = inner_dims[next++];
  return inner_of;
}

// Whether the block's inner update can be written into the whole array with the same meaning.
// A dynamic-update-slice clamps its start into the block, which the fold reproduces. A scatter
// drops a window that does not fit the block, so it folds only when every dimension it indexes
// is all of the array's (the block's start there is 0, and "fits the block" is "fits the
// array"), and never indexes a dimension the block holds once.
bool folds_into(const Block& block, const Shape& array) {
  const Instruction* updated = block.updated;
  if (updated->opcode() != Opcode::kScatter) return true;
  const std::vector<int64_t> inner_of = inner_dimensions(block.sizes, updated->shape());
  for (int64_t e : updated->scatter_dimension_numbers.scatter_dims_to_operand_dims) {
    auto d = std::find(inner_of.begin(), inner_of.end(), e);
    if (d == inner_of.end()) return false;
    const int64_t dimension = d - inner_of.begin();
    if (block.sizes[dimension] != array.dimension(dimension)) return false;
  }
  return true;
}

// Form 1 (a scan's layer): %z = dynamic-update-slice(%cache, %r, starts') with %r = unit
// reshape of %y, %y = update of unit reshape of dynamic-slice(%cache, starts), starts' = starts.
// Form 1s (torch's view update, functionalized: select, update, select_scatter): the same with
// the block read by a unit-stride slice and written back at constant starts equal to its own.
std::optional<Block> match_write_back(Instruction* z) {
  if (z->opcode() != Opcode::kDynamicUpdateSlice || z->operand_count() < 2 || z->has_control_edges()) return std::nullopt;
  Instruction* cache = z->operand(0);
  const Shape& shape = cache->shape();
  if (!is_row_major(shape) || z->operand_count() != 2 + shape.rank() || shape.rank() == 0) return std::nullopt;
  Block block;
  block.written = z->operand(1);
  block.updated = through_unit_reshape(block.written);
  if (!is_block_update(block.updated)) return std::nullopt;
  Instruction* read = through_unit_reshape(block.updated->operand(0));
  if (read->operand_count() < 1) return std::nullopt;
  if (block.written != block.updated && block.written->users().size() != 1) return std::nullopt;  // %r read elsewhere
  if (read->opcode() == Opcode::kSlice) {
    std::optional<StaticBlock> found = static_block(read, cache);
    if (!found || found->sizes != block.written->shape().dimensions()) return std::nullopt;
    for (int64_t d = 0; d < shape.rank(); ++d)
      if (!is_integer_constant(*z->operand(2 + d), found->starts[d])) return std::nullopt;
    block.static_starts = found->starts;
    block.sizes = found->sizes;
    block.source = read;
    while (!same_array(block.source, cache)) block.source = block.source->operand(0);
    if (!update_index_type(block.updated, z->operand(2)->shape().element_type()) || !folds_into(block, shape))
      return std::nullopt;
    return block;
  }
  if (read->opcode() != Opcode::kDynamicSlice || !same_array(read->operand(0), cache) || read->operand_count() != 1 + shape.rank() ||
      read->dynamic_slice_sizes != block.written->shape().dimensions())
    return std::nullopt;
  for (int64_t d = 0; d < shape.rank(); ++d)
    if (!same_value(read->operand(1 + d), z->operand(2 + d))) return std::nullopt;
  const PrimitiveType start_type = read->operand(1)->shape().element_type();
  if (update_index_type(block.updated, start_type) != start_type) return std::nullopt;
  block.sizes = read->dynamic_slice_sizes;
  block.source = read->operand(0);
  block.dynamic = true;
  for (int64_t d = 0; d < shape.rank(); ++d) block.dynamic_starts.push_back(read->operand(1 + d));
  if (!folds_into(block, shape)) return std::nullopt;
  return block;
}

// Form 3: %z = dynamic-update-slice(%cache, %w, starts') with %w = unit reshapes of %r, %r the
// conditional's result (or its get-tuple-element), read by nothing else; a branch operand is %x
// (unit reshapes of dynamic-slice(%cache, starts), read only by the conditional) or a tuple only
// the conditional reads (for one branch or several), holding %x once or not at all; every branch root hands its result
// leaf on (the parameter, or its element holding %x) or computes it; starts' = starts.
std::optional<ConditionalBlock> match_conditional_write_back(Instruction* z) {
  if (z->opcode() != Opcode::kDynamicUpdateSlice || z->operand_count() < 2 || z->has_control_edges()) return std::nullopt;
  const Shape& shape = z->operand(0)->shape();
  if (!is_row_major(shape) || shape.rank() == 0 || z->operand_count() != 2 + shape.rank()) return std::nullopt;
  ConditionalBlock found;
  Instruction* written = z->operand(1);
  for (Instruction* link = written; link != through_unit_reshape(written); link = link->operand(0))
    if (link->users().size() != 1 || link->has_control_edges()) return std::nullopt;
  found.result = through_unit_reshape(written);
  Instruction* conditional = found.result;
  if (found.result->opcode() == Opcode::kGetTupleElement) {
    conditional = found.result->operand(0);
    found.leaf = found.result->tuple_index;
    if (conditional->opcode() != Opcode::kConditional) return std::nullopt;
    for (const Instruction* user : conditional->users())  // nothing else reads the leaf
      if (user != found.result && (user->opcode() != Opcode::kGetTupleElement || user->tuple_index == found.leaf))
        return std::nullopt;
  }
  if (conditional->opcode() != Opcode::kConditional || conditional->has_control_edges() ||
      found.result->users().size() != 1 || found.result->has_control_edges() || conditional->parent()->root() == conditional)
    return std::nullopt;
  found.conditional = conditional;
  const std::vector<Computation*>& branches = conditional->called_computations();
  const size_t count = branches.size();
  if (count == 0 || conditional->operand_count() != 1 + static_cast<int64_t>(count)) return std::nullopt;
  for (size_t b = 0; b < count; ++b)  // each branch rewritten once (flatten-calls gives each its own)
    if (std::count(branches.begin(), branches.end(), branches[b]) != 1) return std::nullopt;
  // The value of the leaf each branch's root returns.
  auto leaf_value = [&](const Computation* branch) -> Instruction* {
    Instruction* root = branch->root();
    if (found.leaf < 0) return root;
    return root->opcode() == Opcode::kTuple && found.leaf < root->operand_count() ? root->operand(found.leaf) : nullptr;
  };
  // %x: the operand value a branch hands on unchanged
  for (size_t b = 0; b < count && found.block == nullptr; ++b) {
    const Instruction* value = leaf_value(branches[b]);
    const Instruction* parameter = branches[b]->parameter(0);
    Instruction* operand = conditional->operand(static_cast<int64_t>(b) + 1);
    if (value == parameter) found.block = operand;
    else if (value != nullptr && value->opcode() == Opcode::kGetTupleElement && value->operand(0) == parameter &&
             operand->opcode() == Opcode::kTuple)
      found.block = operand->operand(value->tuple_index);
  }
  if (found.block == nullptr || !found.block->shape().is_array()) return std::nullopt;
  found.read = through_unit_reshape(found.block);
  Instruction* read = found.read;
  if (read->opcode() != Opcode::kDynamicSlice || !same_array(read->operand(0), z->operand(0)) ||
      read->operand_count() != 1 + shape.rank() || read->dynamic_slice_sizes != written->shape().dimensions() ||
      read->has_control_edges())
    return std::nullopt;
  for (int64_t d = 0; d < shape.rank(); ++d)
    if (!same_value(read->operand(1 + d), z->operand(2 + d))) return std::nullopt;
  for (Instruction* link = found.block; link != read; link = link->operand(0))
    if (link->has_control_edges() || (link != found.block && link->users().size() != 1)) return std::nullopt;
  if (read->users().size() != 1 && read != found.block) return std::nullopt;
  // %x goes to the conditional alone: as a branch's operand, or in operand tuples only it reads
  for (const Instruction* user : found.block->users()) {
    if (user == conditional) continue;
    if (user->opcode() != Opcode::kTuple || user->parent()->root() == user || user->users().size() != 1 ||
        user->users()[0] != conditional)
      return std::nullopt;
  }
  for (size_t b = 0; b < count; ++b) {
    const Computation& branch = *branches[b];
    Instruction* operand = conditional->operand(static_cast<int64_t>(b) + 1);
    const Instruction* parameter = branch.parameter(0);
    const Instruction* value = leaf_value(&branch);
    if (value == nullptr || branch.parameter_count() != 1 || parameter->has_control_edges()) return std::nullopt;
    int64_t element = -1;
    if (operand != found.block) {
      if (operand->opcode() != Opcode::kTuple || operand->parent()->root() == operand || !parameter->shape().is_tuple())
        return std::nullopt;
      element = -2;
      for (int64_t k = 0; k < operand->operand_count(); ++k) {
        if (operand->operand(k) != found.block) continue;
        if (element != -2) return std::nullopt;  // held twice
        element = k;
      }
      for (const Instruction* user : parameter->users())  // the parameter is read element by element
        if (user->opcode() != Opcode::kGetTupleElement || user->has_control_edges()) return std::nullopt;
    }
    const bool hands_on = element == -1 ? value == parameter
                                        : element >= 0 && value->opcode() == Opcode::kGetTupleElement &&
                                              value->operand(0) == parameter && value->tuple_index == element;
    if (!hands_on && !(value->shape() == found.block->shape())) return std::nullopt;
    if (found.leaf >= 0 && branch.root()->has_control_edges()) return std::nullopt;
    found.element.push_back(element);
    found.passes_through.push_back(hands_on);
  }
  return found;
}

// Form 2 (unrolled layers, then jnp.stack): %z = concatenate(%r_0, ..., %r_n) along one
// dimension of %cache's shape, %r_l = unit reshape of %y_l or of the block itself, each block a
// unit-stride slice of %cache, the blocks in order covering %cache. Returns the blocks that are
// updated (the others are written back unchanged), or nullopt.
std::optional<std::vector<Block>> match_stack(Instruction* z, Instruction*& cache) {
  if (z->opcode() != Opcode::kConcatenate || z->dimensions.size() != 1 || z->operand_count() < 1 ||
      z->has_control_edges() || !is_row_major(z->shape()))
    return std::nullopt;
  const int64_t axis = z->dimensions[0];
  cache = nullptr;
  std::vector<Block> blocks;
  int64_t next = 0;
  for (Instruction* written : z->operands()) {
    Instruction* value = through_unit_reshape(written);
    Instruction* updated = nullptr;
    if (is_block_update(value)) {
      updated = value;
      value = through_unit_reshape(value->operand(0));
    }
    if (value->opcode() != Opcode::kSlice || value->operand_count() != 1) return std::nullopt;
    Instruction* source = value->operand(0);
    if (cache == nullptr) cache = source;
    if (!same_array(source, cache) || !(source->shape().dimensions() == z->shape().dimensions()) ||
        source->shape().element_type() != z->shape().element_type() || !is_row_major(source->shape()) ||
        written->shape().dimensions() != value->shape().dimensions())
      return std::nullopt;
    Block block;
    for (int64_t d = 0; d < source->shape().rank(); ++d) {
      const SliceDimension& range = value->slice[d];
      const bool full = range.start == 0 && range.limit == source->shape().dimension(d);
      if (range.stride != 1 || (d != axis && !full) || (d == axis && range.start != next)) return std::nullopt;
      block.static_starts.push_back(range.start);
      block.sizes.push_back(range.limit - range.start);
    }
    next += block.sizes[axis];
    if (updated == nullptr) continue;
    if (written != updated && written->users().size() != 1) return std::nullopt;
    block.updated = updated;
    block.written = written;
    if (!update_index_type(updated, PrimitiveType::kS32) || !folds_into(block, cache->shape())) return std::nullopt;
    blocks.push_back(std::move(block));
  }
  if (cache == nullptr || next != cache->shape().dimension(axis)) return std::nullopt;
  return blocks;
}

// The stacking of updated pieces (jnp.stack of per-layer caches that are separate arrays):
//   %z = concatenate(%r_0, ..., %r_n), dimensions={axis}
// where some %r_l are (a unit reshape of) %y_l = dynamic-update-slice(%c_l, %kv_l, ...). Each
// such piece is a block of %z at a static offset along the axis; `pieces` gets its block and
// `sources` the operand list of the concatenate of the pieces before their updates (%c_l
// reshaped like %r_l). Nullopt when no piece is updated or one cannot be folded.
std::optional<std::vector<Block>> match_stacked_pieces(Instruction* z, std::vector<Instruction*>& sources) {
  if (z->opcode() != Opcode::kConcatenate || z->dimensions.size() != 1 || z->has_control_edges() ||
      !is_row_major(z->shape()))
    return std::nullopt;
  const int64_t axis = z->dimensions[0];
  std::vector<Block> blocks;
  sources.clear();
  int64_t offset = 0;
  for (Instruction* written : z->operands()) {
    Instruction* updated = through_unit_reshape(written);
    const int64_t extent = written->shape().dimension(axis);
    if (!is_block_update(updated) || updated->has_control_edges() ||
        (written != updated && (written->users().size() != 1 || written->has_control_edges())) ||
        !is_row_major(updated->shape()) || !is_row_major(written->shape())) {
      sources.push_back(written);
      offset += extent;
      continue;
    }
    // A piece read out of one array (a slice) is the other stacking rule's (match_stack), which
    // writes into that array in place instead of stacking a new one.
    if (through_unit_reshape(updated->operand(0))->opcode() == Opcode::kSlice) return std::nullopt;
    Block block;
    block.updated = updated;
    block.written = written;
    block.sizes = written->shape().dimensions();
    block.static_starts.assign(static_cast<size_t>(z->shape().rank()), 0);
    block.static_starts[axis] = offset;
    if (!update_index_type(updated, PrimitiveType::kS32) || !folds_into(block, z->shape())) return std::nullopt;
    blocks.push_back(std::move(block));
    sources.push_back(updated->operand(0));  // reshaped like %r_l when folded
    offset += extent;
  }
  if (blocks.empty()) return std::nullopt;
  return blocks;
}

}  // namespace insitu::slice_update_folding_internal
