#pragma once
// `crosstrain bench`: the same model, batch and seed trained once per precision, compared.
// Defaults are sized by device so the default run is short (CPU: < 3 min on 2 cores; GPU: < 1 min).
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "tools/train/train_config.h"

namespace crosstrain::bench {

struct BenchOptions {
  train::TrainConfig base;                     // device, optimizer, seed, ... shared by every run
  // Unset fields take the device's defaults (see bench_defaults).
  std::optional<std::string> model;
  std::optional<int64_t> batch_size, image_size, steps, warmup_steps;
  std::vector<std::string> precisions;  // empty: fp32 then the device's AMP precision
};

// Fills model/batch/image/steps for a device kind ("cpu" or an accelerator).
void bench_defaults(train::TrainConfig& config, bool cpu);

std::vector<train::TrainResult> run_bench(const BenchOptions& options, std::ostream* messages = nullptr);

}  // namespace crosstrain::bench
