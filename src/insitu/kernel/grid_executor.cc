// Grid execution over caller buffers (grid_executor.h).
#include "insitu/kernel/grid_executor.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <mutex>

#include "insitu/support/str.h"

namespace insitu {
namespace {

std::atomic<bool> g_check_races{false};

std::string join_indices(std::span<const int64_t> values) {
  std::string text = "(";
  for (size_t i = 0; i < values.size(); ++i) text += (i ? ", " : "") + std::to_string(values[i]);
  return text + ")";
}

std::vector<int64_t> row_major_strides(std::span<const int64_t> dimensions) {
  std::vector<int64_t> strides(dimensions.size(), 1);
  for (int64_t d = static_cast<int64_t>(dimensions.size()) - 2; d >= 0; --d)
    strides[d] = strides[d + 1] * dimensions[d + 1];
  return strides;
}

// Copies a strided region to/from a dense row-major buffer, row by row.
void copy_region(uint8_t* strided, std::span<const int64_t> strides, std::span<const int64_t> extent,
                 uint8_t* dense, int64_t width, bool to_dense) {
  int64_t count = 1;
  for (int64_t e : extent) count *= e;
  if (count == 0) return;
  const int64_t rank = static_cast<int64_t>(extent.size());
  const int64_t row = rank == 0 ? 1 : extent[rank - 1];
  const bool contiguous_rows = rank == 0 || strides[rank - 1] == 1;
  std::vector<int64_t> index(rank, 0);
  for (int64_t done = 0; done < count; done += row) {
    int64_t offset = 0;
    for (int64_t d = 0; d < rank; ++d) offset += index[d] * strides[d];
    uint8_t* source = strided + offset * width;
    uint8_t* target = dense + done * width;
    if (contiguous_rows) {
      to_dense ? std::memcpy(target, source, row * width) : std::memcpy(source, target, row * width);
    } else {
      for (int64_t k = 0; k < row; ++k) {
        uint8_t* element = source + k * strides[rank - 1] * width;
        to_dense ? std::memcpy(target + k * width, element, width) : std::memcpy(element, target + k * width, width);
      }
    }
    for (int64_t d = rank - 2; d >= 0; --d) {
      if (++index[d] < extent[d]) break;
      index[d] = 0;
    }
  }
}

struct StagedBlock {
  std::vector<uint8_t> bytes;
  uint8_t* origin = nullptr;  // where the block lives in the buffer
  std::vector<int64_t> strides;
  std::vector<int64_t> extent;
  int64_t width = 0;
};

// One worker's state: its scratch buffers, persisting across the steps it runs.
struct Worker {
  std::vector<std::vector<uint8_t>> scratch;
};

class GridRun {
 public:
  GridRun(const KernelSpec& spec, std::span<const GridOperand> inputs, std::span<const GridOperand> outputs,
          const GridOptions& options)
      : spec_(spec), inputs_(inputs), outputs_(outputs), options_(options) {}

  Status run(GridStats& stats) {
    const int64_t steps = grid_size(spec_.grid);
    if (options_.record_races) recorded_.resize(steps);
    const int64_t rank = static_cast<int64_t>(spec_.grid.size());
    int64_t first_parallel = rank, end_parallel = rank;
    for (int64_t d = 0; d < rank; ++d) {
      if (semantics(d) == DimensionSemantics::kParallel) {
        first_parallel = d;
        end_parallel = d;
        while (end_parallel < rank && semantics(end_parallel) == DimensionSemantics::kParallel) ++end_parallel;
        break;
      }
    }
    const bool threaded = options_.pool != nullptr && options_.pool->thread_count() > 1 && first_parallel < rank;
    if (!threaded) {
      Worker worker = make_worker();
      for (int64_t step = 0; step < steps && status_ok(); ++step) record(run_step(step, worker));
    } else {
      const int64_t outer = grid_size(std::span(spec_.grid).subspan(0, first_parallel));
      const int64_t parallel = grid_size(std::span(spec_.grid).subspan(first_parallel, end_parallel - first_parallel));
      const int64_t inner = grid_size(std::span(spec_.grid).subspan(end_parallel));
      for (int64_t o = 0; o < outer && status_ok(); ++o) {
        options_.pool->parallel_for(parallel, [&](int64_t begin, int64_t end) {
          Worker worker = make_worker();
          for (int64_t p = begin; p < end; ++p)
            for (int64_t i = 0; i < inner; ++i) {
              if (!status_ok()) return;
              record(run_step((o * parallel + p) * inner + i, worker));
            }
        });
      }
    }
    stats.staged_bytes += staged_bytes_.load();
    stats.steps += steps;
    if (!first_error_.ok()) return first_error_;
    if (options_.record_races) return find_races(spec_, recorded_);
    return ok_status();
  }

