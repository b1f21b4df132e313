#include "tools/analyze/source_lines.h"

#include <algorithm>
#include <string_view>

namespace crosstrain::analyze {

void LineTally::add(int32_t site, int32_t via, double us, int64_t count, int64_t ops) {
  if (site == kNoSite) return;
  Entry& e = by_line_[index_.line_key(site)];
  e.site = site;
  e.count += count;
  e.ops += ops;
  e.us += us;
  if (via != kNoSite && index_.line_key(via) != index_.line_key(site)) {
    auto& v = e.via.try_emplace(index_.line_key(via), via, 0.0).first->second;
    v.second += us > 0 ? us : 1e-9;  // count-only work still names its line
  }
}

void LineTally::add_span(size_t span, double us, int64_t count) {
  add(index_.site(span), index_.source_site(span), us, count);
}

std::vector<SourceLine> LineTally::lines(double steps, size_t max) const {
  std::vector<const Entry*> order;
  for (const auto& [key, e] : by_line_) order.push_back(&e);
  std::sort(order.begin(), order.end(), [&](const Entry* a, const Entry* b) {
    if (a->us != b->us) return a->us > b->us;
    if (a->count != b->count) return a->count > b->count;
    return index_.line_key(a->site) < index_.line_key(b->site);
  });
  std::vector<SourceLine> out;
  for (const Entry* e : order) {
    if (out.size() == max) break;
    SourceLine l;
    l.where = index_.label(e->site);
    l.code = index_.code(e->site);
    l.count = e->count;
    l.ops = e->ops;
    l.per_step = steps > 0 ? static_cast<double>(e->count) / steps : 0;
    l.time_us = e->us;
    int32_t via = kNoSite;
    double best = 0;
    for (const auto& [key, v] : e->via)
      if (v.second > best || (v.second == best && via != kNoSite && key < index_.line_key(via)))
        via = v.first, best = v.second;
    // Work issued mostly from the user's line itself needs no "via".
    if (via != kNoSite && best > 0.5 * std::max(e->us, 1e-9)) l.via = index_.label(via);
    out.push_back(std::move(l));
  }
  return out;
}

namespace {

constexpr size_t kMaxLines = 5;

bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

// Operators that read a tensor's value on the host: on a device, they wait for it.
bool is_read_op(std::string_view n) {
  return n == "aten::item" || n == "aten::_local_scalar_dense" || n == "aten::nonzero" || n == "aten::masked_select" ||
         n == "aten::_unique" || n == "aten::_unique2" || n == "aten::unique_dim" || n == "aten::unique_consecutive" ||
         n == "aten::unique_dim_consecutive";
}

// Tensor methods that hand a tensor's values to Python; on the CPU they run no operator.
bool is_read_call(std::string_view n) {
  for (std::string_view m : {"<built-in method tolist of ", "<built-in method numpy of ", "<built-in method cpu of "})
    if (starts_with(n, m)) return true;
  return false;
}

bool in_steps(const std::vector<StepWindow>& w, const Span& s) { return window_of(w, s.ts) >= 0; }

// The user's .item(), .tolist(), .cpu(), .numpy(), nonzero ... made directly from their own lines
// (reads inside torch, such as an optimizer reading its CPU step counter, are not theirs to fix).
void host_reads(const Trace& t, const SpanLinks& L, const std::vector<StepWindow>& windows, const SourceIndex& index,
                TraceAnalysis& out) {
  LineTally tally(index);
  for (size_t i = 0; i < t.spans.size(); ++i) {
    const Span& s = t.spans[i];
    if (!in_steps(windows, s)) continue;
    const std::string& name = t.strings.str(s.name);
    int32_t site = kNoSite;
    if (s.kind == SpanKind::CpuOp && is_read_op(name)) {
      const int32_t p = L.parent[i];
      const int32_t above = p == kNoSpan ? kNoSpan : L.op_of[static_cast<size_t>(p)];
      if (above != kNoSpan && is_read_op(t.strings.str(t.spans[static_cast<size_t>(above)].name))) continue;
      site = index.direct_site(i);
    } else if (s.kind == SpanKind::PythonFunction && is_read_call(name)) {
      site = index.own_site(i);
    }
    if (site == kNoSite || !index.user_file(site)) continue;
    tally.add(site, kNoSite, s.dur);
    ++out.host_read_count;
  }
  out.host_reads = tally.lines(static_cast<double>(out.steps.size()), kMaxLines);
}

// Per user line: the Python calls it made inside steps, the operators under them and their time
// (calls nested in another call from the same line, a generator's body, counted once).
void call_loops(const Trace& t, const SpanLinks& L, const std::vector<StepWindow>& windows, const SourceIndex& index,
                TraceAnalysis& out) {
  std::vector<std::vector<double>> op_starts(t.tracks.size());  // outermost operators per thread
  for (size_t i = 0; i < t.spans.size(); ++i) {
    const Span& s = t.spans[i];
    const int32_t p = L.parent[i];
    if (s.kind == SpanKind::CpuOp && (p == kNoSpan || L.op_of[static_cast<size_t>(p)] == kNoSpan))
      op_starts[s.track].push_back(s.ts);
  }
  for (auto& v : op_starts) std::sort(v.begin(), v.end());
  std::vector<std::vector<int32_t>> calls(t.tracks.size());
  for (size_t i = 0; i < t.spans.size(); ++i) {
    const Span& s = t.spans[i];
    if (s.kind != SpanKind::PythonFunction || !in_steps(windows, s)) continue;
    const int32_t site = index.own_site(i);
    if (site != kNoSite && index.user_file(site)) calls[s.track].push_back(static_cast<int32_t>(i));
  }
  LineTally tally(index);
  std::unordered_map<int64_t, double> covered_until;  // line -> end of its last outermost call
  for (size_t k = 0; k < calls.size(); ++k) {
    auto& list = calls[k];
    std::sort(list.begin(), list.end(), [&](int32_t a, int32_t b) {
      return t.spans[static_cast<size_t>(a)].ts < t.spans[static_cast<size_t>(b)].ts;
    });
    covered_until.clear();
    const auto& ops = op_starts[k];
    for (int32_t c : list) {
      const Span& s = t.spans[static_cast<size_t>(c)];
      const int32_t site = index.own_site(static_cast<size_t>(c));
      auto [it, fresh] = covered_until.try_emplace(index.line_key(site), s.end());
      if (!fresh && s.ts < it->second) {  // inside a call from the same line
        tally.add(site, kNoSite, 0, 1, 0);
        continue;
      }
      it->second = s.end();
      const auto n = std::upper_bound(ops.begin(), ops.end(), s.end()) - std::lower_bound(ops.begin(), ops.end(), s.ts);
      tally.add(site, kNoSite, s.dur, 1, static_cast<int64_t>(n));
    }
  }
  const double steps = static_cast<double>(out.steps.size());
  for (auto& l : tally.lines(steps, SIZE_MAX))
    if (l.per_step >= 8) out.call_loops.push_back(std::move(l));
  std::stable_sort(out.call_loops.begin(), out.call_loops.end(),
                   [](const SourceLine& a, const SourceLine& b) { return a.count > b.count; });
  if (out.call_loops.size() > kMaxLines) out.call_loops.resize(kMaxLines);
}

// Each operator row: the user's lines behind its self time (device self time on device traces).
void operator_lines(const Trace& t, const SpanLinks& L, const SourceIndex& index, const AnalyzeOptions& opt,
                    TraceAnalysis& out) {
  std::unordered_map<std::string, size_t> row_of;
  for (size_t r = 0; r < out.operators.size(); ++r)
    row_of[out.operators[r].name + '\x1f' + out.operators[r].shapes] = r;
  // A redispatch (an operator whose only child has its name) is one call, as in the table.
  std::vector<int32_t> into(t.spans.size(), kNoSpan);
  for (int32_t i : L.host_order) {
    const auto u = static_cast<size_t>(i);
    const int32_t p = L.parent[u];
    if (t.spans[u].kind != SpanKind::CpuOp || p == kNoSpan) continue;
    const Span& ps = t.spans[static_cast<size_t>(p)];
    if (ps.kind == SpanKind::CpuOp && ps.name == t.spans[u].name && L.child_count[static_cast<size_t>(p)] == 1)
      into[u] = into[static_cast<size_t>(p)] != kNoSpan ? into[static_cast<size_t>(p)] : p;
  }
  auto canonical = [&](int32_t op) { return into[static_cast<size_t>(op)] != kNoSpan ? into[static_cast<size_t>(op)] : op; };
  // Self time as the table counts it: device work charged to the operator on device traces, host
  // self time (its redispatched children's included) otherwise.
  std::vector<double> weight(t.spans.size(), 0);
  if (out.has_device) {
    for (int32_t d : L.device_order)
      if (L.device_op[static_cast<size_t>(d)] != kNoSpan)
        weight[static_cast<size_t>(canonical(L.device_op[static_cast<size_t>(d)]))] += t.spans[static_cast<size_t>(d)].dur;
  } else {
    for (size_t i = 0; i < t.spans.size(); ++i)
      if (t.spans[i].kind == SpanKind::CpuOp)
        weight[static_cast<size_t>(canonical(static_cast<int32_t>(i)))] += std::max(0.0, t.spans[i].dur - L.child_us[i]);
  }
  std::unordered_map<size_t, LineTally> tallies;
  for (size_t i = 0; i < t.spans.size(); ++i) {
    const Span& s = t.spans[i];
    if (s.kind != SpanKind::CpuOp || into[i] != kNoSpan) continue;
    auto it = row_of.find(t.strings.str(s.name) + '\x1f' + (opt.group_by_shape ? t.strings.str(s.shapes) : std::string()));
    if (it != row_of.end()) tallies.try_emplace(it->second, index).first->second.add_span(i, weight[i]);
  }
  const double steps = static_cast<double>(out.steps.size());
  for (auto& [row, tally] : tallies) out.operators[row].sources = tally.lines(steps, 3);
}

}  // namespace

void compute_source_lines(const Trace& t, const SpanLinks& L, const std::vector<StepWindow>& windows,
                          const SourceIndex& index, const AnalyzeOptions& opt, const ConcernSpans& concerns,
                          TraceAnalysis& out) {
  out.source_lines = true;
  const double steps = static_cast<double>(out.steps.size());
  auto lines_of = [&](Concern c) {
    LineTally tally(index);
    for (const auto& [span, us] : concerns.of(c)) tally.add_span(static_cast<size_t>(span), us);
    return tally.lines(steps, kMaxLines);
  };
  const std::pair<const char*, Concern> by_rule[] = {
      {"allocator", Concern::Allocator},         {"data_loading", Concern::DataLoading},
      {"dataloader_bound", Concern::DataLoading}, {"short_device_ops", Concern::ShortKernel},
      {"host_sync", Concern::HostSync},          {"host_bound_launch", Concern::LaunchIntoIdle},
      {"launch_delay", Concern::LaunchIntoIdle}, {"communication", Concern::Communication},
      {"comm_overlap", Concern::Communication},  {"fp32_matmul", Concern::Fp32Matmul},
      {"cpu_fallback", Concern::CpuFallback},    {"pageable_copy", Concern::PageableCopy},
      {"online_compile", Concern::OnlineCompile}, {"ai_cpu_fallback", Concern::AiCpu}};
  for (const auto& [rule, concern] : by_rule) out.lines[rule] = lines_of(concern);

  // The device idled waiting for the work right after each gap: charge the gap to that work's line.
  {
    LineTally tally(index);
    for (const auto& [start, length] : concerns.idle_gaps) {
      auto it = std::lower_bound(L.device_order.begin(), L.device_order.end(), start + length - 1e-3,
                                 [&](int32_t i, double v) { return t.spans[static_cast<size_t>(i)].ts < v; });
      if (it != L.device_order.end()) tally.add_span(static_cast<size_t>(*it), length);
    }
    out.lines["device_idle"] = tally.lines(steps, kMaxLines);
  }
  // The first step's time by line, for the slow first step.
  if (!windows.empty()) {
    LineTally tally(index);
    const StepWindow& w = windows.front();
    for (size_t i = 0; i < t.spans.size(); ++i) {
      const Span& s = t.spans[i];
      const int32_t p = L.parent[i];
      if (s.kind != SpanKind::CpuOp || (p != kNoSpan && L.op_of[static_cast<size_t>(p)] != kNoSpan)) continue;
      const double a = std::max(s.ts, w.start), b = std::min(s.end(), w.end);
      if (b > a) tally.add_span(i, b - a);
    }
    out.lines["warmup_step"] = tally.lines(1, kMaxLines);
  }
  // The batch size is set where the DataLoader is made.
  for (const auto& d : out.loaders)
    if (!d.made_at.empty()) out.lines["small_batch"].push_back({d.made_at, d.made_text, "", d.iterators, 0, 0, 0});
  host_reads(t, L, windows, index, out);
  call_loops(t, L, windows, index, out);
  operator_lines(t, L, index, opt, out);
}

}  // namespace crosstrain::analyze
