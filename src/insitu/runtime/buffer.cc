// Buffer and BufferHandle (buffer.h).
#include "insitu/runtime/buffer.h"

#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <mutex>
#include <new>

#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include "insitu/support/str.h"

namespace insitu {

namespace {
constexpr size_t kHugePageBytes = size_t{2} << 20;

size_t huge_block_bytes(size_t bytes) { return (bytes + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes; }

// A fresh 2 MiB-aligned mapping of `bytes` (a multiple of 2 MiB), zero, not yet touched, with
// transparent huge pages asked for before its first touch; nullptr when the kernel has none.
// Not malloc's aligned_alloc: once frees have raised malloc's mmap threshold it serves blocks
// of tens of MiB from its heap, whose pages were already touched as 4 KiB pages, so the
// advice came too late (GPT-2's separate 9 MiB weights got 73 of 420 MB as huge pages, and
// their matrix-vector dots ran 10% slower than the same dots over stacked weights).
uint8_t* map_huge_block(size_t bytes) {
  void* mapping = ::mmap(nullptr, bytes + kHugePageBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mapping == MAP_FAILED) return nullptr;
  const uintptr_t start = reinterpret_cast<uintptr_t>(mapping);
  const uintptr_t aligned = (start + kHugePageBytes - 1) & ~uintptr_t{kHugePageBytes - 1};
  if (aligned > start) ::munmap(mapping, aligned - start);
  if (const size_t tail = start + kHugePageBytes - aligned; tail > 0) ::munmap(reinterpret_cast<void*>(aligned + bytes), tail);
  ::madvise(reinterpret_cast<void*>(aligned), bytes, MADV_HUGEPAGE);  // advice only: failure changes nothing
  return reinterpret_cast<uint8_t*>(aligned);
}

void unmap_huge_block(uint8_t* block, size_t bytes) { ::munmap(block, bytes); }

// Big blocks (huge-page sized) freed by buffers, kept for the next buffer of the same size: a
// fresh mapping faults on first touch (a 256 MiB output written once costs about 4x its work in
// page faults), a reused block is already mapped. Bounded: by default an eighth of physical
// memory, at most 4 GiB; INSITU_BUFFER_CACHE_BYTES sets the bound (0 turns caching off).
class BlockCache {
 public:
  static BlockCache& global() {
    static BlockCache* cache = new BlockCache();  // never destroyed: buffers may outlive statics
    return *cache;
  }

  uint8_t* take(size_t bytes) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = blocks_.find(bytes);
    if (it == blocks_.end()) return nullptr;
    uint8_t* block = it->second;
    blocks_.erase(it);
    held_ -= bytes;
    return block;
  }

  // Keeps the block if it fits under the bound; false: the caller frees it.
  bool give(uint8_t* block, size_t bytes) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (held_ + bytes > limit_) return false;
    blocks_.emplace(bytes, block);
    held_ += bytes;
    return true;
  }

  void set_limit(size_t limit) {
    std::lock_guard<std::mutex> lock(mutex_);
    limit_ = limit;
    for (auto it = blocks_.begin(); it != blocks_.end() && held_ > limit_;) {
      held_ -= it->first;
      unmap_huge_block(it->second, it->first);
      it = blocks_.erase(it);
    }
  }

  size_t held() {
    std::lock_guard<std::mutex> lock(mutex_);
    return held_;
  }

 private:
  BlockCache() {
    const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGE_SIZE);
    const size_t physical = pages > 0 && page > 0 ? static_cast<size_t>(pages) * static_cast<size_t>(page) : 0;
    limit_ = std::min<size_t>(physical / 8, size_t{4} << 30);
    if (const char* text = std::getenv("INSITU_BUFFER_CACHE_BYTES")) limit_ = std::strtoull(text, nullptr, 10);
  }

  std::mutex mutex_;
  std::multimap<size_t, uint8_t*> blocks_;
  size_t held_ = 0;
  size_t limit_ = 0;
};

}  // namespace

void set_buffer_cache_limit(int64_t bytes) { BlockCache::global().set_limit(static_cast<size_t>(std::max<int64_t>(bytes, 0))); }

