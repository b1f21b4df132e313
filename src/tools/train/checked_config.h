#pragma once
// The first of a run's two steps: a request (a TrainConfig) checked once, on its own and against
// this process (its worker environment, its hardware threads), before anything is opened. The
// second is resolve (tools/train/run_plan.h), which fits the checked request to the opened device
// and data. A command checks each request once, as early as it can (before it writes an output or
// starts a first run), and hands the result on: run_training and resolve take only a CheckedConfig,
// so no check is repeated and none is skipped.
//
//   const CheckedConfig checked = check_config(config);   // std::invalid_argument on a bad request
//   run_training(checked, hooks);
//
// Torch-free.
#include <optional>

#include "tools/dist/worker_env.h"
#include "tools/train/train_config.h"

namespace crosstrain::train {

class CheckedConfig;

// Ranges, names and flag combinations; --sync-bn without a process group; --keep-last on more than
// one rank; --threads beyond this machine's hardware threads. `launched`: the launcher's worker
// environment (torchrun's variables), nullopt when not launched as a worker; --distributed without
// one is a group of one process.
CheckedConfig check_config(const TrainConfig& config,
                           const std::optional<dist::WorkerEnv>& launched = dist::WorkerEnv::from_environment());

// Made only by check_config.
class CheckedConfig {
 public:
  // As given.
  const TrainConfig& requested() const { return requested_; }
  // As this process runs it: in a process group, the group's rank and size, and a trace folder
  // per rank (DIR/rank<R>, which analyze reads as one run).
  const TrainConfig& config() const { return config_; }
  // The process group the run joins; nullopt: one process, no group.
  const std::optional<dist::WorkerEnv>& workers() const { return workers_; }

 private:
  friend CheckedConfig check_config(const TrainConfig&, const std::optional<dist::WorkerEnv>&);
  CheckedConfig() = default;
  TrainConfig requested_, config_;
  std::optional<dist::WorkerEnv> workers_;
};

}  // namespace crosstrain::train
