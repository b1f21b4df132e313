#include "tools/analyze/step_timeline.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace crosstrain::analyze {

namespace {

struct Edge {
  double t;
  int8_t cat;    // StepCategory index
  int8_t delta;  // +1 start, -1 end
};

}  // namespace

std::vector<StepWindow> step_windows(const Trace& t, const SpanLinks& links) {
  std::vector<StepWindow> w;
  for (const Span& s : t.spans)
    if (s.kind == SpanKind::Annotation && is_profiler_step_name(t.strings.str(s.name)))
      w.push_back({t.strings.str(s.name), s.ts, s.end(), s.ts, s.end()});
  if (w.empty()) {
    double lo = std::numeric_limits<double>::infinity(), hi = -lo;
    for (const Span& s : t.spans) {
      if (s.kind == SpanKind::Other) continue;
      lo = std::min(lo, s.ts), hi = std::max(hi, s.end());
    }
    if (std::isfinite(lo)) w.push_back({"trace", lo, hi, lo, hi});
    return w;
  }
  std::sort(w.begin(), w.end(), [](const StepWindow& a, const StepWindow& b) { return a.host_start < b.host_start; });
  // The same step recorded on two threads: keep the first.
  w.erase(std::unique(w.begin(), w.end(), [](const StepWindow& a, const StepWindow& b) { return a.label == b.label; }),
          w.end());
  for (int32_t i : links.device_order) {
    const Span& d = t.spans[static_cast<size_t>(i)];
    int32_t l = links.launcher[static_cast<size_t>(i)];
    double at = l != kNoSpan ? t.spans[static_cast<size_t>(l)].ts : d.ts;
    int k = window_of(w, at);
    if (k >= 0) w[static_cast<size_t>(k)].end = std::max(w[static_cast<size_t>(k)].end, d.end());
  }
  for (size_t k = 1; k < w.size(); ++k) {
    w[k].start = std::max(w[k].host_start, w[k - 1].end);
    w[k].end = std::max(w[k].end, w[k].start);
  }
  return w;
}

int window_of(const std::vector<StepWindow>& w, double ts) {
  auto it = std::upper_bound(w.begin(), w.end(), ts, [](double v, const StepWindow& s) { return v < s.host_start; });
  if (it == w.begin()) return -1;
  --it;
  if (ts > std::max(it->host_end, it->end)) return -1;
  return static_cast<int>(it - w.begin());
}

double union_length(std::vector<std::pair<double, double>>& v) {
  std::sort(v.begin(), v.end());
  double total = 0, end = -std::numeric_limits<double>::infinity();
  for (const auto& [a, b] : v) {
    if (b <= end) continue;
    total += b - std::max(a, end);
    end = b;
  }
  return total;
}

