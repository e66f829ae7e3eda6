// slice-update-folding (slice_update_folding.h): the folds; the matchers are in
// slice_update_folding_match.cc.
#include "insitu/passes/slice_update_folding.h"

#include <algorithm>
#include <optional>
#include <unordered_map>

#include "insitu/passes/name_table.h"
#include "insitu/passes/simplify.h"
#include "insitu/passes/slice_update_folding_internal.h"

namespace insitu {
namespace {

using slice_update_folding_internal::Block;
using slice_update_folding_internal::ConditionalBlock;
using slice_update_folding_internal::match_conditional_write_back;
using slice_update_folding_internal::inner_dimensions;
using slice_update_folding_internal::match_stack;
using slice_update_folding_internal::match_stacked_pieces;
using slice_update_folding_internal::match_write_back;
using slice_update_folding_internal::single_window;
using slice_update_folding_internal::through_unit_reshape;
using slice_update_folding_internal::update_index_type;

class Folder {
 public:
  explicit Folder(const Module& module) : names_(module) {}

  // A new instruction before `before` (a fresh name from `base`).
  Instruction* insert(Computation& computation, Instruction* before, Opcode opcode, const std::string& base, Shape shape,
                      const std::vector<Instruction*>& operands) {
    return add(computation, before, opcode, base, std::move(shape), operands);
  }

  // Writes `block`'s update into `array` in place and points %y's readers (but the write-back)
  // at the block read out of the result, which it returns. New instructions go before %y
  // (every operand they use is defined before it).
  Instruction* fold(Computation& computation, Instruction* array, const Block& block) {
    constants_.clear();
    Instruction* before = block.updated;
    const Shape& shape = array->shape();
    const Instruction& inner = *block.updated;
    const Shape& updated = inner.shape();               // %x and %y
    const Shape& update = inner.operand(1)->shape();    // %kv
    const PrimitiveType index_type = *update_index_type(
        &inner, block.dynamic_starts.empty() ? PrimitiveType::kS32 : block.dynamic_starts[0]->shape().element_type());
    const std::vector<int64_t> inner_of = inner_dimensions(block.sizes, updated);
    // A scatter's window over %y, and which component of its index vector starts each dimension
    // of %y (-1: the window starts at 0 there).
    const bool scatter = inner.opcode() == Opcode::kScatter;
    std::vector<int64_t> window, component(static_cast<size_t>(updated.rank()), -1);
    if (scatter) {
      window = *single_window(&inner);
      const std::vector<int64_t>& indexed = inner.scatter_dimension_numbers.scatter_dims_to_operand_dims;
      for (size_t j = 0; j < indexed.size(); ++j) component[indexed[j]] = static_cast<int64_t>(j);
    }
    // The block's starts (clamped as XLA clamps the read) plus the inner update's: a
    // dynamic-update-slice's clamped likewise, a scatter's as they are (the dimensions it indexes
    // are whole, folds_into, so the block starts at 0 there and the scatter checks the bounds).
    std::vector<Instruction*> block_starts, starts, pieces;  // pieces: a scatter's index vector
    std::vector<int64_t> update_dims;
    for (int64_t d = 0; d < shape.rank(); ++d) {
      Instruction* start = block.dynamic ? clamped(computation, before, block.dynamic_starts[d], index_type,
                                                   shape.dimension(d) - block.sizes[d])
                                         : constant(computation, before, index_type, block.static_starts[d]);
      block_starts.push_back(start);
      const int64_t e = inner_of[d];
      update_dims.push_back(e < 0 ? 1 : scatter ? window[e] : update.dimension(e));
      if (scatter) {
        pieces.push_back(e >= 0 && component[e] >= 0
                             ? index_component(computation, before, inner.operand(1), component[e])
                             : add(computation, before, Opcode::kReshape, "folded_index",
                                   Shape::array(index_type, {1}), {start}));
      } else if (e >= 0) {
        Instruction* inner_start =
            clamped(computation, before, inner.operand(2 + e), index_type, updated.dimension(e) - update.dimension(e));
        if (is_zero(*start)) start = inner_start;
        else if (!is_zero(*inner_start))
          start = add(computation, before, Opcode::kAdd, "folded_start", Shape::scalar(index_type), {start, inner_start});
      }
      starts.push_back(start);
    }
    Instruction* kv = inner.operand(scatter ? 2 : 1);
    if (kv->shape().dimensions() != update_dims)
      kv = add(computation, before, Opcode::kReshape, "folded_update",
               Shape::array(kv->shape().element_type(), update_dims), {kv});
    Instruction* folded = nullptr;
    if (scatter) {
      // one window over the whole array, every dimension indexed
      Instruction* indices = add(computation, before, Opcode::kConcatenate, "folded_indices",
                                 Shape::array(index_type, {shape.rank()}), pieces);
      indices->dimensions = {0};
      folded = add(computation, before, Opcode::kScatter, "folded_scatter", array->shape(), {array, indices, kv});
      ScatterDimensionNumbers& numbers = folded->scatter_dimension_numbers;
      for (int64_t d = 0; d < shape.rank(); ++d) {
        numbers.update_window_dims.push_back(d);
        numbers.scatter_dims_to_operand_dims.push_back(d);
      }
      numbers.index_vector_dim = 0;
      folded->indices_are_sorted = true;
      folded->unique_indices = true;
      folded->set_called_computations(inner.called_computations());
    } else {
      std::vector<Instruction*> operands = {array, kv};
      operands.insert(operands.end(), starts.begin(), starts.end());
      folded = add(computation, before, Opcode::kDynamicUpdateSlice, "folded_update_slice", array->shape(), operands);
    }
    folded->metadata = inner.metadata;
    folded->has_metadata = inner.has_metadata;
    std::vector<Instruction*> readers;
    for (Instruction* user : block.updated->users())
      if (user != block.written) readers.push_back(user);
    const bool root = computation.root() == block.updated;
    if (readers.empty() && !root) return folded;
    Instruction* slice = nullptr;
    const Shape block_shape = Shape::array(updated.element_type(), block.sizes);
    if (block.dynamic) {
      std::vector<Instruction*> slice_operands = {folded};
      slice_operands.insert(slice_operands.end(), block_starts.begin(), block_starts.end());
      slice = add(computation, before, Opcode::kDynamicSlice, "folded_block", block_shape, slice_operands);
      slice->dynamic_slice_sizes = block.sizes;
    } else {
      slice = add(computation, before, Opcode::kSlice, "folded_block", block_shape, {folded});
      for (int64_t d = 0; d < shape.rank(); ++d)
        slice->slice.push_back(SliceDimension{block.static_starts[d], block.static_starts[d] + block.sizes[d], 1});
    }
    Instruction* value = slice;
    if (!(slice->shape() == updated)) value = add(computation, before, Opcode::kReshape, "folded_block", updated, {slice});
    for (Instruction* reader : readers)
      for (int64_t i = 0; i < reader->operand_count(); ++i)
        if (reader->operand(i) == block.updated) reader->replace_operand(i, value);
    if (root) computation.set_root(value);
    return folded;
  }

