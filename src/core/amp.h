#pragma once
// Mixed precision: an autocast scope and a loss scaler, for any device libtorch drives.
//
// The training step with fp16 looks like this (bf16 usually needs no scaler):
//
//   GradScaler scaler(device, GradScalerOptions{});        // dynamic, initial scale 65536
//   { AutocastGuard ac(device.type(), at::kHalf); loss = criterion(model(x), y); }
//   scaler.scale(loss).backward();                         // backward runs outside autocast
//   scaler.unscale(grads);                                 // optional: before gradient clipping
//   bool stepped = scaler.step(grads, [&] { optimizer.step(); });
//   scaler.update();
//
// Dynamic scaling: the scale doubles after `growth_interval` consecutive finite steps and halves on
// an overflow, whose step is skipped. The overflow check and unscale use the fused ATen kernels
// (_amp_foreach_non_finite_check_and_unscale_, _amp_update_scale_) where the device registers them
// and an equivalent sequence of plain tensor ops where it does not (common for out-of-tree
// backends). Messages go to the `log` callback, word for word:
//   "Gradient overflow. Skipping step"
//   "Loss scaler reducing loss scale to 32768.0"
//   "Loss scaler increasing loss scale to 131072.0"
#include <ATen/ATen.h>

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/state_dict.h"

namespace crosstrain::core {

// Enables autocast for one device type with one dtype for the guard's lifetime; nests (the
// previous state comes back on exit) and clears the cast cache when the outermost guard exits.
// A guard built with std::nullopt disables autocast inside its scope.
class AutocastGuard {
 public:
  AutocastGuard(c10::DeviceType device_type, std::optional<at::ScalarType> dtype);
  ~AutocastGuard();
  AutocastGuard(const AutocastGuard&) = delete;
  AutocastGuard& operator=(const AutocastGuard&) = delete;

 private:
  c10::DeviceType device_type_;
  bool prev_enabled_;
  at::ScalarType prev_dtype_;
};

enum class ScalerKernels { Auto, Fused, Portable };

struct GradScalerOptions {
  double init_scale = 65536.0;
  double growth_factor = 2.0;
  double backoff_factor = 0.5;
  int64_t growth_interval = 2000;
  bool dynamic = true;  // false: a static scale that never changes (overflowing steps still skip)
  ScalerKernels kernels = ScalerKernels::Auto;
};

struct GradScalerState {
  double scale = 65536.0;
  int64_t growth_tracker = 0;  // consecutive finite steps since the last change
  int64_t skipped_steps = 0;
  int64_t total_steps = 0;
};

class GradScaler {
 public:
  GradScaler(c10::Device device, GradScalerOptions options,
             std::function<void(const std::string&)> log = nullptr);

  at::Tensor scale(const at::Tensor& loss) const;
  // Divides every gradient by the scale in place and records whether any is inf/NaN. At most once
  // per step; step() calls it when the caller did not.
  void unscale(const std::vector<at::Tensor>& grads);
  // Runs `optimizer_step` unless an overflow was found; returns whether it ran.
  bool step(const std::vector<at::Tensor>& grads, const std::function<void()>& optimizer_step);
  // Adjusts the scale for the next step (dynamic mode) and logs changes.
  void update();

  double current_scale() const { return state_.scale; }
  bool uses_fused_kernels() const { return fused_; }
  const GradScalerState& state() const { return state_; }
  void load_state(const GradScalerState& s);
  // torch.amp.GradScaler.state_dict()'s keys (scale, growth_factor, backoff_factor,
  // growth_interval, _growth_tracker) plus skipped_steps and total_steps, which Python ignores.
  StateDict state_dict() const;
  // Takes scale and _growth_tracker (and the counters when present); the factors and interval are
  // configuration and stay as constructed. std::invalid_argument for a malformed dict.
  void load_state_dict(const StateDict& state);

 private:
  bool check_and_unscale(const std::vector<at::Tensor>& grads);

  c10::Device device_;
  GradScalerOptions opt_;
  std::function<void(const std::string&)> log_;
  bool fused_;
  GradScalerState state_;
  at::Tensor scale_tensor_;        // device copy of state_.scale (multiplies the loss)
  at::Tensor growth_tracker_tensor_;
  at::Tensor found_inf_;           // device float, 1.0 when an overflow was seen this step
  bool unscaled_this_step_ = false;
  bool found_inf_host_ = false;
};

}  // namespace crosstrain::core
