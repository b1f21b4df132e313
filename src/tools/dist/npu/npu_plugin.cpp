// libcrosstrain_npu.so: crosstrain's calls into torch_npu's C++ API (see npu_plugin.h). Compiled
// and linked against the torch_npu wheel's headers and libtorch_npu.so wherever the wheel is
// unpacked; it runs only where CANN and an NPU are present.
#include "tools/dist/npu/npu_plugin.h"

#include <c10d/Store.hpp>
#include <torch_npu/csrc/core/npu/NPUCachingAllocator.h>
#include <torch_npu/csrc/core/npu/NPUFunctions.h>
#include <torch_npu/csrc/distributed/ProcessGroupHCCL.hpp>

#include <chrono>
#include <exception>
#include <string>

namespace {

thread_local std::string last_error;

template <typename F>
int guarded(F&& f) {
  try {
    f();
    return 0;
  } catch (const std::exception& e) {
    last_error = e.what();
  } catch (...) {
    last_error = "unknown exception from torch_npu";
  }
  return -1;
}

int device_count() { return static_cast<int>(c10_npu::device_count()); }

int memory_stats(int device, int64_t out[3]) {
  return guarded([&] {
    const auto stats = c10_npu::NPUCachingAllocator::getDeviceStats(device);
    const auto aggregate = static_cast<size_t>(c10_npu::NPUCachingAllocator::StatType::AGGREGATE);
    out[0] = stats.allocated_bytes[aggregate].current;
    out[1] = stats.allocated_bytes[aggregate].peak;
    out[2] = stats.reserved_bytes[aggregate].current;
  });
}

int reset_peak_memory(int device) { return guarded([&] { c10_npu::NPUCachingAllocator::resetPeakStats(device); }); }

int make_hccl_backend(const void* store, int rank, int world_size, int64_t timeout_ms, void* backend_out) {
  return guarded([&] {
    const auto& s = *static_cast<const c10::intrusive_ptr<c10d::Store>*>(store);
    auto options = c10d_npu::ProcessGroupHCCL::Options::create();
    options->timeout = std::chrono::milliseconds(timeout_ms);
    c10::intrusive_ptr<c10d::Backend> backend = c10::make_intrusive<c10d_npu::ProcessGroupHCCL>(s, rank, world_size, options);
    *static_cast<c10::intrusive_ptr<c10d::Backend>*>(backend_out) = std::move(backend);
  });
}

const char* error_message() { return last_error.c_str(); }

const CrosstrainNpuApi kApi = {kCrosstrainNpuAbi, device_count, memory_stats, reset_peak_memory, make_hccl_backend,
                               error_message};

}  // namespace

extern "C" __attribute__((visibility("default"))) const CrosstrainNpuApi* crosstrain_npu_api() { return &kApi; }