 private:
  // Component j of a scatter's index vector (a scalar, or a vector along dimension 0), as a
  // vector of one element.
  Instruction* index_component(Computation& computation, Instruction* before, Instruction* indices, int64_t j) {
    const Shape one = Shape::array(indices->shape().element_type(), {1});
    if (indices->shape().rank() == 0) return add(computation, before, Opcode::kReshape, "folded_index", one, {indices});
    if (indices->shape().dimension(0) == 1) return indices;
    Instruction* slice = add(computation, before, Opcode::kSlice, "folded_index", one, {indices});
    slice->slice = {SliceDimension{j, j + 1, 1}};
    return slice;
  }

  static bool is_zero(const Instruction& instruction) {
    return instruction.opcode() == Opcode::kConstant && instruction.literal.get_integer(0) == 0;
  }
  // One constant per type and value within a fold (constants_ is cleared by fold()).
  Instruction* constant(Computation& computation, Instruction* before, PrimitiveType type, int64_t value) {
    for (Instruction* existing : constants_)
      if (existing->shape().element_type() == type && existing->literal.get_integer(0) == value) return existing;
    Literal literal(Shape::scalar(type));
    dispatch_element_type(type, [&](auto tag) {
      using T = decltype(tag);
      if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) literal.data<T>()[0] = static_cast<T>(value);
    });
    Instruction* instruction = add(computation, before, Opcode::kConstant, "folded_constant", Shape::scalar(type), {});
    instruction->literal = std::move(literal);
    constants_.push_back(instruction);
    return instruction;
  }

