#pragma once
// What a training run shows to whoever watches it (dumps, checks), without the loop knowing who.
// All callbacks run on the training thread, in this order per step:
//   on_step_begin -> (forward: the forward_observer() sees every module) -> on_loss ->
//   on_param_grads(scaled = true) when a loss scaler runs -> on_param_grads(scaled = false) -> on_step_end
#include <ATen/ATen.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "tools/train_config.h"

namespace crosstrain::core {
class ForwardObserver;
}

namespace crosstrain::tools {

using NamedTensors = std::vector<std::pair<std::string, at::Tensor>>;

class TrainObserver {
 public:
  virtual ~TrainObserver() = default;
  virtual void on_step_begin(int64_t step) {}
  // The loss as computed (before scaling) and the loss scale in force (nullopt without a scaler).
  virtual void on_loss(int64_t step, const at::Tensor& loss, std::optional<double> loss_scale) {}
  // Parameter gradients by state-dict name. With a loss scaler: first as backward left them
  // (scaled = true), then divided by the scale (scaled = false); without one only scaled = false.
  virtual void on_param_grads(int64_t step, bool scaled, const NamedTensors& grads) {}
  virtual void on_step_end(const StepRecord& record) {}
  // Sees every module's forward output; may be null.
  virtual core::ForwardObserver* forward_observer() { return nullptr; }
};

}  // namespace crosstrain::tools
