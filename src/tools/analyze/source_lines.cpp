#include "tools/analyze/source_lines.h"

#include <algorithm>
#include <map>
#include <string>
#include <string_view>
#include <tuple>

namespace crosstrain::analyze {

void LineTally::add(int32_t site, int32_t via, double us, int64_t count, int64_t ops, int64_t small_ops,
                    int64_t repeats) {
  if (site == kNoSite) return;
  Entry& e = by_line_[index_.line_key(site)];
  e.site = site;
  e.count += count;
  e.ops += ops;
  e.small_ops += small_ops;
  e.repeats = std::max(e.repeats, repeats);
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
    l.small_ops = e->small_ops;
    l.repeats = e->repeats;
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

// A Python call's function with what differs between calls of it taken off: the object's address
// ("<built-in method mul_ of Tensor object at 0x7f3a...>") and a module's instance number
// ("nn.Module: Linear_3").
std::string callee_of(std::string_view name) {
  if (const size_t at = name.find(" at 0x"); at != std::string_view::npos) name = name.substr(0, at);
  if (starts_with(name, "nn.Module: ")) {
    size_t end = name.size();
    while (end > 0 && name[end - 1] >= '0' && name[end - 1] <= '9') --end;
    if (end < name.size() && end > 0 && name[end - 1] == '_') name = name.substr(0, end - 1);
  }
  return std::string(name);
}

// The trace's fixed cost of an operator (Python, dispatcher, launch): the host time of its
// cheapest operators, which do next to no work (views, reshapes, launches of tiny kernels).
double operator_overhead_us(std::vector<double> host_us) {
  constexpr double kUnknownUs = 10, kMinUs = 1, kMaxUs = 50;
  if (host_us.empty()) return kUnknownUs;
  auto at = host_us.begin() + static_cast<std::ptrdiff_t>(host_us.size() / 10);
  std::nth_element(host_us.begin(), at, host_us.end());
  return std::clamp(*at, kMinUs, kMaxUs);
}

// Per user line: the Python calls it made inside steps, the operators under them (all, and the
// small ones) and their time, over all calls (call_loops) and over the calls made in a loop
// (op_loops: the line called the same function kLoopRepeats or more times within one call of
// its own function). Calls nested in another call from the same line, a generator's body, are
// counted once, with no operators of their own.
void call_loops(const Trace& t, const SpanLinks& L, const std::vector<StepWindow>& windows, const SourceIndex& index,
                TraceAnalysis& out) {
  const size_t n = t.spans.size();
  // Each host span's outermost operator; an operator's cost is its host time, or the device time
  // of its work (its callees' included) when that is longer.
  std::vector<int32_t> outer(n, kNoSpan);
  for (int32_t i : L.host_order) {
    const auto u = static_cast<size_t>(i);
    const int32_t p = L.parent[u];
    if (t.spans[u].kind == SpanKind::CpuOp && (p == kNoSpan || L.op_of[static_cast<size_t>(p)] == kNoSpan)) outer[u] = i;
    else if (p != kNoSpan) outer[u] = outer[static_cast<size_t>(p)];
  }
  std::vector<double> device_us(n, 0);
  for (int32_t d : L.device_order) {
    const int32_t op = L.device_op[static_cast<size_t>(d)];
    if (op != kNoSpan && outer[static_cast<size_t>(op)] != kNoSpan)
      device_us[static_cast<size_t>(outer[static_cast<size_t>(op)])] += t.spans[static_cast<size_t>(d)].dur;
  }
  struct Op {
    double ts, cost;
  };
  std::vector<std::vector<Op>> ops(t.tracks.size());  // outermost operators per thread
  std::vector<double> host_in_steps;
  for (size_t i = 0; i < n; ++i) {
    if (outer[i] != static_cast<int32_t>(i)) continue;
    const Span& s = t.spans[i];
    ops[s.track].push_back({s.ts, std::max(s.dur, device_us[i])});
    if (in_steps(windows, s)) host_in_steps.push_back(s.dur);
  }
  out.op_overhead_us = operator_overhead_us(std::move(host_in_steps));
  out.small_op_us = kSmallOpOverheads * out.op_overhead_us;
  std::vector<std::vector<double>> op_starts(t.tracks.size());
  std::vector<std::vector<int64_t>> small_before(t.tracks.size());  // small operators before each index
  for (size_t k = 0; k < ops.size(); ++k) {
    std::sort(ops[k].begin(), ops[k].end(), [](const Op& a, const Op& b) { return a.ts < b.ts; });
    small_before[k].push_back(0);
    for (const Op& o : ops[k]) {
      op_starts[k].push_back(o.ts);
      small_before[k].push_back(small_before[k].back() + (o.cost <= out.small_op_us ? 1 : 0));
    }
  }

  // The Python calls of each thread in start order, each with the call it was made in.
  std::vector<std::vector<int32_t>> python(t.tracks.size());
  for (size_t i = 0; i < n; ++i)
    if (t.spans[i].kind == SpanKind::PythonFunction) python[t.spans[i].track].push_back(static_cast<int32_t>(i));
  struct Call {
    int32_t span, site;
    int64_t made_in;  // the enclosing Python call, or -1 - step when none is recorded
    uint32_t callee;
    bool nested;      // inside a call from the same line
  };
  std::unordered_map<std::string, uint32_t> callee_ids;
  std::unordered_map<uint32_t, uint32_t> callee_of_name;
  std::map<std::tuple<int64_t, uint32_t, int64_t>, int64_t> repeats;  // (line, callee, made in) -> calls
  std::vector<std::vector<Call>> calls(t.tracks.size());
  std::vector<int32_t> stack;
  std::unordered_map<int64_t, double> covered_until;  // line -> end of its last outermost call
  for (size_t k = 0; k < python.size(); ++k) {
    auto& list = python[k];
    std::sort(list.begin(), list.end(), [&](int32_t a, int32_t b) {
      const Span& x = t.spans[static_cast<size_t>(a)];
      const Span& y = t.spans[static_cast<size_t>(b)];
      if (x.ts != y.ts) return x.ts < y.ts;
      return x.dur != y.dur ? x.dur > y.dur : a < b;  // the enclosing call first
    });
    stack.clear();
    covered_until.clear();
    for (int32_t c : list) {
      const Span& s = t.spans[static_cast<size_t>(c)];
      while (!stack.empty() && t.spans[static_cast<size_t>(stack.back())].end() < s.end() - 1e-3) stack.pop_back();
      const int32_t made_in = stack.empty() ? kNoSpan : stack.back();
      stack.push_back(c);
      const int32_t site = index.own_site(static_cast<size_t>(c));
      if (site == kNoSite || !index.user_file(site) || !in_steps(windows, s)) continue;
      auto [cover, fresh] = covered_until.try_emplace(index.line_key(site), s.end());
      const bool nested = !fresh && s.ts < cover->second;
      if (!nested) cover->second = s.end();
      auto [named, unseen] = callee_of_name.try_emplace(s.name, 0);
      if (unseen)
        named->second = callee_ids.try_emplace(callee_of(t.strings.str(s.name)), static_cast<uint32_t>(callee_ids.size()))
                            .first->second;
      const int64_t in = made_in != kNoSpan ? made_in : -1 - window_of(windows, s.ts);
      calls[k].push_back({c, site, in, named->second, nested});
      if (!nested) ++repeats[{index.line_key(site), named->second, in}];
    }
  }
  LineTally all(index), loops(index);
  for (size_t k = 0; k < calls.size(); ++k) {
    const auto& starts = op_starts[k];
    for (const Call& c : calls[k]) {
      if (c.nested) {
        all.add(c.site, kNoSite, 0, 1, 0);
        continue;
      }
      const Span& s = t.spans[static_cast<size_t>(c.span)];
      const auto first = std::lower_bound(starts.begin(), starts.end(), s.ts) - starts.begin();
      const auto last = std::upper_bound(starts.begin(), starts.end(), s.end()) - starts.begin();
      const int64_t under = std::max<int64_t>(0, last - first);
      const int64_t small = under > 0 ? small_before[k][static_cast<size_t>(last)] - small_before[k][static_cast<size_t>(first)] : 0;
      const int64_t times = repeats[{index.line_key(c.site), c.callee, c.made_in}];
      all.add(c.site, kNoSite, s.dur, 1, under, small, times);
      if (times >= kLoopRepeats) loops.add(c.site, kNoSite, s.dur, 1, under, small, times);
    }
  }
  const double steps = static_cast<double>(out.steps.size());
  auto by_calls = [&](const LineTally& tally) {
    std::vector<SourceLine> v;
    for (auto& l : tally.lines(steps, SIZE_MAX))
      if (l.per_step >= 8) v.push_back(std::move(l));
    std::stable_sort(v.begin(), v.end(), [](const SourceLine& a, const SourceLine& b) { return a.count > b.count; });
    if (v.size() > kMaxLines) v.resize(kMaxLines);
    return v;
  };
  out.call_loops = by_calls(all);
  out.op_loops = by_calls(loops);
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
    if (!d.made_at.empty()) out.lines["small_batch"].push_back({d.made_at, d.made_text, "", d.iterators, 0, 0, 0, 0, 0});
  host_reads(t, L, windows, index, out);
  call_loops(t, L, windows, index, out);
  operator_lines(t, L, index, opt, out);
}

}  // namespace crosstrain::analyze