  // clamp(0, start, limit); a constant when limit is 0 or start is one.
  Instruction* clamped(Computation& computation, Instruction* before, Instruction* start, PrimitiveType type,
                       int64_t limit) {
    Instruction* zero = constant(computation, before, type, 0);
    if (limit <= 0) return zero;
    if (start->opcode() == Opcode::kConstant && start->shape().element_type() == type)  // known: clamp it now
      return constant(computation, before, type, std::clamp<int64_t>(start->literal.get_integer(0), 0, limit));
    return add(computation, before, Opcode::kClamp, "folded_clamp", Shape::scalar(type),
               {zero, start, constant(computation, before, type, limit)});
  }

  Instruction* add(Computation& computation, Instruction* before, Opcode opcode, const std::string& base, Shape shape,
                   const std::vector<Instruction*>& operands) {
    return insert_new_instruction(computation, before, names_, opcode, base, std::move(shape), operands);
  }

  NameTable names_;
  std::vector<Instruction*> constants_;
};

// Removes the instructions left without users (not roots, parameters or side effects), and
// then their operands that became dead.
void remove_dead(Computation& computation, std::vector<Instruction*> candidates) {
  for (size_t i = 0; i < candidates.size(); ++i) {
    Instruction* instruction = candidates[i];
    if (instruction == nullptr || !instruction->users().empty() || computation.root() == instruction ||
        instruction->opcode() == Opcode::kParameter || has_side_effect(*instruction) || instruction->has_control_edges())
      continue;
    std::vector<Instruction*> operands = instruction->operands();
    computation.remove_instruction(instruction);
    std::replace(candidates.begin() + static_cast<int64_t>(i) + 1, candidates.end(), instruction,
                 static_cast<Instruction*>(nullptr));
    for (Instruction* operand : operands)
      if (std::find(candidates.begin() + static_cast<int64_t>(i) + 1, candidates.end(), operand) == candidates.end())
        candidates.push_back(operand);
  }
}

// The stacked-pieces rule (slice_update_folding.h): the pieces are stacked before their updates,
// and each update is folded into the stack in program order. Needs every piece's source defined
// before the first update (the stack of sources goes there; parameters and constants defined
// later move to the front) and the updates in program order.
bool fold_stacked_pieces(Computation& computation, Folder& folder, Instruction* z,
                         const std::unordered_map<const Instruction*, size_t>& position) {
  std::vector<Instruction*> sources;
  std::optional<std::vector<Block>> blocks = match_stacked_pieces(z, sources);
  if (!blocks) return false;
  Instruction* first = (*blocks)[0].updated;
  for (size_t l = 1; l < blocks->size(); ++l)
    if (position.at((*blocks)[l - 1].updated) >= position.at((*blocks)[l].updated)) return false;
  // A parameter or constant defined later (they have no operands) moves to the front.
  std::vector<Instruction*> moved;
  for (Instruction* source : sources) {
    if (position.at(source) < position.at(first)) continue;
    if (source->opcode() != Opcode::kParameter && source->opcode() != Opcode::kConstant) return false;
    if (source->has_control_edges()) return false;
    moved.push_back(source);
  }
  if (!moved.empty()) {
    std::vector<Instruction*> order = moved;
    for (Instruction* instruction : computation.instructions())
      if (std::find(moved.begin(), moved.end(), instruction) == moved.end()) order.push_back(instruction);
    computation.set_instruction_order(order);
  }
  // The stack of the sources, before the first update.
  std::vector<Instruction*> operands;
  size_t b = 0;
  for (size_t k = 0; k < sources.size(); ++k) {
    Instruction* source = sources[k];
    if (b < blocks->size() && z->operand(static_cast<int64_t>(k)) == (*blocks)[b].written) {
      if (!(source->shape() == (*blocks)[b].written->shape()))
        source = folder.insert(computation, first, Opcode::kReshape, "stacked_piece", (*blocks)[b].written->shape(),
                               {source});
      ++b;
    }
    operands.push_back(source);
  }
  Instruction* head = folder.insert(computation, first, Opcode::kConcatenate, "stacked", z->shape(), operands);
  head->dimensions = z->dimensions;
  std::vector<Instruction*> dead = {z};
  for (const Block& block : *blocks) {
    dead.push_back(block.written);
    dead.push_back(block.updated);
    head = folder.fold(computation, head, block);
  }
  z->replace_all_uses_with(head);
  if (computation.root() == z) computation.set_root(head);
  remove_dead(computation, std::move(dead));
  return true;
}

// Form 3 (slice_update_folding.h): each branch gets the array and the block's starts in its
// operand tuple, reads the block out of the array itself and returns the array: as it came in
// where it handed the block on, else with its result written back at the block's starts. The
// conditional's result leaf becomes the array, which the write-back's readers read.
void fold_into_conditional(Computation& computation, Folder& folder, Instruction* z, const ConditionalBlock& found) {
  Instruction* conditional = found.conditional;
  Instruction* read = found.read;
  Instruction* array = read->operand(0);
  const Shape& array_shape = array->shape();
  const std::vector<Instruction*> starts(read->operands().begin() + 1, read->operands().end());
  const std::vector<Computation*>& branches = conditional->called_computations();
  std::vector<Instruction*> dead = {z};
  for (Instruction* link = z->operand(1); link != found.result; link = link->operand(0)) dead.push_back(link);
  for (size_t b = 0; b < branches.size(); ++b) {
    Computation& branch = *branches[b];
    Instruction* operand = conditional->operand(static_cast<int64_t>(b) + 1);
    Instruction* parameter = branch.parameter(0);
    const int64_t element = found.element[b];
    // the operand tuple: the array where %x was (or after the elements), then the starts
    std::vector<Instruction*> elements;
    if (element != -1) elements.assign(operand->operands().begin(), operand->operands().end());
    int64_t at = element >= 0 ? element : static_cast<int64_t>(elements.size());
    if (element >= 0) elements[static_cast<size_t>(element)] = array;
    else elements.push_back(array);
    const int64_t first_start = static_cast<int64_t>(elements.size());
    elements.insert(elements.end(), starts.begin(), starts.end());
    std::vector<Shape> shapes;
    for (const Instruction* piece : elements) shapes.push_back(piece->shape());
    Instruction* tuple = folder.insert(computation, conditional, Opcode::kTuple, "with_array", Shape::tuple(shapes), elements);
    conditional->replace_operand(static_cast<int64_t>(b) + 1, tuple);
    if (operand != found.block) dead.push_back(operand);
    // in the branch: the old readers of the block read it out of the array
    const Instruction* root = branch.root();
    Instruction* value = found.leaf < 0 ? branch.root() : root->operand(found.leaf);
    std::vector<Instruction*> readers;  // what read the block: the parameter, or its element
    if (element == -1) readers.push_back(parameter);
    else
      for (Instruction* user : parameter->users())
        if (user->tuple_index == element) readers.push_back(user);
    // new instructions go where the order set below puts them: the block's read right after the
    // parameter, the write-back right before the root (or as the root)
    const std::vector<Instruction*> original = branch.instructions();
    std::vector<Instruction*> head, tail;
    auto add = [&](std::vector<Instruction*>& into, Opcode opcode, const std::string& base, Shape shape,
                   const std::vector<Instruction*>& operands) {
      into.push_back(folder.insert(branch, parameter, opcode, base, std::move(shape), operands));
      return into.back();
    };
    parameter->set_shape(tuple->shape());
    Instruction* array_in = add(head, Opcode::kGetTupleElement, "array", array_shape, {parameter});
    array_in->tuple_index = at;
    std::vector<Instruction*> starts_in;
    for (size_t d = 0; d < starts.size(); ++d) {
      Instruction* start = add(head, Opcode::kGetTupleElement, "start", starts[d]->shape(), {parameter});
      start->tuple_index = first_start + static_cast<int64_t>(d);
      starts_in.push_back(start);
    }
    std::vector<Instruction*> read_operands = {array_in};
    read_operands.insert(read_operands.end(), starts_in.begin(), starts_in.end());
    Instruction* block = add(head, Opcode::kDynamicSlice, "block", read->shape(), read_operands);
    block->dynamic_slice_sizes = read->dynamic_slice_sizes;
    if (!(block->shape() == found.block->shape())) block = add(head, Opcode::kReshape, "block", found.block->shape(), {block});
    for (Instruction* reader : readers) {
      if (reader == parameter) {
        for (Instruction* user : std::vector<Instruction*>(parameter->users()))
          if (std::find(head.begin(), head.end(), user) == head.end())
            for (int64_t i = 0; i < user->operand_count(); ++i)
              if (user->operand(i) == parameter) user->replace_operand(i, block);
      } else {
        reader->replace_all_uses_with(block);
      }
    }
    // the leaf: the array as it came in, or the result written back into it
    Instruction* leaf = array_in;
    if (!found.passes_through[b]) {
      Instruction* update = value;
      if (!(update->shape() == read->shape())) update = add(tail, Opcode::kReshape, "written", read->shape(), {update});
      std::vector<Instruction*> write_operands = {array_in, update};
      write_operands.insert(write_operands.end(), starts_in.begin(), starts_in.end());
      leaf = add(tail, Opcode::kDynamicUpdateSlice, "written_back", array_shape, write_operands);
    }
    std::vector<Instruction*> order = {parameter};
    order.insert(order.end(), head.begin(), head.end());
    for (Instruction* instruction : original)
      if (instruction != parameter && (found.leaf < 0 || instruction != root)) order.push_back(instruction);
    order.insert(order.end(), tail.begin(), tail.end());
    if (found.leaf >= 0) order.push_back(branch.root());
    branch.set_instruction_order(order);
    if (found.leaf < 0) {
      branch.set_root(leaf);
    } else {
      Instruction* root_tuple = branch.root();
      root_tuple->replace_operand(found.leaf, leaf);
      Shape shape = root_tuple->shape();
      shape.mutable_tuple_shapes()[static_cast<size_t>(found.leaf)] = array_shape;
      root_tuple->set_shape(std::move(shape));
    }
    for (Instruction* reader : readers)
      if (reader != parameter && reader->users().empty()) branch.remove_instruction(reader);
    for (auto it = head.rbegin(); it != head.rend(); ++it)  // what no reader was left for (a branch handing the block on)
      if ((*it)->users().empty() && branch.root() != *it) branch.remove_instruction(*it);
  }
  Shape result_shape = array_shape;
  if (found.leaf >= 0) {
    result_shape = conditional->shape();
    result_shape.mutable_tuple_shapes()[static_cast<size_t>(found.leaf)] = array_shape;
    found.result->set_shape(array_shape);
  }
  conditional->set_shape(std::move(result_shape));
  z->replace_all_uses_with(found.result);
  if (computation.root() == z) computation.set_root(found.result);
  dead.push_back(found.block);
  remove_dead(computation, std::move(dead));
}

// Folds the first match in `computation`; false when there is none.
bool fold_one(Computation& computation, Folder& folder) {
  const std::vector<Instruction*> instructions = computation.instructions();
  std::unordered_map<const Instruction*, size_t> position;
  for (size_t i = 0; i < instructions.size(); ++i) position[instructions[i]] = i;
  for (Instruction* z : instructions) {
    if (std::optional<Block> block = match_write_back(z)) {
      std::vector<Instruction*> dead = {z, block->written, block->updated, block->updated->operand(0)};
      dead.push_back(through_unit_reshape(block->updated->operand(0)));
      z->replace_all_uses_with(folder.fold(computation, block->source, *block));
      remove_dead(computation, std::move(dead));
      return true;
    }
    if (std::optional<ConditionalBlock> found = match_conditional_write_back(z)) {
      fold_into_conditional(computation, folder, z, *found);
      return true;
    }
    if (fold_stacked_pieces(computation, folder, z, position)) return true;
    Instruction* cache = nullptr;
    std::optional<std::vector<Block>> blocks = match_stack(z, cache);
    if (!blocks || blocks->empty()) continue;
    // Each fold goes before its block's update, after the previous one: updates in order.
    bool ordered = true;
    for (size_t l = 1; l < blocks->size(); ++l)
      ordered = ordered && position[(*blocks)[l - 1].updated] < position[(*blocks)[l].updated];
    if (!ordered) continue;
    std::vector<Instruction*> dead = {z};
    Instruction* head = cache;
    for (const Block& block : *blocks) {
      for (Instruction* instruction : {block.written, block.updated, block.updated->operand(0)}) dead.push_back(instruction);
      dead.push_back(through_unit_reshape(block.updated->operand(0)));
      head = folder.fold(computation, head, block);
    }
    for (Instruction* written : z->operands()) dead.push_back(written);
    z->replace_all_uses_with(head);
    remove_dead(computation, std::move(dead));
    return true;
  }
  return false;
}

}  // namespace

StatusOr<bool> fold_slice_updates(Module& module) {
  Folder folder(module);
  bool changed = false;
  for (Computation* computation : module.computations())
    while (fold_one(*computation, folder)) changed = true;  // a fold removes instructions: scan again
  return changed;
}

}  // namespace insitu
