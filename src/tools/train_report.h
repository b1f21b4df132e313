#pragma once
// Renderers for training results: the summary table of one run, the FP32-vs-AMP comparison of
// several, and their JSON. Torch-free.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tools/train_config.h"

namespace crosstrain::tools {

nlohmann::json train_result_to_json(const TrainResult& r);
std::string render_train_summary(const TrainResult& r);

// Rows: throughput, peak memory, batch time (median, p90), first step, final loss, skipped steps,
// achieved TFLOP/s, utilization; columns: one per run plus a change column vs the first run.
std::string render_comparison(const std::vector<TrainResult>& runs);
nlohmann::json bench_to_json(const std::vector<TrainResult>& runs);

}  // namespace crosstrain::tools
