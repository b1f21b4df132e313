#pragma once
// Renderers for one training run: its summary table and its JSON. Torch-free. The comparison of
// several runs (bench) is in tools/bench/bench_report.h.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tools/train/train_config.h"

namespace crosstrain::train {

nlohmann::json train_result_to_json(const TrainResult& r);
std::string render_train_summary(const TrainResult& r);

}  // namespace crosstrain::train
