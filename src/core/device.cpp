#include "core/device.h"

#include "core/backend/backend_library.h"

#include <ATen/Context.h>
#include <ATen/DeviceAccelerator.h>
#include <c10/core/Allocator.h>
#include <c10/core/CPUAllocator.h>
#include <c10/core/CachingDeviceAllocator.h>
#include <c10/core/DeviceType.h>
#include <c10/core/impl/alloc_cpu.h>
#include <c10/util/Exception.h>
#include <dlfcn.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <torch/cuda.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <fstream>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <unordered_map>

#if __has_include(<cuda_runtime_api.h>)
#define CROSSTRAIN_HAVE_CUDA 1
#include <cuda_runtime_api.h>
#endif

namespace crosstrain::core {

void load_backend_libraries(const std::vector<std::string>& paths) {
  for (const auto& p : paths) load_backend_library(p);  // a failure names every missing library
}

std::optional<std::string> privateuse1_backend_name() {
  if (!c10::is_privateuse1_backend_registered()) return std::nullopt;
  return c10::get_privateuse1_backend();
}

DeviceContext DeviceContext::open(const std::string& spec) {
  if (spec == "auto") {
    if (torch::cuda::is_available()) return DeviceContext(c10::Device(c10::DeviceType::CUDA, 0));
    // A loaded out-of-tree accelerator (e.g. torch_npu) is the next best guess.
    try {
      if (auto acc = at::accelerator::getAccelerator(false); acc && *acc == c10::DeviceType::PrivateUse1) {
        if (at::accelerator::deviceCount() > 0) return DeviceContext(c10::Device(c10::DeviceType::PrivateUse1, 0));
      }
    } catch (const std::exception&) {
      // A registered name without a working runtime: fall back to the CPU.
    }
    return DeviceContext(c10::Device(c10::DeviceType::CPU));
  }
  c10::Device d(c10::DeviceType::CPU);
  try {
    d = c10::Device(spec);
  } catch (const std::exception&) {
    std::string known = "auto, cpu, cuda, cuda:N";
    if (auto pu1 = privateuse1_backend_name()) known += ", " + *pu1 + ", " + *pu1 + ":N";
    throw std::invalid_argument("unknown device '" + spec + "' (valid: " + known +
                                "; load an out-of-tree backend with --backend-lib)");
  }
  if (d.is_cpu()) {
    if (d.has_index() && d.index() != 0) throw std::invalid_argument("device '" + spec + "': cpu has no index");
    return DeviceContext(c10::Device(c10::DeviceType::CPU));
  }
  if (d.is_cuda()) {
    const auto n = static_cast<int>(torch::cuda::device_count());
    if (n == 0) throw std::invalid_argument("device '" + spec + "': CUDA is not available on this machine");
    const int idx = d.has_index() ? d.index() : 0;
    if (idx >= n)
      throw std::invalid_argument("device '" + spec + "': only " + std::to_string(n) + " CUDA device(s)");
    return DeviceContext(c10::Device(c10::DeviceType::CUDA, static_cast<c10::DeviceIndex>(idx)));
  }
  if (d.type() == c10::DeviceType::PrivateUse1) {
    const int idx = d.has_index() ? d.index() : 0;
    return DeviceContext(c10::Device(d.type(), static_cast<c10::DeviceIndex>(idx)));
  }
  throw std::invalid_argument("device '" + spec + "' is not supported for training by this build");
}

void DeviceContext::synchronize() const {
  if (device_.is_cpu()) return;
  at::accelerator::synchronizeDevice(device_.index());
}

namespace {
// The generic caching-allocator interface covers CUDA and out-of-tree backends that implement it;
// a backend without one throws, and we report n/a.
c10::DeviceAllocator* device_allocator(const c10::Device& d) {
  try {
    return dynamic_cast<c10::DeviceAllocator*>(c10::GetAllocator(d.type()));
  } catch (const std::exception&) {
    return nullptr;
  }
}
}  // namespace

MemoryStats DeviceContext::memory() const {
  MemoryStats m;
  if (device_.is_cpu()) {
    m.current_bytes = cpu_tensor_bytes_current();
    m.peak_bytes = cpu_tensor_bytes_peak();
    m.reserved_bytes = cpu_block_bytes_reserved();
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
    if (pages > 0 && page > 0) m.total_bytes = static_cast<int64_t>(pages) * page;
    return m;
  }
  if (auto* alloc = device_allocator(device_)) {
    try {
      auto s = alloc->getDeviceStats(device_.index());
      const auto agg = static_cast<size_t>(c10::CachingAllocator::StatType::AGGREGATE);
      m.current_bytes = s.allocated_bytes[agg].current;
      m.peak_bytes = s.allocated_bytes[agg].peak;
      m.reserved_bytes = s.reserved_bytes[agg].current;
    } catch (const std::exception&) {
      return MemoryStats{};
    }
    try {
      auto total_b = alloc->getMemoryInfo(device_.index()).second;
      if (total_b > 0) m.total_bytes = static_cast<int64_t>(total_b);
    } catch (const std::exception&) {
    }
  }
  return m;
}

void DeviceContext::reset_peak_memory() const {
  if (device_.is_cpu()) {
    cpu_tensor_bytes_reset_peak();
    return;
  }
  if (auto* alloc = device_allocator(device_)) {
    try {
      alloc->resetPeakStats(device_.index());
    } catch (const std::exception&) {
    }
  }
}

DeviceInfo DeviceContext::info() const {
  DeviceInfo info;
  info.name = name();
  if (device_.is_cpu()) {
    std::ifstream cpuinfo("/proc/cpuinfo");
    std::string line;
    while (std::getline(cpuinfo, line)) {
      if (line.rfind("model name", 0) == 0) {
        info.description = line.substr(line.find(':') + 2);
        break;
      }
    }
    if (info.description.empty()) info.description = "cpu";
    info.description += ", " + std::to_string(std::thread::hardware_concurrency()) + " threads";
    info.total_memory = memory().total_bytes;
    return info;
  }
#ifdef CROSSTRAIN_HAVE_CUDA
  if (device_.is_cuda()) {
    cudaDeviceProp prop{};
    if (cudaGetDeviceProperties(&prop, device_.index()) == cudaSuccess) {
      info.description = prop.name;
      info.total_memory = static_cast<int64_t>(prop.totalGlobalMem);
      info.capability = std::to_string(prop.major) + "." + std::to_string(prop.minor);
    }
    return info;
  }
#endif
  info.description = c10::DeviceTypeName(device_.type(), /*lower_case=*/true);
  info.total_memory = memory().total_bytes;
  return info;
}

// ---- CPU tracking allocator ---------------------------------------------------------------------

namespace {

std::atomic<int64_t> g_cpu_current{0};
std::atomic<int64_t> g_cpu_peak{0};
std::atomic<int64_t> g_cpu_reserved{0};  // bytes in cached-size-class blocks, live or free
std::atomic<int64_t> g_cpu_small{0};     // bytes in live malloc()ed blocks
std::atomic<bool> g_cpu_caching{true};

// Each block carries a 64-byte header in front of the data, so the data pointer is also the context
// (libtorch's raw_allocate requires that) and alignment stays at 64 bytes. The magic tells our blocks
// from ones libtorch's own allocator made before ours was installed (oneDNN frees its scratch
// buffers through whatever CPU allocator is current).
constexpr size_t kHeader = 64;
constexpr uint64_t kMagic = 0x7874737372635f31ULL;
constexpr size_t kMinCached = 256 * 1024;  // below this malloc is fast and does not fault pages
constexpr size_t kHugePage = 2 * 1024 * 1024;

struct BlockHeader {
  uint64_t magic;
  uint64_t requested;    // bytes the caller asked for
  uint64_t block_bytes;  // 0: from malloc; else the size class of an mmap()ed block
};
static_assert(sizeof(BlockHeader) <= kHeader, "header must fit in front of the data");

BlockHeader* header_of(void* data) { return reinterpret_cast<BlockHeader*>(static_cast<char*>(data) - kHeader); }

// Four classes per power of two (at most 25% rounding), page multiples.
size_t size_class(size_t n) {
  size_t p = 1;
  while (p * 2 <= n) p *= 2;
  const size_t step = std::max<size_t>(p / 4, 4096);
  return (n + step - 1) / step * step;
}

// Freed large blocks, kept by size class for the next allocation of that class. A training step
// allocates and frees the same activation sizes every iteration; taking them from malloc means
// fresh mmap()s or heap growth, i.e. page faults and zeroing, every step, and any small
// allocations made in between (a profiler's event records) fragment the heap so that it grows.
class BlockCache {
 public:
  void* take(size_t bytes) {
    {
      std::lock_guard<std::mutex> g(mu_);
      auto it = free_.find(bytes);
      if (it != free_.end() && !it->second.empty()) {
        void* b = it->second.back();
        it->second.pop_back();
        cached_ -= bytes;
        return b;
      }
    }
    void* b = map(bytes);
    if (!b) {
      release();  // cached blocks of other sizes may be what stands in the way
      b = map(bytes);
    }
    if (b) g_cpu_reserved.fetch_add(static_cast<int64_t>(bytes), std::memory_order_relaxed);
    return b;
  }

