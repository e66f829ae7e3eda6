// The PJRT plugin's table (plugin.h), errors, events, the client, its device and its memory.
// Buffers are in buffers.cc, compile and execute in executables.cc.
#include "insitu/pjrt/plugin.h"

#include <cstring>
#include <string_view>

#include "insitu/pjrt/plugin_internal.h"
#include "insitu/support/str.h"

namespace insitu::pjrt {

void EventState::set_ready(Status status) {
  std::vector<std::function<void(Status)>> callbacks;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (ready_) return;
    ready_ = true;
    status_ = status;
    callbacks.swap(callbacks_);
  }
  ready_changed_.notify_all();
  for (auto& callback : callbacks) callback(status);
}

bool EventState::ready() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return ready_;
}

Status EventState::wait() const {
  std::unique_lock<std::mutex> lock(mutex_);
  ready_changed_.wait(lock, [this] { return ready_; });
  return status_;
}

void EventState::on_ready(std::function<void(Status)> callback) {
  Status status;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!ready_) {
      callbacks_.push_back(std::move(callback));
      return;
    }
    status = status_;
  }
  callback(status);
}

PJRT_Error* make_error(const Status& status) {
  return new PJRT_Error{status, status.location().valid() ? status.to_string() : status.message()};
}

PJRT_Event* make_ready_event(Status status) {
  auto* event = new PJRT_Event{std::make_shared<EventState>()};
  event->state->set_ready(std::move(status));
  return event;
}

namespace {

PJRT_Error_Code error_code(StatusCode code) {
  switch (code) {
    case StatusCode::kOk: return PJRT_Error_Code_OK;
    case StatusCode::kInvalidArgument: return PJRT_Error_Code_INVALID_ARGUMENT;
    case StatusCode::kUnimplemented: return PJRT_Error_Code_UNIMPLEMENTED;
    case StatusCode::kNotFound: return PJRT_Error_Code_NOT_FOUND;
    case StatusCode::kFailedPrecondition: return PJRT_Error_Code_FAILED_PRECONDITION;
    case StatusCode::kResourceExhausted: return PJRT_Error_Code_RESOURCE_EXHAUSTED;
    case StatusCode::kInternal: return PJRT_Error_Code_INTERNAL;
  }
  return PJRT_Error_Code_UNKNOWN;
}

// The same table both ways; PJRT types insitu lacks have no row.
struct TypePair {
  PJRT_Buffer_Type pjrt;
  PrimitiveType insitu;
};
constexpr TypePair kTypes[] = {
    {PJRT_Buffer_Type_PRED, PrimitiveType::kPred},
    {PJRT_Buffer_Type_S8, PrimitiveType::kS8},
    {PJRT_Buffer_Type_S16, PrimitiveType::kS16},
    {PJRT_Buffer_Type_S32, PrimitiveType::kS32},
    {PJRT_Buffer_Type_S64, PrimitiveType::kS64},
    {PJRT_Buffer_Type_U8, PrimitiveType::kU8},
    {PJRT_Buffer_Type_U16, PrimitiveType::kU16},
    {PJRT_Buffer_Type_U32, PrimitiveType::kU32},
    {PJRT_Buffer_Type_U64, PrimitiveType::kU64},
    {PJRT_Buffer_Type_F16, PrimitiveType::kF16},
    {PJRT_Buffer_Type_F32, PrimitiveType::kF32},
    {PJRT_Buffer_Type_F64, PrimitiveType::kF64},
    {PJRT_Buffer_Type_BF16, PrimitiveType::kBF16},
    {PJRT_Buffer_Type_C64, PrimitiveType::kC64},
    {PJRT_Buffer_Type_C128, PrimitiveType::kC128},
    {PJRT_Buffer_Type_F8E5M2, PrimitiveType::kF8E5M2},
    {PJRT_Buffer_Type_F8E4M3FN, PrimitiveType::kF8E4M3FN},
    {PJRT_Buffer_Type_F8E4M3B11FNUZ, PrimitiveType::kF8E4M3B11FNUZ},
    {PJRT_Buffer_Type_F8E5M2FNUZ, PrimitiveType::kF8E5M2FNUZ},
    {PJRT_Buffer_Type_F8E4M3FNUZ, PrimitiveType::kF8E4M3FNUZ},
    {PJRT_Buffer_Type_S4, PrimitiveType::kS4},
    {PJRT_Buffer_Type_U4, PrimitiveType::kU4},
    {PJRT_Buffer_Type_S2, PrimitiveType::kS2},
    {PJRT_Buffer_Type_U2, PrimitiveType::kU2},
    {PJRT_Buffer_Type_F8E4M3, PrimitiveType::kF8E4M3},
    {PJRT_Buffer_Type_F8E3M4, PrimitiveType::kF8E3M4},
    {PJRT_Buffer_Type_F8E8M0FNU, PrimitiveType::kF8E8M0FNU},
    {PJRT_Buffer_Type_F4E2M1FN, PrimitiveType::kF4E2M1FN},
};

}  // namespace

