#pragma once
// One optimisation step made of phases, with everything around it attached as observers.
//
//   Trainer trainer(plan, device, std::move(parts));
//   trainer.add_observer(&log);                      // profiler, evaluation, dumps, ...
//   trainer.begin_run();
//   while (trainer.steps_done() < plan.resolved.steps) trainer.step();
//   trainer.end_run(result);
//
// A step runs, in order: Data (next batch), Forward (under autocast, loss in fp32), Backward (of
// the scaled loss when a scaler runs) -- these three once per micro-batch with --accumulate-steps K,
// each loss divided by K --, GradSync (data-parallel training: the Reducer all-reduced gradient
// buckets while the last backward ran and has waited for them at its end; the phase marks the
// point where gradients agree on every rank), UnscaleClip (unscale when someone needs true gradients, then gradient-norm
// clipping), OptimizerStep (skipped by the scaler on overflow), ScalerUpdate. Each phase is a
// user scope in profiles (tools/train/train_observer.h has the names) and costs nothing when nobody
// records. The step ends with loss.item() and a device synchronisation, so its time covers its
// device work.
//
// State is an API: state_dict() gathers the model, optimizer, loss scaler, schedule position, RNGs
// and data position (PyTorch's names and layouts where PyTorch has them), and load_state_dict() on a
// trainer built from the same plan continues the run exactly where it was taken.
#include <memory>
#include <stdexcept>
#include <vector>

#include "core/amp.h"
#include "core/batch_source.h"
#include "core/device.h"
#include "core/models.h"
#include "core/optim.h"
#include "core/state_dict.h"
#include "tools/dist/gradient_sync.h"
#include "tools/train/run_plan.h"
#include "tools/train/train_observer.h"

namespace crosstrain::train {

// What step() throws when the loss is NaN or infinite and no loss scaler is there to skip the
// step: the run's numbers went wrong, not its setup (align reports it as a divergence).
struct NonFiniteLoss : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct TrainerParts {
  std::shared_ptr<core::TrainableModel> model;  // on the device, in train mode
  std::unique_ptr<core::BatchSource> source;
  std::unique_ptr<core::MultiTensorOptimizer> optimizer;
  core::LrSchedule schedule;
  std::unique_ptr<core::GradScaler> scaler;     // null: no loss scaling
  dist::GradientSync* grad_sync = nullptr;      // data-parallel exchange (not owned); null: one process
};

// The optimizer (decay groups as the plan says), schedule and scaler for `model`; the model and the
// source come from the caller. `scaler_log` receives the scaler's messages.
TrainerParts make_trainer_parts(const RunPlan& plan, c10::Device device, std::shared_ptr<core::TrainableModel> model,
                                std::unique_ptr<core::BatchSource> source,
                                std::function<void(const std::string&)> scaler_log);

class Trainer {
 public:
  Trainer(RunPlan plan, const core::DeviceContext& device, TrainerParts parts);
  ~Trainer();
  Trainer(const Trainer&) = delete;
  Trainer& operator=(const Trainer&) = delete;

  // Observers are called in the order added (module exits in reverse: the last added sees an output
  // first, so a disturbance added after a dump is recorded by it). Add them before begin_run().
  void add_observer(TrainObserver* observer);
  void begin_run();
  StepRecord step();
  void end_run(TrainResult& result);

  int64_t steps_done() const { return step_; }
  // What the model and optimizer hold now, with the gradients at their largest so far.
  FixedStateBytes fixed_state() const;
  const RunPlan& plan() const { return plan_; }
  core::TrainableModel& model() { return *parts_.model; }
  core::MultiTensorOptimizer& optimizer() { return *parts_.optimizer; }
  core::GradScaler* scaler() { return parts_.scaler.get(); }
  core::BatchSource& source() { return *parts_.source; }

  // {"model", "optimizer", "scaler", "lr_scheduler", "rng", "data", "step"}, and "data_parallel"
  // ({"buckets": the gradient bucket layout}) once a data-parallel run has grouped its gradients.
  // Tensors are the live ones (snapshot them to keep them). "scaler" is {} without a loss scaler,
  // as in PyTorch.
  core::StateDict state_dict() const;
  // Loads all of `state` or nothing: when any part does not fit, the trainer is put back as it was
  // (from a copy in host memory) and the error rethrown, std::invalid_argument naming the part and
  // key. So a caller may try one state after another (--resume auto).
  void load_state_dict(const core::StateDict& state);

 private:
  class ModuleEvents;
  void apply_state_dict(const core::StateDict& state);
  core::Batch data_phase();
  at::Tensor forward_phase(const core::Batch& batch, bool sync);
  void notify_loss(const at::Tensor& loss);
  void backward_phase(const at::Tensor& loss);
  double reported_loss(const at::Tensor& loss);
  void grad_sync_phase();
  void unscale_clip_phase(const std::vector<at::Tensor>& grads);
  bool optimizer_phase(const std::vector<at::Tensor>& grads);
  void scaler_update_phase();
  void report_grads(bool scaled);
  bool want_grads() const;

  RunPlan plan_;
  const core::DeviceContext& device_;
  TrainerParts parts_;
  std::vector<TrainObserver*> observers_;
  std::unique_ptr<ModuleEvents> module_events_;
  int64_t step_ = 0;
  int64_t gradient_bytes_ = 0;  // the most a step's gradients held
  bool running_ = false;
};

}  // namespace crosstrain::train
