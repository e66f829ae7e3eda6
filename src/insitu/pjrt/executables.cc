// The PJRT plugin's executables (plugin.h): compile (StableHLO through stablehlo/import.h and
// insitu's whole pipeline), execute (inline, donation as plugin.h says), what JAX asks of a
// compiled program (outputs, costs, memory, its program back), and serialization for JAX's
// persistent compilation cache.
#include <algorithm>
#include <cstring>
#include <mutex>
#include <span>
#include <set>
#include <string_view>
#include <unordered_map>

#include "insitu/ir/verifier.h"
#include "insitu/passes/explain.h"
#include "insitu/passes/optimize.h"
#include "insitu/pjrt/plugin.h"
#include "insitu/pjrt/plugin_internal.h"
#include "insitu/stablehlo/import.h"
#include "insitu/support/str.h"

namespace insitu::pjrt {

// One compiled program, shared by the executables JAX makes of it.
struct Compiled {
  std::string name;
  std::string program;  // the bytes compiled (OptimizedProgram and Serialize give them back)
  std::unique_ptr<Executable> executable;
  // Per argument (Executable::arguments() order): whether the program lets a call consume it
  // (an aliased or donor parameter: JAX donated it).
  std::vector<bool> consumed;
  // Per array leaf of the entry's result (the outputs): its type, rank, memory kind; and all
  // their dimensions, one after the other.
  std::vector<PJRT_Buffer_Type> output_types;
  std::vector<int64_t> output_dims;
  std::vector<size_t> output_ranks;
  std::vector<const char*> output_memory_kinds;
  std::vector<size_t> output_memory_kind_sizes;
  std::string fingerprint;
  std::string explanation_text, explanation_json;
  // GetCostAnalysis's properties (names point into static strings).
  std::vector<PJRT_NamedValue> costs;
  int64_t copies = 0, copied_bytes = 0, peak_memory_bytes = 0;
  int64_t argument_bytes = 0, output_bytes = 0, alias_bytes = 0, temp_bytes = 0;
};

namespace {

// The programs alive, by fingerprint (compiled_program's look-up).
std::mutex registry_mutex;
std::unordered_map<std::string, std::weak_ptr<const Compiled>> registry;

void remember(const std::shared_ptr<const Compiled>& compiled) {
  std::lock_guard<std::mutex> lock(registry_mutex);
  for (auto it = registry.begin(); it != registry.end();) it = it->second.expired() ? registry.erase(it) : std::next(it);
  registry[compiled->fingerprint] = compiled;
}

constexpr std::string_view kSerializedMagic = "insitu PJRT executable 1\n";
constexpr const char* kFile = "<StableHLO program>";

PJRT_NamedValue int64_value(const char* name, int64_t value) {
  PJRT_NamedValue named{};
  named.struct_size = PJRT_NamedValue_STRUCT_SIZE;
  named.name = name;
  named.name_size = std::strlen(name);
  named.type = PJRT_NamedValue_kInt64;
  named.int64_value = value;
  named.value_size = 1;
  return named;
}

// A status with its line and column in the program (the HLO it became) written into its
// message, as the CLI prints it.
Status located(const Status& status) {
  if (!status.location().valid()) return status;
  return Status(status.code(), status.to_string(kFile));
}

StatusOr<std::shared_ptr<Compiled>> compile(std::string program) {
  auto compiled = std::make_shared<Compiled>();
  compiled->program = std::move(program);
  const std::span<const uint8_t> bytes(reinterpret_cast<const uint8_t*>(compiled->program.data()),
                                       compiled->program.size());
  if (!stablehlo::is_stablehlo(bytes))
    return invalid_argument(
        "insitu's PJRT plugin reads StableHLO as MLIR bytecode (a VHLO artifact, what jaxlib sends); this program "
        "is not bytecode (StableHLO text is not read yet)");
  StatusOr<std::unique_ptr<Module>> read = stablehlo::read_vhlo(bytes);
  if (!read.ok()) return located(read.status());
  std::unique_ptr<Module> module = std::move(read).value();
  if (Status status = verify_module(*module); !status.ok()) return located(status);
  compiled->name = module->name();
  // What the program lets a call consume, before donor matching turns donors into aliases.
  std::set<std::pair<int64_t, ShapeIndex>> consumable;
  for (const InputOutputAlias& alias : module->config().input_output_alias)
    consumable.insert({alias.parameter_number, alias.parameter_index});
  for (const BufferDonor& donor : module->config().buffer_donors) consumable.insert({donor.parameter_number, donor.parameter_index});

  StatusOr<OptimizedModule> optimized = optimize_module(std::move(module));
  if (!optimized.ok()) return located(optimized.status());
  Explanation explanation = explain_module(*optimized);
  compiled->copies = static_cast<int64_t>(explanation.copies.size());
  compiled->copied_bytes = explanation.copied_bytes();
  compiled->peak_memory_bytes = explanation.peak_memory_bytes.value_or(0);
  if (optimized->buffers) compiled->temp_bytes = optimized->buffers->temp_bytes();
  StatusOr<std::unique_ptr<Executable>> executable = Executable::create(std::move(optimized).value());
  if (!executable.ok()) return located(executable.status());
  compiled->executable = std::move(executable).value();
  compiled->executable->explain_grid_decisions(explanation);
  compiled->explanation_text = explanation_text(explanation);
  compiled->explanation_json = explanation_json(explanation);

  for (const Executable::Argument& argument : compiled->executable->arguments()) {
    const bool consumed = consumable.contains({argument.parameter_number, argument.index});
    compiled->consumed.push_back(consumed);
    compiled->argument_bytes += argument.shape.byte_size();
    if (argument.aliased_output) compiled->alias_bytes += argument.shape.byte_size();
  }
  static constexpr char kDevice[] = "device";
  compiled->executable->module().entry()->root()->shape().for_each_leaf([&](const Shape& leaf, const ShapeIndex&) {
    if (!leaf.is_array()) return;
    compiled->output_types.push_back(buffer_type(leaf.element_type()));
    compiled->output_ranks.push_back(leaf.dimensions().size());
    compiled->output_dims.insert(compiled->output_dims.end(), leaf.dimensions().begin(), leaf.dimensions().end());
    compiled->output_memory_kinds.push_back(kDevice);
    compiled->output_memory_kind_sizes.push_back(std::strlen(kDevice));
    compiled->output_bytes += leaf.byte_size();
  });
  compiled->fingerprint = str_cat("insitu-0.1.0-", content_hash(compiled->program));
  // insitu's own figures under its own names (not XLA's "flops" or "bytes accessed", which
  // insitu does not count)
  compiled->costs = {int64_value("insitu_copies", compiled->copies),
                     int64_value("insitu_bytes_copied", compiled->copied_bytes),
                     int64_value("insitu_peak_memory_bytes", compiled->peak_memory_bytes)};
  remember(compiled);
  return compiled;
}

PJRT_LoadedExecutable* load(PJRT_Client* client, std::shared_ptr<const Compiled> compiled) {
  auto* loaded = new PJRT_LoadedExecutable;
  loaded->compiled = std::move(compiled);
  loaded->client = client;
  return loaded;
}

PJRT_Error* client_compile(PJRT_Client_Compile_Args* args) {
  const PJRT_Program& program = *args->program;
  const std::string_view format(program.format, program.format_size);
  if (format != "mlir")
    return make_error(unimplemented(str_cat("insitu's PJRT plugin compiles format \"mlir\" (StableHLO bytecode); got \"",
                                            format, "\"")));
  StatusOr<std::shared_ptr<Compiled>> compiled = compile(std::string(program.code, program.code_size));
  if (!compiled.ok()) return make_error(compiled.status());
  args->executable = load(args->client, std::move(compiled).value());
  return nullptr;
}

// --- executing ---

// The arguments of one call as handles, with what it donates. A consumed argument the runtime
// may not write (host memory lent immutable, memory another framework holds) is copied first,
// and the copy donated; the caller's buffer is marked deleted all the same.
struct CallArguments {
  std::vector<BufferHandle> handles;
  std::vector<bool> donate;
  std::vector<PJRT_Buffer*> consumed;  // buffers to mark deleted once the call succeeded
};

StatusOr<CallArguments> call_arguments(const Compiled& compiled, PJRT_Buffer* const* buffers, size_t count,
                                       const PJRT_ExecuteOptions* options) {
  const std::vector<Executable::Argument>& parameters = compiled.executable->arguments();
  if (count != parameters.size())
    return invalid_argument(str_cat("program ", compiled.name, " takes ", parameters.size(), " argument(s), got ", count));
  const std::span<const int64_t> not_donatable =
      options != nullptr && INSITU_PJRT_HAS(options, num_non_donatable_input_indices) &&
              options->non_donatable_input_indices != nullptr
          ? std::span<const int64_t>(options->non_donatable_input_indices, options->num_non_donatable_input_indices)
          : std::span<const int64_t>();
  const auto what = [&](size_t i) { return str_cat("argument ", i, " (", parameters[i].describe(), ")"); };
  CallArguments call;
  call.handles.reserve(count);
  call.donate.reserve(count);
  for (size_t i = 0; i < count; ++i) {
    PJRT_Buffer& buffer = *buffers[i];
    bool writable = false;
    BufferHandle handle;
    {
      std::lock_guard<std::mutex> lock(buffer.mutex);
      if (buffer.deleted || buffer.handle.is_null()) return invalid_argument(what(i) + " was deleted");
      if (buffer.handle.is_donated()) return invalid_argument(what(i) + " was donated to an earlier call");
      handle = buffer.handle;
      // memory nobody else holds: not the host's lent immutable, not kept by an external
      // reference (the pinned copy counts) nor by another buffer
      writable = !buffer.host_immutable && buffer.handle.shared_buffer().use_count() == 1;
    }
    const bool consume = compiled.consumed[i] && std::find(not_donatable.begin(), not_donatable.end(),
                                                           static_cast<int64_t>(i)) == not_donatable.end();
    if (consume && !writable) {
      INSITU_ASSIGN_OR_RETURN(std::shared_ptr<Buffer> copy,
                              Buffer::allocate(handle.shape(), /*zero=*/false, "a donated argument's copy"));
      std::memcpy(copy->data(), handle.data(), static_cast<size_t>(handle.shape().byte_size()));
      handle = BufferHandle(std::move(copy));
    }
    call.handles.push_back(std::move(handle));
    call.donate.push_back(consume);
    if (consume) call.consumed.push_back(&buffer);
  }
  return call;
}

PJRT_Error* loaded_execute(PJRT_LoadedExecutable_Execute_Args* args) {
  PJRT_LoadedExecutable& loaded = *args->executable;
  if (loaded.deleted.load()) return make_error(failed_precondition("the executable was deleted"));
  if (args->num_devices != 1)
    return make_error(unimplemented(str_cat("insitu's PJRT plugin runs on one device; the call names ", args->num_devices)));
  const PJRT_Device* device = INSITU_PJRT_HAS(args, execute_device) ? args->execute_device : nullptr;
  if (device != nullptr && device != &loaded.client->device)
    return make_error(invalid_argument("the call names a device that is not insitu:0"));
  if (args->options != nullptr && (args->options->num_send_ops != 0 || args->options->num_recv_ops != 0))
    return make_error(unimplemented("insitu's PJRT plugin has no send/recv callbacks"));
  const Compiled& compiled = *loaded.compiled;
  StatusOr<CallArguments> call = call_arguments(compiled, args->argument_lists[0], args->num_args, args->options);
  if (!call.ok()) return make_error(call.status());
  ExecuteOptions options;
  options.donate = call->donate;
  options.threads = loaded.client->threads;
  StatusOr<std::vector<BufferHandle>> results = compiled.executable->execute(std::move(call->handles), options);
  if (!results.ok()) return make_error(located(results.status()));
  if (results->size() != compiled.output_types.size())
    return make_error(internal_error(str_cat("the program returned ", results->size(), " arrays, not ",
                                             compiled.output_types.size())));
  for (PJRT_Buffer* buffer : call->consumed) buffer->mark_deleted();  // the caller's buffers the call consumed
  for (size_t j = 0; j < results->size(); ++j) args->output_lists[0][j] = make_buffer(loaded.client, (*results)[j]);
  if (args->device_complete_events != nullptr) args->device_complete_events[0] = make_ready_event();
  return nullptr;
}

// --- the loaded executable ---

PJRT_Error* loaded_destroy(PJRT_LoadedExecutable_Destroy_Args* args) {
  delete args->executable;
  return nullptr;
}
PJRT_Error* loaded_get_executable(PJRT_LoadedExecutable_GetExecutable_Args* args) {
  args->executable = new PJRT_Executable{args->loaded_executable->compiled};
  return nullptr;
}
PJRT_Error* loaded_addressable_devices(PJRT_LoadedExecutable_AddressableDevices_Args* args) {
  args->addressable_devices = args->executable->client->devices;
  args->num_addressable_devices = 1;
  return nullptr;
}
PJRT_Error* loaded_delete(PJRT_LoadedExecutable_Delete_Args* args) {
  args->executable->deleted = true;
  return nullptr;
}
PJRT_Error* loaded_is_deleted(PJRT_LoadedExecutable_IsDeleted_Args* args) {
  args->is_deleted = args->executable->deleted.load();
  return nullptr;
}
PJRT_Error* loaded_fingerprint(PJRT_LoadedExecutable_Fingerprint_Args* args) {
  args->executable_fingerprint = args->executable->compiled->fingerprint.data();
  args->executable_fingerprint_size = args->executable->compiled->fingerprint.size();
  return nullptr;
}
// A DeviceAssignmentProto for one replica of one computation on device 0 (replica_count 1,
// computation_count 1, one computation_devices with replica_device_ids [0]). jaxlib aborts the
// process if this fails.
struct SerializedDeviceAssignment {
  static constexpr char kBytes[] = {0x08, 0x01, 0x10, 0x01, 0x1a, 0x02, 0x08, 0x00};
};
PJRT_Error* loaded_get_device_assignment(PJRT_LoadedExecutable_GetDeviceAssignment_Args* args) {
  args->serialized_bytes = SerializedDeviceAssignment::kBytes;
  args->serialized_bytes_size = sizeof(SerializedDeviceAssignment::kBytes);
  args->serialized_device_assignment = nullptr;  // static bytes: nothing to free
  args->serialized_device_assignment_deleter = [](PJRT_DeviceAssignmentSerialized*) {};
  return nullptr;
}

// --- the executable ---

PJRT_Error* executable_destroy(PJRT_Executable_Destroy_Args* args) {
  delete args->executable;
  return nullptr;
}
PJRT_Error* executable_name(PJRT_Executable_Name_Args* args) {
  args->executable_name = args->executable->compiled->name.data();
  args->executable_name_size = args->executable->compiled->name.size();
  return nullptr;
}
PJRT_Error* executable_num_replicas(PJRT_Executable_NumReplicas_Args* args) {
  args->num_replicas = 1;
  return nullptr;
}
PJRT_Error* executable_num_partitions(PJRT_Executable_NumPartitions_Args* args) {
  args->num_partitions = 1;
  return nullptr;
}
PJRT_Error* executable_num_outputs(PJRT_Executable_NumOutputs_Args* args) {
  args->num_outputs = args->executable->compiled->output_types.size();
  return nullptr;
}
PJRT_Error* executable_size_of_generated_code(PJRT_Executable_SizeOfGeneratedCodeInBytes_Args* args) {
  args->size_in_bytes = 0;  // insitu runs precompiled kernels: no code is generated
  return nullptr;
}
PJRT_Error* executable_get_cost_analysis(PJRT_Executable_GetCostAnalysis_Args* args) {
  args->properties = args->executable->compiled->costs.data();
  args->num_properties = args->executable->compiled->costs.size();
  return nullptr;
}
PJRT_Error* executable_output_memory_kinds(PJRT_Executable_OutputMemoryKinds_Args* args) {
  const Compiled& compiled = *args->executable->compiled;
  args->num_outputs = compiled.output_types.size();
  args->memory_kinds = compiled.output_memory_kinds.data();
  args->memory_kind_sizes = compiled.output_memory_kind_sizes.data();
  return nullptr;
}
PJRT_Error* executable_output_element_types(PJRT_Executable_OutputElementTypes_Args* args) {
  const Compiled& compiled = *args->executable->compiled;
  args->output_types = const_cast<PJRT_Buffer_Type*>(compiled.output_types.data());
  args->num_output_types = compiled.output_types.size();
  return nullptr;
}
PJRT_Error* executable_output_dimensions(PJRT_Executable_OutputDimensions_Args* args) {
  const Compiled& compiled = *args->executable->compiled;
  args->num_outputs = compiled.output_types.size();
  args->dims = compiled.output_dims.data();
  args->dim_sizes = compiled.output_ranks.data();
  return nullptr;
}
PJRT_Error* executable_optimized_program(PJRT_Executable_OptimizedProgram_Args* args) {
  // The StableHLO compiled, as received (jaxlib prints it for compiled.as_text()); insitu's own
  // optimized HLO is not in a format PJRT carries.
  const std::string& program = args->executable->compiled->program;
  static constexpr char kFormat[] = "mlir";
  args->program->format = kFormat;
  args->program->format_size = 4;
  if (args->program->code == nullptr) {
    args->program->code_size = program.size();
    return nullptr;
  }
  if (args->program->code_size < program.size())
    return make_error(invalid_argument("OptimizedProgram: the code buffer is too small"));
  std::memcpy(args->program->code, program.data(), program.size());
  args->program->code_size = program.size();
  return nullptr;
}
PJRT_Error* executable_fingerprint(PJRT_Executable_Fingerprint_Args* args) {
  args->executable_fingerprint = args->executable->compiled->fingerprint.data();
  args->executable_fingerprint_size = args->executable->compiled->fingerprint.size();
  return nullptr;
}
PJRT_Error* executable_get_compiled_memory_stats(PJRT_Executable_GetCompiledMemoryStats_Args* args) {
  const Compiled& compiled = *args->executable->compiled;
  args->generated_code_size_in_bytes = 0;
  args->argument_size_in_bytes = compiled.argument_bytes;
  args->output_size_in_bytes = compiled.output_bytes;
  args->alias_size_in_bytes = compiled.alias_bytes;
  args->temp_size_in_bytes = compiled.temp_bytes;
  if (INSITU_PJRT_HAS(args, host_temp_size_in_bytes)) {  // fields a later API version added
    args->host_generated_code_size_in_bytes = 0;
    args->host_argument_size_in_bytes = 0;
    args->host_output_size_in_bytes = 0;
    args->host_alias_size_in_bytes = 0;
    args->host_temp_size_in_bytes = 0;
  }
  if (INSITU_PJRT_HAS(args, peak_memory_in_bytes)) args->peak_memory_in_bytes = compiled.peak_memory_bytes;
  return nullptr;
}

// Serialized: a magic line, then the program; loading compiles it again (insitu compiles in
// milliseconds, and its executables hold pointers into their own module).
struct SerializedProgram {
  std::string bytes;
};
PJRT_Error* executable_serialize(PJRT_Executable_Serialize_Args* args) {
  auto* serialized = new SerializedProgram{str_cat(kSerializedMagic, args->executable->compiled->program)};
  args->serialized_bytes = serialized->bytes.data();
  args->serialized_bytes_size = serialized->bytes.size();
  args->serialized_executable = reinterpret_cast<PJRT_SerializedExecutable*>(serialized);
  args->serialized_executable_deleter = [](PJRT_SerializedExecutable* executable) {
    delete reinterpret_cast<SerializedProgram*>(executable);
  };
  return nullptr;
}
PJRT_Error* executable_deserialize_and_load(PJRT_Executable_DeserializeAndLoad_Args* args) {
  const std::string_view bytes(args->serialized_executable, args->serialized_executable_size);
  if (!bytes.starts_with(kSerializedMagic))
    return make_error(invalid_argument("not an executable insitu's PJRT plugin serialized"));
  StatusOr<std::shared_ptr<Compiled>> compiled = compile(std::string(bytes.substr(kSerializedMagic.size())));
  if (!compiled.ok()) return make_error(compiled.status());
  args->loaded_executable = load(args->client, std::move(compiled).value());
  return nullptr;
}

}  // namespace

std::optional<CompiledProgram> compiled_program(std::string_view fingerprint) {
  std::shared_ptr<const Compiled> compiled;
  {
    std::lock_guard<std::mutex> lock(registry_mutex);
    auto found = registry.find(std::string(fingerprint));
    if (found != registry.end()) compiled = found->second.lock();
  }
  if (compiled == nullptr) return std::nullopt;
  return CompiledProgram{std::shared_ptr<const Executable>(compiled, compiled->executable.get()),
                         compiled->explanation_text, compiled->explanation_json};
}

void fill_executable_functions(PJRT_Api& api) {
  api.PJRT_Client_Compile = client_compile;
  api.PJRT_LoadedExecutable_Destroy = loaded_destroy;
  api.PJRT_LoadedExecutable_GetExecutable = loaded_get_executable;
  api.PJRT_LoadedExecutable_AddressableDevices = loaded_addressable_devices;
  api.PJRT_LoadedExecutable_Delete = loaded_delete;
  api.PJRT_LoadedExecutable_IsDeleted = loaded_is_deleted;
  api.PJRT_LoadedExecutable_Execute = loaded_execute;
  api.PJRT_LoadedExecutable_Fingerprint = loaded_fingerprint;
  api.PJRT_LoadedExecutable_GetDeviceAssignment = loaded_get_device_assignment;
  api.PJRT_Executable_Destroy = executable_destroy;
  api.PJRT_Executable_Name = executable_name;
  api.PJRT_Executable_NumReplicas = executable_num_replicas;
  api.PJRT_Executable_NumPartitions = executable_num_partitions;
  api.PJRT_Executable_NumOutputs = executable_num_outputs;
  api.PJRT_Executable_SizeOfGeneratedCodeInBytes = executable_size_of_generated_code;
  api.PJRT_Executable_GetCostAnalysis = executable_get_cost_analysis;
  api.PJRT_Executable_OutputMemoryKinds = executable_output_memory_kinds;
  api.PJRT_Executable_OutputElementTypes = executable_output_element_types;
  api.PJRT_Executable_OutputDimensions = executable_output_dimensions;
  api.PJRT_Executable_OptimizedProgram = executable_optimized_program;
  api.PJRT_Executable_Fingerprint = executable_fingerprint;
  api.PJRT_Executable_GetCompiledMemoryStats = executable_get_compiled_memory_stats;
  api.PJRT_Executable_Serialize = executable_serialize;
  api.PJRT_Executable_DeserializeAndLoad = executable_deserialize_and_load;
}

}  // namespace insitu::pjrt
