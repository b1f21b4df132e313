#include "tools/bench/memory_floor.h"

#include <algorithm>
#include <cmath>

namespace crosstrain::bench {

double MemoryFloor::of_floor() const {
  return floor_bytes > 0 ? static_cast<double>(measured_bytes) / static_cast<double>(floor_bytes) : 0.0;
}

std::optional<double> element_ratio(const std::string& precision) {
  if (precision == "bf16" || precision == "fp16") return 2.0 / 4.0;
  if (precision == "tf32") return 1.0;
  return std::nullopt;
}

MemoryFloor compute_floor(const std::string& precision, int64_t fp32_peak_bytes, int64_t fixed_state_bytes,
                          double ratio, int64_t measured_bytes) {
  MemoryFloor f;
  f.precision = precision;
  f.fixed_state_bytes = fixed_state_bytes;
  f.fp32_peak_bytes = fp32_peak_bytes;
  f.fp32_other_bytes = std::max<int64_t>(0, fp32_peak_bytes - fixed_state_bytes);
  f.element_ratio = ratio;
  f.floor_bytes = fixed_state_bytes + std::llround(static_cast<double>(f.fp32_other_bytes) * ratio);
  f.measured_bytes = measured_bytes;
  return f;
}

std::optional<MemoryFloor> memory_floor(const std::vector<train::TrainResult>& runs, size_t index) {
  if (index >= runs.size()) return std::nullopt;
  const auto& run = runs[index];
  const auto ratio = element_ratio(run.precision);
  const auto fp32 = std::find_if(runs.begin(), runs.end(), [](const train::TrainResult& r) { return r.precision == "fp32"; });
  if (!ratio || fp32 == runs.end() || !fp32->peak_memory_bytes || !run.peak_memory_bytes) return std::nullopt;
  return compute_floor(run.precision, *fp32->peak_memory_bytes, run.fixed_state.total(), *ratio, *run.peak_memory_bytes);
}

}  // namespace crosstrain::bench
