#pragma once
// The one place that knows about differences between libtorch versions and builds. Everything
// else calls these functions instead of testing versions itself. Supported: libtorch 2.x (the
// pinned wheel is 2.11.0); the autocast API took a device type from 2.3 on.
#include <ATen/autocast_mode.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <c10/core/DeviceType.h>
#include <torch/version.h>

#include <string>

namespace crosstrain::core::compat {

inline std::string torch_version() { return TORCH_VERSION; }

// True when the build registers a kernel for `op` (e.g. "aten::_fused_sgd_") on `device_type`.
// Out-of-tree backends often lack the fused and AMP kernels; callers then take a portable path.
inline bool has_kernel(const char* op, c10::DeviceType device_type) {
  auto handle = c10::Dispatcher::singleton().findSchema({op, ""});
  if (!handle) return false;
  c10::DispatchKey key;
  switch (device_type) {
    case c10::DeviceType::CPU: key = c10::DispatchKey::CPU; break;
    case c10::DeviceType::CUDA: key = c10::DispatchKey::CUDA; break;
    case c10::DeviceType::PrivateUse1: key = c10::DispatchKey::PrivateUse1; break;
    default: return false;
  }
  return handle->hasKernelForDispatchKey(key) ||
         handle->hasKernelForDispatchKey(c10::DispatchKey::CompositeExplicitAutograd);
}

struct AutocastState {
  bool enabled;
  at::ScalarType dtype;
};

inline AutocastState autocast_state(c10::DeviceType d) {
  return {at::autocast::is_autocast_enabled(d), at::autocast::get_autocast_dtype(d)};
}

inline void set_autocast_state(c10::DeviceType d, AutocastState s) {
  at::autocast::set_autocast_enabled(d, s.enabled);
  at::autocast::set_autocast_dtype(d, s.dtype);
}

}  // namespace crosstrain::core::compat
