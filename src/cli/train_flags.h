#pragma once
// The flags `train` and `bench` share, bound to a TrainConfig.
#include <CLI/CLI.hpp>

#include "tools/train_config.h"

namespace crosstrain::cli {

// Device, numerics and optimisation flags (both commands).
void add_common_train_flags(CLI::App* cmd, tools::TrainConfig& c);

}  // namespace crosstrain::cli
