// Race analysis over index maps (race_check.h).
#include "insitu/kernel/race_check.h"

#include <map>

#include "insitu/kernel/grid_executor.h"
#include "insitu/support/str.h"

namespace insitu {
namespace {

std::string join_indices(std::span<const int64_t> values) {
  std::string text = "(";
  for (size_t i = 0; i < values.size(); ++i) text += (i ? ", " : "") + std::to_string(values[i]);
  return text + ")";
}

bool is_parallel(const KernelSpec& spec, size_t axis) {
  return !spec.dimension_semantics.empty() && spec.dimension_semantics[axis] == DimensionSemantics::kParallel;
}

// Two steps may run concurrently when they differ in a parallel axis.
bool concurrent(const KernelSpec& spec, const StepBlocks& a, const StepBlocks& b) {
  for (size_t d = 0; d < a.grid_index.size(); ++d)
    if (is_parallel(spec, d) && a.grid_index[d] != b.grid_index[d]) return true;
  return false;
}

bool overlaps(const BlockRegion& a, const BlockRegion& b) {
  for (size_t d = 0; d < a.start.size(); ++d) {
    if (a.extent[d] == 0 || b.extent[d] == 0) return false;
    if (a.start[d] + a.extent[d] <= b.start[d] || b.start[d] + b.extent[d] <= a.start[d]) return false;
  }
  return true;
}

// Up to two accesses of one region whose steps are pairwise concurrent (enough to find a pair
// that is concurrent with any third access if one exists).
struct Accesses {
  int64_t first = -1;
  int64_t second = -1;
};

void add_access(const KernelSpec& spec, std::span<const StepBlocks> steps, Accesses& accesses, int64_t step) {
  if (accesses.first < 0) {
    accesses.first = step;
  } else if (accesses.second < 0 && concurrent(spec, steps[accesses.first], steps[step])) {
    accesses.second = step;
  }
}

Status race_error(const KernelSpec& spec, const StepBlocks& writer, int64_t output, const StepBlocks& other,
                  bool other_writes, int64_t other_operand) {
  std::string what = other_writes
                         ? str_cat("writes output ", other_operand, " block ", join_indices(other.outputs[other_operand].block_index))
                         : str_cat("reads input ", other_operand, " block ", join_indices(other.inputs[other_operand].block_index),
                                   " (aliased to output ", output, ": one buffer)");
  return failed_precondition(str_cat(
      "kernel \"", spec.name, "\": grid steps ", join_indices(writer.grid_index), " and ", join_indices(other.grid_index),
      " race under parallel dimension semantics: step ", join_indices(writer.grid_index), " writes output ", output,
      " block ", join_indices(writer.outputs[output].block_index), " and step ", join_indices(other.grid_index), " ", what,
      "; mark the axis sequential or make each step write only blocks no other step touches"));
}

// The accesses of one buffer: writes through output `output`, reads through input `input`
// (-1: none).
Status check_buffer(const KernelSpec& spec, std::span<const StepBlocks> steps, int64_t output, int64_t input) {
  const int64_t count = static_cast<int64_t>(steps.size());
  if (count == 0) return ok_status();
  const bool same_blocking = input < 0 || (spec.in_specs[input].block_shape == spec.out_specs[output].block_shape);
  if (same_blocking) {
    // Equal block shapes: two blocks overlap exactly when they are the same block.
    std::map<std::vector<int64_t>, std::pair<Accesses, Accesses>> blocks;  // start -> (writes, reads)
    for (int64_t s = 0; s < count; ++s) {
      Accesses& writes = blocks[steps[s].outputs[output].start].first;
      if (writes.first >= 0 && concurrent(spec, steps[writes.first], steps[s]))
        return race_error(spec, steps[writes.first], output, steps[s], true, output);
      add_access(spec, steps, writes, s);
      if (input >= 0) add_access(spec, steps, blocks[steps[s].inputs[input].start].second, s);
    }
    if (input < 0) return ok_status();
    for (const auto& [start, accesses] : blocks) {
      for (int64_t w : {accesses.first.first, accesses.first.second}) {
        for (int64_t r : {accesses.second.first, accesses.second.second}) {
          if (w >= 0 && r >= 0 && concurrent(spec, steps[w], steps[r]))
            return race_error(spec, steps[w], output, steps[r], false, input);
        }
      }
    }
    return ok_status();
  }
  if (count > 4096) return ok_status();  // pairwise only for small grids; --check-races covers the rest
  for (int64_t a = 0; a < count; ++a) {
    for (int64_t b = 0; b < count; ++b) {
      if (a == b || !concurrent(spec, steps[a], steps[b])) continue;
      if (b > a && overlaps(steps[a].outputs[output], steps[b].outputs[output]))
        return race_error(spec, steps[a], output, steps[b], true, output);
      if (overlaps(steps[a].outputs[output], steps[b].inputs[input]))
        return race_error(spec, steps[a], output, steps[b], false, input);
    }
  }
  return ok_status();
}

}  // namespace

Status find_races(const KernelSpec& spec, std::span<const StepBlocks> steps) {
  bool any_parallel = false;
  for (size_t d = 0; d < spec.grid.size(); ++d) any_parallel |= is_parallel(spec, d);
  if (!any_parallel) return ok_status();
  for (size_t o = 0; o < spec.out_specs.size(); ++o) {
    int64_t input = -1;
    for (const auto& [i, aliased_output] : spec.input_output_aliases)
      if (aliased_output == static_cast<int64_t>(o)) input = i;
    INSITU_RETURN_IF_ERROR(check_buffer(spec, steps, static_cast<int64_t>(o), input));
  }
  return ok_status();
}

Status check_races_statically(const KernelSpec& spec, std::span<const std::vector<int64_t>> input_dimensions,
                              std::span<const std::vector<int64_t>> output_dimensions) {
  const int64_t count = grid_size(spec.grid);
  if (count > kMaxAnalysedSteps) return ok_status();
  bool any_parallel = false;
  for (size_t d = 0; d < spec.grid.size(); ++d) any_parallel |= is_parallel(spec, d);
  if (!any_parallel) return ok_status();
  std::vector<StepBlocks> steps(count);
  for (int64_t s = 0; s < count; ++s) {
    StepBlocks& step = steps[s];
    grid_index_of(spec.grid, s, step.grid_index);
    auto region_of = [&](const BlockSpec& block_spec, const std::vector<int64_t>& dimensions, BlockRegion& region) {
      std::vector<int64_t> block_index =
          block_spec.index_map ? block_spec.index_map(step.grid_index) : std::vector<int64_t>(dimensions.size(), 0);
      return block_region(spec, block_spec, dimensions, block_index, region);
    };
    step.inputs.resize(input_dimensions.size());
    step.outputs.resize(output_dimensions.size());
    for (size_t i = 0; i < input_dimensions.size(); ++i)
      INSITU_RETURN_IF_ERROR(region_of(spec.in_specs[i], input_dimensions[i], step.inputs[i]));
    for (size_t o = 0; o < output_dimensions.size(); ++o)
      INSITU_RETURN_IF_ERROR(region_of(spec.out_specs[o], output_dimensions[o], step.outputs[o]));
  }
  return find_races(spec, steps);
}

}  // namespace insitu
