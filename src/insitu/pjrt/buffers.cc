// The PJRT plugin's buffers (plugin.h): arrays in insitu's memory, from and to the host.
#include <cstring>
#include <numeric>

#include "insitu/pjrt/plugin_internal.h"
#include "insitu/support/str.h"

insitu::StatusOr<insitu::BufferHandle> PJRT_Buffer::usable(const std::string& what) const {
  std::lock_guard<std::mutex> lock(mutex);
  if (deleted || handle.is_null()) return insitu::failed_precondition(what + " was deleted");
  if (handle.is_donated()) return insitu::failed_precondition(what + " was donated to a call and is no longer usable");
  return handle;
}

void PJRT_Buffer::mark_deleted() {
  insitu::BufferHandle dropped;  // freed after the lock is let go (an external owner's callback may run)
  std::lock_guard<std::mutex> lock(mutex);
  deleted = true;
  dropped = std::move(handle);
  handle = insitu::BufferHandle();
}

namespace insitu::pjrt {

PJRT_Buffer* make_buffer(PJRT_Client* client, BufferHandle handle, bool host_immutable) {
  auto* buffer = new PJRT_Buffer;
  buffer->client = client;
  buffer->shape = handle.shape();
  buffer->type = buffer_type(buffer->shape.element_type());
  buffer->dims = buffer->shape.dimensions();
  const int64_t rank = static_cast<int64_t>(buffer->dims.size());
  for (int64_t d = rank - 1; d >= 0; --d) buffer->minor_to_major.push_back(d);
  buffer->host_immutable = host_immutable;
  buffer->handle = std::move(handle);
  return buffer;
}

namespace {

StatusOr<Shape> array_shape(PJRT_Buffer_Type type, const int64_t* dims, size_t rank) {
  const std::optional<PrimitiveType> element = primitive_type(type);
  if (!element) return unimplemented(str_cat("insitu has no element type for PJRT buffer type ", static_cast<int>(type)));
  std::vector<int64_t> dimensions(dims, dims + rank);
  for (int64_t d : dimensions)
    if (d < 0) return invalid_argument(str_cat("a buffer dimension of ", d));
  return Shape::array(*element, std::move(dimensions));
}

// Whether `layout` is absent or row-major dense (what insitu stores), for a shape of `rank`.
Status check_row_major(const PJRT_Buffer_MemoryLayout* layout, const Shape& shape, const char* what) {
  if (layout == nullptr) return ok_status();
  const int64_t rank = static_cast<int64_t>(shape.dimensions().size());
  bool row_major = true;
  if (layout->type == PJRT_Buffer_MemoryLayout_Type_Tiled) {
    const PJRT_Buffer_MemoryLayout_Tiled& tiled = layout->tiled;
    row_major = tiled.num_tiles == 0 && static_cast<int64_t>(tiled.minor_to_major_size) == rank;
    for (int64_t i = 0; row_major && i < rank; ++i) row_major = tiled.minor_to_major[i] == rank - 1 - i;
  } else {
    const PJRT_Buffer_MemoryLayout_Strides& strides = layout->strides;
    int64_t expected = byte_width(shape.element_type());
    row_major = static_cast<int64_t>(strides.num_byte_strides) == rank;
    for (int64_t d = rank - 1; row_major && d >= 0; --d) {
      row_major = shape.dimensions()[d] == 1 || strides.byte_strides[d] == expected;
      expected *= shape.dimensions()[d];
    }
  }
  if (row_major) return ok_status();
  return unimplemented(str_cat(what, " is not row-major; insitu's PJRT plugin keeps arrays row-major only"));
}

// Copies a host array laid out with `byte_strides` (one per dimension, in bytes; may be
// negative) into dense row-major `out`.
void gather_strided(const uint8_t* data, const int64_t* byte_strides, const std::vector<int64_t>& dims, int64_t width,
                    uint8_t* out) {
  const size_t rank = dims.size();
  const int64_t count = std::accumulate(dims.begin(), dims.end(), int64_t{1}, std::multiplies<>());
  std::vector<int64_t> index(rank, 0);
  for (int64_t i = 0; i < count; ++i) {
    int64_t offset = 0;
    for (size_t d = 0; d < rank; ++d) offset += index[d] * byte_strides[d];
    std::memcpy(out + i * width, data + offset, static_cast<size_t>(width));
    for (size_t d = rank; d-- > 0;) {
      if (++index[d] < dims[d]) break;
      index[d] = 0;
    }
  }
}

bool dense_strides(const int64_t* byte_strides, size_t count, const Shape& shape) {
  if (byte_strides == nullptr || count == 0) return true;
  int64_t expected = byte_width(shape.element_type());
  for (size_t d = count; d-- > 0;) {
    if (shape.dimensions()[d] != 1 && byte_strides[d] != expected) return false;
    expected *= shape.dimensions()[d];
  }
  return true;
}

PJRT_Error* client_buffer_from_host_buffer(PJRT_Client_BufferFromHostBuffer_Args* args) {
  StatusOr<Shape> shape = array_shape(args->type, args->dims, args->num_dims);
  if (!shape.ok()) return make_error(shape.status());
  if (Status status = check_row_major(args->device_layout, *shape, "the device layout asked for"); !status.ok())
    return make_error(status);
  if (args->num_byte_strides != 0 && args->num_byte_strides != args->num_dims)
    return make_error(invalid_argument(str_cat(args->num_byte_strides, " byte strides for ", args->num_dims, " dimensions")));
  const bool dense = dense_strides(args->byte_strides, args->num_byte_strides, *shape);
  const int64_t width = byte_width(shape->element_type());
  const auto semantics = args->host_buffer_semantics;
  const bool zero_copy = semantics == PJRT_HostBufferSemantics_kImmutableZeroCopy ||
                         semantics == PJRT_HostBufferSemantics_kMutableZeroCopy;
  // Used where it lies: the host's memory, dense and aligned to the element (what the kernels
  // read), kept until the buffer's memory goes; done_with_host_buffer fires then.
  if (zero_copy && dense && reinterpret_cast<uintptr_t>(args->data) % static_cast<uintptr_t>(width) == 0 &&
      shape->byte_size() > 0) {
    auto done = std::make_shared<EventState>();
    std::shared_ptr<void> owner(done.get(), [done](void*) { done->set_ready(); });
    auto memory = Buffer::external(*shape, static_cast<uint8_t*>(const_cast<void*>(args->data)), std::move(owner));
    args->done_with_host_buffer = new PJRT_Event{done};
    args->buffer = make_buffer(args->client, BufferHandle(std::move(memory)),
                               semantics == PJRT_HostBufferSemantics_kImmutableZeroCopy);
    return nullptr;
  }
  StatusOr<std::shared_ptr<Buffer>> memory = Buffer::allocate(*shape, /*zero=*/false, "a buffer from the host");
  if (!memory.ok()) return make_error(memory.status());
  const auto* data = static_cast<const uint8_t*>(args->data);
  if (dense) {
    std::memcpy((*memory)->data(), data, static_cast<size_t>(shape->byte_size()));
  } else {
    gather_strided(data, args->byte_strides, shape->dimensions(), width, (*memory)->data());
  }
  args->done_with_host_buffer = make_ready_event();
  args->buffer = make_buffer(args->client, BufferHandle(std::move(*memory)));
  return nullptr;
}

PJRT_Error* client_create_uninitialized_buffer(PJRT_Client_CreateUninitializedBuffer_Args* args) {
  StatusOr<Shape> shape = array_shape(args->shape_element_type, args->shape_dims, args->shape_num_dims);
  if (!shape.ok()) return make_error(shape.status());
  if (Status status = check_row_major(args->shape_layout, *shape, "the layout asked for"); !status.ok())
    return make_error(status);
  StatusOr<std::shared_ptr<Buffer>> memory = Buffer::allocate(*shape, /*zero=*/true, "an uninitialized buffer");
  if (!memory.ok()) return make_error(memory.status());
  args->buffer = make_buffer(args->client, BufferHandle(std::move(*memory)));
  return nullptr;
}

PJRT_Error* client_create_view_of_device_buffer(PJRT_Client_CreateViewOfDeviceBuffer_Args* args) {
  StatusOr<Shape> shape = array_shape(args->element_type, args->dims, args->num_dims);
  if (!shape.ok()) return make_error(shape.status());
  if (Status status = check_row_major(args->layout, *shape, "the viewed buffer"); !status.ok()) return make_error(status);
  auto* pointer = static_cast<uint8_t*>(args->device_buffer_ptr);
  if (reinterpret_cast<uintptr_t>(pointer) % static_cast<uintptr_t>(byte_width(shape->element_type())) != 0)
    return make_error(invalid_argument("the viewed buffer is not aligned to its element size"));
  auto on_delete = args->on_delete_callback;
  void* user = args->on_delete_callback_arg;
  std::shared_ptr<void> owner(pointer, [on_delete, user](void* data) {
    if (on_delete != nullptr) on_delete(data, user);
  });
  args->buffer = make_buffer(args->client, BufferHandle(Buffer::external(*shape, pointer, std::move(owner))));
  return nullptr;
}

PJRT_Error* buffer_destroy(PJRT_Buffer_Destroy_Args* args) {
  delete args->buffer;
  return nullptr;
}
PJRT_Error* buffer_element_type(PJRT_Buffer_ElementType_Args* args) {
  args->type = args->buffer->type;
  return nullptr;
}
PJRT_Error* buffer_dimensions(PJRT_Buffer_Dimensions_Args* args) {
  args->dims = args->buffer->dims.data();
  args->num_dims = args->buffer->dims.size();
  return nullptr;
}
PJRT_Error* buffer_unpadded_dimensions(PJRT_Buffer_UnpaddedDimensions_Args* args) {
  args->unpadded_dims = args->buffer->dims.data();
  args->num_dims = args->buffer->dims.size();
  return nullptr;
}
PJRT_Error* buffer_dynamic_dimension_indices(PJRT_Buffer_DynamicDimensionIndices_Args* args) {
  args->dynamic_dim_indices = nullptr;
  args->num_dynamic_dims = 0;
  return nullptr;
}
PJRT_Error* buffer_get_memory_layout(PJRT_Buffer_GetMemoryLayout_Args* args) {
  args->layout = {};
  args->layout.struct_size = PJRT_Buffer_MemoryLayout_STRUCT_SIZE;
  args->layout.type = PJRT_Buffer_MemoryLayout_Type_Tiled;
  args->layout.tiled.struct_size = PJRT_Buffer_MemoryLayout_Tiled_STRUCT_SIZE;
  args->layout.tiled.minor_to_major = args->buffer->minor_to_major.data();
  args->layout.tiled.minor_to_major_size = args->buffer->minor_to_major.size();
  return nullptr;
}
PJRT_Error* buffer_on_device_size_in_bytes(PJRT_Buffer_OnDeviceSizeInBytes_Args* args) {
  args->on_device_size_in_bytes = static_cast<size_t>(args->buffer->shape.byte_size());
  return nullptr;
}
PJRT_Error* buffer_device(PJRT_Buffer_Device_Args* args) {
  args->device = &args->buffer->client->device;
  return nullptr;
}
PJRT_Error* buffer_memory(PJRT_Buffer_Memory_Args* args) {
  args->memory = &args->buffer->client->memory;
  return nullptr;
}
PJRT_Error* buffer_delete(PJRT_Buffer_Delete_Args* args) {
  args->buffer->mark_deleted();
  return nullptr;
}
PJRT_Error* buffer_is_deleted(PJRT_Buffer_IsDeleted_Args* args) {
  std::lock_guard<std::mutex> lock(args->buffer->mutex);
  args->is_deleted = args->buffer->deleted || args->buffer->handle.is_null() || args->buffer->handle.is_donated();
  return nullptr;
}
PJRT_Error* buffer_is_on_cpu(PJRT_Buffer_IsOnCpu_Args* args) {
  args->is_on_cpu = true;
  return nullptr;
}
PJRT_Error* buffer_ready_event(PJRT_Buffer_ReadyEvent_Args* args) {
  StatusOr<BufferHandle> handle = args->buffer->usable("the buffer");
  args->event = make_ready_event(handle.status());
  return nullptr;
}

// The buffer's bytes for reading where they lie, or an error.
StatusOr<std::shared_ptr<Buffer>> memory_of(PJRT_Buffer* buffer) {
  INSITU_ASSIGN_OR_RETURN(BufferHandle handle, buffer->usable("the buffer"));
  return handle.shared_buffer();
}

PJRT_Error* buffer_to_host_buffer(PJRT_Buffer_ToHostBuffer_Args* args) {
  const Shape& shape = args->src->shape;
  if (Status status = check_row_major(args->host_layout, shape, "the host layout asked for"); !status.ok())
    return make_error(status);
  const auto size = static_cast<size_t>(shape.byte_size());
  if (args->dst == nullptr) {
    args->dst_size = size;
    return nullptr;
  }
  if (args->dst_size < size)
    return make_error(invalid_argument(str_cat("the host buffer has ", args->dst_size, " bytes; the array needs ", size)));
  StatusOr<std::shared_ptr<Buffer>> memory = memory_of(args->src);
  if (!memory.ok()) return make_error(memory.status());
  std::memcpy(args->dst, (*memory)->data(), size);
  args->event = make_ready_event();
  return nullptr;
}

PJRT_Error* buffer_copy_raw_to_host(PJRT_Buffer_CopyRawToHost_Args* args) {
  StatusOr<std::shared_ptr<Buffer>> memory = memory_of(args->buffer);
  if (!memory.ok()) return make_error(memory.status());
  const int64_t size = (*memory)->size_bytes();
  if (args->offset < 0 || args->transfer_size < 0 || args->offset > size || args->transfer_size > size - args->offset)
    return make_error(invalid_argument(str_cat("bytes [", args->offset, ", ", args->offset + args->transfer_size,
                                               ") are outside the buffer's ", size)));
  std::memcpy(args->dst, (*memory)->data() + args->offset, static_cast<size_t>(args->transfer_size));
  args->event = make_ready_event();
  return nullptr;
}

// A copy of the buffer in fresh memory of the same device (the only one).
PJRT_Error* copy_buffer(PJRT_Buffer* source, PJRT_Buffer*& out) {
  StatusOr<std::shared_ptr<Buffer>> memory = memory_of(source);
  if (!memory.ok()) return make_error(memory.status());
  StatusOr<std::shared_ptr<Buffer>> copy = Buffer::allocate(source->shape, /*zero=*/false, "a buffer copy");
  if (!copy.ok()) return make_error(copy.status());
  std::memcpy((*copy)->data(), (*memory)->data(), static_cast<size_t>(source->shape.byte_size()));
  out = make_buffer(source->client, BufferHandle(std::move(*copy)));
  return nullptr;
}
PJRT_Error* buffer_copy_to_device(PJRT_Buffer_CopyToDevice_Args* args) {
  return copy_buffer(args->buffer, args->dst_buffer);
}
PJRT_Error* buffer_copy_to_memory(PJRT_Buffer_CopyToMemory_Args* args) {
  return copy_buffer(args->buffer, args->dst_buffer);
}

PJRT_Error* buffer_unsafe_pointer(PJRT_Buffer_UnsafePointer_Args* args) {
  StatusOr<std::shared_ptr<Buffer>> memory = memory_of(args->buffer);
  if (!memory.ok()) return make_error(memory.status());
  args->buffer_pointer = reinterpret_cast<uintptr_t>((*memory)->data());
  return nullptr;
}
PJRT_Error* buffer_opaque_device_memory_data_pointer(PJRT_Buffer_OpaqueDeviceMemoryDataPointer_Args* args) {
  StatusOr<std::shared_ptr<Buffer>> memory = memory_of(args->buffer);
  if (!memory.ok()) return make_error(memory.status());
  args->device_memory_ptr = (*memory)->data();
  return nullptr;
}
PJRT_Error* buffer_increase_external_reference_count(PJRT_Buffer_IncreaseExternalReferenceCount_Args* args) {
  PJRT_Buffer& buffer = *args->buffer;
  std::lock_guard<std::mutex> lock(buffer.mutex);
  if (buffer.deleted || buffer.handle.is_null() || buffer.handle.is_donated())
    return make_error(failed_precondition("an external reference to a deleted buffer"));
  if (buffer.external_references++ == 0) buffer.pinned = buffer.handle.shared_buffer();
  return nullptr;
}
PJRT_Error* buffer_decrease_external_reference_count(PJRT_Buffer_DecreaseExternalReferenceCount_Args* args) {
  PJRT_Buffer& buffer = *args->buffer;
  std::shared_ptr<Buffer> released;  // freed outside the lock
  std::lock_guard<std::mutex> lock(buffer.mutex);
  if (buffer.external_references == 0)
    return make_error(failed_precondition("DecreaseExternalReferenceCount without a reference"));
  if (--buffer.external_references == 0) released = std::move(buffer.pinned);
  return nullptr;
}

}  // namespace

void fill_buffer_functions(PJRT_Api& api) {
  api.PJRT_Client_BufferFromHostBuffer = client_buffer_from_host_buffer;
  api.PJRT_Client_CreateUninitializedBuffer = client_create_uninitialized_buffer;
  api.PJRT_Client_CreateViewOfDeviceBuffer = client_create_view_of_device_buffer;
  api.PJRT_Buffer_Destroy = buffer_destroy;
  api.PJRT_Buffer_ElementType = buffer_element_type;
  api.PJRT_Buffer_Dimensions = buffer_dimensions;
  api.PJRT_Buffer_UnpaddedDimensions = buffer_unpadded_dimensions;
  api.PJRT_Buffer_DynamicDimensionIndices = buffer_dynamic_dimension_indices;
  api.PJRT_Buffer_GetMemoryLayout = buffer_get_memory_layout;
  api.PJRT_Buffer_OnDeviceSizeInBytes = buffer_on_device_size_in_bytes;
  api.PJRT_Buffer_Device = buffer_device;
  api.PJRT_Buffer_Memory = buffer_memory;
  api.PJRT_Buffer_Delete = buffer_delete;
  api.PJRT_Buffer_IsDeleted = buffer_is_deleted;
  api.PJRT_Buffer_CopyToDevice = buffer_copy_to_device;
  api.PJRT_Buffer_CopyToMemory = buffer_copy_to_memory;
  api.PJRT_Buffer_ToHostBuffer = buffer_to_host_buffer;
  api.PJRT_Buffer_CopyRawToHost = buffer_copy_raw_to_host;
  api.PJRT_Buffer_IsOnCpu = buffer_is_on_cpu;
  api.PJRT_Buffer_ReadyEvent = buffer_ready_event;
  api.PJRT_Buffer_UnsafePointer = buffer_unsafe_pointer;
  api.PJRT_Buffer_IncreaseExternalReferenceCount = buffer_increase_external_reference_count;
  api.PJRT_Buffer_DecreaseExternalReferenceCount = buffer_decrease_external_reference_count;
  api.PJRT_Buffer_OpaqueDeviceMemoryDataPointer = buffer_opaque_device_memory_data_pointer;
}

}  // namespace insitu::pjrt
