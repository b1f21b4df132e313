#include "tools/analyze/timeline_view.h"

#include <algorithm>
#include <map>

namespace crosstrain::analyze {

namespace {

int category_of(const Span& s, const NameInfo& name) {
  switch (s.kind) {
    case SpanKind::Kernel: return static_cast<int>(StepCategory::Kernel);
    case SpanKind::Memcpy: return static_cast<int>(StepCategory::Memcpy);
    case SpanKind::Memset: return static_cast<int>(StepCategory::Memset);
    case SpanKind::Communication: return static_cast<int>(StepCategory::Communication);
    case SpanKind::Runtime: return static_cast<int>(StepCategory::Runtime);
    default: return static_cast<int>(name.data_loading ? StepCategory::DataLoading : StepCategory::CpuExec);
  }
}

}  // namespace

void compute_timeline(const Trace& t, const SpanLinks& L, const std::vector<StepWindow>& windows, NameInfoCache& names,
                      TraceAnalysis& out) {
  if (windows.empty()) return;
  std::vector<size_t> order(windows.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return windows[a].end - windows[a].start < windows[b].end - windows[b].start;
  });
  const StepWindow& w = windows[order[order.size() / 2]];
  TimelineView& v = out.timeline;
  v.step = w.label;
  v.duration_us = w.end - w.start;

  // Row key: (kind of row, track). Host rows first, then runtime, then device rows.
  std::map<std::pair<int, uint32_t>, TimelineRow> rows;
  for (size_t i = 0; i < t.spans.size(); ++i) {
    const Span& s = t.spans[i];
    if (s.end() <= w.start || s.ts >= w.end) continue;
    int row_kind;
    if (is_device(s.kind)) {
      row_kind = 2;
    } else if (s.kind == SpanKind::Runtime) {
      row_kind = 1;
    } else if (s.kind == SpanKind::CpuOp || s.kind == SpanKind::Annotation) {
      // Outermost operators and annotations below the step itself.
      if (names(s.name).profiler_step) continue;
      int32_t p = L.parent[i];
      bool outer = p == kNoSpan || names(t.spans[static_cast<size_t>(p)].name).profiler_step;
      if (!outer) continue;
      row_kind = 0;
    } else {
      continue;
    }
    const TrackKey& k = t.tracks[s.track].key;
    auto& row = rows[{row_kind, s.track}];
    if (row.label.empty())
      row.label = std::string(row_kind == 2 ? "device " : row_kind == 1 ? "runtime " : "host ") + t.pid_label(k.pid) +
                  "/" + t.pid_label(k.tid);
    if (row.bars.size() >= kMaxTimelineBars) {
      ++v.dropped;
      continue;
    }
    double a = std::max(s.ts, w.start), b = std::min(s.end(), w.end);
    row.bars.push_back({a - w.start, b - a, t.strings.str(s.name).substr(0, 200), category_of(s, names(s.name))});
  }
  for (auto& [key, row] : rows) {
    if (v.rows.size() >= kMaxTimelineRows) {
      v.dropped += static_cast<int64_t>(row.bars.size());
      continue;
    }
    v.rows.push_back(std::move(row));
  }
}

}  // namespace crosstrain::analyze
