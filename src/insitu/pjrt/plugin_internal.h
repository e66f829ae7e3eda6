// Internal to the PJRT plugin (plugin.h): the objects behind the C API's opaque handles, and
// what the plugin's files share. plugin.cc holds the function table, errors, events, the client,
// its device and memory; buffers.cc the buffers; executables.cc compile and execute.
//
// Ownership follows the C API: the client owns its device, description and memory (one each:
// insitu is one CPU device); the caller owns every buffer, event, error and executable it gets
// and destroys it through the API. A PJRT_Buffer holds a BufferHandle (runtime/buffer.h): the
// runtime's own donation state is what PJRT_Buffer_IsDeleted reports after a donating call.
#pragma once

#include <pjrt_c_api.h>

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "insitu/runtime/executable.h"
#include "insitu/support/status.h"

// --- the C API's opaque types (global namespace, as the header declares them) ---

struct PJRT_Error {
  insitu::Status status;
  std::string message;  // what Error_Message returns: the status's message, located where it has a line
};

namespace insitu::pjrt {

// An event's shared state: ready once, with an error or not; callbacks run when it becomes ready
// (on the thread that makes it ready), or at once on a ready event.
class EventState {
 public:
  void set_ready(Status status = {});
  bool ready() const;
  Status wait() const;  // blocks until ready; the event's status
  void on_ready(std::function<void(Status)> callback);

 private:
  mutable std::mutex mutex_;
  mutable std::condition_variable ready_changed_;
  bool ready_ = false;
  Status status_;
  std::vector<std::function<void(Status)>> callbacks_;
};

}  // namespace insitu::pjrt

struct PJRT_Event {
  std::shared_ptr<insitu::pjrt::EventState> state;
};

struct PJRT_DeviceDescription {
  int id = 0;
  std::string kind, debug_string, to_string;
};

struct PJRT_Memory {
  int id = 0;
  std::string kind, debug_string, to_string;
  PJRT_Device* device = nullptr;
};

struct PJRT_Device {
  PJRT_DeviceDescription description;
  PJRT_Client* client = nullptr;
  PJRT_Memory* memory = nullptr;
};

struct PJRT_Client {
  PJRT_Device device;
  PJRT_Memory memory;
  PJRT_Device* devices[1] = {&device};
  PJRT_Memory* memories[1] = {&memory};
  std::string platform_name = "insitu";
  std::string platform_version;
  int threads = 0;  // each call's worker threads (ExecuteOptions::threads): create option "threads"
};

struct PJRT_Buffer {
  PJRT_Client* client = nullptr;
  insitu::Shape shape;
  PJRT_Buffer_Type type = PJRT_Buffer_Type_INVALID;
  std::vector<int64_t> dims;            // the shape's dimensions (Dimensions' storage)
  std::vector<int64_t> minor_to_major;  // row-major (GetMemoryLayout's storage)
  // Memory the host lent under kImmutableZeroCopy: the runtime must never write it, so a call
  // that consumes this buffer works on a copy.
  bool host_immutable = false;

  // The handle (null once deleted). Guarded by `mutex`: a call takes a copy of it while another
  // thread may delete the buffer.
  mutable std::mutex mutex;
  insitu::BufferHandle handle;
  bool deleted = false;
  // IncreaseExternalReferenceCount's count, and the memory it keeps alive (another framework,
  // numpy say, reads it where it lies): while it is above 0 a consuming call works on a copy.
  int external_references = 0;
  std::shared_ptr<insitu::Buffer> pinned;

  // The handle to compute with, or an error naming `what` when the buffer was deleted or
  // donated.
  insitu::StatusOr<insitu::BufferHandle> usable(const std::string& what) const;
  // Deleted (PJRT_Buffer_Delete, or consumed by a call): the handle dropped, its memory freed
  // once nothing else holds it.
  void mark_deleted();
};

namespace insitu::pjrt {
struct Compiled;  // executables.cc: one compiled program, shared by its executables
}

struct PJRT_Executable {
  std::shared_ptr<const insitu::pjrt::Compiled> compiled;
};

struct PJRT_LoadedExecutable {
  std::shared_ptr<const insitu::pjrt::Compiled> compiled;
  PJRT_Client* client = nullptr;
  std::atomic<bool> deleted{false};
};

namespace insitu::pjrt {

// Whether a host's `args` (its struct_size) has `field`: a host built against an older header
// passes a shorter struct, whose later fields the plugin must neither read nor write.
#define INSITU_PJRT_HAS(args, field) \
  ((args)->struct_size >= offsetof(std::remove_pointer_t<decltype(args)>, field) + sizeof((args)->field))

// A new error for `status` (not ok), its message as the CLI prints it.
PJRT_Error* make_error(const Status& status);
PJRT_Event* make_ready_event(Status status = {});

// PJRT's element types and insitu's; nullopt / INVALID where one has no counterpart.
std::optional<PrimitiveType> primitive_type(PJRT_Buffer_Type type);
PJRT_Buffer_Type buffer_type(PrimitiveType type);

// A new PJRT_Buffer of `client` holding `handle` (an array).
PJRT_Buffer* make_buffer(PJRT_Client* client, BufferHandle handle, bool host_immutable = false);

// The C API's functions, by file (each fills its part of the table in plugin.cc).
void fill_buffer_functions(PJRT_Api& api);
void fill_executable_functions(PJRT_Api& api);

}  // namespace insitu::pjrt