int64_t buffer_cache_bytes() { return static_cast<int64_t>(BlockCache::global().held()); }

Buffer::Buffer(Shape shape) : Buffer(std::move(shape), /*zero=*/true) {
  INSITU_CHECK(data_ != nullptr) << "out of memory allocating " << size_ << " bytes for " << shape_.to_string();
}

std::shared_ptr<Buffer> Buffer::uninitialized(Shape shape) {
  std::shared_ptr<Buffer> buffer(new Buffer(std::move(shape), /*zero=*/false));
  INSITU_CHECK(buffer->data_ != nullptr) << "out of memory allocating " << buffer->size_ << " bytes for "
                                         << buffer->shape_.to_string();
  return buffer;
}

StatusOr<std::shared_ptr<Buffer>> Buffer::allocate(Shape shape, bool zero, std::string_view what) {
  std::shared_ptr<Buffer> buffer(new Buffer(std::move(shape), zero));
  if (buffer->data_ == nullptr)
    return resource_exhausted(str_cat("out of memory: cannot allocate ", buffer->size_, " bytes (",
                                      buffer->shape_.to_string(false), ") for ", what));
  return buffer;
}

std::shared_ptr<Buffer> Buffer::external(Shape shape, uint8_t* data, std::shared_ptr<void> owner) {
  INSITU_CHECK(shape.is_array()) << "a Buffer holds an array, not " << shape.to_string();
  INSITU_CHECK(owner != nullptr) << "an external buffer needs the owner of its memory";
  std::shared_ptr<Buffer> buffer(new Buffer());
  buffer->shape_ = std::move(shape);
  buffer->size_ = buffer->shape_.byte_size();
  buffer->data_ = data;
  buffer->owner_ = std::move(owner);
  return buffer;
}

int64_t machine_memory_bytes() {
  static const int64_t bytes = [] {
    const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGE_SIZE);
    int64_t memory = pages > 0 && page > 0 ? static_cast<int64_t>(pages) * page : std::numeric_limits<int64_t>::max();
    struct rlimit limit;
    for (int resource : {RLIMIT_AS, RLIMIT_DATA})
      if (::getrlimit(resource, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY)
        memory = std::min<int64_t>(memory, static_cast<int64_t>(limit.rlim_cur));
    return memory;
  }();
  return bytes;
}

Buffer::Buffer(Shape shape, bool zero) : shape_(std::move(shape)) {
  INSITU_CHECK(shape_.is_array()) << "a Buffer holds an array, not " << shape_.to_string();
  size_ = shape_.byte_size();
  // aligned_alloc needs a size that is a multiple of the alignment (and non-zero).
  const int64_t rounded = (size_ + kBufferAlignment - 1) / kBufferAlignment * kBufferAlignment;
  const size_t bytes = static_cast<size_t>(rounded > 0 ? rounded : kBufferAlignment);
  // Big buffers are fresh mappings whose first touch faults page by page (a 1 GiB output costs
  // more in faults than in the work); 2 MiB-aligned with transparent huge pages asked for, they
  // fault 512 times less often.
  const bool huge = bytes >= kHugePageBytes;
  if (huge) {
    data_ = BlockCache::global().take(huge_block_bytes(bytes));
    if (data_ == nullptr) {
      data_ = map_huge_block(huge_block_bytes(bytes));
      if (data_ == nullptr) return;  // the factories report it
      zero = false;                  // a fresh mapping reads as zeros
    }
  } else {
    // Small buffers come from plain malloc, aligned by hand inside a slightly larger block:
    // aligned_alloc splits a bigger chunk and frees the rest on every call, which cost more
    // than a whole tiny call (and twice that with two callers).
    constexpr size_t kSlack = kBufferAlignment - alignof(std::max_align_t);
    allocation_ = std::malloc(bytes + kSlack);
    if (allocation_ == nullptr) return;  // the factories report it
    const uintptr_t address = reinterpret_cast<uintptr_t>(allocation_);
    data_ = static_cast<uint8_t*>(allocation_) + (-address & (kBufferAlignment - 1));
  }
  if (zero) std::memset(data_, 0, bytes);
}