 private:
  DimensionSemantics semantics(int64_t axis) const {
    return spec_.dimension_semantics.empty() ? DimensionSemantics::kSequential : spec_.dimension_semantics[axis];
  }
  bool status_ok() {
    std::lock_guard<std::mutex> lock(mutex_);
    return first_error_.ok();
  }
  void record(Status status) {
    if (status.ok()) return;
    std::lock_guard<std::mutex> lock(mutex_);
    if (first_error_.ok()) first_error_ = std::move(status);
  }
  Worker make_worker() const {
    Worker worker;
    for (const Shape& shape : spec_.scratch_shapes) worker.scratch.emplace_back(shape.byte_size(), 0);
    return worker;
  }

  // The block of `operand` for this step: a view, or a staged copy.
  Status make_block(const BlockSpec& block_spec, const GridOperand& operand, std::span<const int64_t> grid_index,
                    BlockRegion& region, UntypedBlock& block) {
    std::vector<int64_t> block_index = block_spec.index_map ? block_spec.index_map(grid_index)
                                                            : std::vector<int64_t>(operand.dimensions.size(), 0);
    INSITU_RETURN_IF_ERROR(block_region(spec_, block_spec, operand.dimensions, block_index, region));
    const std::vector<int64_t> strides = row_major_strides(operand.dimensions);
    int64_t offset = 0;
    for (size_t d = 0; d < strides.size(); ++d) offset += region.start[d] * strides[d];
    block.data = operand.data + offset * byte_width(operand.type);
    block.type = operand.type;
    block.shape = region.extent;
    block.strides = strides;
    return ok_status();
  }

  void stage(UntypedBlock& block, std::vector<StagedBlock>& staged) {
    for (StagedBlock& existing : staged) {  // an aliased pair on the same block shares its copy
      if (existing.origin == block.data && existing.extent == block.shape && existing.strides == block.strides) {
        block.data = existing.bytes.data();
        block.strides = row_major_strides(block.shape);
        return;
      }
    }
    const int64_t width = byte_width(block.type);
    int64_t count = 1;
    for (int64_t e : block.shape) count *= e;
    StagedBlock copy{std::vector<uint8_t>(count * width), block.data, block.strides, block.shape, width};
    copy_region(block.data, block.strides, block.shape, copy.bytes.data(), width, /*to_dense=*/true);
    staged_bytes_ += count * width;
    block.data = copy.bytes.data();
    block.strides = row_major_strides(block.shape);
    staged.push_back(std::move(copy));
  }

