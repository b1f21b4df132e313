#pragma once
// The flags `train` and `bench` share, bound to a TrainConfig.
#include <CLI/CLI.hpp>

#include "tools/train/train_config.h"

namespace crosstrain::cli {

// Device, numerics and optimisation flags (both commands).
void add_common_train_flags(CLI::App* cmd, train::TrainConfig& c);

}  // namespace crosstrain::cli
