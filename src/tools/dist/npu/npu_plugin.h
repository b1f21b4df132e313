#pragma once
// The part of crosstrain that calls torch_npu's C++ API, built as its own shared library
// (libcrosstrain_npu.so) against the headers of the torch_npu wheel. crosstrain itself never links
// torch_npu: it dlopen()s libtorch_npu.so (--backend-lib) and then this plugin, and reaches the
// plugin only through the C table below, so a build without torch_npu, and a machine without
// CANN, are unaffected.
//
// Why these APIs (docs/ASCEND.md has the details):
//   - memory: torch_npu 2.11's NPUCachingAllocator derives from c10::Allocator, not from
//     c10::DeviceAllocator, so libtorch's generic device statistics find nothing on an NPU;
//     c10_npu::NPUCachingAllocator::getDeviceStats / resetPeakStats are the source.
//   - devices: c10_npu::device_count.
//   - HCCL: c10d_npu::ProcessGroupHCCL is torch_npu's c10d backend; distributed training on NPUs
//     constructs it over a c10d store, as ProcessGroupNCCL is constructed on CUDA.
//
//   auto* api = reinterpret_cast<const CrosstrainNpuApi* (*)()>(dlsym(h, "crosstrain_npu_api"))();
//   int64_t stats[3]; api->memory_stats(0, stats);   // current, peak, reserved bytes
#include <cstdint>

extern "C" {

struct CrosstrainNpuApi {
  int abi_version;  // kCrosstrainNpuAbi
  int (*device_count)();
  // Bytes allocated now, peak allocated, reserved by the caching allocator. 0 on success, else -1
  // and error_message() says why.
  int (*memory_stats)(int device, int64_t out[3]);
  int (*reset_peak_memory)(int device);
  // Constructs a ProcessGroupHCCL over *store (a c10::intrusive_ptr<c10d::Store>*) and stores the
  // new c10::intrusive_ptr<c10d::Backend> into *backend_out (an intrusive_ptr the caller owns).
  // The caller registers it on its c10d::ProcessGroup for DeviceType::PrivateUse1, as torch_npu's
  // Python side does for the "hccl" backend.
  int (*make_hccl_backend)(const void* store, int rank, int world_size, int64_t timeout_ms, void* backend_out);
  const char* (*error_message)();  // the last failure of this thread
};

constexpr int kCrosstrainNpuAbi = 1;

const CrosstrainNpuApi* crosstrain_npu_api();
}
