#pragma once
// One training run of a checked request (tools/train/checked_config.h): joins its process group,
// opens the data, resolves the plan (tools/train/run_plan.h), builds the model and a Trainer
// (tools/train/trainer.h), attaches the observers the flags ask for (log, profiler, evaluation,
// progress) and runs the steps. bench calls it once per precision, on the device it opened.
//
//   TrainConfig cfg; cfg.model = "resnet18"; cfg.precision = "bf16";
//   TrainResult r = run_training(check_config(cfg));
//
// Throws std::invalid_argument for a request that does not fit the device or the data (exit 2 at
// the CLI) and std::runtime_error for failures while running (out of memory, NaN loss in fp32,
// unreadable weights).
#include <functional>
#include <memory>
#include <ostream>
#include <vector>

#include "tools/train/checked_config.h"
#include "tools/train/train_config.h"

namespace crosstrain::core {
class BatchSource;
class DeviceContext;
}  // namespace crosstrain::core

namespace crosstrain::train {

class TrainObserver;

// What a caller adds to a run: its own data and its own observers (dumps, checks).
struct TrainHooks {
  // The device to run on, already opened by the caller (bench opens one for all its runs); when
  // null the run opens the configuration's (cuda:LOCAL_RANK in a process group).
  const core::DeviceContext* device = nullptr;
  // Replaces the synthetic data when set; called once the device is known.
  std::function<std::unique_ptr<core::BatchSource>(const std::string& device)> make_source;
  // Attached after the profiler and before the run's own observers (tools/train/train_observer.h).
  std::vector<TrainObserver*> train_observers;
  // Where loss-scaler messages, notes and warnings are printed as they happen (default: stderr).
  std::ostream* messages = nullptr;
  // Notes the caller has already printed (bench and align say a precision's emulation once, before
  // their first run): not printed again, still in the result's notes.
  std::vector<std::string> notes_said;
};

TrainResult run_training(const CheckedConfig& config, const TrainHooks& hooks = {});

// The learning rate a run uses: --lr, or 0.1 x batch / 256 when it is not set.
double effective_lr(const TrainConfig& config);

}  // namespace crosstrain::train
