// The block cache behind big Buffers: a freed 2 MiB+ block is handed to the next buffer of the
// same size (already mapped: no page faults), zero-filled buffers are still zero, small buffers
// are not cached, and the bound holds.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>

#include "insitu/runtime/buffer.h"

namespace insitu {
namespace {

Shape bytes(int64_t count) { return Shape::array(PrimitiveType::kU8, {count}); }

// Whether [address, address + size) lies inside malloc's heap ("[heap]" in /proc/self/maps).
bool in_malloc_heap(const uint8_t* address, int64_t size) {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    if (line.find("[heap]") == std::string::npos) continue;
    uintptr_t start = 0, end = 0;
    std::sscanf(line.c_str(), "%lx-%lx", &start, &end);
    const auto begin = reinterpret_cast<uintptr_t>(address);
    if (begin < end && begin + static_cast<uintptr_t>(size) > start) return true;
  }
  return false;
}

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

// A fresh big block is its own 2 MiB-aligned mapping, zero without being written, also after
// malloc's mmap threshold has risen (a freed 16 MiB block raises it; malloc would then serve
// big blocks from its heap, whose pages are already touched and get no huge pages).
TEST_F(BufferCacheTest, AFreshBigBlockIsAnAlignedZeroMappingOfItsOwn) {
  set_buffer_cache_limit(0);
  std::free(std::malloc(size_t{16} << 20));
  for (int64_t size : {int64_t{2} << 20, (int64_t{9} << 20) + 7}) {
    Buffer zeroed(bytes(size));
    EXPECT_EQ(reinterpret_cast<uintptr_t>(zeroed.data()) % (uintptr_t{2} << 20), 0u) << size;
    for (int64_t i = 0; i < size; i += 4093) ASSERT_EQ(zeroed.data()[i], 0) << i;
    EXPECT_EQ(zeroed.data()[size - 1], 0);
    EXPECT_FALSE(in_malloc_heap(zeroed.data(), size)) << size;
    std::memset(zeroed.data(), 0xcd, static_cast<size_t>(size));  // the whole mapping is writable
  }
  EXPECT_EQ(buffer_cache_bytes(), 0);
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