  void give(void* block, size_t bytes) {
    {
      std::lock_guard<std::mutex> g(mu_);
      if (cached_ + bytes <= limit()) {
        free_[bytes].push_back(block);
        cached_ += bytes;
        return;
      }
    }
    unmap(block, bytes);
  }

  void release() {
    std::unordered_map<size_t, std::vector<void*>> blocks;
    {
      std::lock_guard<std::mutex> g(mu_);
      blocks.swap(free_);
      cached_ = 0;
    }
    for (auto& [bytes, list] : blocks)
      for (void* b : list) unmap(b, bytes);
  }

  size_t cached() {
    std::lock_guard<std::mutex> g(mu_);
    return cached_;
  }

 private:
  // Free blocks kept at most: a quarter of the machine's memory.
  static size_t limit() {
    static const size_t l = [] {
      long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
      return pages > 0 && page > 0 ? static_cast<size_t>(pages) * static_cast<size_t>(page) / 4
                                   : size_t{1} << 30;
    }();
    return l;
  }
  static void* map(size_t bytes) {
    void* b = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (b == MAP_FAILED) return nullptr;
    if (bytes >= kHugePage) ::madvise(b, bytes, MADV_HUGEPAGE);  // fewer TLB misses; advisory
    return b;
  }
  static void unmap(void* b, size_t bytes) {
    ::munmap(b, bytes);
    g_cpu_reserved.fetch_sub(static_cast<int64_t>(bytes), std::memory_order_relaxed);
  }

