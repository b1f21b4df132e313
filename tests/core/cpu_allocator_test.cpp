// The CPU tracking allocator: byte counts, size-class reuse, the malloc path, foreign pointers, and
// many threads at once.
#include <ATen/ATen.h>
#include <c10/core/CPUAllocator.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

#include "core/cpu_allocator.h"
#include "core/device.h"

namespace core = crosstrain::core;

namespace {

class CpuAllocator : public ::testing::Test {
 protected:
  void SetUp() override {
    core::install_cpu_memory_tracking();
    core::set_cpu_block_caching(true);
  }
  void TearDown() override { core::set_cpu_block_caching(true); }
};

bool aligned64(const void* p) { return reinterpret_cast<uintptr_t>(p) % 64 == 0; }

TEST_F(CpuAllocator, CountsRequestedBytesAndPeak) {
  const int64_t before = core::cpu_tensor_bytes_current();
  core::cpu_tensor_bytes_reset_peak();
  {
    at::Tensor a = at::empty({1000, 1000}, at::kFloat);  // 4,000,000 bytes
    at::Tensor b = at::empty({10}, at::kDouble);         // 80 bytes, malloc path
    EXPECT_EQ(core::cpu_tensor_bytes_current() - before, 4000080);
    EXPECT_TRUE(aligned64(a.data_ptr()));
    EXPECT_TRUE(aligned64(b.data_ptr()));
  }
  EXPECT_EQ(core::cpu_tensor_bytes_current(), before);
  EXPECT_GE(core::cpu_tensor_bytes_peak() - before, 4000080);
}

TEST_F(CpuAllocator, FreedLargeBlockIsReusedBySizeClass) {
  core::cpu_release_cached_blocks();
  void* first = nullptr;
  {
    at::Tensor a = at::empty({1 << 20}, at::kByte);  // 1 MiB + header: class 1.25 MiB
    first = a.data_ptr();
    a.fill_(7);
  }
  EXPECT_GT(core::cpu_cached_block_bytes(), 0);
  const int64_t reserved = core::cpu_block_bytes_reserved();
  {
    // A little bigger, same class: the same block comes back, nothing new is mapped.
    at::Tensor b = at::empty({(1 << 20) + 100000}, at::kByte);
    EXPECT_EQ(b.data_ptr(), first);
    EXPECT_EQ(core::cpu_block_bytes_reserved(), reserved);
    EXPECT_EQ(core::cpu_cached_block_bytes(), 0);
    // Another class: a new block.
    at::Tensor c = at::empty({1 << 21}, at::kByte);
    EXPECT_NE(c.data_ptr(), first);
  }
  core::cpu_release_cached_blocks();
  EXPECT_EQ(core::cpu_cached_block_bytes(), 0);
}

TEST_F(CpuAllocator, SystemModeUsesMallocAndCachedBlocksStillFree) {
  core::cpu_release_cached_blocks();
  at::Tensor cached_block = at::ones({1 << 19}, at::kFloat);  // 2 MiB, size-class block
  core::set_cpu_block_caching(false);
  const int64_t cached_before = core::cpu_cached_block_bytes();
  {
    at::Tensor a = at::ones({1 << 19}, at::kFloat);
    EXPECT_TRUE(aligned64(a.data_ptr()));
    EXPECT_EQ(a.sum().item<double>(), double(1 << 19));
  }
  EXPECT_EQ(core::cpu_cached_block_bytes(), cached_before);  // malloc'd: nothing cached
  cached_block.reset();                                      // made while caching: goes to the cache
  EXPECT_GT(core::cpu_cached_block_bytes(), cached_before);
  core::cpu_release_cached_blocks();
}

TEST_F(CpuAllocator, BlocksFromLibtorchsOwnAllocatorAreFreedSafely) {
  // oneDNN frees its scratch buffers through the current CPU allocator, which may not be the one
  // that allocated them.
  const int64_t before = core::cpu_tensor_bytes_current();
  c10::Allocator* own = c10::GetDefaultCPUAllocator();
  for (size_t n : {size_t{64}, size_t{4096}, size_t{1} << 20, size_t{40} << 20}) {
    void* p = own->raw_allocate(n);
    std::memset(p, 0xab, n);
    c10::GetCPUAllocator()->raw_deallocate(p);
  }
  EXPECT_EQ(core::cpu_tensor_bytes_current(), before);
}

TEST_F(CpuAllocator, ManyThreadsAllocateAndFree) {
  const int64_t before = core::cpu_tensor_bytes_current();
  std::vector<std::thread> threads;
  std::atomic<int> bad{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([t, &bad] {
      std::mt19937 rng(static_cast<unsigned>(t));
      std::uniform_int_distribution<int64_t> size(1, 3 << 18);  // up to 3 MiB of floats
      std::vector<at::Tensor> live;
      for (int i = 0; i < 400; ++i) {
        at::Tensor x = at::full({size(rng)}, static_cast<float>(t * 1000 + i));
        live.push_back(x);
        if (live.size() > 8) {
          const at::Tensor& old = live.front();
          if (old.min().item<float>() != old.max().item<float>()) ++bad;  // someone wrote into it
          live.erase(live.begin());
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(bad.load(), 0);
  EXPECT_EQ(core::cpu_tensor_bytes_current(), before);
}

}  // namespace