void compute_step_timeline(const Trace& t, const SpanLinks& links, const std::vector<StepWindow>& windows,
                           const AnalyzeOptions& opt, NameInfoCache& names, TraceAnalysis& out) {
  out.steps.clear();
  for (const auto& w : windows) {
    StepBreakdown b;
    b.label = w.label;
    b.start_us = w.start;
    b.duration_us = w.end - w.start;
    out.steps.push_back(b);
  }
  if (windows.empty()) return;
  const double lo = windows.front().start, hi = windows.back().end;

  std::vector<Edge> edges;
  edges.reserve(t.spans.size());
  auto add = [&](const Span& s, StepCategory c) {
    double a = std::max(s.ts, lo), b = std::min(s.end(), hi);
    if (b <= a) return;
    edges.push_back({a, static_cast<int8_t>(c), 1});
    edges.push_back({b, static_cast<int8_t>(c), -1});
  };
  for (size_t i = 0; i < t.spans.size(); ++i) {
    const Span& s = t.spans[i];
    switch (s.kind) {
      case SpanKind::Kernel: add(s, StepCategory::Kernel); break;
      case SpanKind::Memcpy: add(s, StepCategory::Memcpy); break;
      case SpanKind::Memset: add(s, StepCategory::Memset); break;
      case SpanKind::Communication: add(s, StepCategory::Communication); break;
      case SpanKind::Runtime: add(s, StepCategory::Runtime); break;
      case SpanKind::Annotation:
        if (names(s.name).data_loading) add(s, StepCategory::DataLoading);
        // Host collectives (Gloo) are annotated on the backend's worker thread: "gloo:all_reduce".
        else if (!out.has_device && names(s.name).communication) add(s, StepCategory::Communication);
        break;
      case SpanKind::CpuOp: {
        // Only outermost operators: the union is the same and the sweep stays small.
        int32_t p = links.parent[i];
        if (p != kNoSpan && links.op_of[static_cast<size_t>(p)] != kNoSpan) break;
        bool host_comm = !out.has_device && names(s.name).communication;
        add(s, host_comm ? StepCategory::Communication : StepCategory::CpuExec);
        break;
      }
      default: break;
    }
  }
  std::sort(edges.begin(), edges.end(), [](const Edge& a, const Edge& b) { return a.t < b.t; });

  int active[kStepCategoryCount] = {};
  size_t w = 0;
  // The current device-idle stretch inside a window. Times may be negative (relative to the first
  // timestamp in the file, which need not be the earliest), so no sentinel value marks "none".
  bool idle_open = false;
  double idle_start = 0;
  size_t idle_step = 0;
  std::vector<double> first_device(windows.size(), std::numeric_limits<double>::infinity());
  auto close_idle = [&](double at) {
    if (!idle_open) return;
    double len = at - idle_start;
    if (out.has_device && len >= opt.idle_gap_min_us) {
      ++out.idle_gap_count;
      out.idle_gap_us += len;
      out.idle_gaps.push_back({idle_start, len, windows[idle_step].label, idle_start - windows[idle_step].start});
    }
    idle_open = false;
  };
  // Segment [a, b) with the current `active` counts, split across windows.
  auto segment = [&](double a, double b) {
    if (b <= a) return;
    int top = -1;
    for (int c = 0; c < kStepCategoryCount; ++c)
      if (active[c] > 0) {
        top = c;
        break;
      }
    bool device = active[0] + active[1] + active[2] + active[3] > 0;
    bool data = active[static_cast<int>(StepCategory::DataLoading)] > 0;
    bool comm = active[static_cast<int>(StepCategory::Communication)] > 0;
    // Overlapped: a collective runs while compute does, on the device (kernels), or, in host-only
    // traces (CPU training over Gloo), on another thread (operators).
    bool overlap = comm && (out.has_device ? active[0] > 0 : active[static_cast<int>(StepCategory::CpuExec)] > 0);
    while (w < windows.size() && windows[w].end <= a) {
      close_idle(windows[w].end);
      ++w;
    }
    for (size_t k = w; k < windows.size() && windows[k].start < b; ++k) {
      double x = std::max(a, windows[k].start), y = std::min(b, windows[k].end);
      if (y <= x) continue;
      StepBreakdown& s = out.steps[k];
      if (top >= 0) s.category_us[static_cast<size_t>(top)] += y - x;
      if (device) s.device_busy_us += y - x;
      if (data) s.data_wait_us += y - x;
      if (comm) s.comm_us += y - x;
      if (overlap) s.comm_overlapped_us += y - x;
      if (device) {
        close_idle(x);
        first_device[k] = std::min(first_device[k], x);
      } else if (!idle_open) {
        idle_open = true, idle_start = x, idle_step = k;
      }
      if (y == windows[k].end) close_idle(y);  // gaps do not span steps
    }
  };
  double prev = lo;
  for (size_t e = 0; e < edges.size();) {
    double now = edges[e].t;
    segment(prev, now);
    for (; e < edges.size() && edges[e].t == now; ++e) active[edges[e].cat] += edges[e].delta;
    prev = now;
  }
  segment(prev, hi);
  close_idle(hi);

  for (size_t k = 0; k < windows.size(); ++k)
    if (std::isfinite(first_device[k])) out.steps[k].device_window_us = windows[k].end - first_device[k];
  for (auto& s : out.steps) {
    double covered = 0;
    for (int c = 0; c < kStepCategoryCount - 1; ++c) covered += s.category_us[static_cast<size_t>(c)];
    s.category_us[static_cast<size_t>(StepCategory::Other)] = std::max(0.0, s.duration_us - covered);
  }

  // Kernel counts, and launches issued into an idle device (the host could not keep it fed).
  double busy_until = -std::numeric_limits<double>::infinity();
  for (int32_t i : links.device_order) {
    const Span& d = t.spans[static_cast<size_t>(i)];
    int32_t l = links.launcher[static_cast<size_t>(i)];
    int k = window_of(windows, l != kNoSpan ? t.spans[static_cast<size_t>(l)].ts : d.ts);
    if (k >= 0 && d.kind == SpanKind::Kernel) {
      ++out.steps[static_cast<size_t>(k)].kernels;
      ++out.kernel_count;
      out.kernel_us += d.dur;
      if (d.dur < opt.short_kernel_us) ++out.short_kernel_count;
    }
    if (k >= 0 && links.first_of_launch[static_cast<size_t>(i)]) {
      ++out.launches;
      if (busy_until <= t.spans[static_cast<size_t>(l)].end()) ++out.launches_into_idle;
    }
    busy_until = std::max(busy_until, d.end());
  }

  std::sort(out.idle_gaps.begin(), out.idle_gaps.end(),
            [](const IdleGap& a, const IdleGap& b) { return a.duration_us > b.duration_us; });
  if (out.idle_gaps.size() > 10) out.idle_gaps.resize(10);

  StepBreakdown& tot = out.total;
  tot = StepBreakdown{};
  tot.label = "total";
  for (const auto& s : out.steps) {
    tot.duration_us += s.duration_us;
    for (int c = 0; c < kStepCategoryCount; ++c)
      tot.category_us[static_cast<size_t>(c)] += s.category_us[static_cast<size_t>(c)];
    tot.device_busy_us += s.device_busy_us;
    tot.data_wait_us += s.data_wait_us;
    tot.comm_us += s.comm_us;
    tot.comm_overlapped_us += s.comm_overlapped_us;
    tot.device_window_us += s.device_window_us;
    tot.kernels += s.kernels;
  }
}

}  // namespace crosstrain::analyze