  std::mutex mu_;
  std::unordered_map<size_t, std::vector<void*>> free_;
  size_t cached_ = 0;
};

BlockCache& block_cache() {
  static BlockCache* cache = new BlockCache();  // never destroyed: tensors may outlive static teardown
  return *cache;
}

// What the profiler's "Total Reserved" shows: size-class blocks (live or cached) plus live small ones.
size_t reserved_now() {
  return static_cast<size_t>(g_cpu_reserved.load(std::memory_order_relaxed) +
                             g_cpu_small.load(std::memory_order_relaxed));
}

void tracked_free(void* data) {
  if (!data) return;
  BlockHeader* h = header_of(data);
  if (h->magic != kMagic) {  // made by libtorch's allocator before ours was installed
    c10::free_cpu(data);
    return;
  }
  const auto n = static_cast<int64_t>(h->requested);
  const int64_t now = g_cpu_current.fetch_sub(n, std::memory_order_relaxed) - n;
  if (c10::memoryProfilingEnabled())
    c10::reportMemoryUsageToProfiler(data, -n, static_cast<size_t>(now),
                                     reserved_now(),
                                     c10::Device(c10::DeviceType::CPU));
  const size_t block = h->block_bytes;
  h->magic = 0;
  if (block) {
    block_cache().give(h, block);
  } else {
    g_cpu_small.fetch_sub(n, std::memory_order_relaxed);
    c10::free_cpu(h);
  }
}

class TrackingCPUAllocator final : public c10::Allocator {
 public:
  c10::DataPtr allocate(size_t nbytes) override {
    const c10::Device cpu(c10::DeviceType::CPU);
    if (nbytes == 0) return {nullptr, nullptr, &tracked_free, cpu};
    const size_t need = nbytes + kHeader;
    void* base = nullptr;
    size_t block = 0;
    if (need >= kMinCached && g_cpu_caching.load(std::memory_order_relaxed)) {
      block = size_class(need);
      base = block_cache().take(block);
      TORCH_CHECK_WITH(OutOfMemoryError, base != nullptr, "CPU out of memory: cannot map ", block, " bytes");
    } else {
      base = c10::alloc_cpu(need);
      g_cpu_small.fetch_add(static_cast<int64_t>(nbytes), std::memory_order_relaxed);
    }
    auto* h = static_cast<BlockHeader*>(base);
    *h = BlockHeader{kMagic, nbytes, block};
    void* data = static_cast<char*>(base) + kHeader;
    const auto n = static_cast<int64_t>(nbytes);
    const int64_t now = g_cpu_current.fetch_add(n, std::memory_order_relaxed) + n;
    int64_t peak = g_cpu_peak.load(std::memory_order_relaxed);
    while (now > peak && !g_cpu_peak.compare_exchange_weak(peak, now, std::memory_order_relaxed)) {
    }
    // The profiler's "[memory]" events on CPU come from this report, as with libtorch's own allocator.
    if (c10::memoryProfilingEnabled())
      c10::reportMemoryUsageToProfiler(data, n, static_cast<size_t>(now),
                                       reserved_now(),
                                       cpu);
    return {data, data, &tracked_free, cpu};
  }

  c10::DeleterFnPtr raw_deleter() const override { return &tracked_free; }

  void copy_data(void* dest, const void* src, std::size_t count) const override {
    default_copy_data(dest, src, count);
  }
};

}  // namespace

void install_cpu_memory_tracking() {
  static std::once_flag once;
  std::call_once(once, [] {
    static TrackingCPUAllocator tracker;
    // Priority above the default so it stays in front of libtorch's own allocator.
    c10::SetCPUAllocator(&tracker, /*priority=*/10);
  });
}

void set_cpu_block_caching(bool enabled) { g_cpu_caching.store(enabled); }
int64_t cpu_tensor_bytes_current() { return g_cpu_current.load(std::memory_order_relaxed); }
int64_t cpu_tensor_bytes_peak() { return g_cpu_peak.load(std::memory_order_relaxed); }
void cpu_tensor_bytes_reset_peak() { g_cpu_peak.store(g_cpu_current.load()); }
int64_t cpu_cached_block_bytes() { return static_cast<int64_t>(block_cache().cached()); }
int64_t cpu_block_bytes_reserved() { return static_cast<int64_t>(reserved_now()); }
void cpu_release_cached_blocks() { block_cache().release(); }

int64_t process_peak_rss_bytes() {
  struct rusage ru {};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<int64_t>(ru.ru_maxrss) * 1024;
}

}  // namespace crosstrain::core
