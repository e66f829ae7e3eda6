// Evaluator and runtime bindings of registered kernels (bindings.h).
#include "insitu/kernel/bindings.h"

#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <set>

#include "insitu/kernel/registry.h"
#include "insitu/support/str.h"

namespace insitu {
namespace {

// Whether the call aliases output `output` (of `output_count`) to operand `operand`.
bool module_aliases(const Instruction& call, int64_t output, int64_t output_count, int64_t operand) {
  const bool tuple_result = call.shape().is_tuple();
  for (const OutputOperandAlias& alias : call.custom_call.output_to_operand_aliasing) {
    if (alias.operand_number != operand || !alias.operand_index.empty()) continue;
    if (tuple_result ? (alias.output_index.size() == 1 && alias.output_index[0] == output)
                     : (alias.output_index.empty() && output == 0 && output_count == 1))
      return true;
  }
  return false;
}

std::string shapes_key(const KernelSpec& spec, std::span<const GridOperand> inputs, std::span<const GridOperand> outputs) {
  std::string key = spec.name;
  for (const auto* side : {&inputs, &outputs}) {
    key += "|";
    for (const GridOperand& operand : *side) key += Shape::array(operand.type, operand.dimensions).to_string(false);
  }
  return key;
}

Status kernel_error(const Instruction& call, const Status& status) {
  return Status(status.code(), str_cat("custom-call %", call.name(), ": ", status.message()), call.location());
}

GridOperand grid_operand(uint8_t* data, const Shape& shape) {
  return GridOperand{data, shape.element_type(), shape.dimensions()};
}

// The per-call part of a native kernel prepared for its call site (shapes checked at create).
PreparedCustomCall make_prepared_run(std::shared_ptr<const KernelSpec> prepared) {
  return [prepared](const Instruction& call, std::span<const ArrayView> operands, std::span<const ArrayView> outputs,
                    ThreadPool& pool, ExecutionStats& stats) -> Status {
    const KernelSpec& kernel = *prepared;
    std::vector<GridOperand> inputs, results;
    for (const ArrayView& operand : operands) inputs.push_back(grid_operand(operand.data, *operand.shape));
    for (const ArrayView& output : outputs) results.push_back(grid_operand(output.data, *output.shape));
    std::vector<bool> kernel_aliased(inputs.size(), false);
    for (const auto& [i, o] : kernel.input_output_aliases) {
      kernel_aliased[i] = true;
      if (results[o].data != inputs[i].data) {
        // Not aliased by the call: the output starts as a copy of the operand (counted).
        const int64_t bytes = outputs[o].byte_size();
        copy_bytes_parallel(pool, results[o].data, inputs[i].data, bytes);
        stats.bytes_copied += bytes;
        ++stats.copies_executed;
      }
      inputs[i].data = results[o].data;  // one buffer
    }
    // An input sharing memory with an output the kernel does not alias it to is set aside.
    std::vector<std::vector<uint8_t>> set_aside;
    for (size_t i = 0; i < inputs.size(); ++i) {
      if (kernel_aliased[i]) continue;
      const int64_t bytes = operands[i].byte_size();
      for (size_t o = 0; o < results.size(); ++o) {
        const uint8_t* begin = results[o].data;
        if (inputs[i].data < begin + outputs[o].byte_size() && begin < inputs[i].data + bytes) {
          set_aside.emplace_back(inputs[i].data, inputs[i].data + bytes);
          inputs[i].data = set_aside.back().data();
          stats.bytes_copied += bytes;
          ++stats.copies_executed;
          break;
        }
      }
    }
    GridOptions options;
    options.pool = &pool;
    options.record_races = check_races_enabled();
    options.call_checked = true;  // prepare_kernel_call checked these shapes at create
    GridStats grid_stats;
    Status status = run_grid(kernel, inputs, results, options, grid_stats);
    stats.bytes_copied += grid_stats.staged_bytes;
    return status.ok() ? status : kernel_error(call, status);
  };
}

}  // namespace

StatusOr<std::shared_ptr<const KernelSpec>> prepare_kernel_call(const std::shared_ptr<const KernelSpec>& spec,
                                                               std::span<const GridOperand> inputs,
                                                               std::span<const GridOperand> outputs) {
  std::shared_ptr<const KernelSpec> prepared = spec;
  if (spec->specialize) {
    auto copy = std::make_shared<KernelSpec>(*spec);
    std::vector<Shape> operand_shapes, result_shapes;
    for (const GridOperand& input : inputs) operand_shapes.push_back(Shape::array(input.type, input.dimensions));
    for (const GridOperand& output : outputs) result_shapes.push_back(Shape::array(output.type, output.dimensions));
    spec->specialize(operand_shapes, result_shapes, *copy);
    copy->specialize = nullptr;
    INSITU_RETURN_IF_ERROR(validate_kernel_spec(*copy));
    prepared = std::move(copy);
  }
  INSITU_RETURN_IF_ERROR(check_kernel_call(*prepared, inputs, outputs));
  // The static race check, once per kernel spec and shapes (failures are not cached: they
  // recur). Per spec object, not per name: two tables may hold different kernels of one name.
  // (A weak_ptr key keeps the spec's control block, so its address is not reused while held.)
  static std::mutex mutex;
  static std::map<std::weak_ptr<const KernelSpec>, std::set<std::string>, std::owner_less<>> checked;
  const std::string key = shapes_key(*prepared, inputs, outputs);
  {
    std::lock_guard<std::mutex> lock(mutex);
    auto found = checked.find(spec);
    if (found != checked.end() && found->second.count(key)) return prepared;
  }
  std::vector<std::vector<int64_t>> input_dimensions, output_dimensions;
  for (const GridOperand& input : inputs) input_dimensions.push_back(input.dimensions);
  for (const GridOperand& output : outputs) output_dimensions.push_back(output.dimensions);
  INSITU_RETURN_IF_ERROR(check_races_statically(*prepared, input_dimensions, output_dimensions));
  std::lock_guard<std::mutex> lock(mutex);
  checked[spec].insert(key);
  return prepared;
}

EvaluateCustomCall make_evaluator_kernel(std::shared_ptr<const KernelSpec> spec) {
  return [spec](const Instruction& call, std::span<const Literal* const> operands, Literal& result) -> Status {
    std::vector<Literal*> results;
    if (result.shape().is_tuple()) {
      for (Literal& element : result.elements()) results.push_back(&element);
    } else {
      results.push_back(&result);
    }
    std::vector<GridOperand> inputs, outputs;
    for (const Literal* operand : operands) {
      if (!operand->shape().is_array())
        return invalid_argument(str_cat("custom-call %", call.name(), ": kernel \"", spec->name,
                                        "\" takes array operands, not ", operand->shape().to_string(false)),
                                call.location());
      inputs.push_back(grid_operand(const_cast<uint8_t*>(operand->untyped_data()), operand->shape()));
    }
    for (Literal* output : results) {
      if (!output->shape().is_array())
        return invalid_argument(str_cat("custom-call %", call.name(), ": kernel \"", spec->name,
                                        "\" produces arrays, not ", output->shape().to_string(false)),
                                call.location());
      outputs.push_back(grid_operand(output->untyped_data(), output->shape()));
    }
    StatusOr<std::shared_ptr<const KernelSpec>> prepared = prepare_kernel_call(spec, inputs, outputs);
    if (!prepared.ok()) return kernel_error(call, prepared.status());
    const int64_t output_count = static_cast<int64_t>(outputs.size());
    for (const auto& [i, o] : (*prepared)->input_output_aliases) {
      // Aliased by the call: the evaluator already put the operand's value there.
      if (!module_aliases(call, o, output_count, i))
        std::memcpy(outputs[o].data, inputs[i].data, results[o]->size_bytes());
      inputs[i].data = outputs[o].data;  // one buffer
    }
    GridOptions options;
    options.record_races = check_races_enabled();
    GridStats stats;
    Status status = run_grid(**prepared, inputs, outputs, options, stats);
    return status.ok() ? status : kernel_error(call, status);
  };
}

decltype(KernelGridPart::plan) make_kernel_grid_layout(std::shared_ptr<const KernelSpec> spec) {
  return [spec](const Instruction& call, std::span<const Shape* const> operand_shapes,
                std::span<const Shape* const> output_shapes) -> StatusOr<KernelGridLayout> {
    auto refuse = [&](const std::string& why) {
      return Status(StatusCode::kUnimplemented, str_cat("custom-call %", call.name(), ": kernel \"", spec->name, "\" ",
                                                        why, " (it runs on the CPU)"),
                    call.location());
    };
    if (spec->cuda_source.empty() || spec->cuda_function.empty()) return refuse("has no CUDA body");
    std::vector<GridOperand> inputs, outputs;
    for (const Shape* shape : operand_shapes) inputs.push_back(grid_operand(nullptr, *shape));
    for (const Shape* shape : output_shapes) outputs.push_back(grid_operand(nullptr, *shape));
    StatusOr<std::shared_ptr<const KernelSpec>> prepared = prepare_kernel_call(spec, inputs, outputs);
    if (!prepared.ok()) return kernel_error(call, prepared.status());
    const KernelSpec& kernel = **prepared;
    for (size_t d = 0; d < kernel.grid.size(); ++d)
      if (kernel.grid[d] > 1 && (kernel.dimension_semantics.size() != kernel.grid.size() ||
                                 kernel.dimension_semantics[d] != DimensionSemantics::kParallel))
        return refuse(str_cat("has a sequential grid axis ", d, ": a CUDA grid runs every step at once"));
    if (!kernel.scratch_shapes.empty()) return refuse("uses scratch buffers, which its CUDA form does not have yet");
    for (const auto* specs : {&kernel.in_specs, &kernel.out_specs})
      for (const BlockSpec& block : *specs)
        if (block.memory_space != 0) return refuse("stages a block into another memory space");
    KernelGridLayout grid;
    grid.steps = grid_size(kernel.grid);
    for (const GridOperand& operand : inputs) grid.dimensions.push_back(operand.dimensions);
    for (const GridOperand& operand : outputs) grid.dimensions.push_back(operand.dimensions);
    std::vector<int64_t> index;
    for (int64_t step = 0; step < grid.steps; ++step) {
      grid_index_of(kernel.grid, step, index);
      for (size_t r = 0; r < grid.dimensions.size(); ++r) {
        const bool input = r < inputs.size();
        const BlockSpec& block = input ? kernel.in_specs[r] : kernel.out_specs[r - inputs.size()];
        std::vector<int64_t> block_index(grid.dimensions[r].size(), 0);
        if (block.index_map) block_index = block.index_map(index);
        BlockRegion region;
        if (Status status = block_region(kernel, block, grid.dimensions[r], block_index, region); !status.ok())
          return kernel_error(call, status);
        grid.blocks.push_back({std::move(region.start), std::move(region.extent)});
      }
    }
    grid.input_output_aliases = kernel.input_output_aliases;
    grid.cuda_source = kernel.cuda_source;
    grid.cuda_function = kernel.cuda_function;
    return grid;
  };
}

decltype(NativeCustomCallPart::prepare) make_native_kernel(std::shared_ptr<const KernelSpec> spec) {
  return [spec](const Instruction& call, std::span<const Shape* const> operand_shapes,
                std::span<const Shape* const> output_shapes) -> StatusOr<PreparedCustomCall> {
    std::vector<GridOperand> input_shapes, result_shapes;  // no data yet: shapes only
    for (const Shape* shape : operand_shapes) input_shapes.push_back(grid_operand(nullptr, *shape));
    for (const Shape* shape : output_shapes) result_shapes.push_back(grid_operand(nullptr, *shape));
    StatusOr<std::shared_ptr<const KernelSpec>> prepared = prepare_kernel_call(spec, input_shapes, result_shapes);
    if (!prepared.ok()) return kernel_error(call, prepared.status());
    return PreparedCustomCall(make_prepared_run(std::move(prepared).value()));
  };
}

}  // namespace insitu
