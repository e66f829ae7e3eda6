// The Pallas-like custom-kernel API: a kernel body over typed block references plus a launch
// spec (grid, one BlockSpec per input and output, output shapes, input_output_aliases, scratch
// buffers, per-axis dimension semantics), as jax.experimental.pallas.pallas_call spells it.
//
// Execution model (grid_executor.h runs it):
// - The body runs once per grid index. Grid indices are visited in row-major order; sequential
//   axes run in order, parallel axes may run concurrently on a ThreadPool.
// - For each operand, the BlockSpec's index_map maps the grid index to *block* indices (Pallas'
//   Blocked mode): block b along dim d starts at element b * block_shape[d]. An empty
//   block_shape means the whole array; a null index_map means block index 0 in every dim.
// - A block is a zero-copy strided view into the operand or output buffer. A BlockSpec whose
//   memory_space is not 0 is staged: copied into a scratch block before the body runs and (for
//   outputs) back after it; staged bytes are counted.
// - Ragged edges: when an array dim is not a multiple of the block dim, the last block along that
//   dim is CLIPPED to the valid region: its BlockRef's shape() is the number of valid elements
//   (smaller than block_shape), so the body never sees padding (unlike Pallas, which pads with
//   unspecified values). Bodies that loop over ref.shape() handle edges for free. A block that
//   starts past the end of the array is a user error.
// - input_output_aliases {(i, o)}: input i and output o are ONE buffer. The input ref and output
//   ref of a grid step view the same memory; writes through the output are visible through the
//   input (and to other grid steps). Race analysis (race_check.h) rejects parallel grids in which
//   one step writes a block another step reads.
// - Scratch buffers (scratch_shapes) are zero-initialized once per worker and persist across the
//   grid steps that worker runs (all steps, single-threaded), like Pallas' VMEM scratch per core.
// - An aliased input/output pair whose BlockSpecs both ask for a staged memory space and pick
//   the same block share one scratch block, so the pair stays one buffer inside the step.
// - A body that misuses its blocks (asks for an input that is not there or of another element
//   type, indexes or slices past a block's shape) fails its grid step: the call returns an
//   error naming the kernel, the step and the misuse, and the process goes on.
#pragma once

#include <cstdint>
#include <exception>
#include <functional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "insitu/ir/shape.h"
#include "insitu/support/check.h"
#include "insitu/support/str.h"

namespace insitu {

// A kernel body's misuse of the block API. The accessors below throw it; the grid executor
// catches it around each grid step and returns it as that step's error Status, so it never
// leaves the kernel layer (the library's API throws nothing).
class KernelMisuse : public std::exception {
 public:
  explicit KernelMisuse(std::string message) : message_(std::move(message)) {}
  const char* what() const noexcept override { return message_.c_str(); }

 private:
  std::string message_;
};

template <typename... Args>
[[noreturn]] void kernel_misuse(const Args&... args) {
  throw KernelMisuse(str_cat(args...));
}

enum class DimensionSemantics { kParallel, kSequential };

struct BlockSpec {
  std::vector<int64_t> block_shape;  // empty: the whole array
  // Grid index -> block indices (one per array dim); null: all zeros.
  std::function<std::vector<int64_t>(std::span<const int64_t> grid_index)> index_map;
  int64_t memory_space = 0;  // not 0: the block is staged into a scratch copy
};

// A typed strided view of a block: data pointer, shape, element strides. Copyable, non-owning.
template <typename T>
class BlockRef {
 public:
  BlockRef() = default;
  BlockRef(T* data, std::vector<int64_t> shape, std::vector<int64_t> strides)
      : data_(data), shape_(std::move(shape)), strides_(std::move(strides)) {
    INSITU_CHECK(shape_.size() == strides_.size());
  }

  T* data() const { return data_; }
  const std::vector<int64_t>& shape() const { return shape_; }
  const std::vector<int64_t>& strides() const { return strides_; }  // in elements
  int64_t rank() const { return static_cast<int64_t>(shape_.size()); }
  int64_t dim(int64_t d) const { return shape_.at(d); }
  int64_t size() const {
    int64_t n = 1;
    for (int64_t extent : shape_) n *= extent;
    return n;
  }
  // Whether the elements are dense and row-major (data()[0, size()) is the whole block).
  bool is_contiguous() const {
    int64_t expected = 1;
    for (int64_t d = rank() - 1; d >= 0; --d) {
      if (shape_[d] != 1 && strides_[d] != expected) return false;
      expected *= shape_[d];
    }
    return true;
  }

  int64_t offset(std::span<const int64_t> index) const {
    if (static_cast<int64_t>(index.size()) != rank()) [[unlikely]]
      kernel_misuse("a block of rank ", rank(), " indexed with ", index.size(), " indices");
    int64_t at = 0;
    for (size_t d = 0; d < index.size(); ++d) {
      if (index[d] < 0 || index[d] >= shape_[d]) [[unlikely]]
        kernel_misuse("block index ", index[d], " is out of range in dim ", d, " (the block has ", shape_[d],
                      " elements there)");
      at += index[d] * strides_[d];
    }
    return at;
  }
  T load(std::span<const int64_t> index) const { return data_[offset(index)]; }
  void store(std::span<const int64_t> index, T value) const { data_[offset(index)] = value; }
  template <typename... I>
  T& operator()(I... index) const {
    const int64_t indices[] = {static_cast<int64_t>(index)...};
    return data_[offset(std::span<const int64_t>(indices, sizeof...(I)))];
  }
  // Rank-0 access.
  T& operator()() const {
    if (rank() != 0) [[unlikely]]
      kernel_misuse("ref() on a block of rank ", rank());
    return *data_;
  }

