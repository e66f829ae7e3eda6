// slice-update-folding (slice_update_folding.h).
#include "insitu/passes/slice_update_folding.h"

#include <algorithm>
#include <optional>

#include "insitu/passes/name_table.h"
#include "insitu/passes/simplify.h"

namespace insitu {
namespace {

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

// A reshape that only adds or drops dimensions of size 1 (of row-major arrays): the operand;
// anything else: itself.
Instruction* through_unit_reshape(Instruction* instruction) {
  if (instruction->opcode() != Opcode::kReshape || instruction->operand_count() != 1) return instruction;
  const Shape& to = instruction->shape();
  const Shape& from = instruction->operand(0)->shape();
  if (!is_row_major(to) || !is_row_major(from) || to.element_type() != from.element_type() ||
      non_unit_dimensions(to.dimensions()) != non_unit_dimensions(from.dimensions()))
    return instruction;
  return instruction->operand(0);
}

bool has_control_edges(const Instruction* instruction) {
  return !instruction->control_predecessors().empty() || !instruction->control_successors().empty();
}

// Whether two scalar instructions compute the same value: the same instruction, or the same
// opcode, shape and attributes (metadata aside) over operands that compute the same values.
bool same_value(const Instruction* a, const Instruction* b, int depth = 0) {
  if (a == b) return true;
  if (depth > 8 || a->opcode() != b->opcode() || !(a->shape() == b->shape()) || !a->shape().is_array() ||
      a->shape().rank() != 0 || a->operand_count() != b->operand_count() || a->opcode() == Opcode::kParameter ||
      !a->called_computations().empty() || !b->called_computations().empty() || has_side_effect(*a) ||
      has_control_edges(a) || has_control_edges(b))
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

// The instructions of one match (see the header's names).
struct Match {
  Instruction* z;        // the write-back
  Instruction* cache;    // what is updated
  Instruction* read;     // %d: the block read out (dynamic-slice)
  Instruction* updated;  // %y: the block updated
  Instruction* written;  // %r: what %z writes back (%y or a reshape of it)
};

std::optional<Match> match(Instruction* z) {
  if (z->opcode() != Opcode::kDynamicUpdateSlice || z->operand_count() < 2 || has_control_edges(z)) return std::nullopt;
  Match m{z, z->operand(0), nullptr, nullptr, z->operand(1)};
  const Shape& cache = m.cache->shape();
  if (!is_row_major(cache) || z->operand_count() != 2 + cache.rank()) return std::nullopt;
  m.updated = through_unit_reshape(m.written);
  if (m.updated->opcode() != Opcode::kDynamicUpdateSlice || m.updated->operand_count() < 2 ||
      has_control_edges(m.updated))
    return std::nullopt;
  m.read = through_unit_reshape(m.updated->operand(0));
  if (m.read->opcode() != Opcode::kDynamicSlice || m.read->operand(0) != m.cache ||
      m.read->operand_count() != 1 + cache.rank() || m.read->dynamic_slice_sizes != m.written->shape().dimensions())
    return std::nullopt;
  if (m.written != m.updated && m.written->users().size() != 1) return std::nullopt;  // %r read elsewhere too
  for (int64_t d = 0; d < cache.rank(); ++d)
    if (!same_value(m.read->operand(1 + d), z->operand(2 + d))) return std::nullopt;
  // One index type for all starts (XLA requires it of each instruction; the sums mix both).
  const PrimitiveType index_type = m.read->operand(1)->shape().element_type();
  for (int64_t i = 2; i < m.updated->operand_count(); ++i)
    if (m.updated->operand(i)->shape().element_type() != index_type) return std::nullopt;
  if (m.updated->operand_count() != 2 + m.updated->shape().rank()) return std::nullopt;
  return m;
}

class Folder {
 public:
  explicit Folder(const Module& module) : names_(module) {}

  // Rewrites one match; returns the instructions that may now be dead.
  std::vector<Instruction*> fold(Computation& computation, const Match& m) {
    constants_.clear();
    Instruction* before = m.updated;  // every operand used below is defined before %y
    const Shape& cache = m.cache->shape();
    const Instruction& inner = *m.updated;
    const Shape& block = inner.shape();                  // %x and %y
    const Shape& update = inner.operand(1)->shape();     // %kv
    const PrimitiveType index_type = m.read->operand(1)->shape().element_type();
    // Which block dimension each cache dimension of size > 1 in the read corresponds to.
    std::vector<int64_t> block_of(cache.rank(), -1);
    std::vector<int64_t> block_dims;
    for (int64_t e = 0; e < block.rank(); ++e)
      if (block.dimension(e) != 1) block_dims.push_back(e);
    size_t next = 0;
    for (int64_t d = 0; d < cache.rank(); ++d)
      if (m.read->dynamic_slice_sizes[d] != 1) block_of[d] = block_dims[next++];
    // Starts: the read's, clamped as XLA clamps them, plus the inner update's, clamped likewise.
    std::vector<Instruction*> read_starts, starts;
    std::vector<int64_t> update_dims;
    for (int64_t d = 0; d < cache.rank(); ++d) {
      Instruction* start = clamped(computation, before, m.read->operand(1 + d), index_type,
                                   cache.dimension(d) - m.read->dynamic_slice_sizes[d]);
      read_starts.push_back(start);
      const int64_t e = block_of[d];
      update_dims.push_back(e < 0 ? 1 : update.dimension(e));
      if (e >= 0) {
        Instruction* inner_start = clamped(computation, before, inner.operand(2 + e), index_type,
                                           block.dimension(e) - update.dimension(e));
        if (inner_start->opcode() != Opcode::kConstant || !is_zero(*inner_start))
          start = add(computation, before, Opcode::kAdd, "folded_start", Shape::scalar(index_type), {start, inner_start});
      }
      starts.push_back(start);
    }
    Instruction* kv = inner.operand(1);
    if (kv->shape().dimensions() != update_dims)
      kv = add(computation, before, Opcode::kReshape, "folded_update", Shape::array(update.element_type(), update_dims),
               {kv});
    std::vector<Instruction*> operands = {m.cache, kv};
    operands.insert(operands.end(), starts.begin(), starts.end());
    Instruction* folded = add(computation, before, Opcode::kDynamicUpdateSlice, "folded_update_slice", m.z->shape(),
                              operands);
    folded->metadata = m.z->metadata;
    folded->has_metadata = m.z->has_metadata;
    // %y's other readers read the block out of the updated array.
    std::vector<Instruction*> readers;
    for (Instruction* user : m.updated->users())
      if (user != m.written && user != m.z) readers.push_back(user);
    const bool root = computation.root() == m.updated;
    if (!readers.empty() || root) {
      std::vector<Instruction*> slice_operands = {folded};
      slice_operands.insert(slice_operands.end(), read_starts.begin(), read_starts.end());
      Instruction* slice = add(computation, before, Opcode::kDynamicSlice, "folded_block",
                               Shape::array(block.element_type(), m.read->dynamic_slice_sizes), slice_operands);
      slice->dynamic_slice_sizes = m.read->dynamic_slice_sizes;
      Instruction* block_value = slice;
      if (!(slice->shape() == block))
        block_value = add(computation, before, Opcode::kReshape, "folded_block", block, {slice});
      for (Instruction* reader : readers)
        for (int64_t i = 0; i < reader->operand_count(); ++i)
          if (reader->operand(i) == m.updated) reader->replace_operand(i, block_value);
      if (root) computation.set_root(block_value);
    }
    m.z->replace_all_uses_with(folded);
    return {m.z, m.written, m.updated, m.updated->operand(0), m.read};
  }

 private:
  static bool is_zero(const Instruction& constant) { return constant.literal.get_integer(0) == 0; }

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

  // clamp(0, start, limit); the constant 0 when limit is 0.
  Instruction* clamped(Computation& computation, Instruction* before, Instruction* start, PrimitiveType type,
                       int64_t limit) {
    Instruction* zero = constant(computation, before, type, 0);
    if (limit <= 0) return zero;
    return add(computation, before, Opcode::kClamp, "folded_clamp", Shape::scalar(type),
               {zero, start, constant(computation, before, type, limit)});
  }

  Instruction* add(Computation& computation, Instruction* before, Opcode opcode, const std::string& base, Shape shape,
                   std::vector<Instruction*> operands) {
    auto instruction = std::make_unique<Instruction>(opcode, names_.unique(base), std::move(shape));
    instruction->set_location(before->location());
    for (Instruction* operand : operands) instruction->append_operand(operand);
    return computation.insert_instruction_before(std::move(instruction), before);
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
        instruction->opcode() == Opcode::kParameter || has_side_effect(*instruction) || has_control_edges(instruction))
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

}  // namespace

StatusOr<bool> fold_slice_updates(Module& module) {
  Folder folder(module);
  bool changed = false;
  for (Computation* computation : module.computations()) {
    // One fold at a time: a fold removes instructions, so the scan starts over after each.
    for (bool folded = true; folded;) {
      folded = false;
      for (Instruction* instruction : computation->instructions()) {
        if (std::optional<Match> m = match(instruction)) {
          remove_dead(*computation, folder.fold(*computation, *m));
          changed = folded = true;
          break;
        }
      }
    }
  }
  return changed;
}

}  // namespace insitu
