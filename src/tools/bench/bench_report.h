#pragma once
// Renderers for `crosstrain bench`: the runs of one model at several precisions side by side.
// Torch-free.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tools/train/train_config.h"

namespace crosstrain::bench {

// Rows: throughput, peak memory, batch time (median, p90), first step, final loss, skipped steps,
// achieved TFLOP/s, utilization; columns: one per run plus a change column vs the first run. The
// runs' notes (a precision this CPU emulates, a lowered warm-up) follow the table, once each.
std::string render_comparison(const std::vector<train::TrainResult>& runs);
// Every run's train_result_to_json(), the ratios of the last run to the first, the precisions this
// CPU emulates ("emulated_precisions") and the runs' notes once each ("notes").
nlohmann::json bench_to_json(const std::vector<train::TrainResult>& runs);

}  // namespace crosstrain::bench
