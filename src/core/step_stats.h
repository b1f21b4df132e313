#pragma once
// Summary statistics of per-step times. Torch-free.
#include <vector>

namespace crosstrain::core {

struct StepTimeStats {
  double median_ms = 0;
  double p90_ms = 0;
  double mean_ms = 0;
  double min_ms = 0;
  double max_ms = 0;
  double total_ms = 0;
  size_t count = 0;
};

// Percentiles by linear interpolation between closest ranks (numpy's default).
double percentile(std::vector<double> values, double q);
StepTimeStats summarize_step_times(const std::vector<double>& ms);

}  // namespace crosstrain::core
