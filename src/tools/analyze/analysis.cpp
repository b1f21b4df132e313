#include "tools/analyze/analysis.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <unordered_map>

#include "tools/analyze/concern_spans.h"
#include "tools/analyze/device_views.h"
#include "tools/analyze/source_index.h"
#include "tools/analyze/source_lines.h"
#include "tools/analyze/span_links.h"
#include "tools/analyze/step_phases.h"
#include "tools/analyze/step_timeline.h"
#include "tools/analyze/timeline_view.h"

namespace crosstrain::analyze {

const char* step_category_name(int c) {
  static const char* names[] = {"kernel", "memcpy", "memset", "communication",
                                "runtime", "data loading", "cpu exec", "other"};
  return c >= 0 && c < kStepCategoryCount ? names[c] : "?";
}
const char* step_category_name(StepCategory c) { return step_category_name(static_cast<int>(c)); }

const char* step_phase_name(int p) {
  static const char* names[] = {"data wait", "to device", "host sync", "forward", "backward", "optimizer", "other"};
  return p >= 0 && p < kStepPhaseCount ? names[p] : "?";
}
const char* step_phase_name(StepPhase p) { return step_phase_name(static_cast<int>(p)); }

namespace {

bool is_compute_type(OpType t) {
  return t == OpType::Conv || t == OpType::Matmul || t == OpType::Norm || t == OpType::Elementwise ||
         t == OpType::Pooling;
}

std::string device_label(int32_t type, int32_t id) {
  // c10::DeviceType values: 0 CPU, 1 CUDA, 13 XPU, 20 PrivateUse1 (torch_npu registers "npu").
  std::string name = type == 0 ? "cpu" : type == 1 ? "cuda" : type == 13 ? "xpu" : type == 20 ? "npu"
                                                                                                 : "device" + std::to_string(type);
  return type == 0 || id < 0 ? name : name + ":" + std::to_string(id);
}

// An operator whose only child is an operator of the same name (a redispatch, e.g. aten::div
// calling aten::div) is one call: torch's key_averages() merges them the same way, so the counts
// and self times here match torch's own table. Returns, per span, the span it merges into.
std::vector<int32_t> merge_redispatches(const Trace& t, const SpanLinks& L) {
  std::vector<int32_t> into(t.spans.size(), kNoSpan);
  for (size_t i = 0; i < t.spans.size(); ++i) {
    int32_t p = L.parent[i];
    if (t.spans[i].kind != SpanKind::CpuOp || p == kNoSpan) continue;
    const Span& ps = t.spans[static_cast<size_t>(p)];
    if (ps.kind == SpanKind::CpuOp && ps.name == t.spans[i].name && L.child_count[static_cast<size_t>(p)] == 1)
      into[i] = into[static_cast<size_t>(p)] != kNoSpan ? into[static_cast<size_t>(p)] : p;
  }
  return into;
}

void compute_operators(const Trace& t, const SpanLinks& L, const AnalyzeOptions& opt, NameInfoCache& names,
                       TraceAnalysis& out, ConcernSpans* concerns) {
  const size_t n = t.spans.size();
  const std::vector<int32_t> merged_into = merge_redispatches(t, L);
  auto canonical = [&](int32_t op) { return op != kNoSpan && merged_into[static_cast<size_t>(op)] != kNoSpan
                                                ? merged_into[static_cast<size_t>(op)] : op; };
  std::vector<double> extra_self(n, 0);
  for (size_t i = 0; i < n; ++i)
    if (merged_into[i] != kNoSpan)
      extra_self[static_cast<size_t>(merged_into[i])] += std::max(0.0, t.spans[i].dur - L.child_us[i]);
  std::unordered_map<int32_t, std::pair<double, double>> device_of_op;  // op span -> (self, total)
  std::vector<char> launched(n, 0);
  for (int32_t d : L.device_order) {
    int32_t op = canonical(L.device_op[static_cast<size_t>(d)]);
    if (op == kNoSpan) continue;
    double dur = t.spans[static_cast<size_t>(d)].dur;
    auto& e = device_of_op[op];
    e.first += dur, e.second += dur;
    launched[static_cast<size_t>(op)] = 1;
  }
  // Every operator up the stack launched that work too: children before parents, each adds its
  // total to the operator above it once (a walk up per piece of work would be quadratic in depth).
  for (auto it = L.host_order.rbegin(); it != L.host_order.rend(); ++it) {
    const auto i = static_cast<size_t>(*it);
    if (t.spans[i].kind != SpanKind::CpuOp || !launched[i] || L.parent[i] == kNoSpan) continue;
    const int32_t above = L.op_of[static_cast<size_t>(L.parent[i])];
    if (above == kNoSpan) continue;
    launched[static_cast<size_t>(above)] = 1;
    auto own = device_of_op.find(static_cast<int32_t>(i));
    if (own != device_of_op.end()) device_of_op[above].second += own->second.second;
  }

  // Operators under a data-loading span (a DataLoader's __next__ with num_workers=0 runs the
  // dataset's transforms in the loop's thread): CPU work by design, counted as data loading.
  std::vector<char> in_loading(n, 0);
  for (int32_t h : L.host_order) {
    const auto i = static_cast<size_t>(h);
    const int32_t p = L.parent[i];
    in_loading[i] = (t.spans[i].kind == SpanKind::Annotation && names(t.spans[i].name).data_loading) ||
                    (p != kNoSpan && in_loading[static_cast<size_t>(p)]);
  }

  std::unordered_map<uint64_t, size_t> rows;
  std::map<std::string, NamedTotal> fallback;
  for (size_t i = 0; i < n; ++i) {
    const Span& s = t.spans[i];
    if (s.kind != SpanKind::CpuOp || merged_into[i] != kNoSpan) continue;
    uint64_t key = (static_cast<uint64_t>(s.name) << 32) | (opt.group_by_shape ? s.shapes : 0u);
    auto [it, fresh] = rows.try_emplace(key, out.operators.size());
    if (fresh) {
      OperatorStats st;
      st.name = t.strings.str(s.name);
      if (opt.group_by_shape) st.shapes = t.strings.str(s.shapes);
      st.type = op_type_of(st.name);
      out.operators.push_back(std::move(st));
    }
    OperatorStats& st = out.operators[it->second];
    ++st.calls;
    st.host_total_us += s.dur;
    double self = std::max(0.0, s.dur - L.child_us[i]) + extra_self[i];
    st.host_self_us += self;
    auto dev = device_of_op.find(static_cast<int32_t>(i));
    if (dev != device_of_op.end()) st.device_self_us += dev->second.first, st.device_total_us += dev->second.second;
    if (s.dtypes != 0) out.dtypes_recorded = true;

    // Outermost compute operator that launched nothing, under no operator that did, outside data
    // loading.
    int32_t p = L.parent[i];
    int32_t above = p == kNoSpan ? kNoSpan : canonical(L.op_of[static_cast<size_t>(p)]);
    // Dropout in eval mode returns its input and launches nothing by design.
    if (out.has_device && is_compute_type(st.type) && !launched[i] && !names(s.name).mode_identity &&
        !in_loading[i] && (above == kNoSpan || !launched[static_cast<size_t>(above)])) {
      auto& f = fallback[st.name];
      f.name = st.name;
      ++f.count;
      f.total_us += self;
      out.cpu_fallback_us += self;
      if (concerns) concerns->add(Concern::CpuFallback, i, self);
    }
    // fp32 share of matmul/conv work, counted at the outermost matmul/conv operator.
    bool mm = st.type == OpType::Matmul || st.type == OpType::Conv;
    OpType above_type = above == kNoSpan ? OpType::Other : names(t.spans[static_cast<size_t>(above)].name).type;
    bool outer = above_type != OpType::Matmul && above_type != OpType::Conv;
    if (mm && outer && s.dtypes != 0) {
      double w = out.has_device ? (dev != device_of_op.end() ? dev->second.second : 0) : s.dur;
      out.matmul_conv_us += w;
      if (names(s.dtypes).fp32_input) {
        out.matmul_conv_fp32_us += w;
        if (concerns) concerns->add(Concern::Fp32Matmul, i, w);
      }
    }
  }
  for (auto& [name, f] : fallback) out.cpu_fallback.push_back(f);
  std::sort(out.cpu_fallback.begin(), out.cpu_fallback.end(),
            [](const NamedTotal& a, const NamedTotal& b) { return a.total_us > b.total_us; });

  for (const auto& st : out.operators) {
    auto& ty = out.op_types[static_cast<size_t>(st.type)];
    ty.type = st.type;
    ty.calls += st.calls;
    ty.host_self_us += st.host_self_us;
    ty.device_self_us += st.device_self_us;
  }
  for (int k = 0; k < kOpTypeCount; ++k) out.op_types[static_cast<size_t>(k)].type = static_cast<OpType>(k);
  std::sort(out.operators.begin(), out.operators.end(), [](const OperatorStats& a, const OperatorStats& b) {
    if (a.device_self_us != b.device_self_us) return a.device_self_us > b.device_self_us;
    if (a.host_self_us != b.host_self_us) return a.host_self_us > b.host_self_us;
    return a.name < b.name;
  });
}

// Outermost syncs inside steps. A sync counts once: `item` calling `_local_scalar_dense` calling
// cudaMemcpyAsync, and an Ascend aclrtSynchronizeStream on the CANN process inside an `aten::item`
// of the same thread, are one wait. Their time is the union of the calls clipped to the steps, so
// concurrent syncs on several threads never add up past the step. A value read (`item`) of a host
// tensor waits for nothing: in a trace that records runtime calls, a read with none under it (an
// optimizer's step counter on the CPU, as AdamW reads it every step) is not a sync. A trace without
// runtime calls cannot tell them apart, and counts every read.
void compute_host_syncs(const Trace& t, const SpanLinks& L, const std::vector<StepWindow>& windows,
                        NameInfoCache& names, TraceAnalysis& out, ConcernSpans* concerns) {
  const size_t n = t.spans.size();
  // above[i]: 1 when span i or a span around it (its parent, else the caller a call in a process of
  // its own runs under) is a sync; memoized, so each span is resolved once.
  enum : int8_t { kUnknown = -1, kNo = 0, kYes = 1, kResolving = 2 };
  std::vector<int8_t> above(n, kUnknown);
  auto up = [&](size_t i) { return L.parent[i] != kNoSpan ? L.parent[i] : L.caller[i]; };
  std::vector<size_t> path;
  auto sync_at_or_above = [&](int32_t start) -> bool {
    path.clear();
    int8_t value = kNo;
    for (int32_t x = start; x != kNoSpan;) {
      const auto u = static_cast<size_t>(x);
      if (above[u] == kYes || above[u] == kNo) {
        value = above[u];
        break;
      }
      if (above[u] == kResolving) break;  // a cycle of callers: nothing above it
      if (names(t.spans[u].name).host_sync) {
        value = above[u] = kYes;
        break;
      }
      above[u] = kResolving;
      path.push_back(u);
      x = up(u);
    }
    for (size_t u : path) above[u] = value;
    return value == kYes;
  };
  std::map<std::string, NamedTotal> by_name;
  std::vector<std::pair<double, double>> busy;
  for (size_t i = 0; i < n; ++i) {
    const Span& s = t.spans[i];
    if (!is_host_tree(s.kind) || !names(s.name).host_sync) continue;
    if (names(s.name).value_read && !L.over_runtime(i)) continue;  // a host tensor's value
    if (sync_at_or_above(up(i))) continue;  // nested in another sync
    int k = window_of(windows, s.ts);
    if (k < 0) continue;
    const StepWindow& w = windows[static_cast<size_t>(k)];
    const double a = std::max(s.ts, w.start), b = std::min(s.end(), w.end);
    ++out.steps[static_cast<size_t>(k)].host_syncs;
    ++out.total.host_syncs;
    ++out.host_sync_count;
    auto& e = by_name[t.strings.str(s.name)];
    e.name = t.strings.str(s.name);
    ++e.count;
    e.total_us += std::max(0.0, b - a);
    if (b > a) busy.emplace_back(a, b);
    if (concerns) concerns->add(Concern::HostSync, i, std::max(0.0, b - a));
  }
  out.host_sync_us = union_length(busy);
  for (auto& [name, e] : by_name) out.host_syncs.push_back(e);
  std::sort(out.host_syncs.begin(), out.host_syncs.end(),
            [](const NamedTotal& a, const NamedTotal& b) { return a.count > b.count; });
}

void compute_memory(const Trace& t, const AnalyzeOptions& opt, TraceAnalysis& out) {
  std::map<std::pair<int32_t, int32_t>, std::vector<const MemorySample*>> by_device;
  for (const auto& m : t.memory) by_device[{m.device_type, m.device_id}].push_back(&m);
  for (auto& [dev, samples] : by_device) {
    std::stable_sort(samples.begin(), samples.end(), [](const MemorySample* a, const MemorySample* b) { return a->ts < b->ts; });
    MemoryCurve c;
    c.device = device_label(dev.first, dev.second);
    for (const auto* m : samples) {
      c.peak_allocated = std::max(c.peak_allocated, m->total_allocated);
      c.peak_reserved = std::max(c.peak_reserved, m->total_reserved);
    }
    // Downsample by time buckets keeping each bucket's maximum, so the peak survives.
    size_t buckets = std::max<size_t>(opt.memory_curve_points, 2);
    double t0 = samples.front()->ts, t1 = samples.back()->ts;
    double width = (t1 - t0) / static_cast<double>(buckets);
    size_t cur = std::numeric_limits<size_t>::max();
    for (const auto* m : samples) {
      size_t b = width > 0 ? std::min(buckets - 1, static_cast<size_t>((m->ts - t0) / width)) : 0;
      double x = m->ts - out.trace_start_us, y = static_cast<double>(m->total_allocated);
      if (b != cur || c.points.empty()) {
        c.points.emplace_back(x, y);
        cur = b;
      } else if (y > c.points.back().second) {
        c.points.back() = {x, y};
      }
    }
    out.memory.push_back(std::move(c));
  }
  // The accelerator first: it is the memory people run out of.
  std::stable_sort(out.memory.begin(), out.memory.end(),
                   [](const MemoryCurve& a, const MemoryCurve& b) { return (a.device != "cpu") > (b.device != "cpu"); });
}

// A last ProfilerStep that did no backward or optimizer work after one that did is not a step: see
// TraceAnalysis::partial_step.
void leave_out_partial_last_step(const Trace& t, NameInfoCache& names, std::vector<StepWindow>& w,
                                 TraceAnalysis& out) {
  if (w.size() < 2 || !is_profiler_step_name(w.back().label)) return;
  const StepWindow& last = w.back();
  const StepWindow& before = w[w.size() - 2];
  if (holds_update(t, names, last.host_start, last.host_end) ||
      !holds_update(t, names, before.host_start, before.host_end))
    return;
  out.partial_step = last.label;
  out.partial_step_us = last.end - last.start;
  w.pop_back();
}

}  // namespace

std::string TraceAnalysis::unrecognised() const {
  if (recognised_spans > 0) return "";
  std::string cats;
  for (const auto& c : unrecognised_categories) cats += (cats.empty() ? "" : ", ") + c;
  return path + ": nothing in this trace was recognised (" + std::to_string(span_count) +
         " spans, no operator, annotation, runtime call or device activity" +
         (cats.empty() ? "" : "; categories seen: " + cats) +
         "); it is not a format or generation this version reads (see docs/ANALYZE.md)";
}

TraceAnalysis analyze_trace(const Trace& t, const AnalyzeOptions& opt) {
  TraceAnalysis out;
  out.path = t.path;
  out.format = format_name(t.format);
  out.rank = t.rank;
  out.bytes = t.bytes_read;
  out.span_count = t.spans.size();
  out.idle_gap_min_us = opt.idle_gap_min_us;
  out.device_name = t.device_name;
  double start = std::numeric_limits<double>::infinity();
  std::map<uint32_t, size_t> other_cats;
  for (const Span& s : t.spans) {
    out.has_device = out.has_device || is_device(s.kind);
    start = std::min(start, s.ts);
    if (s.kind != SpanKind::Other) ++out.recognised_spans;
    else ++other_cats[s.cat];
  }
  for (const auto& m : t.memory) start = std::min(start, m.ts);
  out.trace_start_us = std::isfinite(start) ? start : 0;
  std::vector<std::pair<size_t, uint32_t>> cats;
  for (const auto& [cat, count] : other_cats) cats.emplace_back(count, cat);
  std::sort(cats.rbegin(), cats.rend());
  for (size_t i = 0; i < cats.size() && i < 5; ++i)
    out.unrecognised_categories.push_back(cats[i].second == 0 ? "(none)" : t.strings.str(cats[i].second));
  if (t.format == TraceFormat::Ascend && out.device_name.empty()) out.device_name = "Ascend NPU";
  out.tensor_cores = t.device_compute_major >= 7 || t.format == TraceFormat::Ascend;

  SpanLinks links = link_spans(t);
  auto windows = step_windows(t, links);
  NameInfoCache names(t.strings);
  leave_out_partial_last_step(t, names, windows, out);
  const SourceIndex sources(t, links);
  ConcernSpans concern_spans;
  ConcernSpans* concerns = sources.available() ? &concern_spans : nullptr;
  compute_step_timeline(t, links, windows, opt, names, out, concerns);
  compute_operators(t, links, opt, names, out, concerns);
  compute_host_syncs(t, links, windows, names, out, concerns);
  compute_device_views(t, links, windows, names, out, concerns);
  compute_step_phases(t, links, windows, names, out);
  compute_timeline(t, links, windows, names, out);
  compute_memory(t, opt, out);
  out.loaders = t.call_sites.loaders;
  out.cpus = t.call_sites.cpus;
  if (concerns) compute_source_lines(t, links, windows, sources, opt, *concerns, out);
  // Reports give positions as us since the trace's first event, never before it.
  for (auto& s : out.steps) s.start_us -= out.trace_start_us;
  out.total.start_us = 0;
  for (auto& g : out.idle_gaps) g.start_us -= out.trace_start_us;
  return out;
}

}  // namespace crosstrain::analyze
