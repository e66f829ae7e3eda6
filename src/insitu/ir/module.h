// Module: computations, the ENTRY computation, and the module-level configuration of the
// `HloModule` header line (aliasing, donation, entry layout, replica counts, ...).
//
//   HloModule m, is_scheduled=true, input_output_alias={ {0}: (0, {}, may-alias) },
//     buffer_donor={ (1, {}) }, entry_computation_layout={(f32[4]{0})->f32[4]{0}}
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "insitu/ir/computation.h"

namespace insitu {

enum class AliasKind : uint8_t { kMayAlias, kMustAlias };

// input_output_alias entry: output `output_index` shares parameter `parameter_number`'s buffer
// at `parameter_index`.
struct InputOutputAlias {
  ShapeIndex output_index;
  int64_t parameter_number = 0;
  ShapeIndex parameter_index;
  AliasKind kind = AliasKind::kMayAlias;
  bool operator==(const InputOutputAlias&) const = default;
};

// buffer_donor entry: the caller lets insitu reuse this parameter leaf for any output.
struct BufferDonor {
  int64_t parameter_number = 0;
  ShapeIndex parameter_index;
  bool operator==(const BufferDonor&) const = default;
};

// entry_computation_layout={(p0, p1)->result}: the module's interface.
struct ComputationLayout {
  std::vector<Shape> parameter_shapes;
  Shape result_shape;
  bool operator==(const ComputationLayout&) const = default;
};

struct ModuleConfig {
  std::optional<bool> is_scheduled;
  std::vector<InputOutputAlias> input_output_alias;   // in output-index order
  std::vector<BufferDonor> buffer_donors;
  std::optional<bool> alias_passthrough_params;
  std::optional<ComputationLayout> entry_computation_layout;  // as written
  std::string allow_spmd_sharding_propagation_to_parameters;  // verbatim value, if written
  std::string allow_spmd_sharding_propagation_to_output;      // verbatim value, if written
  std::optional<int64_t> replica_count;
  std::optional<int64_t> num_partitions;
  std::vector<std::pair<std::string, std::string>> frontend_attributes;
  std::vector<RawAttribute> extra_attributes;  // other header attributes, verbatim
  bool operator==(const ModuleConfig&) const = default;

  // The input_output_alias entry of entry parameter `parameter_number` at `parameter_index`,
  // or null (the verifier allows at most one).
  const InputOutputAlias* find_parameter_alias(int64_t parameter_number, const ShapeIndex& parameter_index) const {
    for (const InputOutputAlias& alias : input_output_alias)
      if (alias.parameter_number == parameter_number && alias.parameter_index == parameter_index) return &alias;
    return nullptr;
  }
};

class Module {
 public:
  explicit Module(std::string name) : name_(std::move(name)) {}
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  const std::string& name() const { return name_; }
  void set_name(std::string name) { name_ = std::move(name); }

  ModuleConfig& config() { return config_; }
  const ModuleConfig& config() const { return config_; }

  Computation* add_computation(std::unique_ptr<Computation> computation);
  // Adds it right before `before` in definition order (a callee printed before its caller, as
  // XLA prints them); at the end when `before` is not in the module.
  Computation* add_computation_before(std::unique_ptr<Computation> computation, const Computation* before);
  // Removes a computation nothing calls any more (never the entry).
  void remove_computation(Computation* computation);
  // In definition order (callees before callers in XLA dumps, but not required).
  std::vector<Computation*> computations() const;
  Computation* find_computation(std::string_view name) const;
  Computation* entry() const { return entry_; }
  void set_entry(Computation* entry) { entry_ = entry; }

  // The entry interface: the written entry_computation_layout, or one inferred from the entry
  // computation's parameter and root shapes.
  ComputationLayout entry_layout() const;

  // The FileNames/FunctionNames/FileLocations/StackFrames sections, kept verbatim (XLA prints
  // them between the header and the computations, for stack_frame_id in metadata).
  const std::string& stack_frame_sections() const { return stack_frame_sections_; }
  void set_stack_frame_sections(std::string text) { stack_frame_sections_ = std::move(text); }

  // Where a header attribute ("input_output_alias", "buffer_donor", ...) was written; the
  // HloModule line when that attribute was not written; invalid for built modules.
  SourceLocation header_attribute_location(std::string_view attribute) const;
  void set_header_attribute_location(std::string attribute, SourceLocation location);
  SourceLocation location() const { return location_; }
  void set_location(SourceLocation location) { location_ = location; }

  // A deep copy (names, attributes, locations, configuration).
  std::unique_ptr<Module> clone() const;

 private:
  std::string name_;
  ModuleConfig config_;
  std::vector<std::unique_ptr<Computation>> computations_;
  Computation* entry_ = nullptr;
  std::string stack_frame_sections_;
  SourceLocation location_;
  std::vector<std::pair<std::string, SourceLocation>> header_attribute_locations_;
};

}  // namespace insitu
