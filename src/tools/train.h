#pragma once
// The training loop: model + synthetic (or injected) data + optimizer + mixed precision + loss
// scaler, timed step by step. One run per call; bench calls it once per precision.
//
//   TrainConfig cfg; cfg.model = "resnet18"; cfg.precision = "bf16";
//   TrainResult r = run_training(cfg);
//
// Throws std::invalid_argument for bad configurations (exit 2 at the CLI) and std::runtime_error
// for failures while running (out of memory, NaN loss in fp32, unreadable weights).
#include <functional>
#include <memory>
#include <ostream>
#include <vector>

#include "tools/train_config.h"

namespace crosstrain::core {
class BatchSource;
class ForwardObserver;
}  // namespace crosstrain::core

namespace crosstrain::tools {

class TrainObserver;

// Extension points for later stages (real data, dumps, profiling) without touching the loop.
struct TrainHooks {
  // Replaces the synthetic data when set; called once the device is known.
  std::function<std::unique_ptr<core::BatchSource>(const std::string& device)> make_source;
  std::vector<core::ForwardObserver*> observers;  // all see every module, in this order
  std::vector<TrainObserver*> train_observers;     // see tools/train_observer.h
  std::function<void(int64_t step)> on_step_begin;
  std::function<void(const StepRecord&)> on_step_end;
  // Where loss-scaler messages and warnings are printed as they happen (default: stderr).
  std::ostream* messages = nullptr;
};

TrainResult run_training(const TrainConfig& config, const TrainHooks& hooks = {});

// The learning rate a run uses: --lr, or 0.1 x batch / 256 when it is not set.
double effective_lr(const TrainConfig& config);

// Validates a configuration without running it (flag combinations, names, ranges).
void validate_config(const TrainConfig& config);

}  // namespace crosstrain::tools
