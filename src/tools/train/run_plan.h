#pragma once
// From what the user asked to what a run does (a RunPlan of typed, resolved values), in two steps:
// check_config (tools/train/checked_config.h) checks the request once, before anything is opened;
// resolve fits the checked request to the opened device and data. Every check of a configuration
// happens in one of the two; the CLI only parses.
//
//   const CheckedConfig checked = check_config(config);        // std::invalid_argument on a bad request
//   RunPlan plan = resolve(checked, device, data_facts);       // ... on a request that does not fit
//   plan.resolved.steps, plan.precision.autocast_dtype, plan.optimizer, plan.notes ...
//
// `asked` is the checked request as this process runs it and is never changed; `resolved` has every
// derived value filled in: the learning rate (linear scaling rule), image size and class count (from
// the dataset), steps (from --epochs), warm-up steps. A default that does not fit the request is
// adjusted and said in `notes` (the summary prints them); an explicit value that does not fit is an
// error.
#include <optional>
#include <string>
#include <vector>

#include "core/amp.h"
#include "core/batch_source.h"
#include "core/device.h"
#include "core/models.h"
#include "core/optim.h"
#include "tools/train/checked_config.h"
#include "tools/train/precision.h"
#include "tools/train/train_config.h"

namespace crosstrain::train {

enum class CpuAllocator { Caching, System };
enum class ProfileRecorder { Auto, Kineto, Portable };

// What an opened training dataset decides.
struct DataFacts {
  int64_t num_classes = 0;
  int64_t image_size = 0;
  int64_t batches_per_epoch = 0;
  int64_t train_samples = 0;
  bool has_val_split = true;
};

struct RunPlan {
  TrainConfig asked;
  TrainConfig resolved;
  PrecisionPlan precision;
  core::OptimizerKind optimizer = core::OptimizerKind::SGD;
  core::OptimizerKernels optimizer_kernels = core::OptimizerKernels::Auto;
  core::ScalerKernels scaler_kernels = core::ScalerKernels::Auto;
  core::ScheduleKind schedule = core::ScheduleKind::Constant;
  CpuAllocator cpu_allocator = CpuAllocator::Caching;
  ProfileRecorder profile_recorder = ProfileRecorder::Auto;
  std::vector<std::string> notes;  // defaults adjusted to fit the request
};

// `data`: the facts of the opened dataset when the run reads one (--data), else nullopt. On the CPU,
// a model whose weights, gradients and optimizer state alone exceed the machine's memory is refused.
RunPlan resolve(const CheckedConfig& config, const core::DeviceContext& device,
                const std::optional<DataFacts>& data = std::nullopt);

// A command's own default timing warm-up (`preferred` steps, the user gave none) made to fit a run
// of `steps`: at most steps - 1, so one step is timed. A lowered value is said in `notes`, as every
// command with steps and a warm-up (train, bench) says it.
int64_t fit_default_warmup(int64_t preferred, int64_t steps, std::vector<std::string>& notes);

// The profiler's schedule (--profile-wait, --profile-warmup) made to reach its first recorded step
// within `steps`: the default schedule's warm-up, then its wait, are lowered until one step is
// recorded, and said in `notes` (a short run used to write no trace and say nothing). A schedule
// the user changed that does not fit is std::invalid_argument when `explicit_fits` (the step count
// was known when it was given), else lowered too.
void fit_profile_schedule(profile::ProfileOptions& options, int64_t steps, bool explicit_fits,
                          std::vector<std::string>& notes);

// Optimizer steps per epoch of the data: batches per rank / --accumulate-steps.
int64_t steps_per_epoch(const TrainConfig& config, const DataFacts& data);
// Samples per optimizer step over all ranks.
int64_t global_batch(const TrainConfig& config);

// The model and the synthetic batches a configuration asks for: every model or synthetic source
// built from a TrainConfig gets its options here (a rank's synthetic batches are seeded by
// --seed + rank, so ranks see different ones).
core::ModelOptions model_options(const TrainConfig& config);
core::SyntheticOptions synthetic_options(const TrainConfig& config);

// The parts' options as the plan says.
core::GradScalerOptions scaler_options(const RunPlan& plan);
core::OptimizerOptions optimizer_options(const RunPlan& plan);
core::LrSchedule lr_schedule(const RunPlan& plan);

}  // namespace crosstrain::train
