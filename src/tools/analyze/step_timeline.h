#pragma once
// The per-step time breakdown, device idle gaps and launch behaviour (internal to the analysis).
//
// Step windows: a ProfilerStep#N span on the host opens step N; the step also owns the device
// work its host calls launched, so its window ends at the later of the host span's end and the end
// of that device work, and the next step starts no earlier than that. A trace without steps is one
// window from its first to its last span.
#include <utility>
#include <vector>

#include "tools/analyze/analysis.h"
#include "tools/analyze/span_links.h"

namespace crosstrain::analyze {

struct StepWindow {
  std::string label;
  double host_start = 0, host_end = 0;  // the ProfilerStep span
  double start = 0, end = 0;            // the adjusted window
};

std::vector<StepWindow> step_windows(const Trace& t, const SpanLinks& links);

// Index of the window containing host time `ts`, or -1.
int window_of(const std::vector<StepWindow>& windows, double ts);

// Total length of the union of [first, second) intervals (reorders `intervals`).
double union_length(std::vector<std::pair<double, double>>& intervals);

// Fills steps, total, idle gaps, kernel counts and launch counts of `out`.
void compute_step_timeline(const Trace& t, const SpanLinks& links, const std::vector<StepWindow>& windows,
                           const AnalyzeOptions& options, NameInfoCache& names, TraceAnalysis& out);

}  // namespace crosstrain::analyze