  // Elements [start, start + size) of dim `dim`, same rank.
  BlockRef slice(int64_t dim, int64_t start, int64_t size) const {
    if (dim < 0 || dim >= rank() || start < 0 || size < 0 || start + size > shape_[dim]) [[unlikely]]
      kernel_misuse("slice [", start, ", ", start + size, ") of dim ", dim, " is outside a block of rank ", rank(),
                    dim >= 0 && dim < rank() ? str_cat(" and ", shape_[dim], " elements there") : std::string());
    BlockRef result = *this;
    result.data_ = data_ + start * strides_[dim];
    result.shape_[dim] = size;
    return result;
  }

  // Calls fn(index) for every index in row-major order.
  template <typename Fn>
  void for_each_index(Fn&& fn) const {
    if (size() == 0) return;
    std::vector<int64_t> index(shape_.size(), 0);
    while (true) {
      fn(std::span<const int64_t>(index));
      int64_t d = rank() - 1;
      for (; d >= 0; --d) {
        if (++index[d] < shape_[d]) break;
        index[d] = 0;
      }
      if (d < 0) return;
    }
  }

 private:
  T* data_ = nullptr;
  std::vector<int64_t> shape_;
  std::vector<int64_t> strides_;
};

// An untyped block: what KernelRefs holds before the body asks for a type.
struct UntypedBlock {
  uint8_t* data = nullptr;
  PrimitiveType type = PrimitiveType::kInvalid;
  std::vector<int64_t> shape;
  std::vector<int64_t> strides;  // in elements
};

// The blocks of one grid step.
class KernelRefs {
 public:
  KernelRefs(std::vector<UntypedBlock> inputs, std::vector<UntypedBlock> outputs, std::vector<UntypedBlock> scratch)
      : inputs_(std::move(inputs)), outputs_(std::move(outputs)), scratch_(std::move(scratch)) {}

  template <typename T>
  BlockRef<T> input(int64_t i) const { return typed<T>(inputs_, i, "input"); }
  template <typename T>
  BlockRef<T> output(int64_t o) const { return typed<T>(outputs_, o, "output"); }
  template <typename T>
  BlockRef<T> scratch(int64_t s) const { return typed<T>(scratch_, s, "scratch"); }

  PrimitiveType input_type(int64_t i) const { return block(inputs_, i, "input").type; }
  PrimitiveType output_type(int64_t o) const { return block(outputs_, o, "output").type; }
  int64_t input_count() const { return static_cast<int64_t>(inputs_.size()); }
  int64_t output_count() const { return static_cast<int64_t>(outputs_.size()); }

 private:
  static const UntypedBlock& block(const std::vector<UntypedBlock>& blocks, int64_t i, const char* what) {
    if (i < 0 || i >= static_cast<int64_t>(blocks.size()))
      kernel_misuse("the body asked for ", what, " ", i, " but there are ", blocks.size());
    return blocks[i];
  }
  template <typename T>
  static BlockRef<T> typed(const std::vector<UntypedBlock>& blocks, int64_t i, const char* what) {
    const UntypedBlock& block = KernelRefs::block(blocks, i, what);
    if (block.type != kTypeOf<T>)
      kernel_misuse(what, " ", i, " is ", primitive_type_name(block.type), ", the body asked for ",
                    primitive_type_name(kTypeOf<T>));
    return BlockRef<T>(reinterpret_cast<T*>(block.data), block.shape, block.strides);
  }

  std::vector<UntypedBlock> inputs_;
  std::vector<UntypedBlock> outputs_;
  std::vector<UntypedBlock> scratch_;
};

class KernelContext {
 public:
  KernelContext(std::span<const int64_t> grid_index, std::span<const int64_t> grid)
      : grid_index_(grid_index), grid_(grid) {}
  int64_t program_id(int axis) const { return grid_index_[axis]; }
  int64_t num_programs(int axis) const { return grid_[axis]; }
  std::span<const int64_t> grid_index() const { return grid_index_; }

 private:
  std::span<const int64_t> grid_index_;
  std::span<const int64_t> grid_;
};

struct KernelSpec {
  std::string name;
  std::vector<int64_t> grid;  // empty: one step
  std::vector<BlockSpec> in_specs, out_specs;
  // The outputs' shapes. Empty: taken from the call site (a shape-polymorphic kernel).
  std::vector<Shape> out_shapes;
  std::vector<std::pair<int64_t, int64_t>> input_output_aliases;  // (input, output) as Pallas
  std::vector<Shape> scratch_shapes;
  std::vector<DimensionSemantics> dimension_semantics;  // one per grid axis; empty: all sequential (Pallas' default)
  std::function<void(const KernelContext&, KernelRefs&)> body;
  // Optional: the same kernel for a CUDA device. `cuda_source` (CUDA C++) defines the
  // __device__ function `cuda_function`, called for every grid step by a team of
  // insitu_team::lanes threads (128) as
  //   cuda_function(insitu_team team, insitu_block<const T> input..., insitu_block<T> output...)
  // (a template over the element types, or typed for the ones it takes). A block is a strided
  // view of its array (data, rank, shape, stride; clipped at ragged edges like a BlockRef); the
  // team's threads share the step's work (lane, lanes) and do not synchronize. An aliased input
  // and output are one device pointer. Every grid axis must be parallel (steps run at once),
  // with no scratch and no staged blocks (cuda/ refuses the call otherwise, naming why).
  std::string cuda_source;
  std::string cuda_function;
  // Optional: specializes a copy of the spec to a call's operand and result shapes before it
  // runs (fills grid, block shapes, out_shapes), for kernels that accept many shapes/dtypes.
  std::function<void(std::span<const Shape> operand_shapes, std::span<const Shape> result_shapes, KernelSpec& spec)>
      specialize;
};

}  // namespace insitu