std::optional<PrimitiveType> primitive_type(PJRT_Buffer_Type type) {
  for (const TypePair& pair : kTypes)
    if (pair.pjrt == type) return pair.insitu;
  return std::nullopt;
}

PJRT_Buffer_Type buffer_type(PrimitiveType type) {
  for (const TypePair& pair : kTypes)
    if (pair.insitu == type) return pair.pjrt;
  return PJRT_Buffer_Type_INVALID;
}

namespace {

void set_string(const std::string& value, const char*& text, size_t& size) {
  text = value.data();
  size = value.size();
}

// --- errors ---

void error_destroy(PJRT_Error_Destroy_Args* args) { delete args->error; }
void error_message(PJRT_Error_Message_Args* args) {
  set_string(args->error->message, args->message, args->message_size);
}
PJRT_Error* error_get_code(PJRT_Error_GetCode_Args* args) {
  args->code = error_code(args->error->status.code());
  return nullptr;
}

// --- the plugin ---

PJRT_Error* plugin_initialize(PJRT_Plugin_Initialize_Args*) { return nullptr; }

PJRT_NamedValue int64_list(const char* name, const int64_t* values, size_t count) {
  PJRT_NamedValue value{};
  value.struct_size = PJRT_NamedValue_STRUCT_SIZE;
  value.name = name;
  value.name_size = std::strlen(name);
  value.type = PJRT_NamedValue_kInt64List;
  value.int64_array_value = values;
  value.value_size = count;
  return value;
}

PJRT_Error* plugin_attributes(PJRT_Plugin_Attributes_Args* args) {
  // The newest StableHLO the reader takes (stablehlo/import.h is tested at 1.16.3 and 1.22.0):
  // JAX serializes for min(this, its own), so a newer JAX keeps sending what insitu reads.
  static const int64_t kStablehloVersion[] = {1, 22, 0};
  static const PJRT_NamedValue kAttributes[] = {
      int64_list("stablehlo_current_version", kStablehloVersion, 3),
  };
  args->attributes = kAttributes;
  args->num_attributes = std::size(kAttributes);
  return nullptr;
}

// --- events ---

PJRT_Error* event_destroy(PJRT_Event_Destroy_Args* args) {
  delete args->event;
  return nullptr;
}
PJRT_Error* event_is_ready(PJRT_Event_IsReady_Args* args) {
  args->is_ready = args->event->state->ready();
  return nullptr;
}
PJRT_Error* event_error(PJRT_Event_Error_Args* args) {
  if (!args->event->state->ready()) return make_error(failed_precondition("PJRT_Event_Error on an event not ready"));
  Status status = args->event->state->wait();
  return status.ok() ? nullptr : make_error(status);
}
PJRT_Error* event_await(PJRT_Event_Await_Args* args) {
  Status status = args->event->state->wait();
  return status.ok() ? nullptr : make_error(status);
}
PJRT_Error* event_on_ready(PJRT_Event_OnReady_Args* args) {
  PJRT_Event_OnReadyCallback callback = args->callback;
  void* user = args->user_arg;
  args->event->state->on_ready([callback, user](Status status) {
    callback(status.ok() ? nullptr : make_error(status), user);  // the callback owns the error
  });
  return nullptr;
}

// --- the client ---

PJRT_Error* client_create(PJRT_Client_Create_Args* args) {
  int threads = 0;
  for (size_t i = 0; i < args->num_options; ++i) {
    const PJRT_NamedValue& option = args->create_options[i];
    const std::string_view name(option.name, option.name_size);
    if (name == "threads" && option.type == PJRT_NamedValue_kInt64) {
      threads = static_cast<int>(option.int64_value);
    } else {
      return make_error(invalid_argument(str_cat("insitu's PJRT client has no option '", name,
                                                 "' of that type (it takes threads: an integer)")));
    }
  }
  auto* client = new PJRT_Client;
  client->threads = threads;
  client->platform_version = "insitu 0.1.0 (PJRT C API " + std::to_string(PJRT_API_MAJOR) + "." +
                             std::to_string(PJRT_API_MINOR) + ")";
  PJRT_Device& device = client->device;
  device.client = client;
  device.memory = &client->memory;
  device.description.id = 0;
  device.description.kind = "insitu cpu";
  device.description.debug_string = "insitu:0";
  device.description.to_string = "InsituDevice(id=0)";
  PJRT_Memory& memory = client->memory;
  memory.id = 0;
  memory.kind = "device";
  memory.debug_string = "insitu:0 device memory";
  memory.to_string = "MEMORY_SPACE_0(device)";
  memory.device = &device;
  args->client = client;
  return nullptr;
}
PJRT_Error* client_destroy(PJRT_Client_Destroy_Args* args) {
  delete args->client;
  return nullptr;
}
PJRT_Error* client_platform_name(PJRT_Client_PlatformName_Args* args) {
  set_string(args->client->platform_name, args->platform_name, args->platform_name_size);
  return nullptr;
}
PJRT_Error* client_process_index(PJRT_Client_ProcessIndex_Args* args) {
  args->process_index = 0;
  return nullptr;
}
PJRT_Error* client_platform_version(PJRT_Client_PlatformVersion_Args* args) {
  set_string(args->client->platform_version, args->platform_version, args->platform_version_size);
  return nullptr;
}
PJRT_Error* client_devices(PJRT_Client_Devices_Args* args) {
  args->devices = args->client->devices;
  args->num_devices = 1;
  return nullptr;
}
PJRT_Error* client_addressable_devices(PJRT_Client_AddressableDevices_Args* args) {
  args->addressable_devices = args->client->devices;
  args->num_addressable_devices = 1;
  return nullptr;
}
PJRT_Error* client_lookup_device(PJRT_Client_LookupDevice_Args* args) {
  if (args->id != 0) return make_error(not_found(str_cat("insitu has one device, id 0; no device ", args->id)));
  args->device = &args->client->device;
  return nullptr;
}
PJRT_Error* client_lookup_addressable_device(PJRT_Client_LookupAddressableDevice_Args* args) {
  if (args->local_hardware_id != 0)
    return make_error(not_found(str_cat("insitu has one device, hardware id 0; no device ", args->local_hardware_id)));
  args->addressable_device = &args->client->device;
  return nullptr;
}
PJRT_Error* client_addressable_memories(PJRT_Client_AddressableMemories_Args* args) {
  args->addressable_memories = args->client->memories;
  args->num_addressable_memories = 1;
  return nullptr;
}
PJRT_Error* client_default_device_assignment(PJRT_Client_DefaultDeviceAssignment_Args* args) {
  if (args->num_replicas * args->num_partitions != 1)
    return make_error(unimplemented(str_cat("insitu's PJRT plugin has one device; a program of ", args->num_replicas,
                                            " replicas x ", args->num_partitions, " partitions needs more")));
  if (args->default_assignment_size < 1) return make_error(invalid_argument("default_assignment has no room"));
  args->default_assignment[0] = 0;
  return nullptr;
}

// --- the device, its description and its memory ---

PJRT_Error* description_id(PJRT_DeviceDescription_Id_Args* args) {
  args->id = args->device_description->id;
  return nullptr;
}
PJRT_Error* description_process_index(PJRT_DeviceDescription_ProcessIndex_Args* args) {
  args->process_index = 0;
  return nullptr;
}
PJRT_Error* description_attributes(PJRT_DeviceDescription_Attributes_Args* args) {
  args->attributes = nullptr;
  args->num_attributes = 0;
  return nullptr;
}
PJRT_Error* description_kind(PJRT_DeviceDescription_Kind_Args* args) {
  set_string(args->device_description->kind, args->device_kind, args->device_kind_size);
  return nullptr;
}
PJRT_Error* description_debug_string(PJRT_DeviceDescription_DebugString_Args* args) {
  set_string(args->device_description->debug_string, args->debug_string, args->debug_string_size);
  return nullptr;
}
PJRT_Error* description_to_string(PJRT_DeviceDescription_ToString_Args* args) {
  set_string(args->device_description->to_string, args->to_string, args->to_string_size);
  return nullptr;
}
PJRT_Error* device_get_description(PJRT_Device_GetDescription_Args* args) {
  args->device_description = &args->device->description;
  return nullptr;
}
PJRT_Error* device_is_addressable(PJRT_Device_IsAddressable_Args* args) {
  args->is_addressable = true;
  return nullptr;
}
PJRT_Error* device_local_hardware_id(PJRT_Device_LocalHardwareId_Args* args) {
  args->local_hardware_id = args->device->description.id;
  return nullptr;
}
PJRT_Error* device_addressable_memories(PJRT_Device_AddressableMemories_Args* args) {
  args->memories = args->device->client->memories;
  args->num_memories = 1;
  return nullptr;
}
PJRT_Error* device_default_memory(PJRT_Device_DefaultMemory_Args* args) {
  args->memory = args->device->memory;
  return nullptr;
}
PJRT_Error* memory_id(PJRT_Memory_Id_Args* args) {
  args->id = args->memory->id;
  return nullptr;
}
PJRT_Error* memory_kind(PJRT_Memory_Kind_Args* args) {
  set_string(args->memory->kind, args->kind, args->kind_size);
  return nullptr;
}
PJRT_Error* memory_kind_id(PJRT_Memory_Kind_Id_Args* args) {
  args->kind_id = 0;
  return nullptr;
}
PJRT_Error* memory_debug_string(PJRT_Memory_DebugString_Args* args) {
  set_string(args->memory->debug_string, args->debug_string, args->debug_string_size);
  return nullptr;
}
PJRT_Error* memory_to_string(PJRT_Memory_ToString_Args* args) {
  set_string(args->memory->to_string, args->to_string, args->to_string_size);
  return nullptr;
}
PJRT_Error* memory_addressable_by_devices(PJRT_Memory_AddressableByDevices_Args* args) {
  args->devices = args->memory->device->client->devices;
  args->num_devices = 1;
  return nullptr;
}

// A function the plugin does not offer: an UNIMPLEMENTED error naming it (a null entry would
// crash a host that calls it without checking).
template <typename Args, const char* kName>
PJRT_Error* not_offered(Args*) {
  return make_error(unimplemented(str_cat("insitu's PJRT plugin does not implement ", kName)));
}

#define INSITU_PJRT_NOT_OFFERED(function)                    \
  static constexpr char k##function##Name[] = #function;     \
  api.function = &not_offered<function##_Args, k##function##Name>

PJRT_Api make_api() {
  PJRT_Api api{};
  api.struct_size = PJRT_Api_STRUCT_SIZE;
  api.pjrt_api_version.struct_size = PJRT_Api_Version_STRUCT_SIZE;
  api.pjrt_api_version.major_version = PJRT_API_MAJOR;
  api.pjrt_api_version.minor_version = PJRT_API_MINOR;

  api.PJRT_Error_Destroy = error_destroy;
  api.PJRT_Error_Message = error_message;
  api.PJRT_Error_GetCode = error_get_code;
  api.PJRT_Plugin_Initialize = plugin_initialize;
  api.PJRT_Plugin_Attributes = plugin_attributes;
  api.PJRT_Event_Destroy = event_destroy;
  api.PJRT_Event_IsReady = event_is_ready;
  api.PJRT_Event_Error = event_error;
  api.PJRT_Event_Await = event_await;
  api.PJRT_Event_OnReady = event_on_ready;

  api.PJRT_Client_Create = client_create;
  api.PJRT_Client_Destroy = client_destroy;
  api.PJRT_Client_PlatformName = client_platform_name;
  api.PJRT_Client_ProcessIndex = client_process_index;
  api.PJRT_Client_PlatformVersion = client_platform_version;
  api.PJRT_Client_Devices = client_devices;
  api.PJRT_Client_AddressableDevices = client_addressable_devices;
  api.PJRT_Client_LookupDevice = client_lookup_device;
  api.PJRT_Client_LookupAddressableDevice = client_lookup_addressable_device;
  api.PJRT_Client_AddressableMemories = client_addressable_memories;
  api.PJRT_Client_DefaultDeviceAssignment = client_default_device_assignment;

  api.PJRT_DeviceDescription_Id = description_id;
  api.PJRT_DeviceDescription_ProcessIndex = description_process_index;
  api.PJRT_DeviceDescription_Attributes = description_attributes;
  api.PJRT_DeviceDescription_Kind = description_kind;
  api.PJRT_DeviceDescription_DebugString = description_debug_string;
  api.PJRT_DeviceDescription_ToString = description_to_string;
  api.PJRT_Device_GetDescription = device_get_description;
  api.PJRT_Device_IsAddressable = device_is_addressable;
  api.PJRT_Device_LocalHardwareId = device_local_hardware_id;
  api.PJRT_Device_AddressableMemories = device_addressable_memories;
  api.PJRT_Device_DefaultMemory = device_default_memory;
  api.PJRT_Memory_Id = memory_id;
  api.PJRT_Memory_Kind = memory_kind;
  api.PJRT_Memory_Kind_Id = memory_kind_id;
  api.PJRT_Memory_DebugString = memory_debug_string;
  api.PJRT_Memory_ToString = memory_to_string;
  api.PJRT_Memory_AddressableByDevices = memory_addressable_by_devices;

  fill_buffer_functions(api);
  fill_executable_functions(api);

  INSITU_PJRT_NOT_OFFERED(PJRT_Client_TopologyDescription);
  INSITU_PJRT_NOT_OFFERED(PJRT_Client_UpdateGlobalProcessInfo);
  INSITU_PJRT_NOT_OFFERED(PJRT_Client_DmaMap);
  INSITU_PJRT_NOT_OFFERED(PJRT_Client_DmaUnmap);
  INSITU_PJRT_NOT_OFFERED(PJRT_Client_CreateAliasBuffer);
  INSITU_PJRT_NOT_OFFERED(PJRT_Client_FulfillAliasBuffer);
  INSITU_PJRT_NOT_OFFERED(PJRT_Client_CreateBuffersForAsyncHostToDevice);
  INSITU_PJRT_NOT_OFFERED(PJRT_Device_MemoryStats);
  INSITU_PJRT_NOT_OFFERED(PJRT_ExecuteContext_Create);
  INSITU_PJRT_NOT_OFFERED(PJRT_ExecuteContext_Destroy);
  INSITU_PJRT_NOT_OFFERED(PJRT_CopyToDeviceStream_Destroy);
  INSITU_PJRT_NOT_OFFERED(PJRT_CopyToDeviceStream_AddChunk);
  INSITU_PJRT_NOT_OFFERED(PJRT_CopyToDeviceStream_TotalBytes);
  INSITU_PJRT_NOT_OFFERED(PJRT_CopyToDeviceStream_GranuleSize);
  INSITU_PJRT_NOT_OFFERED(PJRT_CopyToDeviceStream_CurrentBytes);
  INSITU_PJRT_NOT_OFFERED(PJRT_TopologyDescription_Create);
  INSITU_PJRT_NOT_OFFERED(PJRT_TopologyDescription_Destroy);
  INSITU_PJRT_NOT_OFFERED(PJRT_TopologyDescription_PlatformName);
  INSITU_PJRT_NOT_OFFERED(PJRT_TopologyDescription_PlatformVersion);
  INSITU_PJRT_NOT_OFFERED(PJRT_TopologyDescription_GetDeviceDescriptions);
  INSITU_PJRT_NOT_OFFERED(PJRT_TopologyDescription_Serialize);
  INSITU_PJRT_NOT_OFFERED(PJRT_TopologyDescription_Attributes);
  INSITU_PJRT_NOT_OFFERED(PJRT_TopologyDescription_Deserialize);
  INSITU_PJRT_NOT_OFFERED(PJRT_Compile);
  INSITU_PJRT_NOT_OFFERED(PJRT_AsyncHostToDeviceTransferManager_Destroy);
  INSITU_PJRT_NOT_OFFERED(PJRT_AsyncHostToDeviceTransferManager_TransferData);
  INSITU_PJRT_NOT_OFFERED(PJRT_AsyncHostToDeviceTransferManager_RetrieveBuffer);
  INSITU_PJRT_NOT_OFFERED(PJRT_AsyncHostToDeviceTransferManager_Device);
  INSITU_PJRT_NOT_OFFERED(PJRT_AsyncHostToDeviceTransferManager_BufferCount);
  INSITU_PJRT_NOT_OFFERED(PJRT_AsyncHostToDeviceTransferManager_BufferSize);
  INSITU_PJRT_NOT_OFFERED(PJRT_AsyncHostToDeviceTransferManager_SetBufferError);
  INSITU_PJRT_NOT_OFFERED(PJRT_AsyncHostToDeviceTransferManager_AddMetadata);
  return api;
}

}  // namespace

const PJRT_Api* api() {
  static const PJRT_Api table = make_api();
  return &table;
}

}  // namespace insitu::pjrt
