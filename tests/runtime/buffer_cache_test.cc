// The block cache behind big Buffers: a freed 2 MiB+ block is handed to the next buffer of the
// same size (already mapped: no page faults), zero-filled buffers are still zero, small buffers
// are not cached, and the bound holds.
#include <gtest/gtest.h>

#include "insitu/runtime/buffer.h"

namespace insitu {
namespace {

Shape bytes(int64_t count) { return Shape::array(PrimitiveType::kU8, {count}); }

class BufferCacheTest : public ::testing::Test {
 protected:
  void SetUp() override { set_buffer_cache_limit(int64_t{64} << 20); }
  void TearDown() override { set_buffer_cache_limit(int64_t{1} << 30); }
};

TEST_F(BufferCacheTest, AFreedBigBlockIsReusedAndZeroedWhenAsked) {
  set_buffer_cache_limit(0);  // start empty
  set_buffer_cache_limit(int64_t{64} << 20);
  const int64_t size = int64_t{4} << 20;
  uint8_t* first = nullptr;
  {
    auto buffer = Buffer::uninitialized(bytes(size));
    first = buffer->data();
    std::memset(first, 0xab, static_cast<size_t>(size));
  }
  EXPECT_EQ(buffer_cache_bytes(), size);
  {
    Buffer zeroed(bytes(size));
    EXPECT_EQ(zeroed.data(), first);  // the same mapping, handed back
    for (int64_t i = 0; i < size; i += 4093) ASSERT_EQ(zeroed.data()[i], 0) << i;
    EXPECT_EQ(buffer_cache_bytes(), 0);
  }
  auto other_size = Buffer::uninitialized(bytes(size + (int64_t{2} << 20)));  // another size: a new block
  EXPECT_NE(other_size->data(), first);
}

TEST_F(BufferCacheTest, SmallBuffersAreNotCachedAndTheBoundHolds) {
  set_buffer_cache_limit(0);
  set_buffer_cache_limit(int64_t{4} << 20);
  { auto small = Buffer::uninitialized(bytes(1 << 20)); }
  EXPECT_EQ(buffer_cache_bytes(), 0);
  {
    auto a = Buffer::uninitialized(bytes(int64_t{4} << 20));
    auto b = Buffer::uninitialized(bytes(int64_t{4} << 20));
  }
  EXPECT_EQ(buffer_cache_bytes(), int64_t{4} << 20);  // the second did not fit under the bound
  set_buffer_cache_limit(0);
  EXPECT_EQ(buffer_cache_bytes(), 0);
}

}  // namespace
}  // namespace insitu
