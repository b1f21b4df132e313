#pragma once
// Renderers for `crosstrain bench`: the runs of one model at several precisions side by side.
// Torch-free.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tools/train/train_config.h"

namespace crosstrain::bench {

// Rows: throughput, peak memory, the fixed state, the memory floor and peak / floor
// (tools/bench/memory_floor.h; "n/a" for fp32 and without an fp32 run), batch time (median, p90),
// first step, final loss, skipped steps, achieved TFLOP/s, utilization; columns: one per run plus
// a change column vs the first run. A line saying what the floor is follows the table when one was
// computed, then the runs' notes (a precision this CPU emulates, a lowered warm-up), once each.
std::string render_comparison(const std::vector<train::TrainResult>& runs);
// Every run's train_result_to_json() with its "memory_floor" (null where render_comparison says
// n/a), the ratios of the last run to the first, the precisions this CPU emulates
// ("emulated_precisions") and the runs' notes once each ("notes").
nlohmann::json bench_to_json(const std::vector<train::TrainResult>& runs);

}  // namespace crosstrain::bench
