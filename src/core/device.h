#pragma once
// One interface for the devices crosstrain trains on: parse a device string, load out-of-tree
// backends, synchronize, and read memory statistics.
//
//   load_backend_libraries({"/path/libtorch_npu.so"});   // registers PrivateUse1 as "npu"
//   DeviceContext dev = DeviceContext::open("npu:0");      // or "auto", "cpu", "cuda:1"
//   dev.reset_peak_memory(); ...; dev.synchronize(); auto peak = dev.memory().peak_bytes;
//
// Where a device keeps no statistics the fields are std::nullopt and reports print "n/a".
#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace crosstrain::core {

struct MemoryStats {
  std::optional<int64_t> current_bytes;   // bytes held by tensors now
  std::optional<int64_t> peak_bytes;      // max of current_bytes since the last reset
  std::optional<int64_t> reserved_bytes;  // held by a caching allocator
  std::optional<int64_t> total_bytes;     // device capacity
};

struct DeviceInfo {
  std::string name;            // "cpu", "cuda:0", "npu:0"
  std::string description;     // "NVIDIA H200", "x86_64, 2 threads"
  std::optional<int64_t> total_memory;
  std::string capability;      // "9.0" for CUDA, empty elsewhere
};

// Bytes of the distinct storages behind `tensors`, undefined and storage-less ones skipped: views of one storage (a
// gradient bucket) count once, as the allocator holds them.
int64_t storage_bytes(const std::vector<at::Tensor>& tensors);

// dlopen()s each library (RTLD_GLOBAL) so its static initializers register the backend.
// Throws std::runtime_error naming the library and dlerror() on failure.
void load_backend_libraries(const std::vector<std::string>& paths);

// Name the PrivateUse1 backend was registered under ("npu" for torch_npu), if any.
std::optional<std::string> privateuse1_backend_name();

class DeviceContext {
 public:
  // "auto" -> cuda:0 when CUDA is available, else cpu. Throws std::invalid_argument for an unknown
  // device type or an index out of range (the message lists what is available).
  static DeviceContext open(const std::string& spec);

  const c10::Device& device() const { return device_; }
  std::string name() const { return device_.str(); }
  bool is_cpu() const { return device_.is_cpu(); }
  bool is_cuda() const { return device_.is_cuda(); }

  void synchronize() const;
  MemoryStats memory() const;
  void reset_peak_memory() const;
  DeviceInfo info() const;

 private:
  explicit DeviceContext(c10::Device d) : device_(d) {}
  c10::Device device_;
};

}  // namespace crosstrain::core
