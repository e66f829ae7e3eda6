// Buffer and BufferHandle: the runtime's memory for one array, and how a caller hands it over.
//
// A Buffer owns 64-byte-aligned bytes holding one array of its Shape. Data is stored in
// logical row-major order (last dimension fastest), the same convention as Literal, whatever
// the shape's layout says: the layout is metadata here, exactly as in the reference evaluator,
// so conversions to and from Literal are plain byte copies. (A bitcast whose layouts make it a
// physical transpose is rejected when an Executable is built; see executable.h.)
//
// A BufferHandle is shared ownership of a Buffer plus a "donated" state that every copy of the
// handle sees. Donating (Executable::execute with a donate flag) consumes the handle: the
// executable takes the memory, and any later use of that handle is a clear error naming the
// argument, never a read of memory somebody else now owns.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "insitu/ir/literal.h"
#include "insitu/support/status.h"

namespace insitu {

inline constexpr int64_t kBufferAlignment = 64;

class Buffer {
 public:
  // Zero-filled bytes for an array shape (tuples and tokens have no buffer).
  explicit Buffer(Shape shape);
  // Bytes left uninitialized, for memory the runtime writes in full before anyone reads it.
  static std::shared_ptr<Buffer> uninitialized(Shape shape);
  // The same, with an allocation failure as a Status naming the bytes and `what` the memory
  // is for (the constructors above abort instead).
  static StatusOr<std::shared_ptr<Buffer>> allocate(Shape shape, bool zero, std::string_view what);
  // A buffer over memory someone else owns (an array handed over by DLPack): `data` holds the
  // shape's bytes in logical row-major order, aligned at least to the element size, and stays
  // valid while `owner` lives; the buffer keeps `owner` and drops it when destroyed (from any
  // thread). Writing it in place (a donated argument) writes the owner's memory.
  static std::shared_ptr<Buffer> external(Shape shape, uint8_t* data, std::shared_ptr<void> owner);
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  ~Buffer();

  const Shape& shape() const { return shape_; }
  int64_t size_bytes() const { return size_; }
  uint8_t* data() { return data_; }
  const uint8_t* data() const { return data_; }

  // A buffer holding the literal's bytes; the literal must be an array.
  static StatusOr<std::unique_ptr<Buffer>> from_literal(const Literal& literal);
  // The buffer's value as a Literal of its shape.
  Literal to_literal() const;

 private:
  Buffer(Shape shape, bool zero);
  Buffer() = default;  // external()
  Shape shape_;
  int64_t size_ = 0;
  uint8_t* data_ = nullptr;     // kBufferAlignment-aligned
  void* allocation_ = nullptr;  // what malloc returned for a buffer under 2 MiB (data_ is inside it)
  std::shared_ptr<void> owner_;  // an external buffer's owner (data_ is its memory)
};

// Buffers of 2 MiB and more return their memory to a process-wide cache when destroyed, and a
// new buffer of the same rounded size takes it back: already mapped, so writing it costs no page
// faults (fresh outputs and copy-protection buffers are the big ones, every call). The cache is
// bounded (an eighth of physical memory, at most 4 GiB; INSITU_BUFFER_CACHE_BYTES overrides, 0
// disables). set_buffer_cache_limit changes the bound (and frees what is over it);
// buffer_cache_bytes is what the cache holds now.
void set_buffer_cache_limit(int64_t bytes);

// What this process may allocate: physical memory, lowered by a soft RLIMIT_AS/RLIMIT_DATA
// (ulimit -v). The default memory budget of an Executable.
int64_t machine_memory_bytes();
int64_t buffer_cache_bytes();

class BufferHandle {
 public:
  BufferHandle() = default;  // null: holds nothing
  explicit BufferHandle(std::shared_ptr<Buffer> buffer);
  static StatusOr<BufferHandle> from_literal(const Literal& literal);

  bool is_null() const { return state_ == nullptr; }
  // True once the handle was donated to a call: its memory now belongs to that call's results.
  bool is_donated() const { return state_ != nullptr && state_->use.load() == Use::kDonated; }
  // Usable: not null, not donated and not reserved by a call in flight.
  bool is_usable() const { return state_ != nullptr && state_->use.load() == Use::kUsable; }

  // The buffer; checks is_usable() (callers validate first and report a Status).
  Buffer& buffer() const;
  const std::shared_ptr<Buffer>& shared_buffer() const;
  const Shape& shape() const { return buffer().shape(); }
  uint8_t* data() const { return buffer().data(); }
  // The value as a Literal; an error if the handle was donated or is null.
  StatusOr<Literal> to_literal() const;

  // Marks the handle (and every copy of it) consumed and returns the memory it held.
  std::shared_ptr<Buffer> donate();

  // Donation in two steps, for a call that may fail: reserve() takes the handle for one call
  // (atomically: of two calls donating one handle at once, one wins; nullptr for the other,
  // or when the handle is not usable), then commit() consumes it when the call succeeded, or
  // release() gives it back when it failed. A reserved handle is not usable meanwhile.
  std::shared_ptr<Buffer> reserve();
  void commit();
  void release();

  // Whether two handles are the same handle (copies of one another).
  bool same_handle(const BufferHandle& other) const { return state_ == other.state_; }
  // Equal for two copies of one handle (same_handle) and for nothing else: a key for look-ups.
  const void* identity() const { return state_.get(); }

 private:
  enum class Use : uint8_t { kUsable, kReserved, kDonated };
  struct State {
    std::shared_ptr<Buffer> buffer;
    std::atomic<Use> use{Use::kUsable};
  };
  std::shared_ptr<State> state_;
};

// "argument 0 (parameter 0 {}) was donated to a previous call and is no longer usable": the
// error for using a consumed handle, `what` naming the argument.
Status donated_buffer_error(const std::string& what);

}  // namespace insitu
