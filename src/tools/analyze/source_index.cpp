#include "tools/analyze/source_index.h"

#include <algorithm>
#include <cmath>
#include <unordered_map>

namespace crosstrain::analyze {

namespace {

constexpr double kEpsUs = 1e-3;  // writers round to ns

bool starts_before(const Trace& t, int32_t a, int32_t b) {
  const Span& x = t.spans[static_cast<size_t>(a)];
  const Span& y = t.spans[static_cast<size_t>(b)];
  if (x.ts != y.ts) return x.ts < y.ts;
  if (x.dur != y.dur) return x.dur > y.dur;  // the enclosing span first
  return a < b;
}

}  // namespace

SourceIndex::SourceIndex(const Trace& t, const SpanLinks& links) : trace_(t) {
  const CallSites& cs = t.call_sites;
  // A trace's times are (base + 1000 * (time_base_us + ts)) ns on the profiler's clock (torch
  // before 2.2 writes no base: it is 0, and the agent's side file counts from 0 too); beyond ~100
  // days of microseconds that sum would not fit: such a trace did not come from the agent.
  if (!cs.present || cs.calls.empty() || std::llabs(t.time_base_us) > (int64_t{1} << 53)) return;
  const size_t n = t.spans.size();
  own_.assign(n, kNoSite);
  const int64_t base = t.base_time_ns + t.time_base_us * 1000;
  for (size_t i = 0; i < n; ++i) {
    const Span& s = t.spans[i];
    if (s.kind != SpanKind::PythonFunction || !std::isfinite(s.ts) || std::fabs(s.ts) > 1e12) continue;
    if (const CallSite* c = cs.at(base + std::llround(s.ts * 1000.0))) {
      own_[i] = static_cast<int32_t>(c - cs.calls.data());
      available_ = true;
    }
  }
  if (!available_) return;
  user_.assign(n, kNoSite);
  source_.assign(n, kNoSite);
  direct_.assign(n, kNoSite);
  link_python(t);
  attribute_host(t, links);
  follow_backward_flows(t);
  // Operators nested in one that got its lines from a flow inherit them (parents come first).
  for (int32_t i : links.host_order) {
    const auto u = static_cast<size_t>(i);
    const int32_t p = links.parent[u];
    if (p == kNoSpan || user_[u] != kNoSite || source_[u] != kNoSite) continue;
    user_[u] = user_[static_cast<size_t>(p)], source_[u] = source_[static_cast<size_t>(p)];
  }
  for (size_t i = 0; i < n; ++i) {
    const int32_t op = links.device_op[i];
    if (!is_device(t.spans[i].kind) || op == kNoSpan) continue;
    user_[i] = user_[static_cast<size_t>(op)], source_[i] = source_[static_cast<size_t>(op)];
  }
}

// The Python calls of each thread nest by time. A call's user line is its own call site when
// that is in a user's file, else its parent's; its source line is its own call site when it has
// one (user or library), else its parent's.
void SourceIndex::link_python(const Trace& t) {
  std::vector<std::vector<int32_t>> by_track(t.tracks.size());
  for (size_t i = 0; i < t.spans.size(); ++i)
    if (t.spans[i].kind == SpanKind::PythonFunction) by_track[t.spans[i].track].push_back(static_cast<int32_t>(i));
  std::vector<int32_t> stack;
  for (auto& list : by_track) {
    std::sort(list.begin(), list.end(), [&](int32_t a, int32_t b) { return starts_before(t, a, b); });
    stack.clear();
    for (int32_t i : list) {
      const auto u = static_cast<size_t>(i);
      const double end = t.spans[u].end();
      while (!stack.empty() && t.spans[static_cast<size_t>(stack.back())].end() < end - kEpsUs) stack.pop_back();
      const int32_t own = own_[u];
      const int32_t parent = stack.empty() ? kNoSpan : stack.back();
      const int32_t parent_user = parent == kNoSpan ? kNoSite : user_[static_cast<size_t>(parent)];
      const int32_t parent_source = parent == kNoSpan ? kNoSite : source_[static_cast<size_t>(parent)];
      user_[u] = own != kNoSite && user_file(own) ? own : parent_user;
      source_[u] = own != kNoSite ? own : parent_source;
      stack.push_back(i);
    }
  }
}

// Each host span takes the lines of the innermost Python call open at its start on its thread:
// one sweep per thread over both lists in start order.
void SourceIndex::attribute_host(const Trace& t, const SpanLinks& links) {
  std::vector<std::vector<int32_t>> python(t.tracks.size());
  for (size_t i = 0; i < t.spans.size(); ++i)
    if (t.spans[i].kind == SpanKind::PythonFunction) python[t.spans[i].track].push_back(static_cast<int32_t>(i));
  for (auto& list : python)
    std::sort(list.begin(), list.end(), [&](int32_t a, int32_t b) { return starts_before(t, a, b); });
  std::vector<std::vector<int32_t>> host(t.tracks.size());
  for (int32_t i : links.host_order) host[t.spans[static_cast<size_t>(i)].track].push_back(i);
  std::vector<int32_t> stack;
  for (size_t k = 0; k < host.size(); ++k) {
    const auto& py = python[k];
    if (py.empty()) continue;
    auto& ops = host[k];
    std::sort(ops.begin(), ops.end(), [&](int32_t a, int32_t b) { return starts_before(t, a, b); });
    stack.clear();
    size_t next = 0;
    for (int32_t h : ops) {
      const double at = t.spans[static_cast<size_t>(h)].ts;
      // Calls that start with the operator enclose it (the call is recorded before its work).
      for (; next < py.size() && t.spans[static_cast<size_t>(py[next])].ts <= at + kEpsUs; ++next) {
        const double end = t.spans[static_cast<size_t>(py[next])].end();
        while (!stack.empty() && t.spans[static_cast<size_t>(stack.back())].end() < end - kEpsUs) stack.pop_back();
        stack.push_back(py[next]);
      }
      while (!stack.empty() && t.spans[static_cast<size_t>(stack.back())].end() < at - kEpsUs) stack.pop_back();
      if (stack.empty()) continue;
      const auto top = static_cast<size_t>(stack.back());
      user_[static_cast<size_t>(h)] = user_[top];
      source_[static_cast<size_t>(h)] = source_[top];
      direct_[static_cast<size_t>(h)] = own_[top];
    }
  }
}

// Kineto links each forward operator to its backward operator by a "fwdbwd" flow that starts
// where the forward operator starts and ends where the backward one starts.
void SourceIndex::follow_backward_flows(const Trace& t) {
  struct Key {
    uint32_t track;
    int64_t ns;
    bool operator==(const Key& o) const { return track == o.track && ns == o.ns; }
  };
  struct KeyHash {
    size_t operator()(const Key& k) const { return std::hash<int64_t>()(k.ns * 31 + k.track); }
  };
  auto key_of = [](uint32_t track, double ts) { return Key{track, std::llround(ts * 1000.0)}; };
  std::vector<int8_t> is_fwdbwd(t.strings.size(), -1);
  bool any = false;
  for (const Flow& f : t.flows) {
    if (is_fwdbwd[f.cat] < 0) is_fwdbwd[f.cat] = t.strings.str(f.cat) == "fwdbwd" ? 1 : 0;
    any = any || is_fwdbwd[f.cat];
  }
  if (!any) return;
  std::unordered_map<Key, int32_t, KeyHash> op_at;  // the outermost operator starting there
  for (size_t i = 0; i < t.spans.size(); ++i) {
    const Span& s = t.spans[i];
    if (s.kind != SpanKind::CpuOp || !std::isfinite(s.ts) || std::fabs(s.ts) > 1e12) continue;
    auto [it, fresh] = op_at.try_emplace(key_of(s.track, s.ts), static_cast<int32_t>(i));
    if (!fresh && s.dur > t.spans[static_cast<size_t>(it->second)].dur) it->second = static_cast<int32_t>(i);
  }
  std::unordered_map<uint64_t, std::pair<int32_t, int32_t>> pairs;  // flow id -> (forward op, backward op)
  for (const Flow& f : t.flows) {
    if (!is_fwdbwd[f.cat] || (f.phase != 's' && f.phase != 'f') || !std::isfinite(f.ts) || std::fabs(f.ts) > 1e12) continue;
    auto it = op_at.find(key_of(f.track, f.ts));
    if (it == op_at.end()) continue;
    auto& p = pairs.try_emplace(f.id, kNoSpan, kNoSpan).first->second;
    (f.phase == 's' ? p.first : p.second) = it->second;
  }
  for (const auto& [id, p] : pairs) {
    if (p.first == kNoSpan || p.second == kNoSpan) continue;
    const auto fwd = static_cast<size_t>(p.first), bwd = static_cast<size_t>(p.second);
    if (user_[bwd] != kNoSite || source_[bwd] != kNoSite) continue;
    user_[bwd] = user_[fwd], source_[bwd] = source_[fwd];
  }
}

int64_t SourceIndex::line_key(int32_t site) const {
  if (site == kNoSite) return -1;
  const CallSite& c = trace_.call_sites.calls[static_cast<size_t>(site)];
  return (static_cast<int64_t>(c.file) << 32) | static_cast<uint32_t>(c.line);
}

std::string SourceIndex::label(int32_t site) const {
  return site == kNoSite ? "" : trace_.call_sites.label(trace_.call_sites.calls[static_cast<size_t>(site)]);
}

std::string SourceIndex::code(int32_t site) const {
  return site == kNoSite ? "" : trace_.call_sites.text(trace_.call_sites.calls[static_cast<size_t>(site)]);
}

bool SourceIndex::user_file(int32_t site) const {
  if (site == kNoSite) return false;
  const uint32_t f = trace_.call_sites.calls[static_cast<size_t>(site)].file;
  return f < trace_.call_sites.files.size() && trace_.call_sites.files[f].user;
}

}  // namespace crosstrain::analyze
