#include "core/device.h"

#include "core/backend/backend_library.h"

#include <ATen/Context.h>
#include <ATen/DeviceAccelerator.h>
#include <ATen/Parallel.h>
#include <c10/core/Allocator.h>
#include <c10/core/CachingDeviceAllocator.h>
#include <c10/core/DeviceType.h>
#include <c10/util/Exception.h>
#include <dlfcn.h>
#include <torch/cuda.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <fstream>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <unordered_map>
#include <unordered_set>

#if __has_include(<cuda_runtime_api.h>)
#define CROSSTRAIN_HAVE_CUDA 1
#include <cuda_runtime_api.h>
#endif

#include "core/cpu_allocator.h"

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

int64_t storage_bytes(const std::vector<at::Tensor>& tensors) {
  std::unordered_set<const void*> seen;
  int64_t bytes = 0;
  for (const auto& t : tensors) {
    if (!t.defined() || !t.has_storage()) continue;
    const auto& storage = t.storage();
    if (seen.insert(storage.unsafeGetStorageImpl()).second) bytes += static_cast<int64_t>(storage.nbytes());
  }
  return bytes;
}

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
    // What the run computes with, next to what the machine has.
    info.description += ", " + std::to_string(std::thread::hardware_concurrency()) + " hardware threads, " +
                        std::to_string(at::get_num_threads()) + " intra-op";
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

}  // namespace crosstrain::core
