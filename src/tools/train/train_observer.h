#pragma once
// The one way to watch a training run. The profiler, evaluation, the JSON-lines log, the progress
// line, dumps and the summary's statistics are all observers; the trainer knows none of them.
//
// All callbacks run on the training thread (module exits of backward-time hooks excepted: see
// DumpSession), in this order:
//   on_run_begin
//   per step: on_step_begin ->
//     per micro-batch (1, or K with --accumulate-steps K): on_micro_batch -> phase Data ->
//       phase Forward (on_module_enter / on_module_exit per module) -> on_loss -> phase Backward ->
//     phase GradSync ->
//     [on_param_grads(scaled = true) with a loss scaler] -> phase UnscaleClip ->
//     on_param_grads(scaled = false) -> phase OptimizerStep -> phase ScalerUpdate -> on_step_end
//   on_run_end
// Each phase is bracketed by on_phase_begin / on_phase_end, also when it has nothing to do.
#include <ATen/ATen.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "tools/train/train_config.h"

namespace crosstrain::train {

struct RunPlan;

using NamedTensors = std::vector<std::pair<std::string, at::Tensor>>;

enum class Phase { Data, Forward, Backward, GradSync, UnscaleClip, OptimizerStep, ScalerUpdate };
// The phase's user-scope name in profiles: data_wait, forward, backward, grad_sync, unscale_clip,
// optimizer_step, scaler_update.
const char* phase_name(Phase phase);

class TrainObserver {
 public:
  virtual ~TrainObserver() = default;
  virtual void on_run_begin(const RunPlan& plan) {}
  virtual void on_step_begin(int64_t step) {}
  // Micro-batch `micro` of `count` in this step begins. Each backward gets the micro-batch's loss
  // divided by `count`, so gradients seen in backward hooks are 1/count of the micro-batch's own.
  virtual void on_micro_batch(int64_t step, int64_t micro, int64_t count) {}
  virtual void on_phase_begin(int64_t step, Phase phase) {}
  virtual void on_phase_end(int64_t step, Phase phase) {}
  // Every module of the model, by torchvision name, nested (a block's leaves run inside it).
  virtual void on_module_enter(const std::string& module) {}
  // May return a replacement output (test disturbances). Only called for observers that say they
  // read outputs, or want module events at all; see wants_module_events().
  virtual at::Tensor on_module_exit(const std::string& module, const at::Tensor& output) { return output; }
  // Whether this observer wants module events, and whether it keeps or reads module outputs (the
  // model then runs without in-place ReLU / residual adds, which would change what it was handed).
  virtual bool wants_module_events() const { return false; }
  virtual bool reads_module_outputs() const { return false; }
  // The micro-batch's loss as computed (before scaling, and before the 1/K of accumulation) and the
  // loss scale in force (nullopt without a scaler). The step's loss is in on_step_end's record.
  virtual void on_loss(int64_t step, const at::Tensor& loss, std::optional<double> loss_scale) {}
  // Parameter gradients by state-dict name, built only when some observer wants them. With a loss
  // scaler: first as backward left them (scaled = true), then divided by the scale (scaled = false).
  virtual bool wants_param_grads() const { return false; }
  virtual void on_param_grads(int64_t step, bool scaled, const NamedTensors& grads) {}
  virtual void on_step_end(const StepRecord& record) {}
  // The result so far (steps, device, sizes); observers add what they measured.
  virtual void on_run_end(TrainResult& result) {}
};

}  // namespace crosstrain::train