Buffer::~Buffer() {
  if (owner_ != nullptr) {
    return;  // the owner's memory: dropping owner_ (a member) releases it
  } else if (allocation_ != nullptr) {
    std::free(allocation_);
  } else if (data_ != nullptr) {
    const int64_t rounded = (size_ + kBufferAlignment - 1) / kBufferAlignment * kBufferAlignment;
    const size_t block = huge_block_bytes(static_cast<size_t>(rounded));
    if (!BlockCache::global().give(data_, block)) unmap_huge_block(data_, block);
  }
}

StatusOr<std::unique_ptr<Buffer>> Buffer::from_literal(const Literal& literal) {
  if (!literal.shape().is_array()) {
    return invalid_argument(str_cat("a buffer holds one array, not ", literal.shape().to_string(false),
                                    "; pass one buffer per tuple leaf"));
  }
  auto buffer = std::make_unique<Buffer>(literal.shape());
  INSITU_CHECK(buffer->size_bytes() == literal.size_bytes())
      << "literal of " << literal.shape().to_string() << " has " << literal.size_bytes() << " bytes";
  if (buffer->size_bytes() > 0) std::memcpy(buffer->data(), literal.untyped_data(), literal.size_bytes());
  return buffer;
}

Literal Buffer::to_literal() const {
  Literal literal(shape_);
  if (size_ > 0) std::memcpy(literal.untyped_data(), data_, static_cast<size_t>(size_));
  return literal;
}

BufferHandle::BufferHandle(std::shared_ptr<Buffer> buffer) : state_(std::make_shared<State>()) {
  INSITU_CHECK(buffer != nullptr) << "BufferHandle of a null buffer";
  state_->buffer = std::move(buffer);
}

StatusOr<BufferHandle> BufferHandle::from_literal(const Literal& literal) {
  INSITU_ASSIGN_OR_RETURN(std::unique_ptr<Buffer> buffer, Buffer::from_literal(literal));
  return BufferHandle(std::shared_ptr<Buffer>(std::move(buffer)));
}

Buffer& BufferHandle::buffer() const {
  INSITU_CHECK(is_usable()) << "use of a " << (is_null() ? "null" : "donated or reserved") << " BufferHandle";
  return *state_->buffer;
}

const std::shared_ptr<Buffer>& BufferHandle::shared_buffer() const {
  INSITU_CHECK(is_usable()) << "use of a " << (is_null() ? "null" : "donated or reserved") << " BufferHandle";
  return state_->buffer;
}

StatusOr<Literal> BufferHandle::to_literal() const {
  if (is_null()) return invalid_argument("the buffer handle is null: it holds no buffer");
  if (is_donated()) return donated_buffer_error("the buffer");
  if (!is_usable()) return failed_precondition("the buffer is donated to a call still running");
  return state_->buffer->to_literal();
}

std::shared_ptr<Buffer> BufferHandle::donate() {
  std::shared_ptr<Buffer> buffer = reserve();
  INSITU_CHECK(buffer != nullptr) << "donating a " << (is_null() ? "null" : "donated or reserved") << " BufferHandle";
  commit();
  return buffer;
}

std::shared_ptr<Buffer> BufferHandle::reserve() {
  if (state_ == nullptr) return nullptr;
  Use expected = Use::kUsable;
  if (!state_->use.compare_exchange_strong(expected, Use::kReserved)) return nullptr;
  return state_->buffer;
}

void BufferHandle::commit() {
  INSITU_CHECK(state_ != nullptr && state_->use.load() == Use::kReserved) << "committing an unreserved BufferHandle";
  state_->buffer = nullptr;  // the call's results own the memory now
  state_->use.store(Use::kDonated);
}

void BufferHandle::release() {
  INSITU_CHECK(state_ != nullptr && state_->use.load() == Use::kReserved) << "releasing an unreserved BufferHandle";
  state_->use.store(Use::kUsable);
}

Status donated_buffer_error(const std::string& what) {
  return invalid_argument(str_cat(what, " was donated to a previous call and is no longer usable",
                                  "; use the buffer that call returned, or do not donate it"));
}

}  // namespace insitu
