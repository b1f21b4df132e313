#include "core/step_stats.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace crosstrain::core {

double percentile(std::vector<double> values, double q) {
  if (values.empty()) return 0.0;
  std::sort(values.begin(), values.end());
  const double pos = q * static_cast<double>(values.size() - 1);
  const auto lo = static_cast<size_t>(std::floor(pos));
  const size_t hi = std::min(lo + 1, values.size() - 1);
  return values[lo] + (values[hi] - values[lo]) * (pos - static_cast<double>(lo));
}

StepTimeStats summarize_step_times(const std::vector<double>& ms) {
  StepTimeStats s;
  s.count = ms.size();
  if (ms.empty()) return s;
  s.median_ms = percentile(ms, 0.5);
  s.p90_ms = percentile(ms, 0.9);
  s.total_ms = std::accumulate(ms.begin(), ms.end(), 0.0);
  s.mean_ms = s.total_ms / static_cast<double>(ms.size());
  auto [mn, mx] = std::minmax_element(ms.begin(), ms.end());
  s.min_ms = *mn;
  s.max_ms = *mx;
  return s;
}

}  // namespace crosstrain::core
