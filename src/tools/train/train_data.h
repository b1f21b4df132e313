#pragma once
// The trainer's data: opening the training and validation splits of `--data KIND:PATH` with the
// right transforms, and the evaluation pass (top-1 / top-5 on the validation split).
#include <memory>
#include <optional>
#include <string>

#include "core/loader_source.h"
#include "core/models.h"
#include "tools/train/precision.h"
#include "tools/train/train_config.h"

namespace crosstrain::train {

struct TrainData {
  std::shared_ptr<const data::Dataset> train;
  std::shared_ptr<const data::Dataset> val;  // opened on demand (evaluation)
  int64_t image_size = 0;                     // resolved output size
  int64_t num_classes = 0;
};

// Opens the training split (and checks the validation split exists when evaluation is asked
// for). Throws std::invalid_argument for bad specs, std::runtime_error for unreadable data.
TrainData open_train_data(const TrainConfig& config);
// Whether --data has a validation split: image trees need ROOT/train + ROOT/val or --val-root;
// the fixed datasets (idx, cifar, synthetic) always have one.
bool data_has_val_split(const TrainConfig& config);
std::shared_ptr<const data::Dataset> open_val_data(const TrainConfig& config, int64_t image_size);

std::unique_ptr<core::LoaderSource> make_loader_source(const TrainConfig& config,
                                                       std::shared_ptr<const data::Dataset> dataset,
                                                       c10::Device device, bool training);

// One pass over the validation split in eval mode, under the run's autocast.
EvalRecord evaluate(core::TrainableModel& model, core::LoaderSource& val, const PrecisionPlan& plan, c10::Device device);

}  // namespace crosstrain::train
