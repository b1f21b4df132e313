#pragma once
// `analyze --diff A B`: which operators and step categories appeared, vanished, got slower or
// faster between two analyzed traces, ranked by the size of the time change. Times are per step
// when both traces have ProfilerStep spans (runs of different lengths stay comparable), else totals.
// Operators are compared by device self time when either trace has device activity, else by host
// self time.
#include <string>
#include <vector>

#include "tools/analyze/analysis.h"

namespace crosstrain::analyze {

// Appeared: absent (or zero) in A, time in B. Vanished: time in A, absent from B. Gone: time in A,
// present in B with zero time. A row with zero time on both sides is Same, whatever its presence.
enum class DiffStatus { Appeared, Vanished, Gone, Slower, Faster, Same };
const char* diff_status_name(DiffStatus s);

struct DiffRow {
  std::string kind;   // "operator" or "category"
  std::string name;
  double a_us = 0;
  double b_us = 0;
  DiffStatus status = DiffStatus::Same;
  double delta_us() const { return b_us - a_us; }
};

struct TraceDiff {
  std::string a_path, b_path;
  bool per_step = false;
  std::string time_basis;         // "device self" or "host self"
  double a_step_us = 0, b_step_us = 0;
  std::string a_device, b_device;  // device names ("cpu" when a trace has no device activity)
  std::string warning;             // set when the traces come from different devices or formats
  std::vector<DiffRow> rows;      // ranked by |delta|
};

// Changes smaller than `same_fraction` of the larger side (and under 1 us) count as Same.
TraceDiff diff_analyses(const TraceAnalysis& a, const TraceAnalysis& b, double same_fraction = 0.02);

}  // namespace crosstrain::analyze
