// Buffer and BufferHandle (buffer.h).
#include "insitu/runtime/buffer.h"

#include <cstdlib>
#include <cstring>
#include <new>

#include <sys/mman.h>

#include "insitu/support/str.h"

namespace insitu {

namespace {
constexpr size_t kHugePageBytes = size_t{2} << 20;
}  // namespace

Buffer::Buffer(Shape shape) : Buffer(std::move(shape), /*zero=*/true) {}

std::shared_ptr<Buffer> Buffer::uninitialized(Shape shape) {
  return std::shared_ptr<Buffer>(new Buffer(std::move(shape), /*zero=*/false));
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
  data_ = static_cast<uint8_t*>(
      std::aligned_alloc(huge ? kHugePageBytes : kBufferAlignment,
                         huge ? (bytes + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes : bytes));
  INSITU_CHECK(data_ != nullptr) << "out of memory allocating " << bytes << " bytes for " << shape_.to_string();
  if (huge) ::madvise(data_, bytes, MADV_HUGEPAGE);  // advice only: failure changes nothing
  if (zero) std::memset(data_, 0, bytes);
}

Buffer::~Buffer() { std::free(data_); }

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
  INSITU_CHECK(is_usable()) << "use of a " << (is_null() ? "null" : "donated") << " BufferHandle";
  return *state_->buffer;
}

const std::shared_ptr<Buffer>& BufferHandle::shared_buffer() const {
  INSITU_CHECK(is_usable()) << "use of a " << (is_null() ? "null" : "donated") << " BufferHandle";
  return state_->buffer;
}

StatusOr<Literal> BufferHandle::to_literal() const {
  if (is_null()) return invalid_argument("the buffer handle is null: it holds no buffer");
  if (is_donated()) return donated_buffer_error("the buffer");
  return state_->buffer->to_literal();
}

std::shared_ptr<Buffer> BufferHandle::donate() {
  INSITU_CHECK(is_usable()) << "donating a " << (is_null() ? "null" : "donated") << " BufferHandle";
  state_->donated = true;
  return std::move(state_->buffer);
}

Status donated_buffer_error(const std::string& what) {
  return invalid_argument(str_cat(what, " was donated to a previous call and is no longer usable",
                                  "; use the buffer that call returned, or do not donate it"));
}

}  // namespace insitu