  Status run_step(int64_t step, Worker& worker) {
    std::vector<int64_t> grid_index;
    grid_index_of(spec_.grid, step, grid_index);
    StepBlocks blocks;
    blocks.inputs.resize(inputs_.size());
    blocks.outputs.resize(outputs_.size());
    std::vector<UntypedBlock> in(inputs_.size()), out(outputs_.size());
    for (size_t i = 0; i < inputs_.size(); ++i)
      INSITU_RETURN_IF_ERROR(make_block(spec_.in_specs[i], inputs_[i], grid_index, blocks.inputs[i], in[i]));
    for (size_t o = 0; o < outputs_.size(); ++o)
      INSITU_RETURN_IF_ERROR(make_block(spec_.out_specs[o], outputs_[o], grid_index, blocks.outputs[o], out[o]));
    // Outputs first, so that an aliased staged input reuses its output's copy.
    std::vector<StagedBlock> staged_outputs, staged_inputs;
    for (size_t o = 0; o < outputs_.size(); ++o)
      if (spec_.out_specs[o].memory_space != 0) stage(out[o], staged_outputs);
    for (size_t i = 0; i < inputs_.size(); ++i) {
      if (spec_.in_specs[i].memory_space == 0) continue;
      std::vector<StagedBlock>* pool = &staged_inputs;
      for (const StagedBlock& s : staged_outputs)
        if (s.origin == in[i].data) pool = &staged_outputs;
      stage(in[i], *pool);
    }
    std::vector<UntypedBlock> scratch;
    for (size_t s = 0; s < spec_.scratch_shapes.size(); ++s) {
      const Shape& shape = spec_.scratch_shapes[s];
      scratch.push_back(UntypedBlock{worker.scratch[s].data(), shape.element_type(), shape.dimensions(),
                                     row_major_strides(shape.dimensions())});
    }
    KernelRefs refs(std::move(in), std::move(out), std::move(scratch));
    KernelContext context(grid_index, spec_.grid);
    try {
      spec_.body(context, refs);
    } catch (const KernelMisuse& misuse) {
      return invalid_argument(str_cat("kernel \"", spec_.name, "\", grid step ", join_indices(grid_index), ": ",
                                      misuse.what()));
    }
    for (StagedBlock& s : staged_outputs) {  // write staged outputs back
      copy_region(s.origin, s.strides, s.extent, s.bytes.data(), s.width, /*to_dense=*/false);
      staged_bytes_ += static_cast<int64_t>(s.bytes.size());
    }
    if (options_.record_races) {
      blocks.grid_index = std::move(grid_index);
      recorded_[step] = std::move(blocks);
    }
    return ok_status();
  }

