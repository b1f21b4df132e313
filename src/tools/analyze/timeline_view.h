#pragma once
// The timeline of one representative step (the one of median duration), for the HTML page
// (internal to the analysis). At most kMaxTimelineRows rows and kMaxTimelineBars bars per row;
// what is left out is counted.
#include <vector>

#include "tools/analyze/analysis.h"
#include "tools/analyze/span_links.h"
#include "tools/analyze/step_timeline.h"

namespace crosstrain::analyze {

constexpr size_t kMaxTimelineRows = 32;
constexpr size_t kMaxTimelineBars = 3000;

void compute_timeline(const Trace& t, const SpanLinks& links, const std::vector<StepWindow>& windows,
                      NameInfoCache& names, TraceAnalysis& out);

}  // namespace crosstrain::analyze
