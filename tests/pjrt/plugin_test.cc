// The PJRT plugin (src/insitu/pjrt/plugin.h) driven through its C API as a PJRT host drives it:
// client, device, buffers from and to the host, compile of the VHLO artifacts JAX sends, execute
// with donation (in place, consumed; a copy where the host's memory must not change), errors.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <pjrt_c_api.h>

#include <cstddef>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "insitu/pjrt/plugin.h"

namespace {

const PJRT_Api& api() { return *insitu::pjrt::api(); }

template <typename Args>
Args args_of() {
  Args args{};
  args.struct_size = sizeof(Args);
  return args;
}

// The error's message (and destroys it); "" for no error.
std::string message_of(PJRT_Error* error) {
  if (error == nullptr) return "";
  auto message = args_of<PJRT_Error_Message_Args>();
  message.error = error;
  api().PJRT_Error_Message(&message);
  std::string text(message.message, message.message_size);
  auto destroy = args_of<PJRT_Error_Destroy_Args>();
  destroy.error = error;
  api().PJRT_Error_Destroy(&destroy);
  return text;
}
PJRT_Error_Code code_of(PJRT_Error* error) {
  auto code = args_of<PJRT_Error_GetCode_Args>();
  code.error = error;
  api().PJRT_Error_GetCode(&code);
  return code.code;
}

#define EXPECT_OK(call) EXPECT_EQ(message_of(call), "")
#define ASSERT_OK(call) ASSERT_EQ(message_of(call), "")

std::string artifact(const std::string& name) {
  std::ifstream in(std::string(INSITU_SOURCE_DIR) + "/tests/data/stablehlo/" + name, std::ios::binary);
  std::ostringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

void destroy_event(PJRT_Event* event) {
  auto destroy = args_of<PJRT_Event_Destroy_Args>();
  destroy.event = event;
  api().PJRT_Event_Destroy(&destroy);
}

class PjrtPlugin : public ::testing::Test {
 protected:
  void SetUp() override {
    auto create = args_of<PJRT_Client_Create_Args>();
    ASSERT_OK(api().PJRT_Client_Create(&create));
    client_ = create.client;
    auto devices = args_of<PJRT_Client_AddressableDevices_Args>();
    devices.client = client_;
    ASSERT_OK(api().PJRT_Client_AddressableDevices(&devices));
    ASSERT_EQ(devices.num_addressable_devices, 1u);
    device_ = devices.addressable_devices[0];
  }
  void TearDown() override {
    for (PJRT_Buffer* buffer : buffers_) {
      auto destroy = args_of<PJRT_Buffer_Destroy_Args>();
      destroy.buffer = buffer;
      EXPECT_OK(api().PJRT_Buffer_Destroy(&destroy));
    }
    for (PJRT_LoadedExecutable* executable : executables_) {
      auto destroy = args_of<PJRT_LoadedExecutable_Destroy_Args>();
      destroy.executable = executable;
      EXPECT_OK(api().PJRT_LoadedExecutable_Destroy(&destroy));
    }
    auto destroy = args_of<PJRT_Client_Destroy_Args>();
    destroy.client = client_;
    EXPECT_OK(api().PJRT_Client_Destroy(&destroy));
  }

  PJRT_Buffer* from_host(const void* data, PJRT_Buffer_Type type, std::vector<int64_t> dims,
                         PJRT_HostBufferSemantics semantics, PJRT_Event** done = nullptr) {
    auto args = args_of<PJRT_Client_BufferFromHostBuffer_Args>();
    args.client = client_;
    args.data = data;
    args.type = type;
    args.dims = dims.data();
    args.num_dims = dims.size();
    args.host_buffer_semantics = semantics;
    args.device = device_;
    EXPECT_OK(api().PJRT_Client_BufferFromHostBuffer(&args));
    if (done != nullptr) {
      *done = args.done_with_host_buffer;
    } else {
      destroy_event(args.done_with_host_buffer);
    }
    buffers_.push_back(args.buffer);
    return args.buffer;
  }
  std::vector<float> to_host(PJRT_Buffer* buffer, size_t count) {
    std::vector<float> out(count);
    auto args = args_of<PJRT_Buffer_ToHostBuffer_Args>();
    args.src = buffer;
    args.dst = out.data();
    args.dst_size = count * sizeof(float);
    EXPECT_OK(api().PJRT_Buffer_ToHostBuffer(&args));
    if (args.event != nullptr) destroy_event(args.event);
    return out;
  }
  bool is_deleted(PJRT_Buffer* buffer) {
    auto args = args_of<PJRT_Buffer_IsDeleted_Args>();
    args.buffer = buffer;
    EXPECT_OK(api().PJRT_Buffer_IsDeleted(&args));
    return args.is_deleted;
  }
  void* pointer_of(PJRT_Buffer* buffer) {
    auto args = args_of<PJRT_Buffer_OpaqueDeviceMemoryDataPointer_Args>();
    args.buffer = buffer;
    EXPECT_OK(api().PJRT_Buffer_OpaqueDeviceMemoryDataPointer(&args));
    return args.device_memory_ptr;
  }
  PJRT_Error* compile(const std::string& code, PJRT_LoadedExecutable** out, const char* format = "mlir") {
    PJRT_Program program{};
    program.struct_size = sizeof(program);
    program.code = const_cast<char*>(code.data());
    program.code_size = code.size();
    program.format = format;
    program.format_size = std::strlen(format);
    auto args = args_of<PJRT_Client_Compile_Args>();
    args.client = client_;
    args.program = &program;
    PJRT_Error* error = api().PJRT_Client_Compile(&args);
    if (error == nullptr) executables_.push_back(args.executable);
    *out = args.executable;
    return error;
  }
  // One call; its outputs (owned by the fixture).
  PJRT_Error* execute(PJRT_LoadedExecutable* executable, std::vector<PJRT_Buffer*> arguments, size_t outputs,
                      std::vector<PJRT_Buffer*>& results, std::vector<int64_t> non_donatable = {}) {
    PJRT_ExecuteOptions options{};
    options.struct_size = sizeof(options);
    options.non_donatable_input_indices = non_donatable.data();
    options.num_non_donatable_input_indices = non_donatable.size();
    results.assign(outputs, nullptr);
    PJRT_Buffer* const* argument_list = arguments.data();
    PJRT_Buffer** output_list = results.data();
    PJRT_Event* complete = nullptr;
    auto args = args_of<PJRT_LoadedExecutable_Execute_Args>();
    args.executable = executable;
    args.options = &options;
    args.argument_lists = &argument_list;
    args.num_devices = 1;
    args.num_args = arguments.size();
    args.output_lists = &output_list;
    args.device_complete_events = &complete;
    PJRT_Error* error = api().PJRT_LoadedExecutable_Execute(&args);
    if (error == nullptr) {
      EXPECT_NE(complete, nullptr);
      destroy_event(complete);
      for (PJRT_Buffer* result : results) buffers_.push_back(result);
    }
    return error;
  }

  PJRT_Client* client_ = nullptr;
  PJRT_Device* device_ = nullptr;
  std::vector<PJRT_Buffer*> buffers_;
  std::vector<PJRT_LoadedExecutable*> executables_;
};

TEST_F(PjrtPlugin, DescribesOneCpuDeviceAndTheStablehloItReads) {
  auto name = args_of<PJRT_Client_PlatformName_Args>();
  name.client = client_;
  ASSERT_OK(api().PJRT_Client_PlatformName(&name));
  EXPECT_EQ(std::string(name.platform_name, name.platform_name_size), "insitu");
  auto memory = args_of<PJRT_Device_DefaultMemory_Args>();
  memory.device = device_;
  ASSERT_OK(api().PJRT_Device_DefaultMemory(&memory));
  auto kind = args_of<PJRT_Memory_Kind_Args>();
  kind.memory = memory.memory;
  ASSERT_OK(api().PJRT_Memory_Kind(&kind));
  EXPECT_EQ(std::string(kind.kind, kind.kind_size), "device");
  auto attributes = args_of<PJRT_Plugin_Attributes_Args>();
  ASSERT_OK(api().PJRT_Plugin_Attributes(&attributes));
  ASSERT_EQ(attributes.num_attributes, 1u);
  EXPECT_EQ(std::string(attributes.attributes[0].name, attributes.attributes[0].name_size), "stablehlo_current_version");
  EXPECT_EQ(attributes.attributes[0].int64_array_value[1], 22);
  auto lookup = args_of<PJRT_Client_LookupDevice_Args>();
  lookup.client = client_;
  lookup.id = 1;
  PJRT_Error* error = api().PJRT_Client_LookupDevice(&lookup);
  ASSERT_NE(error, nullptr);
  EXPECT_EQ(code_of(error), PJRT_Error_Code_NOT_FOUND);
  EXPECT_EQ(message_of(error), "insitu has one device, id 0; no device 1");
  // what the plugin does not do answers UNIMPLEMENTED, naming the function
  auto stats = args_of<PJRT_Device_MemoryStats_Args>();
  stats.device = device_;
  error = api().PJRT_Device_MemoryStats(&stats);
  ASSERT_NE(error, nullptr);
  EXPECT_EQ(code_of(error), PJRT_Error_Code_UNIMPLEMENTED);
  EXPECT_EQ(message_of(error), "insitu's PJRT plugin does not implement PJRT_Device_MemoryStats");
}

TEST_F(PjrtPlugin, BuffersRoundTripTheHostAndStridedInputIsGathered) {
  const float data[6] = {1, 2, 3, 4, 5, 6};
  PJRT_Buffer* buffer = from_host(data, PJRT_Buffer_Type_F32, {2, 3}, PJRT_HostBufferSemantics_kImmutableOnlyDuringCall);
  EXPECT_EQ(to_host(buffer, 6), std::vector<float>(data, data + 6));
  auto dims = args_of<PJRT_Buffer_Dimensions_Args>();
  dims.buffer = buffer;
  ASSERT_OK(api().PJRT_Buffer_Dimensions(&dims));
  EXPECT_EQ(std::vector<int64_t>(dims.dims, dims.dims + dims.num_dims), (std::vector<int64_t>{2, 3}));
  // a transposed host array (column-major strides) lands row-major
  const int64_t dims_t[2] = {3, 2}, strides[2] = {4, 12};
  auto args = args_of<PJRT_Client_BufferFromHostBuffer_Args>();
  args.client = client_;
  args.data = data;
  args.type = PJRT_Buffer_Type_F32;
  args.dims = dims_t;
  args.num_dims = 2;
  args.byte_strides = strides;
  args.num_byte_strides = 2;
  args.host_buffer_semantics = PJRT_HostBufferSemantics_kImmutableZeroCopy;
  args.device = device_;
  ASSERT_OK(api().PJRT_Client_BufferFromHostBuffer(&args));
  destroy_event(args.done_with_host_buffer);
  buffers_.push_back(args.buffer);
  EXPECT_EQ(to_host(args.buffer, 6), (std::vector<float>{1, 4, 2, 5, 3, 6}));
  // deleted: every later use is an error
  auto remove = args_of<PJRT_Buffer_Delete_Args>();
  remove.buffer = buffer;
  ASSERT_OK(api().PJRT_Buffer_Delete(&remove));
  EXPECT_TRUE(is_deleted(buffer));
  auto copy = args_of<PJRT_Buffer_ToHostBuffer_Args>();
  float out[6];
  copy.src = buffer;
  copy.dst = out;
  copy.dst_size = sizeof(out);
  EXPECT_EQ(message_of(api().PJRT_Buffer_ToHostBuffer(&copy)), "the buffer was deleted");
}

TEST_F(PjrtPlugin, ZeroCopyHostMemoryIsReleasedWhenTheBufferGoes) {
  alignas(64) float data[4] = {1, 2, 3, 4};
  PJRT_Event* done = nullptr;
  PJRT_Buffer* buffer = from_host(data, PJRT_Buffer_Type_F32, {4}, PJRT_HostBufferSemantics_kImmutableZeroCopy, &done);
  EXPECT_EQ(pointer_of(buffer), data);  // used where it lies
  auto ready = args_of<PJRT_Event_IsReady_Args>();
  ready.event = done;
  ASSERT_OK(api().PJRT_Event_IsReady(&ready));
  EXPECT_FALSE(ready.is_ready);
  auto remove = args_of<PJRT_Buffer_Delete_Args>();
  remove.buffer = buffer;
  ASSERT_OK(api().PJRT_Buffer_Delete(&remove));
  ASSERT_OK(api().PJRT_Event_IsReady(&ready));
  EXPECT_TRUE(ready.is_ready);
  destroy_event(done);
}

TEST_F(PjrtPlugin, DonatedArgumentIsWrittenInPlaceAndConsumed) {
  for (const char* version : {"1.16.3", "1.22.0"}) {
    SCOPED_TRACE(version);
    PJRT_LoadedExecutable* executable = nullptr;
    ASSERT_OK(compile(artifact(std::string("add_one.v") + version + ".mlirbc"), &executable));
    const float data[4] = {1, 2, 3, 4};
    PJRT_Buffer* x = from_host(data, PJRT_Buffer_Type_F32, {4}, PJRT_HostBufferSemantics_kImmutableOnlyDuringCall);
    void* memory = pointer_of(x);
    std::vector<PJRT_Buffer*> results;
    ASSERT_OK(execute(executable, {x}, 1, results));
    EXPECT_EQ(to_host(results[0], 4), (std::vector<float>{2, 3, 4, 5}));
    EXPECT_EQ(pointer_of(results[0]), memory);  // the same memory
    EXPECT_TRUE(is_deleted(x));
    EXPECT_EQ(message_of(execute(executable, {x}, 1, results)), "argument 0 (parameter 0 {}) was deleted");
  }
}

TEST_F(PjrtPlugin, ArgumentsTheCallMayNotWriteAreCopiedNotChanged) {
  PJRT_LoadedExecutable* executable = nullptr;
  ASSERT_OK(compile(artifact("add_one.v1.22.0.mlirbc"), &executable));
  // host memory lent immutable: the call consumes the buffer but never writes the host's array
  alignas(64) float data[4] = {1, 2, 3, 4};
  PJRT_Buffer* lent = from_host(data, PJRT_Buffer_Type_F32, {4}, PJRT_HostBufferSemantics_kImmutableZeroCopy);
  std::vector<PJRT_Buffer*> results;
  ASSERT_OK(execute(executable, {lent}, 1, results));
  EXPECT_EQ(to_host(results[0], 4), (std::vector<float>{2, 3, 4, 5}));
  EXPECT_EQ(std::vector<float>(data, data + 4), (std::vector<float>{1, 2, 3, 4}));
  EXPECT_TRUE(is_deleted(lent));
  // memory another framework reads (an external reference): kept as it was, alive
  PJRT_Buffer* held = from_host(data, PJRT_Buffer_Type_F32, {4}, PJRT_HostBufferSemantics_kImmutableOnlyDuringCall);
  auto hold = args_of<PJRT_Buffer_IncreaseExternalReferenceCount_Args>();
  hold.buffer = held;
  ASSERT_OK(api().PJRT_Buffer_IncreaseExternalReferenceCount(&hold));
  const auto* view = static_cast<const float*>(pointer_of(held));
  ASSERT_OK(execute(executable, {held}, 1, results));
  EXPECT_EQ(std::vector<float>(view, view + 4), (std::vector<float>{1, 2, 3, 4}));
  EXPECT_NE(pointer_of(results[0]), view);
  auto release = args_of<PJRT_Buffer_DecreaseExternalReferenceCount_Args>();
  release.buffer = held;
  ASSERT_OK(api().PJRT_Buffer_DecreaseExternalReferenceCount(&release));
  // listed as not donatable: neither written nor consumed
  PJRT_Buffer* kept = from_host(data, PJRT_Buffer_Type_F32, {4}, PJRT_HostBufferSemantics_kImmutableOnlyDuringCall);
  ASSERT_OK(execute(executable, {kept}, 1, results, /*non_donatable=*/{0}));
  EXPECT_FALSE(is_deleted(kept));
  EXPECT_EQ(to_host(kept, 4), (std::vector<float>{1, 2, 3, 4}));
  EXPECT_EQ(to_host(results[0], 4), (std::vector<float>{2, 3, 4, 5}));
}

TEST_F(PjrtPlugin, CacheUpdateRunsInPlace) {
  PJRT_LoadedExecutable* executable = nullptr;
  ASSERT_OK(compile(artifact("cache_update.v1.22.0.mlirbc"), &executable));
  std::vector<float> cache(2 * 8 * 4, 0.0f), update(2 * 4, 7.0f);
  const int32_t position = 3;
  PJRT_Buffer* c = from_host(cache.data(), PJRT_Buffer_Type_F32, {2, 8, 4}, PJRT_HostBufferSemantics_kImmutableOnlyDuringCall);
  PJRT_Buffer* u = from_host(update.data(), PJRT_Buffer_Type_F32, {2, 4}, PJRT_HostBufferSemantics_kImmutableOnlyDuringCall);
  PJRT_Buffer* p = from_host(&position, PJRT_Buffer_Type_S32, {}, PJRT_HostBufferSemantics_kImmutableOnlyDuringCall);
  void* memory = pointer_of(c);
  std::vector<PJRT_Buffer*> results;
  ASSERT_OK(execute(executable, {c, u, p}, 1, results));
  EXPECT_EQ(pointer_of(results[0]), memory);
  const std::vector<float> out = to_host(results[0], cache.size());
  for (int b = 0; b < 2; ++b)
    for (int s = 0; s < 8; ++s)
      for (int d = 0; d < 4; ++d) EXPECT_EQ(out[(b * 8 + s) * 4 + d], s == position ? 7.0f : 0.0f);
  EXPECT_FALSE(is_deleted(u));
}

TEST_F(PjrtPlugin, BadProgramsAndCallsAreErrorsThatSayWhy) {
  PJRT_LoadedExecutable* executable = nullptr;
  PJRT_Error* error = compile("HloModule m", &executable, "hlo");
  ASSERT_NE(error, nullptr);
  EXPECT_EQ(code_of(error), PJRT_Error_Code_UNIMPLEMENTED);
  EXPECT_EQ(message_of(error), "insitu's PJRT plugin compiles format \"mlir\" (StableHLO bytecode); got \"hlo\"");
  std::string truncated = artifact("layer.v1.22.0.mlirbc");
  truncated.resize(truncated.size() / 2);
  error = compile(truncated, &executable);
  ASSERT_NE(error, nullptr);
  EXPECT_EQ(code_of(error), PJRT_Error_Code_INVALID_ARGUMENT);
  EXPECT_NE(message_of(error).find("byte "), std::string::npos);  // where the reader stopped

  ASSERT_OK(compile(artifact("add_one.v1.22.0.mlirbc"), &executable));
  const float data[2] = {1, 2};
  PJRT_Buffer* wrong = from_host(data, PJRT_Buffer_Type_F32, {2}, PJRT_HostBufferSemantics_kImmutableOnlyDuringCall);
  std::vector<PJRT_Buffer*> results;
  const std::string message = message_of(execute(executable, {wrong}, 1, results));
  EXPECT_NE(message.find("f32[4]"), std::string::npos) << message;
  EXPECT_FALSE(is_deleted(wrong));  // a call that fails consumes nothing
  EXPECT_EQ(message_of(execute(executable, {}, 1, results)), "program jit_add_one takes 1 argument(s), got 0");
}

TEST_F(PjrtPlugin, SerializedExecutableLoadsAgain) {
  PJRT_LoadedExecutable* executable = nullptr;
  ASSERT_OK(compile(artifact("add_one.v1.22.0.mlirbc"), &executable));
  auto get = args_of<PJRT_LoadedExecutable_GetExecutable_Args>();
  get.loaded_executable = executable;
  ASSERT_OK(api().PJRT_LoadedExecutable_GetExecutable(&get));
  auto serialize = args_of<PJRT_Executable_Serialize_Args>();
  serialize.executable = get.executable;
  ASSERT_OK(api().PJRT_Executable_Serialize(&serialize));
  auto load = args_of<PJRT_Executable_DeserializeAndLoad_Args>();
  load.client = client_;
  load.serialized_executable = serialize.serialized_bytes;
  load.serialized_executable_size = serialize.serialized_bytes_size;
  ASSERT_OK(api().PJRT_Executable_DeserializeAndLoad(&load));
  serialize.serialized_executable_deleter(serialize.serialized_executable);
  executables_.push_back(load.loaded_executable);
  auto destroy = args_of<PJRT_Executable_Destroy_Args>();
  destroy.executable = get.executable;
  ASSERT_OK(api().PJRT_Executable_Destroy(&destroy));
  const float data[4] = {1, 2, 3, 4};
  PJRT_Buffer* x = from_host(data, PJRT_Buffer_Type_F32, {4}, PJRT_HostBufferSemantics_kImmutableOnlyDuringCall);
  std::vector<PJRT_Buffer*> results;
  ASSERT_OK(execute(load.loaded_executable, {x}, 1, results));
  EXPECT_EQ(to_host(results[0], 4), (std::vector<float>{2, 3, 4, 5}));
  load.serialized_executable = "not one";
  load.serialized_executable_size = 7;
  EXPECT_EQ(message_of(api().PJRT_Executable_DeserializeAndLoad(&load)),
            "not an executable insitu's PJRT plugin serialized");
}

TEST_F(PjrtPlugin, AnOlderHostsShorterStructsAreNeitherReadNorWrittenPastTheirEnd) {
  PJRT_LoadedExecutable* executable = nullptr;
  ASSERT_OK(compile(artifact("add_one.v1.22.0.mlirbc"), &executable));
  auto get = args_of<PJRT_LoadedExecutable_GetExecutable_Args>();
  get.loaded_executable = executable;
  ASSERT_OK(api().PJRT_LoadedExecutable_GetExecutable(&get));
  // memory stats as a host from before the host_* fields asks for them
  auto stats = args_of<PJRT_Executable_GetCompiledMemoryStats_Args>();
  stats.executable = get.executable;
  stats.struct_size = offsetof(PJRT_Executable_GetCompiledMemoryStats_Args, host_generated_code_size_in_bytes);
  stats.host_argument_size_in_bytes = -7;
  stats.peak_memory_in_bytes = -7;
  ASSERT_OK(api().PJRT_Executable_GetCompiledMemoryStats(&stats));
  EXPECT_EQ(stats.argument_size_in_bytes, 16);
  EXPECT_EQ(stats.alias_size_in_bytes, 16);
  EXPECT_EQ(stats.host_argument_size_in_bytes, -7);
  EXPECT_EQ(stats.peak_memory_in_bytes, -7);
  auto destroy = args_of<PJRT_Executable_Destroy_Args>();
  destroy.executable = get.executable;
  ASSERT_OK(api().PJRT_Executable_Destroy(&destroy));
  // execute options from before non_donatable_input_indices: the list is not read
  const float data[4] = {1, 2, 3, 4};
  PJRT_Buffer* x = from_host(data, PJRT_Buffer_Type_F32, {4}, PJRT_HostBufferSemantics_kImmutableOnlyDuringCall);
  const int64_t garbage[1] = {0};
  PJRT_ExecuteOptions options{};
  options.struct_size = offsetof(PJRT_ExecuteOptions, non_donatable_input_indices);
  options.non_donatable_input_indices = garbage;  // past the struct's end as its host sees it
  options.num_non_donatable_input_indices = 1;
  PJRT_Buffer* const* argument_list = &x;
  PJRT_Buffer* result = nullptr;
  PJRT_Buffer** output_list = &result;
  auto args = args_of<PJRT_LoadedExecutable_Execute_Args>();
  args.executable = executable;
  args.options = &options;
  args.argument_lists = &argument_list;
  args.num_devices = 1;
  args.num_args = 1;
  args.output_lists = &output_list;
  ASSERT_OK(api().PJRT_LoadedExecutable_Execute(&args));
  buffers_.push_back(result);
  EXPECT_TRUE(is_deleted(x));  // donated: the list was not honoured because it was not there
  EXPECT_EQ(to_host(result, 4), (std::vector<float>{2, 3, 4, 5}));
}

TEST(PjrtLibrary, LoadsByPathWithTheSameTable) {
  void* library = dlopen(INSITU_PJRT_LIBRARY, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(library, nullptr) << dlerror();
  using GetApi = const PJRT_Api* (*)();
  auto get = reinterpret_cast<GetApi>(dlsym(library, "GetPjrtApi"));
  ASSERT_NE(get, nullptr);
  const PJRT_Api* table = get();
  EXPECT_EQ(table->pjrt_api_version.major_version, PJRT_API_MAJOR);
  EXPECT_EQ(table->pjrt_api_version.minor_version, PJRT_API_MINOR);
  // every function of the table is there (an unimplemented one says so when called)
  const auto* first = reinterpret_cast<const char*>(&table->PJRT_Error_Destroy);
  const auto* end = reinterpret_cast<const char*>(table) + sizeof(PJRT_Api);
  for (const char* field = first; field < end; field += sizeof(void*)) {
    void* function = nullptr;
    std::memcpy(&function, field, sizeof(function));
    EXPECT_NE(function, nullptr) << "field at byte " << (field - reinterpret_cast<const char*>(table));
  }
}

}  // namespace