  const KernelSpec& spec_;
  std::span<const GridOperand> inputs_;
  std::span<const GridOperand> outputs_;
  const GridOptions& options_;
  std::mutex mutex_;
  Status first_error_;
  std::atomic<int64_t> staged_bytes_{0};
  std::vector<StepBlocks> recorded_;
};

}  // namespace

int64_t grid_size(std::span<const int64_t> grid) {
  int64_t n = 1;
  for (int64_t extent : grid) n *= extent;
  return n;
}

void grid_index_of(std::span<const int64_t> grid, int64_t step, std::vector<int64_t>& index) {
  index.assign(grid.size(), 0);
  for (int64_t d = static_cast<int64_t>(grid.size()) - 1; d >= 0; --d) {
    index[d] = step % grid[d];
    step /= grid[d];
  }
}

Status block_region(const KernelSpec& spec, const BlockSpec& block_spec, std::span<const int64_t> dimensions,
                    std::span<const int64_t> block_index, BlockRegion& region) {
  const size_t rank = dimensions.size();
  if (block_index.size() != rank)
    return invalid_argument(str_cat("kernel \"", spec.name, "\": an index_map returned ", block_index.size(),
                                    " block indices for an array of rank ", rank));
  region.block_index.assign(block_index.begin(), block_index.end());
  region.start.resize(rank);
  region.extent.resize(rank);
  for (size_t d = 0; d < rank; ++d) {
    const int64_t block = block_spec.block_shape.empty() ? dimensions[d] : block_spec.block_shape[d];
    const int64_t start = block_index[d] * block;
    if (block_index[d] < 0 || (start >= dimensions[d] && dimensions[d] > 0) || (dimensions[d] == 0 && block_index[d]))
      return invalid_argument(str_cat("kernel \"", spec.name, "\": block ", join_indices(block_index),
                                      " starts outside the array in dim ", d, " (block size ", block, ", dim ",
                                      dimensions[d], "); fix the index_map or the grid"));
    region.start[d] = start;
    region.extent[d] = std::min(block, dimensions[d] - start);  // ragged edge: clipped
  }
  return ok_status();
}

Status check_kernel_call(const KernelSpec& spec, std::span<const GridOperand> inputs,
                         std::span<const GridOperand> outputs) {
  const std::string kernel = str_cat("kernel \"", spec.name, "\"");
  if (inputs.size() != spec.in_specs.size())
    return invalid_argument(str_cat(kernel, " takes ", spec.in_specs.size(), " inputs (one per in_spec), the call passes ",
                                    inputs.size()));
  if (outputs.size() != spec.out_specs.size())
    return invalid_argument(str_cat(kernel, " has ", spec.out_specs.size(), " outputs (one per out_spec), the call has ",
                                    outputs.size()));
  auto check_block = [&](const BlockSpec& block_spec, const GridOperand& operand, const char* what,
                         size_t i) -> Status {
    if (!block_spec.block_shape.empty() && block_spec.block_shape.size() != operand.dimensions.size())
      return invalid_argument(str_cat(kernel, ": ", what, " ", i, " has rank ", operand.dimensions.size(),
                                      " but its BlockSpec's block_shape has rank ", block_spec.block_shape.size()));
    for (int64_t b : block_spec.block_shape)
      if (b <= 0) return invalid_argument(str_cat(kernel, ": ", what, " ", i, " has a block dimension ", b, " <= 0"));
    return ok_status();
  };
  for (size_t i = 0; i < inputs.size(); ++i) INSITU_RETURN_IF_ERROR(check_block(spec.in_specs[i], inputs[i], "input", i));
  for (size_t o = 0; o < outputs.size(); ++o) {
    INSITU_RETURN_IF_ERROR(check_block(spec.out_specs[o], outputs[o], "output", o));
    if (!spec.out_shapes.empty()) {
      const Shape& declared = spec.out_shapes[o];
      if (declared.element_type() != outputs[o].type || declared.dimensions() != outputs[o].dimensions)
        return invalid_argument(str_cat(kernel, ": output ", o, " is declared ", declared.to_string(false),
                                        " but the call's result is ",
                                        Shape::array(outputs[o].type, outputs[o].dimensions).to_string(false)));
    }
  }
  for (const auto& [i, o] : spec.input_output_aliases) {
    const GridOperand& input = inputs[i];
    const GridOperand& output = outputs[o];
    if (input.type != output.type || input.dimensions != output.dimensions)
      return invalid_argument(str_cat(kernel, ": input ", i, " (", Shape::array(input.type, input.dimensions).to_string(false),
                                      ") is aliased to output ", o, " (",
                                      Shape::array(output.type, output.dimensions).to_string(false),
                                      "); aliased operands need identical shape and dtype"));
  }
  return ok_status();
}

Status run_grid(const KernelSpec& spec, std::span<const GridOperand> inputs, std::span<const GridOperand> outputs,
                const GridOptions& options, GridStats& stats) {
  if (!options.call_checked) INSITU_RETURN_IF_ERROR(check_kernel_call(spec, inputs, outputs));
  for (const auto& [i, o] : spec.input_output_aliases)
    INSITU_CHECK(inputs[i].data == outputs[o].data) << "aliased input " << i << " and output " << o
                                                   << " of kernel " << spec.name << " are not one buffer";
  if (!spec.body) return invalid_argument(str_cat("kernel \"", spec.name, "\" has no body"));
  GridRun run(spec, inputs, outputs, options);
  return run.run(stats);
}

void set_check_races(bool enabled) { g_check_races = enabled; }
bool check_races_enabled() { return g_check_races; }

}  // namespace insitu
