#include "tools/analyze/span_links.h"

#include <algorithm>
#include <unordered_map>

namespace crosstrain::analyze {

namespace {

// A timestamp tolerance: writers round to ns, and flow events copy the start of their span.
constexpr double kEpsUs = 1e-3;

void sort_by_start(const Trace& t, std::vector<int32_t>& v) {
  auto before = [&](int32_t a, int32_t b) {
    const Span& x = t.spans[static_cast<size_t>(a)];
    const Span& y = t.spans[static_cast<size_t>(b)];
    if (x.ts != y.ts) return x.ts < y.ts;
    if (x.dur != y.dur) return x.dur > y.dur;  // the enclosing span first
    return a < b;
  };
  // Writers emit most threads in time order already; checking is much cheaper than sorting.
  if (!std::is_sorted(v.begin(), v.end(), before)) std::sort(v.begin(), v.end(), before);
}

// Walks the device work in start order; the first piece each runtime call launched is marked.
void mark_first_of_launch(const Trace& t, SpanLinks& L) {
  L.first_of_launch.assign(t.spans.size(), 0);
  std::vector<char> seen(t.spans.size(), 0);
  for (int32_t i : L.device_order) {
    int32_t l = L.launcher[static_cast<size_t>(i)];
    if (l == kNoSpan || t.spans[static_cast<size_t>(l)].kind != SpanKind::Runtime || seen[static_cast<size_t>(l)]) continue;
    seen[static_cast<size_t>(l)] = 1;
    L.first_of_launch[static_cast<size_t>(i)] = 1;
  }
}

// Each runtime call marks the spans above it, up its parents and callers; a walk stops at a span
// marked before, whose own spans above are marked too, so each span is visited about once.
void mark_over_runtime_calls(const Trace& t, SpanLinks& L) {
  constexpr int kMaxNesting = 4096;  // bounds a cycle of callers; far deeper than real call stacks
  for (size_t r = 0; r < t.spans.size(); ++r) {
    if (t.spans[r].kind != SpanKind::Runtime) continue;
    if (L.over_runtime_call.empty()) L.over_runtime_call.assign(t.spans.size(), 0);
    int32_t x = L.parent[r] != kNoSpan ? L.parent[r] : L.caller[r];
    for (int hops = 0; x != kNoSpan && hops < kMaxNesting; ++hops) {
      const auto u = static_cast<size_t>(x);
      if (L.over_runtime_call[u]) break;
      L.over_runtime_call[u] = 1;
      x = L.parent[u] != kNoSpan ? L.parent[u] : L.caller[u];
    }
  }
}

}  // namespace

SpanLinks link_spans(const Trace& t) {
  const size_t n = t.spans.size();
  SpanLinks L;
  L.parent.assign(n, kNoSpan);
  L.launcher.assign(n, kNoSpan);
  L.device_op.assign(n, kNoSpan);
  L.op_of.assign(n, kNoSpan);
  L.child_us.assign(n, 0);
  L.child_count.assign(n, 0);

  // Per-thread host trees and per-track device lists.
  std::vector<std::vector<int32_t>> host(t.tracks.size()), device(t.tracks.size());
  for (size_t i = 0; i < n; ++i) {
    const Span& s = t.spans[i];
    if (is_host_tree(s.kind)) host[s.track].push_back(static_cast<int32_t>(i));
    else if (is_device(s.kind)) device[s.track].push_back(static_cast<int32_t>(i));
  }
  // The call-tree ladder, for innermost_host: depth, a jump pointer to an ancestor (skew-binary:
  // each span's jump is its parent's, doubled when two equal jumps line up), and the latest end
  // among the spans a jump passes over, so a jump is taken only when none of them covers the time.
  // Only needed while linking.
  std::vector<int32_t> depth(n, 0), jump(n, kNoSpan);
  std::vector<double> jump_end(n, 0);
  std::vector<int32_t> stack;
  for (auto& list : host) {
    sort_by_start(t, list);
    stack.clear();
    for (int32_t i : list) {
      const auto u = static_cast<size_t>(i);
      const Span& s = t.spans[u];
      // Sorted by start, so a span is a child of the top iff it also ends inside it; partial
      // overlaps (async spans) are treated as siblings.
      while (!stack.empty() && t.spans[static_cast<size_t>(stack.back())].end() < s.end() - kEpsUs) stack.pop_back();
      jump[u] = i, jump_end[u] = s.end();
      if (!stack.empty()) {
        const int32_t p = stack.back();
        const auto up = static_cast<size_t>(p);
        L.parent[u] = p;
        L.child_us[up] += s.dur;
        ++L.child_count[up];
        depth[u] = depth[up] + 1;
        const auto j = static_cast<size_t>(jump[up]);
        if (jump[up] != p && depth[up] - depth[j] == depth[j] - depth[static_cast<size_t>(jump[j])]) {
          jump[u] = jump[j];
          jump_end[u] = std::max({s.end(), jump_end[up], jump_end[j]});
        } else {
          jump[u] = p;
        }
      }
      int32_t above = stack.empty() ? kNoSpan : L.op_of[static_cast<size_t>(stack.back())];
      L.op_of[u] = s.kind == SpanKind::CpuOp ? i : above;
      stack.push_back(i);
      L.host_order.push_back(i);
    }
  }

  // Device activity -> runtime call by correlation id.
  std::unordered_map<int64_t, int32_t> by_corr;
  for (size_t i = 0; i < n; ++i) {
    const Span& s = t.spans[i];
    if (s.kind == SpanKind::Runtime && s.correlation >= 0) by_corr.emplace(s.correlation, static_cast<int32_t>(i));
  }
  for (size_t i = 0; i < n; ++i) {
    const Span& s = t.spans[i];
    if (!is_device(s.kind) || s.correlation < 0) continue;
    auto it = by_corr.find(s.correlation);
    if (it != by_corr.end()) L.launcher[i] = it->second;
  }

  // Flows link whatever correlation ids did not.
  for (auto& list : device) sort_by_start(t, list);
  // The innermost host span of `track` around [ts, until]: the last span to start by `ts`, or the
  // first of its ancestors still running at `until`.
  auto enclosing_host = [&](uint32_t track, double ts, double until) -> int32_t {
    const auto& list = host[track];
    auto it = std::upper_bound(list.begin(), list.end(), ts + kEpsUs,
                               [&](double v, int32_t i) { return v < t.spans[static_cast<size_t>(i)].ts; });
    if (it == list.begin()) return kNoSpan;
    int32_t i = *(it - 1);
    const double limit = until - kEpsUs;
    while (i != kNoSpan && t.spans[static_cast<size_t>(i)].end() < limit) {
      const auto u = static_cast<size_t>(i);
      i = jump[u] != i && jump_end[u] < limit ? jump[u] : L.parent[u];
    }
    return i;
  };
  auto innermost_host = [&](uint32_t track, double ts) { return enclosing_host(track, ts, ts); };
  auto device_at = [&](uint32_t track, double ts) -> int32_t {
    const auto& list = device[track];
    auto it = std::lower_bound(list.begin(), list.end(), ts - kEpsUs,
                               [&](int32_t i, double v) { return t.spans[static_cast<size_t>(i)].ts < v; });
    if (it != list.end() && t.spans[static_cast<size_t>(*it)].ts <= ts + kEpsUs) return *it;
    return kNoSpan;
  };
  std::unordered_map<uint64_t, std::pair<int32_t, int32_t>> flows;  // id -> (host span, device span)
  for (const Flow& f : t.flows) {
    auto& slot = flows.try_emplace(f.id ^ (static_cast<uint64_t>(f.cat) << 48), kNoSpan, kNoSpan).first->second;
    if (f.phase == 's') slot.first = innermost_host(f.track, f.ts);
    else if (f.phase == 'f') slot.second = device_at(f.track, f.ts);
  }
  for (const auto& [id, link] : flows) {
    if (link.first == kNoSpan || link.second == kNoSpan) continue;
    auto dev = static_cast<size_t>(link.second);
    // A flow from an operator (async_npu) names the operator directly; one from a runtime call
    // (ac2g, HostToDevice) names the launch.
    SpanKind from = t.spans[static_cast<size_t>(link.first)].kind;
    if (from == SpanKind::CpuOp) L.device_op[dev] = link.first;
    int32_t& l = L.launcher[dev];
    bool runtime_now = l != kNoSpan && t.spans[static_cast<size_t>(l)].kind == SpanKind::Runtime;
    if (l == kNoSpan || (from == SpanKind::Runtime && !runtime_now)) l = link.first;
  }

  // Runtime calls recorded in a process of their own (Ascend's CANN track) share the thread id of
  // the host thread that made them: find the operator there by time containment.
  // Its outermost calls get that span as their caller.
  std::unordered_map<int64_t, std::vector<uint32_t>> tracks_by_tid;
  for (uint32_t k = 0; k < t.tracks.size(); ++k)
    if (!host[k].empty()) tracks_by_tid[t.tracks[k].key.tid].push_back(k);
  L.caller.assign(n, kNoSpan);
  for (size_t i = 0; i < n; ++i) {
    const Span& ls = t.spans[i];
    if (ls.kind != SpanKind::Runtime || (L.op_of[i] != kNoSpan && L.parent[i] != kNoSpan)) continue;
    auto it = tracks_by_tid.find(t.tracks[ls.track].key.tid);
    if (it == tracks_by_tid.end()) continue;
    for (uint32_t k : it->second) {
      if (k == ls.track) continue;
      const int32_t h = innermost_host(k, ls.ts);
      if (L.op_of[i] == kNoSpan && h != kNoSpan && L.op_of[static_cast<size_t>(h)] != kNoSpan)
        L.op_of[i] = L.op_of[static_cast<size_t>(h)];  // the call stays the launcher
      if (L.parent[i] == kNoSpan && L.caller[i] == kNoSpan) L.caller[i] = enclosing_host(k, ls.ts, ls.end());
      if (L.op_of[i] != kNoSpan && (L.parent[i] != kNoSpan || L.caller[i] != kNoSpan)) break;
    }
  }
  for (size_t i = 0; i < n; ++i) {
    int32_t l = L.launcher[i];
    if (l == kNoSpan) continue;
    if (L.device_op[i] == kNoSpan) L.device_op[i] = L.op_of[static_cast<size_t>(l)];
    // A runtime call no containment placed (a task-queue thread's call) belongs to the operator
    // its work was charged to.
    else if (L.op_of[static_cast<size_t>(l)] == kNoSpan) L.op_of[static_cast<size_t>(l)] = L.device_op[i];
  }

  for (const auto& list : device) L.device_order.insert(L.device_order.end(), list.begin(), list.end());
  sort_by_start(t, L.device_order);
  mark_first_of_launch(t, L);
  mark_over_runtime_calls(t, L);
  return L;
}

}  // namespace crosstrain::analyze
