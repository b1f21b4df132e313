#pragma once
// The device views of an analysis (internal): top kernels, launch delays, collectives with
// message sizes and bandwidth, copies to pageable host memory, Ascend AI_CPU tasks and online
// operator compilation. Each counts only what ran inside step windows, like the step breakdown.
#include <vector>

#include "tools/analyze/analysis.h"
#include "tools/analyze/concern_spans.h"
#include "tools/analyze/span_links.h"
#include "tools/analyze/step_timeline.h"

namespace crosstrain::analyze {

void compute_device_views(const Trace& t, const SpanLinks& links, const std::vector<StepWindow>& windows,
                          NameInfoCache& names, TraceAnalysis& out, ConcernSpans* concerns = nullptr);

// Bytes per element of a c10 scalar type name as Kineto writes it ("Float", "BFloat16", ...);
// 0 when unknown.
int dtype_bytes(const std::string& dtype);

}  // namespace crosstrain::analyze
